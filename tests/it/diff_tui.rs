//! Diff mode of the explorer on a real recording (sample-traces/M1, `retention` at a budget of
//! 9,000 against `age`): snapshots of the chooser and the diff screen at 160×45, 120×40 and 80×24, and
//! the behaviour behind them (B chosen from the list, hunks jumped with n/N, both sides' knobs
//! rerunning both replays, the pre-edit policy offered as B, Esc back to the main screen).

use crate::tui_common;

use ratatui::crossterm::event::KeyCode;
use tierscope::tui::app::Effect;
use tierscope::tui::diff;
use tierscope::tui::diff::DiffJob;
use tierscope::tui::keymap::Mode;
use tierscope::tui::panels::PanelJob;
use tui_common::*;

const SIZES: [(u16, u16); 3] = [(160, 45), (120, 40), (80, 24)];

fn m1(w: u16, h: u16) -> App {
    open_m1("dark", w, h)
}

/// Opens diff mode against `age` (moving down the chooser to it).
fn diff_with_age(app: &mut App) {
    diff_with(app, "age");
}

/// Opens diff mode against the built-in `name`.
fn diff_with(app: &mut App, name: &str) {
    app.key(KeyCode::Char('d'));
    assert_eq!(app.state.mode(), diff::keys::PICK);
    let (list, _) = app
        .state
        .panels
        .diff
        .as_ref()
        .and_then(|d| d.picker.clone())
        .expect("chooser open");
    let age = list
        .iter()
        .position(|c| c.label == name)
        .expect("the policy in the list");
    for _ in 0..list.len() {
        app.key(KeyCode::Up);
    }
    for _ in 0..age {
        app.key(KeyCode::Down);
    }
    app.key(KeyCode::Enter);
    assert_eq!(app.state.mode(), diff::keys::BROWSE);
    let d = app.state.panels.diff.as_ref().expect("diff open");
    assert_eq!(d.b.name, name);
    assert!(d.model.is_some(), "both replays ran");
}

/// Issue 19: `retention` against `opencode` at the same budget. The header says that opencode
/// simulated its compaction at the budget and where; at request 12 (the first compaction, after
/// request 11 reached 9,000) B shows the summary and its kept tail.
#[test]
fn opencode_at_the_budget_shows_its_cliff_in_diff_mode() {
    let (w, h) = SIZES[0];
    let mut app = m1(w, h);
    diff_with(&mut app, "opencode");
    app.key(KeyCode::Home);
    for _ in 0..12 {
        app.key(KeyCode::Right);
    }
    let buf = app.draw();
    assert_inert(&buf);
    let text = text(&buf);
    assert!(
        text.contains("B opencode [simulate@9000: 11 compactions from req 12]"),
        "{text}"
    );
    assert!(text.contains("── summary · 605 tokens ──"), "{text}");
    assert!(text.contains("[simulated compaction 1:"), "{text}");
    snap(&format!("diff_opencode_dark_{w}x{h}"), styled(&buf));
}

#[test]
fn chooser_snapshot() {
    for (w, h) in SIZES {
        let mut app = m1(w, h);
        app.key(KeyCode::Char('d'));
        let buf = app.draw();
        assert_inert(&buf);
        snap(&format!("diff_chooser_dark_{w}x{h}"), styled(&buf));
    }
}

#[test]
fn diff_screen_snapshots() {
    // mono: the sides and the floor violations must read without colour (▲/▼, `!`, -/+).
    for (theme, (w, h)) in [
        ("dark", SIZES[0]),
        ("dark", SIZES[1]),
        ("dark", SIZES[2]),
        ("mono", SIZES[2]),
    ] {
        let mut app = open_m1(theme, w, h);
        diff_with_age(&mut app);
        // Request 18: age has just taken E0 (the rejected approach) below its floor.
        app.key(KeyCode::Home);
        for _ in 0..18 {
            app.key(KeyCode::Right);
        }
        let d = app.state.panels.diff.as_ref().expect("diff open");
        assert_eq!(d.cursor, 18);
        let ctx = d.context.as_ref().expect("context diff at the cursor");
        assert_eq!(ctx.request, 18);
        assert!(!ctx.hunks.is_empty());
        let buf = app.draw();
        assert_inert(&buf);
        let text = text(&buf);
        assert!(
            text.contains("A retention") && text.contains("B age"),
            "{text}"
        );
        assert!(text.contains("▲"), "A higher somewhere: {text}");
        assert!(text.contains("anchor!"), "E0 below its floor in B: {text}");
        snap(&format!("diff_{theme}_{w}x{h}"), styled(&buf));
    }
}

#[test]
fn hunks_jump_and_wrap_and_the_sides_scroll_together() {
    let mut app = m1(120, 40);
    diff_with_age(&mut app);
    app.key(KeyCode::End);
    let hunks = app
        .state
        .panels
        .diff
        .as_ref()
        .and_then(|d| d.context.clone())
        .expect("context")
        .hunks
        .clone();
    assert!(hunks.len() >= 2, "{hunks:?}");
    let at = |app: &App| {
        app.state
            .panels
            .diff
            .as_ref()
            .map(|d| (d.hunk, d.context_scroll))
    };
    assert_eq!(at(&app), Some((Some(0), hunks[0].saturating_sub(2))));
    app.key(KeyCode::Char('n'));
    assert_eq!(at(&app), Some((Some(1), hunks[1].saturating_sub(2))));
    app.key(KeyCode::Char('N'));
    app.key(KeyCode::Char('N'));
    let last = hunks.len() - 1;
    assert_eq!(at(&app), Some((Some(last), hunks[last].saturating_sub(2))));
    // One scroll position for both sides: the rows hold A and B lines together.
    app.key(KeyCode::PageDown);
    let d = app.state.panels.diff.as_ref().expect("diff");
    assert!(
        d.context_scroll > hunks[last].saturating_sub(2)
            || d.context_scroll + 1 == d.context.as_ref().map_or(0, |c| c.rows.len())
    );
}

