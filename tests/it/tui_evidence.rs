//! Issue 35, items 1–4 on sample-traces/M1: the evidence is read whole (long lines wrap in the
//! context, detail and diff panes, maximised and expanded too, and the 80×24 context is
//! reachable), the heatmap's marks are the engine's counters cell for cell, there is one
//! baseline (named with its budget, in the metrics strip and in diff mode), and the pressure
//! chart keeps the budget band legible.

use crate::tui_common;

use ratatui::crossterm::event::KeyCode;
use tierscope::tui::main::Pane;
use tierscope::tui::view_model::cell;
use tui_common::*;

/// M1 under the knobs (`boundary=request`, `min_dwell=0`, demote 0.76 / promote 0.74,
/// no wait after a demotion: `promote_after=0`)
/// at a budget of 12,000: several reversals, most of them not back to the same tier.
fn reversing(w: u16, h: u16) -> App {
    let mut app = open_m1("dark", w, h);
    let p = tierscope_engine::policy::load(
        "retention",
        &[
            ("boundary".to_owned(), "request".to_owned()),
            ("min_dwell".to_owned(), "0".to_owned()),
            ("demote_at".to_owned(), "0.76".to_owned()),
            ("promote_at".to_owned(), "0.74".to_owned()),
            ("promote_after".to_owned(), "0".to_owned()),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut fx = Vec::new();
    tierscope::tui::knobs::update(&mut app.state, &mut fx, |_, env, out| {
        env.set_budget(Some(12_000), out);
        env.set_policy(p, out);
    });
    settle(&mut app.state, &mut app.worker, fx);
    app
}

fn cells_with(app: &App, bit: u8) -> u64 {
    let r = app.state.on_screen.replay.as_ref().expect("replay");
    r.grid.cells_with(bit)
}

#[test]
fn every_mark_is_a_counted_engine_fact() {
    let app = reversing(160, 45);
    let r = app.state.on_screen.replay.clone().expect("replay");
    let t = r.totals;
    assert!(t.thrash >= 2, "the knobs make the schedule reverse: {t:?}");
    // One `!` per thrash the engine counted, at the requests it counted them.
    assert_eq!(cells_with(&app, cell::THRASH), t.thrash);
    for (i, f) in r.frames.iter().enumerate() {
        let marks = (0..r.grid.rows)
            .filter(|&e| r.grid.get(e, i) & cell::THRASH != 0)
            .count();
        assert_eq!(marks, f.thrash, "request {i}");
        let held = (0..r.grid.rows)
            .filter(|&e| r.grid.get(e, i) & cell::HOLD != 0)
            .count();
        assert_eq!(held, f.holds, "request {i}");
    }
    // `⊥` and `…` are (episode, request) pairs, as Σ hold and Σ wait count them.
    assert_eq!(cells_with(&app, cell::HOLD), t.holds);
    assert_eq!(cells_with(&app, cell::DEFERRED), t.deferrals);
    let screen = text(&app.draw());
    let run = screen
        .lines()
        .find(|l| l.starts_with(" run "))
        .unwrap_or_default();
    assert!(
        run.contains(" thrash ") && run.contains(&format!("→{} emerg", t.thrash)),
        "{screen}"
    );
    assert!(screen.contains("ep·req"), "the unit is said: {screen}");
    // The detail's holds are the same fact: one per held request.
    let held: usize = r.holds_of.iter().map(Vec::len).sum();
    assert_eq!(held as u64, t.holds);
    snap("thrash_marks_dark_160x45", styled(&app.draw()));
}

#[test]
fn one_baseline_with_its_budget_in_the_strip_and_in_diff_mode() {
    let mut app = reversing(160, 45);
    let base = app.state.on_screen.baseline.clone().expect("baseline");
    assert_eq!(base.shown_budget, 9000);
    assert_eq!(base.name(), "retention @ 9,000");
    let screen = text(&app.draw());
    assert!(screen.contains("baseline retention @ 9,000"), "{screen}");
    // Diff mode offers the same baseline first, and runs it at its own budget.
    app.key(KeyCode::Char('d'));
    let (list, sel) = app
        .state
        .panels
        .diff
        .as_ref()
        .and_then(|d| d.picker.clone())
        .expect("chooser");
    assert_eq!(sel, 0);
    assert!(list[0].label.contains("retention @ 9,000"), "{:?}", list[0]);
    app.key(KeyCode::Enter);
    let d = app.state.panels.diff.as_ref().expect("diff");
    assert_eq!((d.budget, d.budget_b), (Some(12_000), Some(9000)));
    let m = d.model.clone().expect("model");
    assert_eq!((m.budget, m.budget_b), (12_000, 9000));
    let screen = text(&app.draw());
    assert!(screen.contains("budget A 12,000 · B 9,000"), "{screen}");
    snap("diff_baseline_dark_160x45", styled(&app.draw()));
}

/// Every line of the pane's text between its borders, joined as read (wrapped lines joined).
fn pane_text(buf: &ratatui::buffer::Buffer, area: ratatui::layout::Rect) -> String {
    let mut out = String::new();
    for y in area.y + 1..area.bottom().saturating_sub(1) {
        for x in area.x + 1..area.right().saturating_sub(1) {
            out.push_str(buf[(x, y)].symbol());
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn long_lines_wrap_in_the_context_maximised_and_expanded() {
    let mut app = open_m1("dark", 160, 45);
    app.key(KeyCode::End);
    app.key(KeyCode::Tab);
    app.key(KeyCode::Tab);
    assert_eq!(app.state.main.focus, Pane::Context);
    app.key(KeyCode::Char('e'));
    app.key(KeyCode::Char('+'));
    let c = app.context();
    let area = app.state.geometry.main.context;
    let inner = usize::from(area.width - 2);
    // A line longer than the pane, read whole across its rows.
    let long = c
        .lines
        .iter()
        .map(|(_, l)| l.trim())
        .find(|l| l.chars().count() > inner + 10 && !l.contains("  "))
        .expect("a long line")
        .to_owned();
    while app.state.main.context.scroll > 0 {
        app.key(KeyCode::PageUp);
    }
    let mut found = false;
    for _ in 0..40 {
        let buf = app.draw();
        let shown = pane_text(&buf, app.state.geometry.main.context);
        if shown.contains(&long.split_whitespace().collect::<Vec<_>>().join(" ")) {
            found = true;
            snap("context_wrapped_dark_160x45", styled(&buf));
            break;
        }
        app.key(KeyCode::PageDown);
    }
    assert!(found, "never shown whole: {long}");
    // `E` clips again (and says so); `E` wraps back.
    app.key(KeyCode::Char('E'));
    assert!(app.state.main.context.clip);
    assert!(text(&app.draw()).contains("clipped (E)"));
    app.key(KeyCode::Char('E'));
    assert!(!app.state.main.context.clip);
}

#[test]
fn at_80x24_the_context_stays_once_shown_and_the_border_says_how_to_reach_it() {
    let mut app = open_m1("dark", 80, 24);
    app.key(KeyCode::End);
    let screen = text(&app.draw());
    assert!(screen.contains("context: Tab Tab"), "{screen}");
    app.key(KeyCode::Tab);
    app.key(KeyCode::Tab);
    app.draw();
    assert!(app.state.geometry.main.context.area() > 0);
    // The focus moves back to the heatmap: the context stays on screen.
    app.key(KeyCode::BackTab);
    app.key(KeyCode::BackTab);
    assert_eq!(app.state.main.focus, Pane::Heatmap);
    let buf = app.draw();
    assert!(app.state.geometry.main.context.area() > 0);
    let screen = text(&buf);
    assert!(screen.contains("detail: S-Tab"), "{screen}");
    snap("context_shared_dark_80x24", styled(&buf));
}

#[test]
fn the_chart_scales_to_the_budget_band_and_marks_what_is_off_it() {
    // At 2,000 the recorded prompts (up to 11k) dwarf the budget.
    let mut app = open(sample("M1.json"), "dark", 80, 24, "retention", Some(2000));
    app.key(KeyCode::End);
    let r = app.state.on_screen.replay.clone().expect("replay");
    assert!(r.y_max <= 3150, "{}", r.y_max);
    let screen = text(&app.draw());
    assert!(screen.contains("off scale"), "{screen}");
    snap("chart_band_dark_80x24", styled(&app.draw()));
}
