//! Table-driven tests of the explorer's `update`: keys, knob changes (stepped, typed, refused,
//! latest-wins), search, drilling into a sub-agent and back, saving a policy, copying, mouse.
//! On the real M1 recording (sample-traces), effects run inline through the same worker code.

use crate::tui_common;

use ratatui::crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use tierscope::tui::app::{update, Effect, InputPurpose, Msg, Overlay, Pane};
use tierscope::tui::jobs::run_sync;
use tierscope::tui::widgets::chart::ChartKind;
use tierscope_engine::policy::KnobValue;
use tui_common::*;

fn m1() -> App {
    open_m1("dark", 120, 40)
}

fn num(app: &App, knob: &str) -> f64 {
    match app.state.policy.knobs.get(knob) {
        Some(KnobValue::Num(v)) => *v,
        other => panic!("{knob}: {other:?}"),
    }
}

/// Opens the knobs panel with `knob` selected.
fn knobs_at(app: &mut App, knob: &str) {
    let row = app.knobs_at(knob);
    assert_eq!(app.state.overlay, Overlay::Knobs { selected: row });
}

fn type_value(app: &mut App, text: &str) {
    app.key(KeyCode::Enter);
    while app.state.input.as_ref().is_some_and(|i| !i.text.is_empty()) {
        app.key(KeyCode::Backspace);
    }
    app.keys(text);
    app.key(KeyCode::Enter);
}

