//! The panes that open over the main screen (diff mode, the sweep pane), registered in one
//! place. A pane is a folder with its state, updates, view, jobs and keys; it implements
//! [`Panel`] and takes one line in [`panels!`] below, which gives it its field of [`Panels`]
//! (the explorer's `State::panels`), its variants of [`PanelMode`] (its modes, the keymap's
//! `Mode::Panel`), [`PanelAction`] (its own actions, `Action::Panel`), [`PanelMsg`] and
//! [`PanelJob`], its opening key among the main screen's ([`OPENERS`]), and its part in the
//! dispatch: where keys, mouse, job results, session changes and goto go, what draws, what the
//! worker runs, and which bindings and help sections the keymap and help overlay list. The rest
//! of the explorer knows panes only through this module (`tests/it/layers.rs` checks it).

use std::sync::Arc;

use ratatui::crossterm::event::{KeyEvent, MouseEvent};
use ratatui::layout::Rect;
use ratatui::Frame;

use crate::tui::app::{Effect, JobKey, Msg, SessionView, State};
use crate::tui::component::{carry_out, Out};
use crate::tui::geometry::Scroll;
use crate::tui::keymap::{Action, Binding, Mode};
use crate::tui::on_screen::OnScreen;
use tierscope_engine::session::LoadedSession;

/// What a pane reads of the rest of the explorer.
pub struct PanelEnv<'a> {
    pub session: Option<&'a SessionView>,
    pub on_screen: &'a OnScreen,
    /// The main screen's request cursor and selected episode (a pane opens at them).
    pub cursor: usize,
    pub selected: usize,
    /// The pane's text pane as last drawn (its page and scroll limit).
    pub page: Scroll,
}

impl PanelEnv<'_> {
    pub fn of(state: &State) -> PanelEnv<'_> {
        PanelEnv {
            session: state.session.as_deref(),
            on_screen: &state.on_screen,
            cursor: state.main.cursor,
            selected: state.main.selected,
            page: state.geometry.panel_text,
        }
    }

    pub fn requests(&self) -> usize {
        self.session.map_or(0, |s| s.model.requests.len())
    }
}

