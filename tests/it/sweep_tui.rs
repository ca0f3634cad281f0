//! The explorer's sweep pane on a real recording (sample-traces/M1, `retention` at a budget of
//! 9,000): the mode's transitions driven key by key (open, choose knobs, type a range, run,
//! move, cancel, Enter loads the point's knobs into the main view and its replay reruns), and
//! snapshots of the setup form and the grid at 120×40 and 80×24, dark and mono.

use crate::tui_common;

use ratatui::crossterm::event::KeyCode;
use tierscope::tui::app::{update, Effect, Msg};
use tierscope::tui::jobs::run_sync;
use tierscope::tui::keymap::Mode;
use tierscope::tui::panels::{PanelId, PanelJob};
use tierscope::tui::sweep;
use tierscope::tui::sweep::{Phase, SweepState};
use tierscope_engine::policy::KnobValue;
use tui_common::*;

fn snap(name: &str, body: String) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/tui");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, body));
}

fn m1(theme: &str, w: u16, h: u16) -> App {
    open(sample("M1.json"), theme, w, h, "retention", Some(9000))
}

fn sw(app: &App) -> &SweepState {
    app.state.panels.sweep.as_deref().expect("sweep pane open")
}

fn num(app: &App, key: &str) -> f64 {
    match app.state.on_screen.policy.knobs.get(key) {
        Some(KnobValue::Num(v)) => *v,
        other => panic!("{key}: {other:?}"),
    }
}

/// Key presses, then what must hold.
type Step = (&'static str, Vec<KeyCode>, fn(&App));

fn keys(s: &str) -> Vec<KeyCode> {
    s.chars().map(KeyCode::Char).collect()
}

fn run_steps(app: &mut App, steps: Vec<Step>) {
    for (name, presses, check) in steps {
        for k in presses {
            app.key(k);
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(app)));
        if r.is_err() {
            panic!("step {name:?} failed");
        }
    }
}

#[test]
fn setup_form_chooses_knobs_ranges_and_metric() {
    let mut app = m1("dark", 120, 40);
    let steps: Vec<Step> = vec![
        (
            "S opens the setup form on demote_at × promote_at",
            keys("S"),
            |a| {
                assert_eq!(a.state.mode(), sweep::keys::SETUP);
                let s = sw(a);
                assert_eq!(s.x_knob().map(|k| k.name.as_str()), Some("demote_at"));
                assert_eq!(s.y_knob().map(|k| k.name.as_str()), Some("promote_at"));
                // Inside promote_at < target (0.75) < demote_at ≤ 1 (the budget): no point of
                // the default grid breaks the constraint or overflows by construction, and both
                // hold the current value.
                assert_eq!(s.x_axis.values(), vec![0.78, 0.82, 0.86, 0.9, 0.94, 0.98]);
                assert_eq!(
                    s.y_axis.values(),
                    vec![0.36, 0.42, 0.48, 0.54, 0.6, 0.66, 0.72]
                );
                assert_eq!(s.phase, Phase::Setup);
            },
        ),
        (
            "→ on the y row moves to the next knob, never x's",
            vec![KeyCode::Down, KeyCode::Right],
            |a| {
                let s = sw(a);
                let y = s.y_knob().map(|k| k.name.clone()).unwrap_or_default();
                assert_ne!(y, "promote_at");
                assert_ne!(y, "demote_at");
                assert_eq!(s.y_axis.key, y, "the range follows the knob");
            },
        ),
        ("← goes back", vec![KeyCode::Left], |a| {
            assert_eq!(sw(a).y_knob().map(|k| k.name.as_str()), Some("promote_at"));
        }),
        (
            "→ on the metric row cycles the metric",
            vec![KeyCode::Down, KeyCode::Right],
            |a| {
                assert_eq!(
                    sw(a).metric,
                    tierscope::tui::sweep::grid::Metric::Divergence
                );
            },
        ),
        (
            "e on the x row opens the range field with the range",
            vec![KeyCode::Up, KeyCode::Up, KeyCode::Char('e')],
            |a| {
                assert_eq!(a.state.mode(), sweep::keys::EDIT);
                assert_eq!(
                    sw(a).edit.as_ref().map(|e| e.0.as_str()),
                    Some("0.78:0.98:0.04")
                );
            },
        ),
        (
            "a range that goes nowhere is refused and stays open",
            {
                let mut v = vec![KeyCode::Backspace; 20];
                v.extend(keys("1:0.8:0.1"));
                v.push(KeyCode::Enter);
                v
            },
            |a| {
                let e = sw(a).edit.clone().expect("still editing");
                assert!(
                    e.1.as_deref().is_some_and(|m| m.contains("never gets")),
                    "{e:?}"
                );
            },
        ),
        (
            "a good range is taken",
            {
                let mut v = vec![KeyCode::Backspace; 20];
                v.extend(keys("0.8:1:0.1"));
                v.push(KeyCode::Enter);
                v
            },
            |a| {
                assert_eq!(a.state.mode(), sweep::keys::SETUP);
                assert_eq!(sw(a).x_axis.values(), vec![0.8, 0.9, 1.0]);
            },
        ),
        (
            "Esc without a grid closes the pane; the main view is untouched",
            vec![KeyCode::Esc],
            |a| {
                assert!(a.state.panels.sweep.is_none());
                assert_eq!(a.state.mode(), Mode::Main);
            },
        ),
    ];
    run_steps(&mut app, steps);
}

