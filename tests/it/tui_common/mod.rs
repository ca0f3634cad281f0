//! Shared helpers for the explorer's tests: open a recording into a `State` with the same
//! worker code the app uses (run inline), render on a `TestBackend`, and print buffers with a
//! compact style map so that snapshots catch colour and attribute regressions too.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use tierscope::tui::app::{update, Effect, Geometry, Msg, StartOptions, State};
use tierscope::tui::jobs::{run_sync, Worker};
use tierscope::tui::theme::Theme;
use tierscope_engine::policy::KnobSpec;
use tierscope_engine::session::LoadOptions;

pub fn sample(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces")).join(name)
}

/// Checks (or, with `INSTA_UPDATE`, writes) snapshot `name` in `tests/snapshots/tui`.
pub fn snap(name: &str, body: String) {
    let mut settings = insta::Settings::clone_current();
    // Relative to this file: the snapshots live beside the test files, not in tui_common/.
    settings.set_snapshot_path("../snapshots/tui");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, body));
}

/// The row of knob `name` in a knobs panel (row 0 is the budget).
pub fn knob_row(specs: &[KnobSpec], name: &str) -> usize {
    1 + specs
        .iter()
        .position(|s| s.name == name)
        .unwrap_or_else(|| panic!("no knob {name}"))
}

pub struct App {
    pub state: State,
    pub worker: Worker,
}

pub fn theme(name: &str) -> Theme {
    Theme::builtin(name).unwrap_or_else(|| panic!("no built-in theme {name}"))
}

/// M1 (a dependency migration with a sub-agent) under `retention` at a budget of 9,000: tight
/// enough for changes, holds and deferrals.
pub fn open_m1(theme_name: &str, w: u16, h: u16) -> App {
    open(sample("M1.json"), theme_name, w, h, "retention", Some(9000))
}