/// What a pane that opens over the main screen answers. Its updates take its own state and a
/// [`PanelEnv`], and hand back an [`Out`] (`Ask::Close` closes it).
pub trait Panel: Sized + 'static {
    /// The results of its jobs, as the worker sends them back.
    type Msg: std::fmt::Debug + Send + 'static;
    /// Its work for the worker thread (latest wins per [`Panel::job_slot`]).
    type Job: std::fmt::Debug + Clone + PartialEq + Send + 'static;

    /// Where it reads keys, as it names them (the keymap's [`Mode::Panel`]).
    type Mode: std::fmt::Debug + Clone + Copy + PartialEq + Eq + 'static;
    /// What only it does, beside the shared actions (the keymap's [`Action::Panel`]).
    type Action: std::fmt::Debug + Clone + Copy + PartialEq + Eq + 'static;

    /// The main screen's binding that opens it (`Action::Open` of its id): the keymap lists it
    /// among the main screen's, after what they share and before help and quitting.
    const OPEN: Binding;
    /// Its key bindings, one line each (gathered into the keymap after the shell's).
    const BINDINGS: &'static [Binding];
    /// Its modes, in the order the help overlay lists their sections.
    const MODES: &'static [Self::Mode];

    /// A mode's section title in the help overlay.
    fn title(mode: Self::Mode) -> &'static str;

    /// Where its keys are read now.
    fn mode(&self) -> Self::Mode;
    /// Whether it draws the whole screen instead of the main screen (else it draws over it).
    fn covers_main(&self) -> bool {
        false
    }
    /// Draws it; a text pane that scrolls reports its page and limit.
    fn render(&self, state: &State, f: &mut Frame, area: Rect) -> Option<Scroll>;

    /// Opens it (the main screen's key), or says why not.
    fn open(env: &PanelEnv<'_>, out: &mut Out) -> Option<Self>;
    /// A key while it is on top (`action`: its binding in [`Panel::mode`], if any).
    fn on_key(&mut self, env: &PanelEnv<'_>, k: &KeyEvent, action: Option<Action>, out: &mut Out);
    /// The mouse while it is on top.
    fn on_mouse(&mut self, env: &PanelEnv<'_>, m: MouseEvent, out: &mut Out);
    /// A result of one of its jobs.
    fn on_msg(&mut self, env: &PanelEnv<'_>, msg: Self::Msg, out: &mut Out);
    /// The session on screen changed (loaded, or grown under follow).
    fn on_session_changed(&mut self, _env: &PanelEnv<'_>, _out: &mut Out) {}
    /// The goto field's Enter while it is on top; `None`: the main screen's goto.
    fn goto(
        &mut self,
        _env: &PanelEnv<'_>,
        _text: &str,
        _out: &mut Out,
    ) -> Option<Result<(), String>> {
        None
    }
    /// It is closing: let go of what it holds (a running job).
    fn on_close(&mut self) {}

    /// Jobs of one slot replace each other (latest wins); slots run independently.
    fn job_slot(_job: &Self::Job) -> u8 {
        0
    }
    /// Runs a job on the worker thread against the session on screen.
    fn run(
        job: Self::Job,
        session: Option<&Arc<LoadedSession>>,
        progress: &dyn Fn(Msg),
    ) -> Self::Msg;
    /// The answer when the job failed (e.g. panicked) with `e`.
    fn failed(job: &Self::Job, e: String) -> Self::Msg;
}

/// Runs an update `f` of the open pane in `slot` (taken out of the state meanwhile, so it can
/// read the rest) and carries out what it hands back; `None` when the pane is not open.
fn with<T: Panel, R>(
    state: &mut State,
    id: PanelId,
    slot: fn(&mut Panels) -> &mut Option<Box<T>>,
    fx: &mut Vec<Effect>,
    f: impl FnOnce(&mut T, &PanelEnv<'_>, &mut Out) -> R,
) -> Option<R> {
    let mut p = slot(&mut state.panels).take()?;
    let mut out = Out::default();
    let r = f(&mut p, &PanelEnv::of(state), &mut out);
    *slot(&mut state.panels) = Some(p);
    carry_out(state, Some(id), out, fx);
    Some(r)
}

macro_rules! panels {
    ($($Id:ident => $field:ident: $T:ty),* $(,)?) => {
        /// A registered pane.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum PanelId {
            $($Id),*
        }

        impl PanelId {
            /// Every registered pane, in registry order.
            pub const ALL: &[PanelId] = &[$(PanelId::$Id),*];
        }

        /// The panes' states (`None`: closed).
        #[derive(Default)]
        pub struct Panels {
            $(pub $field: Option<Box<$T>>),*
        }

        /// Where a pane reads keys: its own mode (the keymap's [`Mode::Panel`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum PanelMode {
            $($Id(<$T as Panel>::Mode)),*
        }

        impl PanelMode {
            /// Its section's title in the help overlay.
            pub fn title(self) -> &'static str {
                match self {
                    $(PanelMode::$Id(m) => <$T>::title(m)),*
                }
            }

            /// The pane whose mode it is.
            pub fn pane(self) -> PanelId {
                match self {
                    $(PanelMode::$Id(_) => PanelId::$Id),*
                }
            }
        }

        /// What only a pane does (the keymap's [`Action::Panel`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum PanelAction {
            $($Id(<$T as Panel>::Action)),*
        }

        impl PanelAction {
            /// The pane whose action it is.
            pub fn pane(self) -> PanelId {
                match self {
                    $(PanelAction::$Id(_) => PanelId::$Id),*
                }
            }
        }

        /// A result of a pane's job.
        #[derive(Debug)]
        pub enum PanelMsg {
            $($Id(<$T as Panel>::Msg)),*
        }

        /// A pane's job.
        #[derive(Debug, Clone, PartialEq)]
        pub enum PanelJob {
            $($Id(<$T as Panel>::Job)),*
        }

        $(
            impl From<<$T as Panel>::Mode> for Mode {
                fn from(m: <$T as Panel>::Mode) -> Mode {
                    Mode::Panel(PanelMode::$Id(m))
                }
            }
            impl From<<$T as Panel>::Msg> for Msg {
                fn from(m: <$T as Panel>::Msg) -> Msg {
                    Msg::Panel(PanelMsg::$Id(m))
                }
            }
            impl From<<$T as Panel>::Job> for Effect {
                fn from(j: <$T as Panel>::Job) -> Effect {
                    Effect::Panel(PanelJob::$Id(j))
                }
            }
        )*

        /// The main screen's keys that open the panes, in registry order.
        pub static OPENERS: &[Binding] = &[$(<$T as Panel>::OPEN),*];
        /// Every pane's bindings, in registry order.
        pub static BINDINGS: &[&[Binding]] = &[$(<$T as Panel>::BINDINGS),*];
        /// Every pane's modes as the keymap names them, in registry order.
        pub fn modes() -> Vec<Mode> {
            let mut v = Vec::new();
            $(v.extend(<$T as Panel>::MODES.iter().map(|m| Mode::from(*m)));)*
            v
        }

        impl Panels {
            /// The open pane on top: the last registered of those open.
            pub fn top(&self) -> Option<PanelId> {
                let mut top = None;
                $(if self.$field.is_some() {
                    top = Some(PanelId::$Id);
                })*
                top
            }

            /// Where keys go while a pane is open.
            pub fn mode(&self) -> Option<Mode> {
                let mut mode = None;
                $(if let Some(p) = &self.$field {
                    mode = Some(p.mode().into());
                })*
                mode
            }

            /// Whether an open pane draws instead of the main screen.
            pub fn cover_main(&self) -> bool {
                false $(|| self.$field.as_ref().is_some_and(|p| p.covers_main()))*
            }
        }

        /// Opens pane `id` (or says why not).
        pub fn open(state: &mut State, id: PanelId, fx: &mut Vec<Effect>) {
            let mut out = Out::default();
            match id {
                $(PanelId::$Id => {
                    if let Some(p) = <$T>::open(&PanelEnv::of(state), &mut out) {
                        state.panels.$field = Some(Box::new(p));
                    }
                })*
            }
            carry_out(state, Some(id), out, fx);
        }

        /// Closes pane `id` (letting go of its running job).
        pub fn close(state: &mut State, id: PanelId) {
            match id {
                $(PanelId::$Id => {
                    if let Some(mut p) = state.panels.$field.take() {
                        p.on_close();
                    }
                })*
            }
        }

        /// A key for the pane on top; false when none is open.
        pub fn on_key(
            state: &mut State,
            k: &KeyEvent,
            action: Option<Action>,
            fx: &mut Vec<Effect>,
        ) -> bool {
            match state.panels.top() {
                $(Some(id @ PanelId::$Id) => with(state, id, |p| &mut p.$field, fx, |p, env, out| {
                    p.on_key(env, k, action, out)
                })
                .is_some(),)*
                None => false,
            }
        }

        /// The mouse for the pane on top; false when none is open.
        pub fn on_mouse(state: &mut State, m: MouseEvent, fx: &mut Vec<Effect>) -> bool {
            match state.panels.top() {
                $(Some(id @ PanelId::$Id) => with(state, id, |p| &mut p.$field, fx, |p, env, out| {
                    p.on_mouse(env, m, out)
                })
                .is_some(),)*
                None => false,
            }
        }

        /// A job's result, to its pane (dropped when it was closed meanwhile).
        pub fn on_msg(state: &mut State, msg: PanelMsg, fx: &mut Vec<Effect>) {
            match msg {
                $(PanelMsg::$Id(m) => {
                    with(state, PanelId::$Id, |p| &mut p.$field, fx, |p, env, out| {
                        p.on_msg(env, m, out)
                    });
                })*
            }
        }

        /// The session on screen changed: every open pane hears it.
        pub fn on_session_changed(state: &mut State, fx: &mut Vec<Effect>) {
            $(with(state, PanelId::$Id, |p| &mut p.$field, fx, |p, env, out| {
                p.on_session_changed(env, out)
            });)*
        }

        /// The goto field's Enter: the pane on top's, if it has one.
        pub fn goto(
            state: &mut State,
            text: &str,
            fx: &mut Vec<Effect>,
        ) -> Option<Result<(), String>> {
            match state.panels.top() {
                $(Some(id @ PanelId::$Id) => with(state, id, |p| &mut p.$field, fx, |p, env, out| {
                    p.goto(env, text, out)
                })
                .flatten(),)*
                None => None,
            }
        }

        /// Draws the open panes, the first registered first; the scroll a text pane reports.
        pub fn render(state: &State, f: &mut Frame, area: Rect) -> Option<Scroll> {
            let mut scroll = None;
            $(if let Some(p) = &state.panels.$field {
                scroll = p.render(state, f, area).or(scroll);
            })*
            scroll
        }

        impl PanelJob {
            /// Latest wins per pane and slot.
            pub fn job_key(&self) -> JobKey {
                match self {
                    $(PanelJob::$Id(j) => JobKey::Panel(PanelId::$Id, <$T>::job_slot(j))),*
                }
            }

            /// Runs it on the worker thread.
            pub fn run(self, session: Option<&Arc<LoadedSession>>, progress: &dyn Fn(Msg)) -> Msg {
                match self {
                    $(PanelJob::$Id(j) => <$T>::run(j, session, progress).into()),*
                }
            }

            /// The answer when it failed with `e`.
            pub fn failed(&self, e: String) -> Msg {
                match self {
                    $(PanelJob::$Id(j) => <$T>::failed(j, e).into()),*
                }
            }
        }
    };
}

panels! {
    Diff => diff: crate::tui::diff::DiffState,
    Sweep => sweep: crate::tui::sweep::SweepState,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::diff::DiffJob;

    #[test]
    fn every_pane_keys_only_its_own_modes_and_each_has_bindings() {
        let modes = modes();
        for (id, bindings) in PanelId::ALL.iter().zip(BINDINGS) {
            let own: Vec<Mode> = modes
                .iter()
                .copied()
                .filter(|m| matches!(m, Mode::Panel(p) if p.pane() == *id))
                .collect();
            assert!(!own.is_empty(), "{id:?} has no mode");
            for m in &own {
                assert!(bindings.iter().any(|b| b.mode == *m), "{m:?} has no key");
            }
            assert!(bindings.iter().all(|b| own.contains(&b.mode)), "{id:?}");
        }
    }

    #[test]
    fn a_pane_opens_from_the_main_screen_and_its_own_actions_stay_in_its_modes() {
        use crate::tui::keymap::{bindings, lookup};
        assert_eq!(OPENERS.len(), PanelId::ALL.len());
        for (id, open) in PanelId::ALL.iter().zip(OPENERS) {
            assert_eq!((open.mode, open.action), (Mode::Main, Action::Open(*id)));
            // Its key reaches it: no main-screen binding listed earlier takes it.
            let k = open.keys[0];
            let ev = match k {
                crate::tui::keymap::Key::Char(c) => {
                    KeyEvent::from(ratatui::crossterm::event::KeyCode::Char(c))
                }
                _ => continue,
            };
            assert_eq!(lookup(Mode::Main, &ev), Some(Action::Open(*id)), "{k:?}");
        }
        for b in bindings() {
            match (b.mode, b.action) {
                (Mode::Panel(m), Action::Panel(a)) => assert_eq!(m.pane(), a.pane(), "{}", b.desc),
                (m, Action::Panel(_)) => panic!("{m:?} binds a pane's own action: {}", b.desc),
                _ => {}
            }
        }
    }

    #[test]
    fn a_job_replaces_only_its_own_slot_of_its_own_pane() {
        let p = tierscope_engine::policy::builtins()
            .ok()
            .and_then(|l| l.into_iter().next())
            .map(Box::new)
            .unwrap_or_else(|| panic!("no built-in policy"));
        let replay = Effect::from(DiffJob::Replay {
            gen: 1,
            a: p.clone(),
            b: p.clone(),
            budgets: [None, None],
        });
        let context = Effect::from(DiffJob::Context {
            gen: 1,
            at: 0,
            a: p.clone(),
            b: p,
            budgets: [None, None],
        });
        let (r, c) = (replay.job_key(), context.job_key());
        assert_eq!(r, Some(JobKey::Panel(PanelId::Diff, 0)));
        assert_eq!(c, Some(JobKey::Panel(PanelId::Diff, 1)));
    }
}
