//! The explorer following a copy of a real recording while rows are appended: the cursor stays
//! where the user put it (and "N new requests" counts up) or follows the newest request when it
//! was there; selection and policy are kept; the replay always matches the shown session.

use crate::follow_common;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use follow_common::*;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tierscope::tui::app::{update, Effect, Msg, Screen, StartOptions, State};
use tierscope::tui::jobs::{run_sync, Worker};
use tierscope::tui::theme::Theme;
use tierscope_engine::follow::FollowStatus;
use tierscope_engine::session::LoadOptions;

struct App {
    state: State,
    worker: Worker,
    rx: mpsc::Receiver<Msg>,
}

impl App {
    fn handle(&mut self, m: Msg) {
        let fx = update(&mut self.state, m);
        run_sync(&mut self.state, &mut self.worker, fx);
    }
    fn key(&mut self, c: char) {
        self.handle(Msg::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )));
    }
    /// Feed the follower's messages until `done` or `limit`.
    fn until(&mut self, limit: Duration, done: impl Fn(&State) -> bool) -> bool {
        let end = Instant::now() + limit;
        while !done(&self.state) {
            let left = end.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(m) => self.handle(m),
                Err(_) => return false,
            }
        }
        true
    }
}

fn replay_matches(s: &State) -> bool {
    s.on_screen
        .replay
        .as_ref()
        .is_some_and(|r| r.frames.len() == s.requests())
}

#[test]
fn the_explorer_follows_a_growing_session() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let w = writer(&db);
    let rest = truncate(&w, E2, 10);
    let full = fresh_load(std::path::Path::new(RECORDING), E2);
    let half = rest.len() / 2;

    let policy = tierscope_engine::policy::load("retention", &[]).unwrap();
    let theme = Theme::builtin("dark").unwrap();
    let mut state = State::new(theme, policy, None, StartOptions::default());
    state.width = 120;
    state.height = 40;
    state.follow.enabled = true;
    let args = LoadOptions {
        path: Some(db.clone()),
        session: Some(E2.to_owned()),
        ..LoadOptions::default()
    };
    let mut worker = Worker::new(args);
    let (tx, rx) = mpsc::channel();
    worker.enable_follow(Arc::new(move |m| {
        let _ = tx.send(Msg::Follow(m));
    }));
    let fx = vec![Effect::LoadSession {
        id: Some(E2.to_owned()),
    }];
    let mut app = App { state, worker, rx };
    run_sync(&mut app.state, &mut app.worker, fx);
    let early = app.state.requests();
    assert!(early > 0 && early < full.requests.len());
    assert_eq!(app.state.follow.session.as_deref(), Some(E2));
    assert!(app.until(Duration::from_secs(10), |s| {
        s.follow.status == Some(FollowStatus::Following)
    }));

    // The user looks at request 0 and selects an episode; then the session grows.
    app.state.main.cursor = 0;
    app.state.main.selected = 1;
    let knobs = app.state.on_screen.policy.clone();
    append_like_opencode(&w, &rest[..half], Duration::from_millis(5));
    let mid = tierscope_engine::trace::load::open(Some(&db))
        .unwrap()
        .load_session(Some(E2))
        .unwrap()
        .requests
        .len();
    assert!(app.until(Duration::from_secs(20), |s| s.requests() == mid
        && replay_matches(s)));
    assert_eq!(
        app.state.main.cursor, 0,
        "the cursor moved away from where the user put it"
    );
    assert_eq!(app.state.main.selected, 1);
    assert_eq!(app.state.follow.new_requests, mid - early);
    assert_eq!(app.state.on_screen.policy, knobs);
    assert!(app.state.follow.last_change.is_some());

    // At the newest request the cursor follows new ones.
    app.key('G');
    assert_eq!(app.state.main.cursor, mid - 1);
    assert_eq!(app.state.follow.new_requests, 0);
    append_like_opencode(&w, &rest[half..], Duration::from_millis(5));
    let n = full.requests.len();
    assert!(app.until(Duration::from_secs(20), |s| s.requests() == n
        && replay_matches(s)));
    assert_eq!(app.state.main.cursor, n - 1);
    assert_eq!(app.state.follow.new_requests, 0);

    // W pauses, W resumes.
    app.key('W');
    assert!(app.until(Duration::from_secs(10), |s| {
        s.follow.status == Some(FollowStatus::Paused)
    }));
    app.key('W');
    assert!(app.until(Duration::from_secs(10), |s| {
        s.follow.status == Some(FollowStatus::Following)
    }));
}