#[test]
fn the_grid_runs_moves_and_enter_loads_the_point_into_the_main_view() {
    let mut app = m1("dark", 120, 40);
    assert_eq!(
        (num(&app, "demote_at"), num(&app, "promote_at")),
        (0.9, 0.6)
    );
    let gen_before = app.state.on_screen.gen;
    let steps: Vec<Step> = vec![
        (
            "Enter runs the 7×6 grid, every point valid",
            vec![KeyCode::Char('S'), KeyCode::Enter],
            |a| {
                assert_eq!(a.state.mode(), sweep::keys::GRID);
                let s = sw(a);
                assert_eq!(s.phase, Phase::Grid);
                let g = s.grid.as_ref().expect("grid");
                assert_eq!((g.rows(), g.cols()), (7, 6));
                assert_eq!(g.result.valid(), 42);
                assert!(g.result.points.iter().any(|p| p.pareto));
                // The current knobs (0.9, 0.6) are on the grid, and the selection starts there.
                assert_eq!(g.current, Some((4, 3)));
                assert_eq!(s.sel, (4, 3));
            },
        ),
        (
            "arrows move and stop at the edges",
            {
                let mut v = vec![KeyCode::Right; 7];
                v.push(KeyCode::Up);
                v
            },
            |a| {
                assert_eq!(sw(a).sel, (3, 5));
            },
        ),
        ("m recolours without rerunning", keys("m"), |a| {
            let s = sw(a);
            assert_eq!(s.metric, tierscope::tui::sweep::grid::Metric::Divergence);
            assert_eq!(s.phase, Phase::Grid);
        }),
        (
            "a typed range across target: its points are kept as invalid, with the reason",
            {
                let mut v = vec![KeyCode::Char('s'), KeyCode::Char('e')];
                v.extend([KeyCode::Backspace; 20]);
                v.extend(keys("0.6:1:0.1"));
                v.extend([KeyCode::Enter, KeyCode::Enter]);
                v
            },
            |a| {
                let s = sw(a);
                let g = s.grid.as_ref().expect("grid");
                assert_eq!((g.rows(), g.cols()), (7, 5));
                // demote_at 0.6 and 0.7 are below target 0.75.
                assert_eq!(g.result.valid(), 21);
                assert!(!g.result.at(&[0, 0]).expect("cell").is_valid());
                assert!(g.reasons[0]
                    .as_deref()
                    .is_some_and(|r| r.contains("promote_at < target < demote_at")));
                assert_eq!(g.current, Some((4, 3)));
            },
        ),
        (
            "Enter on an invalid point explains and stays",
            vec![KeyCode::Home, KeyCode::Enter],
            |a| {
                assert!(a.state.panels.sweep.is_some());
                let (msg, _) = a.state.flash.clone().expect("flash");
                assert!(msg.contains("invalid"), "{msg}");
            },
        ),
        (
            "Enter on a valid point loads its knobs and returns",
            {
                let mut v = vec![KeyCode::Down, KeyCode::Down];
                v.extend([KeyCode::Right; 2]);
                v.push(KeyCode::Enter);
                v
            },
            |a| {
                assert!(a.state.panels.sweep.is_none());
                assert_eq!(a.state.mode(), Mode::Main);
                assert_eq!((num(a, "demote_at"), num(a, "promote_at")), (0.8, 0.48));
            },
        ),
    ];
    run_steps(&mut app, steps);
    // The main view's replay reran with the loaded knobs.
    assert!(app.state.on_screen.gen > gen_before);
    assert!(!app.state.on_screen.pending);
    assert!(app.state.on_screen.replay.is_some());
    // The knobs panel of the main view shows the loaded values.
    app.key(KeyCode::Char('K'));
    let t = text(&app.draw());
    let row = |name: &str| {
        t.lines()
            .find(|l| l.contains(name) && l.contains('├'))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(row("demote_at").contains("0.8"), "{t}");
    assert!(row("promote_at").contains("0.48"), "{t}");
    app.key(KeyCode::Esc);
    // Diff mode offers the knobs before the sweep as the baseline.
    let before = app.state.on_screen.baseline.as_ref().expect("baseline");
    assert_eq!(
        before.policy.knobs.get("demote_at"),
        Some(&KnobValue::Num(0.9))
    );
}

#[test]
fn esc_cancels_a_running_sweep_and_its_late_result_is_ignored() {
    let mut app = m1("dark", 80, 24);
    app.key(KeyCode::Char('S'));
    // Enter without running the worker: the job is handed out and the pane waits.
    let fx = update(
        &mut app.state,
        Msg::Key(ratatui::crossterm::event::KeyEvent::from(KeyCode::Enter)),
    );
    let job = match fx.as_slice() {
        [Effect::Panel(PanelJob::Sweep(j))] => j.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        Effect::from(job.clone()).job_key(),
        Some(tierscope::tui::app::JobKey::Panel(PanelId::Sweep, 0))
    );
    assert_eq!(sw(&app).phase, Phase::Running { done: 0, total: 42 });
    let buf = app.draw();
    assert!(text(&buf).contains("0 of 42 points done"), "{}", text(&buf));
    assert_inert(&buf);
    snap("sweep_running_dark_80x24", styled(&buf));
    app.key(KeyCode::Esc);
    assert!(job.cancel.is_cancelled(), "the worker is told to stop");
    assert_eq!(sw(&app).phase, Phase::Setup);
    // The worker stops between rows and answers; the answer is stale and changes nothing.
    run_sync(&mut app.state, &mut app.worker, vec![Effect::from(job)]);
    let s = sw(&app);
    assert_eq!(s.phase, Phase::Setup);
    assert!(s.grid.is_none());
}

#[test]
fn snapshots() {
    for (theme, w, h) in [
        ("dark", 160, 45),
        ("dark", 120, 40),
        ("dark", 80, 24),
        ("mono", 120, 40),
        ("mono", 80, 24),
    ] {
        let mut app = m1(theme, w, h);
        app.key(KeyCode::Char('S'));
        let buf = app.draw();
        assert_inert(&buf);
        snap(&format!("sweep_setup_{theme}_{w}x{h}"), styled(&buf));
        app.key(KeyCode::Enter);
        // A valid point next to the current one.
        app.key(KeyCode::Right);
        let buf = app.draw();
        assert_inert(&buf);
        let t = text(&buf);
        assert!(t.contains("demote_at = 0.94"), "{t}");
        assert!(t.contains("best") && t.contains("worst"), "legend: {t}");
        assert!(t.contains('×') && t.contains('*') && t.contains('●'), "{t}");
        snap(&format!("sweep_grid_{theme}_{w}x{h}"), styled(&buf));
    }
}

#[test]
fn the_selection_reads_without_colour() {
    let mut app = m1("mono", 80, 24);
    app.key(KeyCode::Char('S'));
    app.key(KeyCode::Enter);
    // Reversed cells below the header and above the status bar: the selected cell and its
    // row and column labels. Moving the selection moves them.
    let reversed = |app: &App| -> Vec<(u16, u16)> {
        let buf = app.draw();
        let mut v = Vec::new();
        for y in 1..buf.area.height - 1 {
            for x in 0..buf.area.width {
                if buf[(x, y)]
                    .modifier
                    .contains(ratatui::style::Modifier::REVERSED)
                {
                    v.push((x, y));
                }
            }
        }
        v
    };
    let before = reversed(&app);
    assert!(before.len() > 9, "{before:?}");
    app.key(KeyCode::Right);
    let after = reversed(&app);
    assert!(after.len() > 9, "{after:?}");
    assert_ne!(before, after, "the selection must move without colour");
}
