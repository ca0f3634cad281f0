//! Table-driven tests of the explorer's `update`: keys, knob changes (stepped, typed, refused,
//! latest-wins), search, drilling into a sub-agent and back, saving a policy, copying, mouse.
//! On the real M1 recording (sample-traces), effects run inline through the same worker code.

use crate::tui_common;

use ratatui::crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use tierscope::tui::app::{update, Confirm, Effect, InputPurpose, Msg, Overlay};
use tierscope::tui::jobs::run_sync;
use tierscope::tui::main::Pane;
use tierscope::tui::widgets::chart::ChartKind;
use tierscope_engine::policy::KnobValue;
use tui_common::*;

fn m1() -> App {
    open_m1("dark", 120, 40)
}

fn num(app: &App, knob: &str) -> f64 {
    match app.state.on_screen.policy.knobs.get(knob) {
        Some(KnobValue::Num(v)) => *v,
        other => panic!("{knob}: {other:?}"),
    }
}

/// Opens the knobs panel with `knob` selected.
fn knobs_at(app: &mut App, knob: &str) {
    let row = app.knobs_at(knob);
    assert_eq!(app.state.knobs.panel, Some(row));
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
            .on_screen
            .replay
            .as_ref()
            .map(|r| r.change_requests.clone())
            .unwrap_or_default();
        !r.is_empty() && a.state.main.cursor == r[0]
    };
    let cases: Vec<(&str, Vec<KeyCode>, Check)> = vec![
        ("l steps", vec![KeyCode::Char('l')], |a| {
            a.state.main.cursor == 1
        }),
        ("→ steps", vec![KeyCode::Right, KeyCode::Right], |a| {
            a.state.main.cursor == 2
        }),
        ("h stops at 0", vec![KeyCode::Char('h')], |a| {
            a.state.main.cursor == 0
        }),
        ("L jumps 10", vec![KeyCode::Char('L')], |a| {
            a.state.main.cursor == 10
        }),
        ("G to the end", vec![KeyCode::Char('G')], |a| {
            a.state.main.cursor == a.state.requests() - 1
        }),
        ("End then Home", vec![KeyCode::End, KeyCode::Home], |a| {
            a.state.main.cursor == 0
        }),
        (
            "l past the end",
            vec![KeyCode::End, KeyCode::Char('l')],
            |a| a.state.main.cursor == a.state.requests() - 1,
        ),
        (
            "c to the first change",
            vec![KeyCode::Char('c')],
            first_change,
        ),
        ("f to a hold", vec![KeyCode::Char('f')], |a| {
            a.state
                .on_screen
                .replay
                .as_ref()
                .is_some_and(|r| r.hold_requests.contains(&a.state.main.cursor))
        }),
        ("u to the next user turn", vec![KeyCode::Char('u')], |a| {
            a.state
                .session
                .as_ref()
                .is_some_and(|s| s.model.user_turns.contains(&a.state.main.cursor))
                && a.state.main.cursor > 0
        }),
        (
            "j selects the next episode",
            vec![KeyCode::Char('j')],
            |a| a.state.main.selected == 1,
        ),
        (
            "↓↓↑",
            vec![KeyCode::Down, KeyCode::Down, KeyCode::Up],
            |a| a.state.main.selected == 1,
        ),
        ("k stops at 0", vec![KeyCode::Char('k')], |a| {
            a.state.main.selected == 0
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
            a.state.knobs.panel == Some(0)
        }),
        ("p opens policies", vec![KeyCode::Char('p')], |a| {
            a.state.knobs.policies.is_some()
        }),
        ("/ opens search", vec![KeyCode::Char('/')], |a| {
            a.state
                .input
                .as_ref()
                .is_some_and(|i| i.purpose == InputPurpose::Search)
        }),
        ("Tab moves focus", vec![KeyCode::Tab], |a| {
            a.state.main.focus == Pane::Episodes
        }),
        ("z zooms in", vec![KeyCode::Char('z')], |a| {
            a.state
                .main
                .heat
                .span
                .is_some_and(|s| s < a.state.requests())
        }),
        (
            "z then Z fits the session again",
            vec![KeyCode::Char('z'), KeyCode::Char('Z')],
            |a| a.state.main.heat.span.is_none(),
        ),
        (
            "+ maximises the focused pane",
            vec![KeyCode::Char('+')],
            |a| a.state.main.maximized,
        ),
        (
            "+ then Esc restores",
            vec![KeyCode::Char('+'), KeyCode::Esc],
            |a| !a.state.main.maximized && !a.state.quit,
        ),
        (": opens goto", vec![KeyCode::Char(':')], |a| {
            a.state
                .input
                .as_ref()
                .is_some_and(|i| i.purpose == InputPurpose::Goto)
        }),
        ("v shows cost", vec![KeyCode::Char('v')], |a| {
            a.state.main.chart == ChartKind::Cost
        }),
        ("Space plays", vec![KeyCode::Char(' ')], |a| {
            a.state.main.playing
        }),
        ("= speeds up", vec![KeyCode::Char('=')], |a| {
            a.state.main.speed == 3
        }),
        ("] shows another tier", vec![KeyCode::Char(']')], |a| {
            a.state.main.detail.tier.is_some()
        }),
        ("q quits", vec![KeyCode::Char('q')], |a| a.state.quit),
        ("Esc does not quit", vec![KeyCode::Esc, KeyCode::Esc], |a| {
            !a.state.quit && a.state.flash.is_some()
        }),
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
    assert_eq!(app.state.main.cursor, 3);
    app.key(KeyCode::End);
    let fx = update(&mut app.state, Msg::Tick);
    run_sync(&mut app.state, &mut app.worker, fx);
    assert!(!app.state.main.playing);
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
        let gen = app.state.on_screen.gen;
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
            !app.state.on_screen.pending,
            "{knob}: replay did not come back"
        );
    }
}