#[test]
fn editing_either_side_reruns_both_replays_and_the_pre_edit_policy_is_offered() {
    let mut app = m1(120, 40);
    // Edit a knob on the main screen: the policy before the edit becomes a choice for B.
    app.knobs_at("min_dwell");
    app.key(KeyCode::Right);
    app.key(KeyCode::Right);
    app.key(KeyCode::Esc);
    app.key(KeyCode::Char('d'));
    let (list, sel) = app
        .state
        .panels
        .diff
        .as_ref()
        .and_then(|d| d.picker.clone())
        .expect("chooser");
    assert_eq!(sel, 0, "the baseline comes first and is preselected");
    assert!(
        list[0].label.contains("baseline: retention @ 9,000")
            && list[0].desc.contains("before the last edits"),
        "{:?}",
        list[0]
    );
    assert!(list[0].desc.contains("min_dwell=3"), "{:?}", list[0]);
    app.key(KeyCode::Enter);
    let d = app.state.panels.diff.as_ref().expect("diff");
    assert_eq!(
        d.b.knobs.get("min_dwell").map(|v| v.to_string()).as_deref(),
        Some("3")
    );
    assert_eq!(
        d.a.knobs.get("min_dwell").map(|v| v.to_string()).as_deref(),
        Some("5")
    );
    let text = text(&app.draw());
    assert!(text.contains("A retention min_dwell=5"), "{text}");

    // B's knobs: one step reruns the pair (one job carrying both policies).
    app.key(KeyCode::Char('b'));
    assert_eq!(app.state.mode(), diff::keys::KNOBS);
    let row = knob_row(
        &app.state.panels.diff.as_ref().expect("diff").b.specs,
        "min_dwell",
    );
    app.down(row);
    let fx = app.key(KeyCode::Right);
    let jobs: Vec<&DiffJob> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Panel(PanelJob::Diff(j)) => Some(j),
            _ => None,
        })
        .collect();
    match jobs.as_slice() {
        [DiffJob::Replay { a, b, .. }] => {
            assert_eq!(
                b.knobs.get("min_dwell").map(|v| v.to_string()).as_deref(),
                Some("4")
            );
            assert_eq!(
                a.knobs.get("min_dwell").map(|v| v.to_string()).as_deref(),
                Some("5")
            );
        }
        other => panic!("expected one replay of both sides, got {other:?}"),
    }
    let gen = app.state.panels.diff.as_ref().expect("diff").gen;
    // Tab: A's knobs; a step there reruns too (a newer generation: latest wins).
    app.key(KeyCode::Tab);
    let fx = app.key(KeyCode::Left);
    assert!(fx
        .iter()
        .any(|e| matches!(e, Effect::Panel(PanelJob::Diff(DiffJob::Replay { .. })))));
    let d = app.state.panels.diff.as_ref().expect("diff");
    assert!(d.gen > gen && !d.pending && d.model.is_some());
    app.key(KeyCode::Esc);
    assert_eq!(app.state.mode(), diff::keys::BROWSE);
    // Esc closes diff mode; the main policy is untouched by diff-mode edits.
    app.key(KeyCode::Esc);
    assert_eq!(app.state.mode(), Mode::Main);
    assert!(app.state.panels.diff.is_none());
    assert_eq!(
        app.state
            .on_screen
            .policy
            .knobs
            .get("min_dwell")
            .map(|v| v.to_string())
            .as_deref(),
        Some("5")
    );
}

#[test]
fn a_stale_result_is_dropped() {
    let mut app = m1(80, 24);
    diff_with_age(&mut app);
    let d = app.state.panels.diff.as_ref().expect("diff");
    let (gen, model) = (d.gen, d.model.clone());
    // A result of an older generation arrives late: ignored.
    let fx = tierscope::tui::app::update(
        &mut app.state,
        tierscope::tui::app::Msg::from(tierscope::tui::diff::DiffMsg::Replayed {
            gen: gen - 1,
            result: Err("stale".into()),
        }),
    );
    assert!(fx.is_empty());
    let d = app.state.panels.diff.as_ref().expect("diff");
    assert!(d.error.is_none());
    assert!(std::sync::Arc::ptr_eq(
        d.model.as_ref().expect("model"),
        model.as_ref().expect("model")
    ));
}

/// The main screen's header says which trigger `opencode` ran: with a budget set it simulates
/// at it, without one it follows the recording (C1 compacted three times).
#[test]
fn the_header_says_which_trigger_opencode_ran() {
    for (budget, want) in [
        (
            Some(9_000),
            "opencode [simulate@9000: 8 compactions from req 6]",
        ),
        (None, "opencode [recorded: 3 compactions from req 13]"),
    ] {
        let app = open(sample("C1.json"), "dark", 160, 45, "opencode", budget);
        let buf = app.draw();
        let text = text(&buf);
        let header = text.lines().next().unwrap_or_default();
        assert!(header.contains(want), "{header}");
    }
}
