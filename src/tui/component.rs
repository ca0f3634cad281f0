//! How a feature talks to the rest of the explorer. A feature's update takes its own state and
//! what it reads of the rest (the main screen's `main::Env`, a pane's `panels::PanelEnv`), and
//! hands back an [`Out`]: jobs to run, a message for the status line, and [`Ask`]s of the rest
//! (gitui's queue of internal events). [`carry_out`] does what they ask: the one place where a
//! feature's wish touches the explorer's `State` outside its own part.

use std::sync::Arc;

use crate::tui::app::{
    Confirm, Effect, HelpView, Input, InputPurpose, Level, Overlay, Screen, SessionView, State,
};
use crate::tui::follow;
use crate::tui::keymap::Mode;
use crate::tui::knobs;
use crate::tui::panels::PanelId;
use tierscope_engine::policy::Policy;

/// What an update asks of the rest of the explorer.
#[derive(Debug, Clone)]
pub enum Ask {
    /// `q`: quit, after a question when knob edits would be lost.
    Quit,
    ForceQuit,
    /// The help overlay, at the section of `Mode`.
    Help(Mode),
    /// A text field opened holding `text`.
    Input(InputPurpose, String),
    /// A question before something irreversible.
    Confirm(Confirm),
    /// The session `id` of the source is loaded and shown.
    OpenSession(String),
    /// The screen says it is waiting: this line.
    Loading(String),
    /// Nothing can be shown: this is why.
    Fail(String),
    /// This session is shown, as a loaded one is.
    ShowSession(Arc<SessionView>),
    /// The session on screen grew into this one (live follow).
    Grow(Arc<SessionView>),
    /// Back to the session picker, when the source has more than one session.
    LeaveSession,
    /// A pane opened over the main screen.
    Open(PanelId),
    /// The pane that asks closes.
    Close,
    OpenKnobs,
    SwitchPolicy,
    SavePolicy,
    ToggleFollow,
    CycleTheme,
    /// Long lines wrapped or clipped, in every pane that wraps (the main screen keeps the
    /// setting).
    ToggleWrap,
    /// The main screen's cursor moved (live follow counts the requests not seen yet).
    CursorMoved,
    /// The main screen stops playing.
    StopPlaying,
    /// The main view's policy becomes this one, as its own before → after (a sweep point).
    LoadPolicy(Box<Policy>),
}

/// What an update hands back: jobs to run, a message for the status line (the last one said
/// wins), and asks of the rest of the explorer, in order.
#[derive(Debug, Default)]
pub struct Out {
    pub fx: Vec<Effect>,
    pub flash: Option<(String, Level)>,
    pub asks: Vec<Ask>,
}

impl Out {
    pub fn flash(&mut self, text: impl Into<String>, level: Level) {
        self.flash = Some((text.into(), level));
    }

    pub fn ask(&mut self, a: Ask) {
        self.asks.push(a);
    }

    pub fn job(&mut self, e: impl Into<Effect>) {
        self.fx.push(e.into());
    }
}

/// Carries out what an update of `from` (a pane, or the main screen: `None`) handed back: its
/// jobs, then its asks in order, then its message (which answers the key, so it has the last
/// word).
pub fn carry_out(state: &mut State, from: Option<PanelId>, out: Out, fx: &mut Vec<Effect>) {
    let Out {
        fx: mut jobs,
        flash,
        asks,
    } = out;
    fx.append(&mut jobs);
    for a in asks {
        ask(state, from, a, fx);
    }
    if let Some((text, level)) = flash {
        state.flash(text, level);
    }
}

fn ask(state: &mut State, from: Option<PanelId>, a: Ask, fx: &mut Vec<Effect>) {
    match a {
        Ask::Quit => {
            if state.knobs.unsaved(&state.on_screen) {
                state.overlay = Overlay::Confirm(Confirm::Quit);
            } else {
                state.quit = true;
            }
        }
        Ask::ForceQuit => state.quit = true,
        Ask::Help(mode) => state.overlay = Overlay::Help(HelpView::at(mode)),
        Ask::Input(purpose, text) => {
            state.input = Some(Input {
                purpose,
                text,
                error: None,
            })
        }
        Ask::OpenSession(id) => {
            state.screen = Screen::Loading(format!("loading session {id}…"));
            fx.push(Effect::LoadSession { id: Some(id) });
        }
        Ask::Loading(line) => state.screen = Screen::Loading(line),
        Ask::Fail(why) => state.screen = Screen::Failed(why),
        Ask::ShowSession(view) => crate::tui::app::on_loaded(state, view, fx),
        Ask::Grow(view) => crate::tui::app::on_grown(state, view, fx),
        Ask::LeaveSession => {
            if state.picker.sessions.len() > 1 {
                state.main.playing = false;
                state.screen = Screen::Picker;
            } else {
                state.flash("not inside a sub-agent session", Level::Info);
            }
        }
        Ask::Open(p) => crate::tui::panels::open(state, p, fx),
        Ask::Close => {
            if let Some(p) = from {
                crate::tui::panels::close(state, p);
            }
        }
        Ask::Confirm(c) => state.overlay = Overlay::Confirm(c),
        Ask::OpenKnobs => knobs::update(state, fx, |k, env, _| k.open_panel(env)),
        Ask::SwitchPolicy => knobs::update(state, fx, |k, env, _| k.open_policies(env)),
        Ask::SavePolicy => knobs::update(state, fx, |_, env, out| env.start_save(out)),
        Ask::ToggleFollow => follow::update(state, fx, |f, shown, out| f.toggle(shown, out)),
        Ask::CycleTheme => state.cycle_theme(),
        Ask::ToggleWrap => {
            crate::tui::main::update(state, fx, |m, env, out| m.toggle_wrap(env, out))
        }
        Ask::CursorMoved => {
            let at_newest = state.main.cursor + 1 >= state.requests();
            state.follow.on_cursor_moved(at_newest);
        }
        Ask::StopPlaying => state.main.playing = false,
        Ask::LoadPolicy(p) => {
            knobs::update(state, fx, |_, env, out| {
                env.on_screen.end_edits();
                env.set_policy(*p, out);
                env.on_screen.end_edits();
            });
        }
    }
}