#[test]
fn a_tighter_knob_changes_the_schedule() {
    let mut app = m1();
    let before = app
        .state
        .on_screen
        .replay
        .as_ref()
        .map(|r| r.change_requests.clone());
    knobs_at(&mut app, "demote_at");
    type_value(&mut app, "1.5");
    assert_eq!(num(&app, "demote_at"), 1.5);
    let after = app
        .state
        .on_screen
        .replay
        .as_ref()
        .map(|r| r.change_requests.clone());
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
    assert_eq!(app.state.on_screen.budget, Some(20_000));
    app.key(KeyCode::Right);
    assert_eq!(app.state.on_screen.budget, Some(21_000));
    app.key(KeyCode::Char('r'));
    assert_eq!(app.state.on_screen.budget, None);
    assert!(app
        .state
        .on_screen
        .replay
        .as_ref()
        .is_some_and(|r| r.budget > 21_000));
}

#[test]
fn latest_replay_wins() {
    let mut app = m1();
    knobs_at(&mut app, "demote_at");
    let g0 = app.state.on_screen.gen;
    // Two steps before any job runs: the first result must be ignored.
    let fx1 = update(&mut app.state, Msg::Key(key(KeyCode::Right)));
    let fx2 = update(&mut app.state, Msg::Key(key(KeyCode::Right)));
    assert_eq!(app.state.on_screen.gen, g0 + 2);
    let old = app.state.on_screen.replay.clone();
    run_sync(&mut app.state, &mut app.worker, fx1);
    assert!(app.state.on_screen.pending, "a stale replay was taken");
    assert!(std::sync::Arc::ptr_eq(
        old.as_ref().unwrap_or_else(|| panic!("no replay")),
        app.state
            .on_screen
            .replay
            .as_ref()
            .unwrap_or_else(|| panic!("no replay"))
    ));
    run_sync(&mut app.state, &mut app.worker, fx2);
    assert!(!app.state.on_screen.pending);
    assert!((num(&app, "demote_at") - 0.92).abs() < 1e-9);
}

