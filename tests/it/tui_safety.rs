//! Untrusted trace text cannot reach the terminal raw, and the screen holds at any size:
//! `\x1b]0;owned\x07` (retitle the terminal) and `\x1b[2J` (clear it) show as visible, inert text
//! in the detail and context panes — on the bug-hunt recording (sample-traces/B1, whose log holds
//! a scanner's user agent with those bytes) and on a trace built here; 20×5 says "terminal too
//! small" without panicking; 400×120 uses the space.

use crate::tui_common;

use ratatui::crossterm::event::KeyCode;
use tierscope_engine::episode::model::Tier;
use tui_common::*;

const VISIBLE: &str = "\\x1b]0;owned\\x07\\x1b[2J";

fn assert_shows_escapes(buf: &ratatui::buffer::Buffer, pane: &str) {
    assert_inert(buf);
    let t = text(buf);
    assert!(
        t.contains(VISIBLE),
        "the {pane} pane should show {VISIBLE} as text:\n{t}"
    );
}

/// Scrolls the detail pane (showing episode `ep`'s full tier) until the escapes are on screen.
fn detail_at_escape(app: &mut App, ep: usize) {
    app.state.main.selected = ep;
    app.state.main.detail.tier = Some(Tier::Full);
    app.state.main.focus = tierscope::tui::main::Pane::Detail;
    app.resize(app.state.width, app.state.height);
    for _ in 0..400 {
        if text(&app.draw()).contains(VISIBLE) {
            return;
        }
        app.key(KeyCode::PageDown);
    }
    panic!("the full tier does not show the escapes");
}

/// Expands the context pane and scrolls it to the first line holding the escapes.
fn context_at_escape(app: &mut App) {
    use tierscope::tui::view_model::ContextRow;
    app.key(KeyCode::Char('e'));
    let c = app.context();
    app.state.main.context.scroll = c
        .expanded
        .iter()
        .position(|r| matches!(r, ContextRow::Line(l) if c.lines[*l].1.contains(VISIBLE)))
        .unwrap_or_else(|| panic!("the context does not show the escapes"));
}

#[test]
fn bug_hunt_recording_shows_escape_sequences_as_text() {
    let mut app = open(sample("B1.json"), "dark", 160, 48, "full", None);
    // The raw bytes are in the recording (a tool output of request 0's step)...
    let raw = tierscope_engine::session::load(&tierscope_engine::session::LoadOptions {
        path: Some(sample("B1.json")),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let ep = raw
        .episodes
        .iter()
        .position(|e| {
            e.representation(Tier::Full)
                .is_some_and(|r| r.text().contains("\u{1b}]0;owned\u{7}\u{1b}[2J"))
        })
        .unwrap_or_else(|| panic!("B1 should hold the raw escape bytes"));
    // ...and the context of a later request renders that chunk.
    let at = raw.episodes[ep].last_request.unwrap_or(0) + 1;
    for _ in 0..at {
        app.key(KeyCode::Right);
    }
    detail_at_escape(&mut app, ep);
    assert_shows_escapes(&app.draw(), "detail");
    context_at_escape(&mut app);
    assert_shows_escapes(&app.draw(), "context");
}

#[test]
fn constructed_trace_with_escapes_in_user_text_and_tool_output() {
    // B1's export with the first user message and a tool output rewritten to carry the bytes.
    let json = std::fs::read_to_string(sample("B1.json")).unwrap_or_else(|e| panic!("{e}"));
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    let evil = "before \u{1b}]0;owned\u{7}\u{1b}[2J after";
    let msgs = doc["messages"]
        .as_array_mut()
        .unwrap_or_else(|| panic!("no messages"));
    for p in msgs[0]["parts"].as_array_mut().into_iter().flatten() {
        if p["type"] == "text" {
            p["text"] = serde_json::Value::String(format!("{evil}\nplease look at the logs"));
        }
    }
    let mut done = false;
    for m in msgs.iter_mut() {
        for p in m["parts"].as_array_mut().into_iter().flatten() {
            if !done && p["type"] == "tool" && p["state"]["output"].is_string() {
                p["state"]["output"] = serde_json::Value::String(format!("out: {evil}"));
                done = true;
            }
        }
    }
    assert!(done);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("evil.json");
    std::fs::write(&path, serde_json::to_string(&doc).unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut app = open(path, "mono", 160, 48, "retention", None);
    app.key(KeyCode::Right);
    app.key(KeyCode::Right);
    // The title (from the user text) and the detail header carry it at once.
    let buf = app.draw();
    assert_inert(&buf);
    detail_at_escape(&mut app, 0);
    assert_shows_escapes(&app.draw(), "detail");
    context_at_escape(&mut app);
    assert_shows_escapes(&app.draw(), "context");
    // The compact context list shows it in the user chunk's one-line preview too.
    app.key(KeyCode::Char('e'));
    app.state.main.context.scroll = 0;
    let t = text(&app.draw());
    assert!(t.contains("before \\x1b]0;owned"), "{t}");
}

#[test]
fn twenty_by_five_says_terminal_too_small() {
    let mut app = open(sample("M1.json"), "dark", 120, 40, "retention", None);
    for (w, h) in [(20, 5), (1, 1), (59, 30), (120, 15)] {
        app.resize(w, h);
        let t = text(&app.draw());
        if w >= 20 && h >= 3 {
            assert!(t.contains("terminal too small"), "{w}x{h}:\n{t}");
        }
        // Keys still work and nothing panics.
        app.key(KeyCode::Right);
        app.key(KeyCode::Char('?'));
        let _ = app.draw();
        app.key(KeyCode::Esc);
        app.key(KeyCode::Char('K'));
        let _ = app.draw();
        app.key(KeyCode::Esc);
    }
    app.resize(20, 5);
    let t = text(&app.draw());
    assert!(t.contains("terminal too small"), "{t}");
}

#[test]
fn four_hundred_by_one_twenty_uses_the_space() {
    let app = open(sample("C1.json"), "dark", 400, 120, "retention", None);
    let buf = app.draw();
    let t = text(&buf);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 120);
    let r = app.state.geometry.main.clone();
    // Three panes side by side across the whole width, right border at the last column.
    assert!(r.table.width > 100 && r.context.width > 80 && r.detail.width > 80);
    assert_eq!(r.detail.right(), 400);
    // The heatmap spends its whole width on requests (several cells each when the trace is
    // short).
    let vp = app
        .state
        .main
        .viewport(usize::from(r.heat_cells.width), app.state.requests());
    assert_eq!(vp.used_cells(), usize::from(r.heat_cells.width));
    assert!(
        vp.used_cells() > 240,
        "heatmap uses {} cells",
        vp.used_cells()
    );
    // Every row of the screen holds something.
    let empty = lines.iter().filter(|l| l.trim().is_empty()).count();
    assert!(empty < 5, "{empty} empty rows");
}