/// Opens `path` like `tierscope PATH --policy P [--budget N]` would, at `w`×`h`.
pub fn open(
    path: PathBuf,
    theme_name: &str,
    w: u16,
    h: u16,
    policy: &str,
    budget: Option<u64>,
) -> App {
    let policy = tierscope_engine::policy::load(policy, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut state = State::new(theme(theme_name), policy, budget, StartOptions::default());
    state.width = w;
    state.height = h;
    let args = LoadOptions {
        path: Some(path),
        ..LoadOptions::default()
    };
    let mut worker = Worker::new(args);
    settle(
        &mut state,
        &mut worker,
        vec![Effect::LoadSession { id: None }],
    );
    assert!(
        state.session.is_some(),
        "session did not load: {:?}",
        state.screen
    );
    assert!(state.on_screen.replay.is_some(), "replay did not run");
    App { state, worker }
}

/// Runs `fx` inline, then draws as the runner does and hands the view's geometry back to
/// `update` until it settles (page sizes and hit-test rectangles come from the frame).
pub fn settle(state: &mut State, worker: &mut Worker, fx: Vec<Effect>) {
    run_sync(state, worker, fx);
    for _ in 0..3 {
        let g = geometry(state);
        if g == state.geometry {
            break;
        }
        let fx = update(state, Msg::Geometry(g));
        run_sync(state, worker, fx);
    }
}

/// The geometry the view reports for a frame of `state`.
pub fn geometry(state: &State) -> Geometry {
    let backend = TestBackend::new(state.width, state.height);
    let mut term = Terminal::new(backend).unwrap_or_else(|e| panic!("{e}"));
    let mut g = Geometry::default();
    term.draw(|f| g = tierscope::tui::ui::view(state, f))
        .unwrap_or_else(|e| panic!("{e}"));
    g
}

impl App {
    pub fn key(&mut self, code: KeyCode) -> Vec<Effect> {
        self.key_mod(code, KeyModifiers::NONE)
    }
    pub fn key_mod(&mut self, code: KeyCode, m: KeyModifiers) -> Vec<Effect> {
        let fx = update(&mut self.state, Msg::Key(KeyEvent::new(code, m)));
        settle(&mut self.state, &mut self.worker, fx.clone());
        fx
    }
    /// Any message, its effects run and the geometry settled.
    pub fn msg(&mut self, m: Msg) -> Vec<Effect> {
        let fx = update(&mut self.state, m);
        settle(&mut self.state, &mut self.worker, fx.clone());
        fx
    }
    pub fn keys(&mut self, s: &str) {
        for c in s.chars() {
            self.key(KeyCode::Char(c));
        }
    }
    pub fn down(&mut self, times: usize) {
        for _ in 0..times {
            self.key(KeyCode::Down);
        }
    }
    /// Opens the main knobs panel (`K`) with `knob` selected; returns its row.
    pub fn knobs_at(&mut self, knob: &str) -> usize {
        self.key(KeyCode::Char('K'));
        let row = knob_row(&self.state.on_screen.policy.specs, knob);
        self.down(row);
        row
    }
    pub fn resize(&mut self, w: u16, h: u16) {
        let fx = update(&mut self.state, Msg::Resize(w, h));
        settle(&mut self.state, &mut self.worker, fx);
    }
    pub fn draw(&self) -> Buffer {
        draw(&self.state)
    }
    /// The rendered context at the cursor (it must be there).
    pub fn context(&self) -> std::sync::Arc<tierscope::tui::view_model::ContextModel> {
        self.state
            .main
            .context
            .model
            .clone()
            .unwrap_or_else(|| panic!("no context"))
    }
}

pub fn draw(state: &State) -> Buffer {
    let backend = TestBackend::new(state.width, state.height);
    let mut term = Terminal::new(backend).unwrap_or_else(|e| panic!("{e}"));
    term.draw(|f| {
        tierscope::tui::ui::view(state, f);
    })
    .unwrap_or_else(|e| panic!("{e}"));
    term.backend().buffer().clone()
}

/// The buffer's text, one line per row, trailing spaces trimmed.
pub fn text(buf: &Buffer) -> String {
    let w = usize::from(buf.area.width);
    let mut out = String::new();
    for row in buf.content.chunks(w) {
        let mut line = String::new();
        let mut skip = 0usize;
        for c in row {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            line.push_str(c.symbol());
            skip = unicode_width(c.symbol()).saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn unicode_width(s: &str) -> usize {
    use unicode_width::UnicodeWidthStr;
    s.width()
}

/// Text, then the same grid with one letter per distinct style, then the style table: a
/// snapshot that shows both what is written and how it is painted.
pub fn styled(buf: &Buffer) -> String {
    let w = usize::from(buf.area.width);
    let mut table: BTreeMap<String, char> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let letters: Vec<char> = ".abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        .chars()
        .collect();
    let mut grid = String::new();
    for row in buf.content.chunks(w) {
        let mut line = String::new();
        for c in row {
            let key = format!("fg={:?} bg={:?} mod={:?}", c.fg, c.bg, c.modifier);
            let ch = match table.get(&key) {
                Some(ch) => *ch,
                None => {
                    let ch = letters.get(order.len()).copied().unwrap_or('?');
                    table.insert(key.clone(), ch);
                    order.push(key);
                    ch
                }
            };
            line.push(ch);
        }
        grid.push_str(&line);
        grid.push('\n');
    }
    let mut out = text(buf);
    out.push_str("--- styles ---\n");
    out.push_str(&grid);
    for k in &order {
        out.push_str(&format!("{} {k}\n", table[k]));
    }
    out
}

/// No cell holds a control character (a raw ESC or BEL would reach the terminal).
pub fn assert_inert(buf: &Buffer) {
    for c in &buf.content {
        assert!(
            !c.symbol().chars().any(|ch| ch.is_control()),
            "a control character reached the buffer: {:?}",
            c.symbol()
        );
    }
}