fn key(code: KeyCode) -> ratatui::crossterm::event::KeyEvent {
    ratatui::crossterm::event::KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn switch_policy() {
    let mut app = m1();
    app.key(KeyCode::Char('p'));
    let Some(selected) = app.state.knobs.policies else {
        panic!("no policy list")
    };
    let full = app
        .state
        .knobs
        .names
        .iter()
        .position(|n| n == "full")
        .unwrap_or(0);
    for _ in full..selected {
        app.key(KeyCode::Up);
    }
    app.key(KeyCode::Enter);
    assert_eq!(app.state.on_screen.policy.name, "full");
    let r = app
        .state
        .on_screen
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
    let matches = app.state.main.search.hits.clone();
    assert!(!matches.is_empty());
    assert_eq!(app.state.main.selected, matches[0]);
    app.key(KeyCode::Char('n'));
    if matches.len() > 1 {
        assert_eq!(app.state.main.selected, matches[1]);
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
                .find_map(|(i, e)| e.children.first().map(|c| (i, c.id.clone())))
        })
        .unwrap_or_else(|| panic!("M1 has a sub-agent"));
    while app.state.main.selected < ep {
        app.key(KeyCode::Down);
    }
    app.key(KeyCode::Enter);
    assert_eq!(
        app.state.session.as_ref().map(|s| s.model.id.clone()),
        Some(child)
    );
    assert_eq!(app.state.main.stack.len(), 1);
    assert!(app.state.on_screen.replay.is_some());
    app.key(KeyCode::Backspace);
    assert_eq!(
        app.state.session.as_ref().map(|s| s.model.id.clone()),
        parent
    );
    assert!(app.state.main.stack.is_empty());
    assert_eq!(app.state.main.cursor, 10, "the parent's cursor comes back");
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
    assert_eq!(p.kind, app.state.on_screen.policy.kind);
    assert_eq!(p.knobs, app.state.on_screen.policy.knobs);
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
    let g = app.state.geometry.main.clone();
    let vp = app
        .state
        .main
        .viewport(usize::from(g.heat_cells.width), app.state.requests());
    let cells = vp
        .cells_of(5)
        .unwrap_or_else(|| panic!("request 5 is off-screen"));
    let x = g.heat_cells.x + cells.start as u16;
    let y = g.heat_cells.y + 1;
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
    assert_eq!(app.state.main.cursor, 5);
    assert_eq!(app.state.main.selected, 1);
}

/// M1 opened with these command-line start options.
fn started(start: tierscope::tui::app::StartOptions) -> tierscope::tui::app::State {
    use tierscope::tui::app::State;
    use tierscope::tui::jobs::Worker;
    use tierscope_engine::session::LoadOptions;
    let policy = tierscope_engine::policy::load("retention", &[]).unwrap_or_else(|e| panic!("{e}"));
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
    state
}

#[test]
fn start_options_place_cursor_and_selection() {
    let state = started(tierscope::tui::app::StartOptions {
        at: Some(7),
        episode: Some("E2".to_owned()),
        play: true,
        ..Default::default()
    });
    assert_eq!(state.main.cursor, 7);
    assert_eq!(state.main.selected, 2);
    assert!(state.main.playing);
    assert_eq!(
        state.main.context.model.as_ref().map(|c| c.request),
        Some(7)
    );
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
    assert!(app.state.main.context.model.is_none() && !app.state.main.context.pending);
    // Stepping and diff mode have nothing to act on; neither asks for a context.
    for c in ['l', 'G', 'd'] {
        let fx = app.key(KeyCode::Char(c));
        assert!(
            !fx.iter().any(|e| matches!(e, Effect::Context { .. })),
            "{c}: {fx:?}"
        );
    }
    assert!(app.state.panels.diff.is_none());
    let screen = text(&app.draw());
    assert!(screen.contains("no requests yet"), "{screen}");
    assert!(
        screen.contains("No requests yet: the agent records one"),
        "{screen}"
    );
    assert!(!screen.contains("out of range"), "{screen}");
}

