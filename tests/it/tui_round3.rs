//! The explorer, round three (issue 35, items 5–8), on `TestBackend`: what stays at 80×24, one
//! vocabulary with a help entry for every figure, the budget that cannot be met, overlays sized
//! to their text, the light theme's background and the theme key, `:` in diff mode, messages
//! that the next key retires, zoom in and out as a symmetric pair, and help's Backspace text.

use crate::tui_common::*;

use ratatui::crossterm::event::{KeyCode, KeyModifiers};
use ratatui::style::Color;
use tierscope::tui::keymap::Mode;
use tierscope::tui::ui::help::FIGURES;

fn m1(w: u16, h: u16) -> App {
    open_m1("dark", w, h)
}

/// The screen's text with the box-drawing characters and spaces gone: a sentence wrapped over
/// several rows of a box reads whole.
fn squeezed(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && !('─'..='╿').contains(c))
        .collect()
}

#[test]
fn at_80x24_the_floor_the_marks_the_knobs_and_k_and_d_stay() {
    let mut app = m1(80, 24);
    let t = text(&app.draw());
    let lines: Vec<&str> = t.lines().collect();
    // Header: the cursor, the policy with its headline knobs abbreviated, the title.
    let header = lines[0];
    assert!(header.contains("r0/23"), "{header}");
    assert!(
        header.contains("retention") && header.contains("dem=.9") && header.contains("tgt=.75"),
        "{header}"
    );
    assert!(header.contains("Migrate"), "the title is gone: {header}");
    // The heatmap's legend keeps its marks.
    let legend = lines[1];
    for mark in ["▼▲", "⊥", "…", "!"] {
        assert!(legend.contains(mark), "{mark} missing: {legend}");
    }
    // The episode table keeps its floor column.
    assert!(
        t.lines().any(|l| l.contains("floor") && l.contains("tier")),
        "{t}"
    );
    // The footer keeps K and d (and help and quit).
    let footer = lines[23];
    for k in ["K knobs", "d diff", "? help", "q quit"] {
        assert!(footer.contains(k), "{k} missing: {footer}");
    }
    // Detail: where the page is, and PgDn reads it a page at a time.
    app.key(KeyCode::Tab);
    app.key(KeyCode::Tab);
    app.key(KeyCode::Tab);
    assert_eq!(app.state.main.focus, tierscope::tui::main::Pane::Detail);
    let s = app.state.geometry.main.detail_scroll;
    assert!(s.max > 0, "the detail page fits: {s:?}");
    let t = text(&app.draw());
    let total = s.max + s.page;
    assert!(
        t.contains(&format!("1/{total}")) || t.contains(&format!("lines 1–{} of {total}", s.page)),
        "no position:\n{t}"
    );
    app.key(KeyCode::PageDown);
    assert_eq!(app.state.main.detail.scroll, s.page - 1);
    // `+` gives it the screen: every line between the header and the metrics.
    app.key(KeyCode::Char('+'));
    let big = app.state.geometry.main.detail_scroll;
    assert!(big.page >= 16, "{big:?}");
    snap("round3_detail_max_dark_80x24", text(&app.draw()));
}

#[test]
fn every_figure_on_screen_has_a_help_entry() {
    let app = m1(160, 45);
    let t = text(&app.draw());
    // One word for a request everywhere: r12.
    assert!(!t.contains(" t 0 "), "{t}");
    assert!(t.contains("Context r0") && t.contains("at r0"), "{t}");
    for fig in [
        "kept",
        "redo",
        "cache read",
        "so far",
        "chg",
        "wait",
        "hold",
        "thrash",
        "emerg",
        "over",
        "run",
        "ep·req",
    ] {
        assert!(t.contains(fig), "{fig} not on screen:\n{t}");
        assert!(
            FIGURES.iter().any(|(k, _)| k.contains(fig)),
            "{fig} has no help entry"
        );
    }
    for gone in ["div ", "radius", " Σ"] {
        assert!(!t.contains(gone), "{gone} still on screen:\n{t}");
    }
    // The help lists them, after the main screen's keys.
    let mut app = app;
    app.key(KeyCode::Char('?'));
    let help = tierscope::tui::ui::help::lines(&app.state, 96).0;
    let joined: String = help
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(joined.contains("Figures on screen"), "{joined}");
    assert!(joined.contains("emergencies: changes applied off schedule"));
}

#[test]
fn the_run_totals_count_emergencies() {
    let app = open(sample("M1.json"), "dark", 160, 45, "retention", Some(3000));
    let r = app.state.on_screen.replay.as_ref().unwrap();
    let t = text(&app.draw());
    let run = t
        .lines()
        .find(|l| l.starts_with(" run "))
        .unwrap_or_default();
    assert!(
        run.contains(&format!("emerg {}", r.totals.emergencies)),
        "{run}"
    );
}