#[test]
fn following_a_database_without_sessions_waits_and_shows_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let w = writer(&db);
    let session = session_row(&w, E1);
    let messages = session_rows(&w, E1);
    // OpenCode has created its database, but no session yet.
    w.execute_batch(
        "PRAGMA foreign_keys = OFF; DELETE FROM part; DELETE FROM message; DELETE FROM session; \
         PRAGMA foreign_keys = ON;",
    )
    .unwrap();

    let policy = tierscope_engine::policy::load("retention", &[]).unwrap();
    let theme = Theme::builtin("dark").unwrap();
    let start = StartOptions {
        picker: true,
        ..StartOptions::default()
    };
    let mut state = State::new(theme, policy, None, start);
    state.width = 120;
    state.height = 40;
    state.follow.enabled = true;
    let mut worker = Worker::new(LoadOptions {
        path: Some(db.clone()),
        ..LoadOptions::default()
    });
    let (tx, rx) = mpsc::channel();
    worker.enable_follow(Arc::new(move |m| {
        let _ = tx.send(Msg::Follow(m));
    }));
    let mut app = App { state, worker, rx };
    run_sync(&mut app.state, &mut app.worker, vec![Effect::ListSessions]);
    match &app.state.screen {
        Screen::Loading(what) => assert!(what.starts_with("waiting for a session"), "{what}"),
        other => panic!("expected to wait for a session, got {other:?}"),
    }
    assert!(app.state.follow.waiting);

    // The session starts: its row, then its messages as OpenCode writes them.
    insert(&w, "session", &session);
    append_like_opencode(&w, &messages, Duration::from_millis(2));
    let n = fresh_load(&db, E1).requests.len();
    assert!(app.until(Duration::from_secs(20), |s| s.requests() == n
        && replay_matches(s)));
    assert_eq!(app.state.screen, Screen::Main);
    assert!(!app.state.follow.waiting);
    assert_eq!(app.state.follow.session.as_deref(), Some(E1));
    assert!(app.state.flash.is_none(), "{:?}", app.state.flash);
}

/// Diff mode keeps up with follow: the followed session grows while A and B are compared, both
/// replays rerun on it, and a diff cursor at the newest request moves to the new newest (it
/// stayed at 22/22 while the session grew to 29).
#[test]
fn diff_mode_keeps_up_with_a_growing_session() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let w = writer(&db);
    let rest = truncate(&w, E2, 10);
    let full = fresh_load(std::path::Path::new(RECORDING), E2);

    let policy = tierscope_engine::policy::load("retention", &[]).unwrap();
    let theme = Theme::builtin("dark").unwrap();
    let mut state = State::new(theme, policy, Some(9000), StartOptions::default());
    state.width = 120;
    state.height = 40;
    state.follow.enabled = true;
    let args = LoadOptions {
        path: Some(db.clone()),
        session: Some(E2.to_owned()),
        ..LoadOptions::default()
    };
    let mut worker = Worker::new(args);
    let (tx, rx) = mpsc::channel();
    worker.enable_follow(Arc::new(move |m| {
        let _ = tx.send(Msg::Follow(m));
    }));
    let fx = vec![Effect::LoadSession {
        id: Some(E2.to_owned()),
    }];
    let mut app = App { state, worker, rx };
    run_sync(&mut app.state, &mut app.worker, fx);
    assert!(app.until(Duration::from_secs(10), |s| {
        s.follow.status == Some(FollowStatus::Following)
    }));
    let early = app.state.requests();
    // Diff mode against `age`, its cursor at the newest request.
    app.key('d');
    let pick = app
        .state
        .panels
        .diff
        .as_ref()
        .and_then(|d| d.picker.as_ref())
        .and_then(|(list, _)| list.iter().position(|c| c.label == "age"))
        .unwrap();
    if let Some((_, sel)) = app
        .state
        .panels
        .diff
        .as_mut()
        .and_then(|d| d.picker.as_mut())
    {
        *sel = pick;
    }
    app.handle(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    app.key('G');
    let diff_at = |s: &State| {
        s.panels
            .diff
            .as_ref()
            .map(|d| (d.cursor, d.model.as_ref().map(|m| m.requests)))
    };
    assert_eq!(diff_at(&app.state), Some((early - 1, Some(early))));

    append_like_opencode(&w, &rest, Duration::from_millis(5));
    let n = full.requests.len();
    assert!(n > early);
    assert!(
        app.until(Duration::from_secs(20), |s| diff_at(s)
            == Some((n - 1, Some(n)))),
        "diff mode stayed at {:?} while the session grew to {n}",
        diff_at(&app.state)
    );
    // Still comparing, at the new newest request.
    assert_eq!(app.state.mode(), tierscope::tui::diff::keys::BROWSE);
}