#[test]
fn main_screen_keys() {
    type Check = fn(&App) -> bool;
    let first_change = |a: &App| {
        let r = a
            .state
            .replay
            .as_ref()
            .map(|r| r.change_requests.clone())
            .unwrap_or_default();
        !r.is_empty() && a.state.cursor == r[0]
    };
    let cases: Vec<(&str, Vec<KeyCode>, Check)> = vec![
        ("l steps", vec![KeyCode::Char('l')], |a| a.state.cursor == 1),
        ("→ steps", vec![KeyCode::Right, KeyCode::Right], |a| {
            a.state.cursor == 2
        }),
        ("h stops at 0", vec![KeyCode::Char('h')], |a| {
            a.state.cursor == 0
        }),
        ("L jumps 10", vec![KeyCode::Char('L')], |a| {
            a.state.cursor == 10
        }),
        ("G to the end", vec![KeyCode::Char('G')], |a| {
            a.state.cursor == a.state.requests() - 1
        }),
        ("End then Home", vec![KeyCode::End, KeyCode::Home], |a| {
            a.state.cursor == 0
        }),
        (
            "l past the end",
            vec![KeyCode::End, KeyCode::Char('l')],
            |a| a.state.cursor == a.state.requests() - 1,
        ),
        (
            "c to the first change",
            vec![KeyCode::Char('c')],
            first_change,
        ),
        ("f to a hold", vec![KeyCode::Char('f')], |a| {
            a.state
                .replay
                .as_ref()
                .is_some_and(|r| r.hold_requests.contains(&a.state.cursor))
        }),
        ("u to the next user turn", vec![KeyCode::Char('u')], |a| {
            a.state
                .session
                .as_ref()
                .is_some_and(|s| s.model.user_turns.contains(&a.state.cursor))
                && a.state.cursor > 0
        }),
        (
            "j selects the next episode",
            vec![KeyCode::Char('j')],
            |a| a.state.selected == 1,
        ),
        (
            "↓↓↑",
            vec![KeyCode::Down, KeyCode::Down, KeyCode::Up],
            |a| a.state.selected == 1,
        ),
        ("k stops at 0", vec![KeyCode::Char('k')], |a| {
            a.state.selected == 0
        }),
        ("? opens help", vec![KeyCode::Char('?')], |a| {
            matches!(a.state.overlay, Overlay::Help { .. })
        }),
        (
            "? then Esc closes it",
            vec![KeyCode::Char('?'), KeyCode::Esc],
            |a| a.state.overlay == Overlay::None && !a.state.quit,
        ),
        ("K opens knobs", vec![KeyCode::Char('K')], |a| {
            a.state.overlay == Overlay::Knobs { selected: 0 }
        }),
        ("p opens policies", vec![KeyCode::Char('p')], |a| {
            matches!(a.state.overlay, Overlay::Policies { .. })
        }),
        ("/ opens search", vec![KeyCode::Char('/')], |a| {
            a.state
                .input
                .as_ref()
                .is_some_and(|i| i.purpose == InputPurpose::Search)
        }),
        ("Tab moves focus", vec![KeyCode::Tab], |a| {
            a.state.focus == Pane::Episodes
        }),
        ("z zooms in", vec![KeyCode::Char('z')], |a| {
            a.state.zoom.is_some()
        }),
        ("v shows cost", vec![KeyCode::Char('v')], |a| {
            a.state.chart == ChartKind::Cost
        }),
        ("Space plays", vec![KeyCode::Char(' ')], |a| a.state.playing),
        ("+ speeds up", vec![KeyCode::Char('+')], |a| {
            a.state.speed == 3
        }),
        ("] shows another tier", vec![KeyCode::Char(']')], |a| {
            a.state.detail_tier.is_some()
        }),
        ("q quits", vec![KeyCode::Char('q')], |a| a.state.quit),
        ("Esc quits", vec![KeyCode::Esc], |a| a.state.quit),
    ];
    for (name, keys, check) in cases {
        let mut app = m1();
        for k in keys {
            app.key(k);
        }
        assert!(check(&app), "case {name:?} failed");
    }
    let mut app = m1();
    app.key_mod(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(app.state.quit, "Ctrl-C quits");
}

#[test]
fn play_advances_on_ticks_and_stops_at_the_end() {
    let mut app = m1();
    app.key(KeyCode::Char(' '));
    assert!(app.state.tick_interval_ms().is_some());
    for _ in 0..3 {
        let fx = update(&mut app.state, Msg::Tick);
        run_sync(&mut app.state, &mut app.worker, fx);
    }
    assert_eq!(app.state.cursor, 3);
    app.key(KeyCode::End);
    let fx = update(&mut app.state, Msg::Tick);
    run_sync(&mut app.state, &mut app.worker, fx);
    assert!(!app.state.playing);
    // Idle: no ticks at all.
    assert_eq!(app.state.tick_interval_ms(), None);
}

#[test]
fn knob_steps_rerun_the_replay() {
    let cases: Vec<(&str, KeyCode, f64)> = vec![
        ("demote_at", KeyCode::Right, 0.91),
        ("demote_at", KeyCode::Left, 0.89),
        ("demote_at", KeyCode::Char('H'), 0.80),
        ("min_dwell", KeyCode::Right, 4.0),
        ("promote_at", KeyCode::Left, 0.59),
    ];
    for (knob, key, want) in cases {
        let mut app = m1();
        knobs_at(&mut app, knob);
        let gen = app.state.replay_gen;
        let fx = app.key(key);
        assert!(
            fx.iter()
                .any(|e| matches!(e, Effect::Replay { gen: g, .. } if *g == gen + 1)),
            "{knob}: no replay effect"
        );
        assert!(
            (num(&app, knob) - want).abs() < 1e-9,
            "{knob}: {}",
            num(&app, knob)
        );
        assert!(
            !app.state.replay_pending,
            "{knob}: replay did not come back"
        );
    }
}

#[test]
fn a_tighter_knob_changes_the_schedule() {
    let mut app = m1();
    let before = app.state.replay.as_ref().map(|r| r.change_requests.clone());
    knobs_at(&mut app, "demote_at");
    type_value(&mut app, "1.5");
    assert_eq!(num(&app, "demote_at"), 1.5);
    let after = app.state.replay.as_ref().map(|r| r.change_requests.clone());
    assert_ne!(
        before, after,
        "demote_at 1.5 (above the budget) should change the schedule"
    );
}

#[test]
fn typed_values_are_checked() {
    // Not a number: the field stays open with the reason.
    let mut app = m1();
    knobs_at(&mut app, "demote_at");
    type_value(&mut app, "abc");
    assert!(app.state.input.as_ref().is_some_and(|i| i.error.is_some()));
    assert_eq!(num(&app, "demote_at"), 0.9);
    app.key(KeyCode::Esc);
    assert!(app.state.input.is_none());
    // Violates promote_at < target < demote_at: refused.
    let mut app = m1();
    knobs_at(&mut app, "promote_at");
    type_value(&mut app, "0.8");
    assert!(app.state.input.as_ref().is_some_and(|i| i.error.is_some()));
    assert_eq!(num(&app, "promote_at"), 0.6);
    // Budget row: typed, then stepped, then reset.
    let mut app = m1();
    app.key(KeyCode::Char('K'));
    type_value(&mut app, "20,000");
    assert_eq!(app.state.budget, Some(20_000));
    app.key(KeyCode::Right);
    assert_eq!(app.state.budget, Some(21_000));
    app.key(KeyCode::Char('r'));
    assert_eq!(app.state.budget, None);
    assert!(app.state.replay.as_ref().is_some_and(|r| r.budget > 21_000));
}

#[test]
fn latest_replay_wins() {
    let mut app = m1();
    knobs_at(&mut app, "demote_at");
    let g0 = app.state.replay_gen;
    // Two steps before any job runs: the first result must be ignored.
    let fx1 = update(&mut app.state, Msg::Key(key(KeyCode::Right)));
    let fx2 = update(&mut app.state, Msg::Key(key(KeyCode::Right)));
    assert_eq!(app.state.replay_gen, g0 + 2);
    let old = app.state.replay.clone();
    run_sync(&mut app.state, &mut app.worker, fx1);
    assert!(app.state.replay_pending, "a stale replay was taken");
    assert!(std::sync::Arc::ptr_eq(
        old.as_ref().unwrap_or_else(|| panic!("no replay")),
        app.state
            .replay
            .as_ref()
            .unwrap_or_else(|| panic!("no replay"))
    ));
    run_sync(&mut app.state, &mut app.worker, fx2);
    assert!(!app.state.replay_pending);
    assert!((num(&app, "demote_at") - 0.92).abs() < 1e-9);
}

fn key(code: KeyCode) -> ratatui::crossterm::event::KeyEvent {
    ratatui::crossterm::event::KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn switch_policy() {
    let mut app = m1();
    app.key(KeyCode::Char('p'));
    let Overlay::Policies { selected } = app.state.overlay else {
        panic!("no policy list")
    };
    let full = app
        .state
        .policy_names
        .iter()
        .position(|n| n == "full")
        .unwrap_or(0);
    for _ in full..selected {
        app.key(KeyCode::Up);
    }
    app.key(KeyCode::Enter);
    assert_eq!(app.state.policy.name, "full");
    let r = app
        .state
        .replay
        .as_ref()
        .unwrap_or_else(|| panic!("no replay"));
    assert!(r.change_requests.is_empty(), "full never changes a tier");
}

#[test]
fn search_selects_matches() {
    let mut app = m1();
    app.key(KeyCode::Char('/'));
    app.keys("cfgkit");
    app.key(KeyCode::Enter);
    let matches = app.state.search_matches();
    assert!(!matches.is_empty());
    assert_eq!(app.state.selected, matches[0]);
    app.key(KeyCode::Char('n'));
    if matches.len() > 1 {
        assert_eq!(app.state.selected, matches[1]);
    }
}

#[test]
fn drill_into_the_sub_agent_and_back() {
    let mut app = m1();
    app.key(KeyCode::Char('L'));
    let parent = app.state.session.as_ref().map(|s| s.model.id.clone());
    let (ep, child) = app
        .state
        .session
        .as_ref()
        .and_then(|s| {
            s.model
                .episodes
                .iter()
                .enumerate()
                .find_map(|(i, e)| e.children.first().map(|c| (i, c.clone())))
        })
        .unwrap_or_else(|| panic!("M1 has a sub-agent"));
    while app.state.selected < ep {
        app.key(KeyCode::Down);
    }
    app.key(KeyCode::Enter);
    assert_eq!(
        app.state.session.as_ref().map(|s| s.model.id.clone()),
        Some(child)
    );
    assert_eq!(app.state.stack.len(), 1);
    assert!(app.state.replay.is_some());
    app.key(KeyCode::Backspace);
    assert_eq!(
        app.state.session.as_ref().map(|s| s.model.id.clone()),
        parent
    );
    assert!(app.state.stack.is_empty());
    assert_eq!(app.state.cursor, 10, "the parent's cursor comes back");
}

#[test]
fn save_knobs_as_a_policy_file_that_loads_back() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("tuned.toml");
    let mut app = m1();
    knobs_at(&mut app, "demote_at");
    app.key(KeyCode::Left);
    app.key(KeyCode::Char('w'));
    let input = app
        .state
        .input
        .as_mut()
        .unwrap_or_else(|| panic!("no file field"));
    input.text = path.display().to_string();
    app.key(KeyCode::Enter);
    let p = tierscope_engine::policy::load(&path.display().to_string(), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.kind, app.state.policy.kind);
    assert_eq!(p.knobs, app.state.policy.knobs);
}

#[test]
fn copy_sends_the_shown_tier_text() {
    let mut app = m1();
    let fx = app.key(KeyCode::Char('y'));
    let text = fx.iter().find_map(|e| match e {
        Effect::Copy(t) => Some(t.clone()),
        _ => None,
    });
    let want = app.state.session.as_ref().and_then(|s| {
        s.model.episodes[0]
            .tier_text(tierscope_engine::episode::model::Tier::Full)
            .map(|t| t.lines.join("\n"))
    });
    assert!(text.is_some());
    assert_eq!(text, want);
}

#[test]
fn mouse_click_on_the_heatmap_moves_cursor_and_selection() {
    let mut app = m1();
    let r = app.state.main_rects();
    let vp = app.state.viewport();
    let x = r.heat_cells.x + (5 * vp.col_w) as u16;
    let y = r.heat_cells.y + 1;
    let fx = update(
        &mut app.state,
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: x,
            row: y,
            modifiers: KeyModifiers::NONE,
        }),
    );
    run_sync(&mut app.state, &mut app.worker, fx);
    assert_eq!(app.state.cursor, 5);
    assert_eq!(app.state.selected, 1);
}