#[test]
fn a_budget_no_schedule_can_meet_is_said() {
    let app = open(sample("M1.json"), "dark", 160, 45, "retention", Some(100));
    let r = app.state.on_screen.replay.as_ref().unwrap();
    let w = r.budget_warning.clone().unwrap_or_default();
    assert!(
        w.contains("budget unmeetable") || w.contains("every request"),
        "{w}"
    );
    let t = text(&app.draw());
    assert!(t.contains("⚠"), "{t}");
    // A budget that holds says nothing of the kind.
    let ok = m1(160, 45);
    assert!(ok
        .state
        .on_screen
        .replay
        .as_ref()
        .unwrap()
        .budget_warning
        .is_none());
}

#[test]
fn overlays_hold_their_text_whole() {
    // A refused value's reason wraps inside the field's box at 80 columns.
    let mut app = m1(80, 24);
    app.knobs_at("promote_at");
    app.key(KeyCode::Enter);
    app.key_mod(KeyCode::Char('u'), KeyModifiers::CONTROL);
    app.keys("0.95");
    app.key(KeyCode::Enter);
    let err = app.state.input.as_ref().and_then(|i| i.error.clone());
    assert!(err.is_some(), "the value was accepted");
    let t = text(&app.draw());
    assert!(
        squeezed(&t).contains("(got0.95<0.75<0.9)"),
        "the reason is cut:\n{t}"
    );
    app.key(KeyCode::Esc);
    // A choice's value shows whole in the knobs panel.
    let row = knob_row(&app.state.on_screen.policy.specs, "boundary");
    while app.state.knobs.panel.is_some_and(|at| at > row) {
        app.key(KeyCode::Up);
    }
    while app.state.knobs.panel.is_some_and(|at| at < row) {
        app.key(KeyCode::Down);
    }
    for _ in 0..4 {
        app.key(KeyCode::Right);
        if text(&app.draw()).contains("‹cache-expiry›") {
            return;
        }
    }
    panic!("‹cache-expiry› never shown whole:\n{}", text(&app.draw()));
}

#[test]
fn ctrl_t_switches_the_theme_and_light_sets_its_background() {
    let mut app = m1(120, 40);
    assert_eq!(app.state.theme.name, "dark");
    app.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert_eq!(app.state.theme.name, "light");
    let buf = app.draw();
    // Every cell has the light background, the panes and the overlays alike.
    let white = Color::Rgb(255, 255, 255);
    let mid = &buf[(60, 30)];
    assert_eq!(mid.bg, white, "{mid:?}");
    assert!(
        buf.content.iter().all(|c| c.bg != Color::Reset),
        "a cell without the light background"
    );
    app.key(KeyCode::Char('K'));
    let buf = app.draw();
    let r = app.state.geometry.main.table;
    assert_eq!(buf[(r.x + r.width - 3, r.y + 3)].bg, white);
    snap("round3_knobs_light_120x40", styled(&buf));
    app.key(KeyCode::Esc);
    // Round the built-ins and back.
    for _ in 0..3 {
        app.key_mod(KeyCode::Char('t'), KeyModifiers::CONTROL);
    }
    assert_eq!(app.state.theme.name, "dark");
    // The help says so.
    let help = tierscope::tui::ui::help::lines(&app.state, 96).0;
    assert!(help
        .iter()
        .any(|l| l.spans.iter().any(|s| s.content.contains("next theme"))));
}

#[test]
fn colon_goes_to_a_request_in_diff_mode() {
    let mut app = m1(120, 40);
    app.key(KeyCode::Char('d'));
    app.key(KeyCode::Enter);
    assert_eq!(app.state.mode(), tierscope::tui::diff::keys::BROWSE);
    app.key(KeyCode::Char(':'));
    assert_eq!(app.state.mode(), Mode::Input);
    app.keys("17");
    app.key(KeyCode::Enter);
    assert_eq!(app.state.mode(), tierscope::tui::diff::keys::BROWSE);
    assert_eq!(app.state.panels.diff.as_ref().map(|d| d.cursor), Some(17));
    assert!(text(&app.draw()).contains("r17/23"));
    // The main cursor is diff mode's own business.
    assert_eq!(app.state.main.cursor, 0);
}

#[test]
fn a_message_lasts_until_the_next_key() {
    let mut app = m1(120, 40);
    app.key(KeyCode::Char('T'));
    let msg = app.state.flash.clone().map(|f| f.0).unwrap_or_default();
    assert!(msg.contains("no thrash before"), "{msg}");
    // Stepping says nothing: the old message does not stay behind.
    app.key(KeyCode::Char('l'));
    assert!(app.state.flash.is_none(), "{:?}", app.state.flash);
    // A click is an action too.
    app.key(KeyCode::Char('T'));
    assert!(app.state.flash.is_some());
    let d = app.state.geometry.main.detail;
    app.msg(tierscope::tui::app::Msg::Mouse(
        ratatui::crossterm::event::MouseEvent {
            kind: ratatui::crossterm::event::MouseEventKind::Down(
                ratatui::crossterm::event::MouseButton::Left,
            ),
            column: d.x + 2,
            row: d.y + 2,
            modifiers: KeyModifiers::NONE,
        },
    ));
    assert!(app.state.flash.is_none(), "{:?}", app.state.flash);
}

