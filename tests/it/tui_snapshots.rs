//! Snapshots of the explorer on ratatui's TestBackend, on a real recording (sample-traces/M1:
//! a dependency migration with a sub-agent), at 160×45, 120×40 and 80×24, in the default (dark) and mono
//! themes: the main screen, the session picker, the help overlay and the knobs panel. Each
//! snapshot holds the text and a style map (see `tui_common::styled`).

use crate::tui_common;

use ratatui::crossterm::event::KeyCode;
use tui_common::*;

const SIZES: [(u16, u16); 3] = [(160, 45), (120, 40), (80, 24)];
const THEMES: [&str; 2] = ["dark", "mono"];

/// M1 under `retention` with a budget tight enough for changes, holds and deferrals.
fn m1(theme: &str, w: u16, h: u16) -> App {
    let mut app = open_m1(theme, w, h);
    // The last request: every episode closed, several changes and holds on screen.
    app.key(KeyCode::End);
    app.key(KeyCode::Up);
    app
}

#[test]
fn main_screen() {
    for theme in THEMES {
        for (w, h) in SIZES {
            let app = m1(theme, w, h);
            snap(&format!("main_{theme}_{w}x{h}"), styled(&app.draw()));
        }
    }
}

#[test]
fn help_overlay() {
    for theme in THEMES {
        for (w, h) in SIZES {
            let mut app = m1(theme, w, h);
            app.key(KeyCode::Char('?'));
            snap(&format!("help_{theme}_{w}x{h}"), styled(&app.draw()));
        }
    }
}

#[test]
fn knobs_panel() {
    for theme in THEMES {
        for (w, h) in SIZES {
            let mut app = m1(theme, w, h);
            // Select demote_at and lower it two steps: the replay reruns and the panel shows it.
            app.knobs_at("demote_at");
            app.key(KeyCode::Left);
            app.key(KeyCode::Left);
            snap(&format!("knobs_{theme}_{w}x{h}"), styled(&app.draw()));
        }
    }
}

#[test]
fn session_picker() {
    use tierscope::tui::app::{Effect, Screen, StartOptions, State};
    use tierscope::tui::jobs::{run_sync, Worker};
    use tierscope_engine::session::LoadOptions;
    for theme in THEMES {
        for (w, h) in SIZES {
            let policy =
                tierscope_engine::policy::load("retention", &[]).unwrap_or_else(|e| panic!("{e}"));
            let start = StartOptions {
                picker: true,
                ..StartOptions::default()
            };
            let mut state = State::new(tui_common::theme(theme), policy, None, start);
            state.width = w;
            state.height = h;
            let mut worker = Worker::new(LoadOptions {
                path: Some(sample("opencode.db")),
                ..LoadOptions::default()
            });
            run_sync(&mut state, &mut worker, vec![Effect::ListSessions]);
            assert_eq!(state.screen, Screen::Picker);
            // The header names the opened source by its absolute path, which differs per
            // checkout; pin it so the snapshot is the same everywhere.
            assert!(
                state.source.ends_with("sample-traces/opencode.db"),
                "{}",
                state.source
            );
            state.source = "database sample-traces/opencode.db".to_owned();
            // The sub-agent session is listed under its parent.
            let rows = &state.picker.sessions;
            let child = rows.iter().position(|s| s.depth == 1);
            assert!(child.is_some_and(|i| i > 0 && rows[i - 1].depth == 0));
            snap(&format!("picker_{theme}_{w}x{h}"), styled(&draw(&state)));
        }
    }
}

/// `opencode` compacting M1 at a 9,000-token budget, at request 16: E0's head is in the
/// summary, so the heatmap paints it `▐` (tail only), the table gives the tail's tokens and the
/// detail pane lists where only its tail was shown.
#[test]
fn tail_only_under_opencode() {
    let mut app = open(sample("M1.json"), "dark", 160, 45, "opencode", Some(9_000));
    for _ in 0..16 {
        app.key(KeyCode::Right);
    }
    assert_eq!(app.state.main.cursor, 16);
    let screen = app.draw();
    let t = text(&screen);
    assert!(t.contains("▐tail only"), "{t}");
    assert!(t.contains("full▐ "), "{t}");
    assert!(t.contains("tail only (the head not in the context)"), "{t}");
    snap("tail_only_dark_160x45", styled(&screen));
}