#[test]
fn help_pages_and_stops_at_its_end() {
    use tierscope::tui::app::HelpView;
    let mut app = m1();
    app.key(KeyCode::Char('?'));
    assert_eq!(
        app.state.overlay,
        Overlay::Help(HelpView::at(tierscope::tui::keymap::Mode::Main))
    );
    let g = app.state.geometry.help;
    assert!(
        g.max > g.page,
        "the help should be longer than a page at 120x40"
    );
    let at = |top| Overlay::Help(HelpView { section: None, top });
    app.key(KeyCode::PageDown);
    assert_eq!(app.state.overlay, at(g.page));
    app.key(KeyCode::End);
    assert_eq!(app.state.overlay, at(g.max));
    // Past the end nothing moves, so one ↑ is always one line back.
    app.key(KeyCode::Down);
    app.key(KeyCode::Up);
    assert_eq!(app.state.overlay, at(g.max - 1));
    app.key(KeyCode::Home);
    assert_eq!(app.state.overlay, at(0));
    // W (follow) is listed, as every key is.
    let screen = |app: &App| text(&app.draw());
    let mut all = String::new();
    for _ in 0..=g.max / g.page.max(1) + 1 {
        all.push_str(&screen(&app));
        app.key(KeyCode::PageDown);
    }
    assert!(
        all.contains("  W ") && all.contains("follow the session live"),
        "{all}"
    );
}

#[test]
fn q_asks_before_losing_knob_edits() {
    let mut app = m1();
    knobs_at(&mut app, "demote_at");
    app.key(KeyCode::Left);
    app.key(KeyCode::Esc);
    app.key(KeyCode::Char('q'));
    assert!(!app.state.quit);
    assert_eq!(app.state.overlay, Overlay::Confirm(Confirm::Quit));
    app.key(KeyCode::Char('n'));
    assert_eq!(app.state.overlay, Overlay::None);
    assert!(!app.state.quit);
    app.key(KeyCode::Char('q'));
    app.key(KeyCode::Char('y'));
    assert!(app.state.quit);
}

#[test]
fn saving_over_a_file_asks_first() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("mine.toml");
    std::fs::write(&path, "# mine\n").unwrap_or_else(|e| panic!("{e}"));
    let mut app = m1();
    app.key(KeyCode::Char('w'));
    if let Some(i) = app.state.input.as_mut() {
        i.text = path.display().to_string();
    }
    app.key(KeyCode::Enter);
    let Overlay::Confirm(Confirm::Overwrite { .. }) = &app.state.overlay else {
        panic!("no question: {:?}", app.state.overlay)
    };
    assert_eq!(
        std::fs::read_to_string(&path).ok().as_deref(),
        Some("# mine\n")
    );
    app.key(KeyCode::Char('n'));
    assert_eq!(
        std::fs::read_to_string(&path).ok().as_deref(),
        Some("# mine\n")
    );
    // Again, and yes this time: written.
    app.key(KeyCode::Char('w'));
    if let Some(i) = app.state.input.as_mut() {
        i.text = path.display().to_string();
    }
    app.key(KeyCode::Enter);
    app.key(KeyCode::Char('y'));
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written.contains("Saved from the tierscope explorer"),
        "{written}"
    );
}

#[test]
fn search_filters_highlights_and_clears() {
    let mut app = m1();
    let n = app.state.episodes();
    app.key(KeyCode::Char('/'));
    app.keys("cfgkit");
    let hits = app.state.main.search.hits.clone();
    assert!(!hits.is_empty() && hits.len() < n, "{hits:?}");
    assert_eq!(app.state.main.table_rows(n), hits);
    // C-u empties the field and the filter with it.
    app.key_mod(KeyCode::Char('u'), KeyModifiers::CONTROL);
    assert_eq!(app.state.input.as_ref().map(|i| i.text.as_str()), Some(""));
    assert!(app.state.main.search.hits.is_empty());
    assert_eq!(app.state.main.table_rows(n).len(), n);
    app.keys("cfgkit");
    app.key(KeyCode::Enter);
    assert_eq!(app.state.main.search.hits, hits);
    // j walks the matches only.
    let before = app.state.main.selected;
    app.key(KeyCode::Char('j'));
    assert!(hits.contains(&app.state.main.selected));
    if hits.len() > 1 {
        assert_ne!(app.state.main.selected, before);
    }
    // Esc on the main screen clears the search (and does not quit).
    app.key(KeyCode::Esc);
    assert!(app.state.main.search.query.is_empty() && !app.state.quit);
    assert_eq!(app.state.main.table_rows(n).len(), n);
}