#[test]
fn zoom_in_twice_then_out_twice_shows_the_whole_session() {
    for (w, h) in [(160, 45), (80, 24)] {
        let mut app = m1(w, h);
        let whole = text(&app.draw());
        app.keys("zz");
        assert!(app.state.main.heat.span.is_some());
        app.keys("ZZ");
        assert_eq!(app.state.main.heat.span, None, "at {w}×{h}");
        assert_eq!(app.state.main.heat.level, 0);
        assert_eq!(text(&app.draw()), whole, "at {w}×{h}");
    }
    // A long session of an odd length (671 requests, as in the issue): the view only (zoom
    // reads the request count and the cells, not the replay).
    let mut app = m1(160, 45);
    let mut view = (**app.state.session.as_ref().unwrap()).clone();
    let first = view.model.requests[0].clone();
    view.model.requests.resize(671, first);
    app.state.session = Some(std::sync::Arc::new(view));
    app.keys("zz");
    assert!(app.state.main.heat.span.is_some_and(|s| s < 671));
    app.keys("ZZ");
    assert_eq!(
        app.state.main.heat.span, None,
        "671 requests: not back to all"
    );
    app.key(KeyCode::Char('Z'));
    assert!(app
        .state
        .flash
        .as_ref()
        .is_some_and(|f| f.0.contains("whole session")));
    // Three levels deep and back, on another session (halving and doubling a span drifted:
    // 671 → 335 → 670, short of the whole).
    let mut app = open(
        std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/recordings/opencode-1.18.33/exports/E2.json"
        )),
        "dark",
        80,
        24,
        "retention",
        Some(9000),
    );
    let n = app.state.requests();
    for _ in 0..3 {
        app.key(KeyCode::Char('z'));
    }
    assert!(app.state.main.heat.span.is_some_and(|s| s < n));
    for _ in 0..3 {
        app.key(KeyCode::Char('Z'));
    }
    assert_eq!(app.state.main.heat.span, None, "{n} requests");
}

#[test]
fn help_says_where_backspace_goes() {
    let mut app = m1(120, 40);
    let help = |app: &App| {
        tierscope::tui::ui::help::lines(&app.state, 96)
            .0
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    // One session opened directly (an export, or --session): no picker to go back to.
    let bksp = |h: &str| {
        h.lines()
            .find(|l| l.trim_start().starts_with("Bksp"))
            .unwrap_or_default()
            .to_owned()
    };
    let line = bksp(&help(&app));
    assert!(line.contains("back to the parent session"), "{line}");
    assert!(!line.contains("picker"), "{line}");
    // Opened from the picker: Backspace goes back to it.
    app.state.picker.sessions = vec![Default::default(), Default::default()];
    let line = bksp(&help(&app));
    assert!(line.contains("else to the session picker"), "{line}");
}

/// A thrash in an episode's change history says which change it undid and how soon: on the
/// 1.1.65 session under `retention` at 30,000 with `promote_after=0`, E0's return to dense at
/// r11 undoes r8's emergency demotion, three requests on (the `thrash` counter counts it; the reader sees why).
#[test]
fn a_thrash_in_the_detail_names_the_change_it_undid() {
    use tierscope::tui::main::Pane;
    let path = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/recordings/opencode-1.1.65/data"
    ));
    // 120 wide: the note on the change line itself was clipped here.
    let mut app = open(path, "dark", 120, 40, "retention", Some(30_000));
    // No wait after a demotion (the default's promote_after waits out the thrash window).
    let p = tierscope_engine::policy::load(
        "retention",
        &[("promote_after".to_owned(), "0".to_owned())],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut fx = Vec::new();
    tierscope::tui::knobs::update(&mut app.state, &mut fx, |_, env, out| {
        env.set_policy(p, out)
    });
    settle(&mut app.state, &mut app.worker, fx);
    app.state.main.focus = Pane::Detail;
    app.key(KeyCode::Char('+'));
    let t = squeezed(&text(&app.draw()));
    assert!(
        t.contains(&squeezed(
            "r11 anchor→dense relevance (boundary:user-turn) ! thrash: undoes r8's dense→anchor (pressure, emergency), 3 requests on"
        )),
        "{t}"
    );
    // A change that reverses nothing is not marked.
    assert!(
        !t.contains(&squeezed("r5 full→dense pressure (boundary:milestone) !")),
        "{t}"
    );
}

/// Where the engine says why the cached prefix ended where it did, the context pane says it
/// under the divergence marker: in OpenCode 0.1.174 recording R1, request 5 (turn 2) gets turn
/// 1's answer rebuilt from storage with its tool calls merged, so it keeps only what came before
/// that answer.
#[test]
fn the_context_pane_says_why_the_prefix_ended() {
    let path = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/recordings/opencode-0.1.174/data"
    ));
    // The data dir's newest session is R1.
    let mut app = open(path, "dark", 160, 45, "opencode", None);
    app.key(KeyCode::Char(':'));
    app.key(KeyCode::Char('5'));
    app.key(KeyCode::Enter);
    let t = text(&app.draw());
    assert!(t.contains("Fetcher retry backoff"), "{t}");
    assert!(t.contains("kept 9.3k, redo"), "{t}");
    assert!(t.contains("why: the answer of request 4 was still"), "{t}");
}