#[test]
fn start_options_place_cursor_and_selection() {
    use tierscope::tui::app::{StartOptions, State};
    use tierscope::tui::jobs::Worker;
    use tierscope_engine::loaded::LoadOptions;
    let policy = tierscope_engine::policy::load("retention", &[]).unwrap_or_else(|e| panic!("{e}"));
    let start = StartOptions {
        at: Some(7),
        episode: Some("E2".to_owned()),
        play: true,
        ..StartOptions::default()
    };
    let mut state = State::new(theme("dark"), policy, None, start);
    let mut worker = Worker::new(LoadOptions {
        path: Some(sample("M1.json")),
        ..LoadOptions::default()
    });
    run_sync(
        &mut state,
        &mut worker,
        vec![Effect::LoadSession { id: None }],
    );
    assert_eq!(state.cursor, 7);
    assert_eq!(state.selected, 2);
    assert!(state.playing);
    assert_eq!(state.context.as_ref().map(|c| c.request), Some(7));
}

#[test]
fn a_session_without_requests_shows_an_empty_state_not_an_error() {
    // M1 cut to its first message: a human turn the model has not answered yet.
    let json = std::fs::read_to_string(sample("M1.json")).unwrap_or_else(|e| panic!("{e}"));
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    let messages = doc["messages"].as_array_mut().expect("messages");
    messages.truncate(1);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("zero.json");
    std::fs::write(&path, doc.to_string()).unwrap_or_else(|e| panic!("{e}"));

    let mut app = open(path, "dark", 80, 24, "retention", None);
    assert_eq!(app.state.requests(), 0);
    assert!(app.state.flash.is_none(), "{:?}", app.state.flash);
    assert!(app.state.context.is_none() && !app.state.context_pending);
    // Stepping and diff mode have nothing to act on; neither asks for a context.
    for c in ['l', 'G', 'd'] {
        let fx = app.key(KeyCode::Char(c));
        assert!(
            !fx.iter().any(|e| matches!(e, Effect::Context { .. })),
            "{c}: {fx:?}"
        );
    }
    assert!(app.state.diff.is_none());
    let screen = text(&app.draw());
    assert!(screen.contains("no requests yet"), "{screen}");
    assert!(
        screen.contains("No requests yet: OpenCode records one"),
        "{screen}"
    );
    assert!(!screen.contains("out of range"), "{screen}");
}

#[test]
fn help_pages_and_stops_at_its_end() {
    let mut app = m1();
    app.key(KeyCode::Char('?'));
    let (page, max) = tierscope::tui::ui::help::page_and_max_scroll(&app.state);
    assert!(
        max > page,
        "the help should be longer than a page at 120x40"
    );
    app.key(KeyCode::PageDown);
    assert_eq!(app.state.overlay, Overlay::Help { scroll: page });
    app.key(KeyCode::End);
    assert_eq!(app.state.overlay, Overlay::Help { scroll: max });
    // Past the end nothing moves, so one ↑ is always one line back.
    app.key(KeyCode::Down);
    app.key(KeyCode::Up);
    assert_eq!(app.state.overlay, Overlay::Help { scroll: max - 1 });
    app.key(KeyCode::Home);
    assert_eq!(app.state.overlay, Overlay::Help { scroll: 0 });
    // W (follow) is listed, as every key is.
    let text: String = tierscope::tui::ui::help::lines(&app.state)
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
                + "\n"
        })
        .collect();
    assert!(
        text.contains("  W ") && text.contains("follow the session live"),
        "{text}"
    );
}