#[test]
fn goto_requests_and_episodes() {
    let mut app = m1();
    app.key(KeyCode::Char(':'));
    app.keys("12");
    app.key(KeyCode::Enter);
    assert_eq!(app.state.main.cursor, 12);
    assert!(app.state.input.is_none());
    app.key(KeyCode::Char(':'));
    app.keys("E2");
    app.key(KeyCode::Enter);
    assert_eq!(app.state.main.selected, 2);
    // Past the end: the last request, and the status line says so.
    app.key(KeyCode::Char(':'));
    app.keys("999");
    app.key(KeyCode::Enter);
    assert_eq!(app.state.main.cursor, app.state.requests() - 1);
    let msg = app.state.flash.clone().map(|f| f.0).unwrap_or_default();
    assert!(msg.contains("past the end"), "{msg}");
    // Nonsense stays in the field with the reason.
    app.key(KeyCode::Char(':'));
    app.keys("E99");
    app.key(KeyCode::Enter);
    let err = app.state.input.as_ref().and_then(|i| i.error.clone());
    assert!(err.is_some_and(|e| e.contains("no episode E99")));
}

#[test]
fn detail_scrolls_over_its_whole_page() {
    let mut app = m1();
    app.key(KeyCode::Tab);
    app.key(KeyCode::Tab);
    app.key(KeyCode::Tab);
    assert_eq!(app.state.main.focus, Pane::Detail);
    let max = app.state.geometry.main.detail_scroll.max;
    assert!(max > 0, "E0's page is longer than the pane at 120x40");
    for _ in 0..100 {
        app.key(KeyCode::PageDown);
    }
    // Stops at the end: one PgUp is one step back from there.
    assert_eq!(app.state.main.detail.scroll, max);
    app.key(KeyCode::PageUp);
    assert!(app.state.main.detail.scroll < max);
    let screen = text(&app.draw());
    assert!(screen.contains("more"), "{screen}");
}

#[test]
fn the_context_opens_filled_with_the_divergence_in_view() {
    use tierscope::tui::main::navigate::context_layout;
    let mut app = m1();
    app.key(KeyCode::End);
    let c = app.context();
    let g = app.state.geometry.main.context_scroll;
    // Rows wrap: the scroll counts screen lines.
    let clip = app.state.main.context.clip;
    let layout = context_layout(&app.state.main_env(), &c, false, clip);
    let lines = layout.total();
    let top = app.state.main.context.scroll;
    // Filled: as many lines as the pane holds (or all of them).
    assert!(
        lines.saturating_sub(top) >= g.page.min(lines),
        "{top} {lines} {g:?}"
    );
    let d = layout.line_of(
        c.divergence_row(false)
            .unwrap_or_else(|| panic!("no divergence")),
    );
    assert!(top <= d && d < top + g.page.max(1), "{top} {d} {g:?}");
    // Every chunk's text (e): the divergence stays in view.
    app.key(KeyCode::Char('e'));
    let top = app.state.main.context.scroll;
    let page = app.state.geometry.main.context_scroll.page;
    let layout = context_layout(&app.state.main_env(), &c, true, clip);
    let d = layout.line_of(
        c.divergence_row(true)
            .unwrap_or_else(|| panic!("no divergence")),
    );
    assert!(top <= d && d < top + page, "{top} {d} {page}");
}

#[test]
fn run_totals_show_before_and_after_a_knob_change() {
    let mut app = m1();
    let before = app.state.on_screen.replay.as_ref().map(|r| r.totals);
    knobs_at(&mut app, "demote_at");
    type_value(&mut app, "1.5");
    let base = app.state.on_screen.baseline.as_ref().expect("a baseline");
    assert_eq!(base.totals, before);
    assert_eq!(base.shown_budget, 9000);
    let after = app.state.on_screen.replay.as_ref().map(|r| r.totals);
    assert_ne!(before, after);
    app.key(KeyCode::Esc);
    let screen = text(&app.draw());
    let (b, a) = (before.unwrap_or_default(), after.unwrap_or_default());
    assert!(
        screen.contains(&format!("chg {}→{}", b.changes, a.changes)),
        "{screen}"
    );
    // The one baseline, named with its budget.
    assert!(screen.contains("baseline retention @ 9,000"), "{screen}");
}

#[test]
fn several_sub_agents_open_a_list() {
    use tierscope::tui::view_model::ChildRef;
    let mut app = m1();
    // M1's E0 spawned one sub-agent; give it a second one (not in the recording) to list.
    let mut view = (**app
        .state
        .session
        .as_ref()
        .unwrap_or_else(|| panic!("session")))
    .clone();
    let e0 = &mut view.model.episodes[0];
    assert_eq!(e0.children.len(), 1);
    e0.children.push(ChildRef {
        id: "ses_other".to_owned(),
        title: "ses_other".to_owned(),
        requests: None,
    });
    app.state.session = Some(std::sync::Arc::new(view));
    app.key(KeyCode::Enter);
    assert_eq!(app.state.mode(), tierscope::tui::keymap::Mode::SubAgents);
    let screen = text(&app.draw());
    assert!(screen.contains("spawned 2 sub-agents"), "{screen}");
    app.key(KeyCode::Enter);
    assert_eq!(app.state.main.stack.len(), 1, "the first one opened");
}

#[test]
fn a_message_does_not_outlive_the_mode_it_was_said_in() {
    let mut app = m1();
    app.key(KeyCode::Char('T'));
    let msg = app.state.flash.clone().map(|f| f.0).unwrap_or_default();
    assert!(msg.contains("no thrash before"), "{msg}");
    app.key(KeyCode::Char('K'));
    assert!(app.state.flash.is_none(), "{:?}", app.state.flash);
}

#[test]
fn the_footer_follows_the_focused_pane() {
    let mut app = m1();
    let status = |app: &App| {
        let t = text(&app.draw());
        t.lines().last().unwrap_or_default().to_owned()
    };
    assert!(status(&app).contains("z zoom"), "{}", status(&app));
    app.key(KeyCode::Tab);
    app.key(KeyCode::Tab);
    app.key(KeyCode::Tab);
    let s = status(&app);
    assert!(
        s.contains("] tier") && s.contains("y copy") && !s.contains("z zoom"),
        "{s}"
    );
    // The focused pane has the thick border.
    assert!(text(&app.draw()).contains("┏ Detail"));
}

#[test]
fn the_wheel_scrolls_the_pane_under_it() {
    let mut app = m1();
    let d = app.state.geometry.main.detail;
    let wheel = |kind| {
        Msg::Mouse(MouseEvent {
            kind,
            column: d.x + 3,
            row: d.y + 3,
            modifiers: KeyModifiers::NONE,
        })
    };
    app.msg(wheel(MouseEventKind::ScrollDown));
    app.msg(wheel(MouseEventKind::ScrollDown));
    assert_eq!(app.state.main.detail.scroll, 6);
    app.msg(wheel(MouseEventKind::ScrollUp));
    assert_eq!(app.state.main.detail.scroll, 3);
}

#[test]
fn a_default_budget_where_nothing_fades_says_so() {
    let app = open(sample("M1.json"), "dark", 160, 45, "retention", None);
    let t = text(&app.draw());
    assert!(t.contains("(session limit)"), "{t}");
    assert!(
        t.contains("at the default budget: nothing fades, try --budget or K"),
        "{t}"
    );
    // Priced with the default table entry: said in the header.
    assert!(t.contains("prices assumed"), "{t}");
}

#[test]
fn at_past_the_end_is_clamped_and_said() {
    let state = started(tierscope::tui::app::StartOptions {
        at: Some(999),
        ..Default::default()
    });
    assert_eq!(state.main.cursor, 23);
    let msg = state.flash.clone().map(|f| f.0).unwrap_or_default();
    assert!(msg.contains("--at 999 is past the end: at 23"), "{msg}");
}
