//! Every key the explorer knows, with its description: one keymap feeds key handling, the help
//! overlay (which lists every binding) and the status bar hints, so they cannot drift apart.
//! Each feature contributes its own bindings, one line each (`main/keys.rs`, `knobs/keys.rs`,
//! `picker/keys.rs`, and each pane's: `diff/keys.rs`, `sweep/keys.rs`). A pane's modes, its own
//! actions and the key that opens it are its own too, reached through the registry
//! ([`Mode::Panel`], [`Action::Panel`], [`crate::tui::panels::OPENERS`]): adding a pane touches
//! nothing here. Here are the words they share (modes, actions, keys), the questions, help and
//! text fields every screen has, the order of the groups, the dispatch ([`lookup`]) and the
//! hints.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::tui::main::Pane;

/// Where keys are read. Overlays take all keys while open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Main,
    Knobs,
    Picker,
    PolicyPick,
    Help,
    /// A one-line text field (search, a typed knob value, a file name).
    Input,
    /// A pane's own mode (diff mode, the sweep pane: [`crate::tui::panels`]).
    Panel(crate::tui::panels::PanelMode),
    /// The list of an episode's sub-agent sessions.
    SubAgents,
    /// A yes / no question (quit with unsaved knobs, overwrite a file).
    Confirm,
}

impl Mode {
    pub fn title(&self) -> &'static str {
        match self {
            Mode::Main => "Main screen",
            Mode::Knobs => "Knobs panel",
            Mode::Picker => "Session picker",
            Mode::PolicyPick => "Policy list",
            Mode::Help => "Help",
            Mode::Input => "Text field",
            Mode::Panel(m) => m.title(),
            Mode::SubAgents => "Sub-agent list",
            Mode::Confirm => "Question (yes / no)",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    ForceQuit,
    /// Esc: close or cancel what is open (never quits).
    Cancel,
    Back,
    Help,
    StepNext,
    StepPrev,
    StepNextFast,
    StepPrevFast,
    First,
    Last,
    NextUserTurn,
    PrevUserTurn,
    NextChange,
    PrevChange,
    NextHold,
    PrevHold,
    NextThrash,
    PrevThrash,
    NextCompaction,
    PrevCompaction,
    PlayPause,
    Faster,
    Slower,
    SelectDown,
    SelectUp,
    ScrollDown,
    ScrollUp,
    FocusNext,
    FocusPrev,
    ZoomIn,
    ZoomOut,
    PanLeft,
    PanRight,
    ToggleChart,
    NextTierText,
    PrevTierText,
    ToggleContextText,
    /// Long lines wrapped / clipped at the border (context, detail, diff).
    ToggleWrap,
    OpenKnobs,
    SwitchPolicy,
    SavePolicy,
    DrillIn,
    Search,
    /// `:` go to a request or an episode.
    Goto,
    /// The focused pane fills the screen (again: all panes).
    Maximize,
    SearchNext,
    SearchPrev,
    Copy,
    /// Follow the session live (pause / resume); see `tui::follow`.
    ToggleFollow,
    /// The next built-in theme (dark, light, high-contrast, mono).
    CycleTheme,
    // knobs panel
    KnobUp,
    KnobDown,
    KnobInc,
    KnobDec,
    KnobIncBig,
    KnobDecBig,
    KnobType,
    KnobReset,
    CloseOverlay,
    // lists (picker, policy list)
    ListUp,
    ListDown,
    ListPageUp,
    ListPageDown,
    Accept,
    /// Empty the text field (readline's C-u).
    ClearInput,
    /// Answer "no" to a question, but save first (the quit question's `w`).
    SaveThenQuit,
    /// Open a pane over the main screen ([`crate::tui::panels`]).
    Open(crate::tui::panels::PanelId),
    /// What only a pane does (it declares its actions with its bindings).
    Panel(crate::tui::panels::PanelAction),
}

/// One key, as bound and as shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Code(KeyCode),
    Shift(KeyCode),
}

impl Key {
    pub fn label(&self) -> String {
        fn code(c: &KeyCode) -> String {
            match c {
                KeyCode::Left => "←".into(),
                KeyCode::Right => "→".into(),
                KeyCode::Up => "↑".into(),
                KeyCode::Down => "↓".into(),
                KeyCode::Enter => "Enter".into(),
                KeyCode::Esc => "Esc".into(),
                KeyCode::Tab => "Tab".into(),
                KeyCode::BackTab => "S-Tab".into(),
                KeyCode::Backspace => "Bksp".into(),
                KeyCode::Home => "Home".into(),
                KeyCode::End => "End".into(),
                KeyCode::PageUp => "PgUp".into(),
                KeyCode::PageDown => "PgDn".into(),
                KeyCode::F(n) => format!("F{n}"),
                KeyCode::Char(' ') => "Space".into(),
                KeyCode::Char(c) => c.to_string(),
                other => format!("{other:?}"),
            }
        }
        match self {
            Key::Char(' ') => "Space".into(),
            Key::Char(c) => c.to_string(),
            Key::Ctrl(c) => format!("C-{c}"),
            Key::Code(c) => code(c),
            // BackTab is Shift+Tab already.
            Key::Shift(KeyCode::BackTab) => code(&KeyCode::BackTab),
            Key::Shift(c) => format!("S-{}", code(c)),
        }
    }

    fn matches(&self, ev: &KeyEvent) -> bool {
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        let alt = ev.modifiers.contains(KeyModifiers::ALT);
        let shift = ev.modifiers.contains(KeyModifiers::SHIFT);
        match self {
            // Characters arrive already shifted ('G', '?'), so SHIFT is ignored for them.
            Key::Char(c) => !ctrl && !alt && ev.code == KeyCode::Char(*c),
            Key::Ctrl(c) => ctrl && ev.code == KeyCode::Char(*c),
            Key::Code(c) => !ctrl && !alt && !shift && ev.code == *c,
            Key::Shift(c) => shift && !ctrl && ev.code == *c,
        }
    }
}

pub struct Binding {
    pub mode: Mode,
    pub keys: &'static [Key],
    pub action: Action,
    pub desc: &'static str,
    /// Shown in the status bar of its mode.
    pub hint: Option<&'static str>,
    /// On the main screen: the panes whose focus shows the hint (empty: every pane).
    pub panes: &'static [Pane],
}

use Action as A;
use Key::{Char as C, Code, Ctrl};
use KeyCode as K;

pub(crate) const fn b(
    mode: Mode,
    keys: &'static [Key],
    action: Action,
    desc: &'static str,
    hint: Option<&'static str>,
) -> Binding {
    Binding {
        mode,
        keys,
        action,
        desc,
        hint,
        panes: &[],
    }
}

/// A main-screen binding whose hint shows while one of `panes` has the focus.
pub(crate) const fn bp(
    keys: &'static [Key],
    action: Action,
    desc: &'static str,
    hint: &'static str,
    panes: &'static [Pane],
) -> Binding {
    Binding {
        mode: Mode::Main,
        keys,
        action,
        desc,
        hint: Some(hint),
        panes,
    }
}

pub(crate) const HEAT: &[Pane] = &[Pane::Heatmap];
pub(crate) const LISTS: &[Pane] = &[Pane::Heatmap, Pane::Episodes];
pub(crate) const TEXTS: &[Pane] = &[Pane::Context, Pane::Detail];

/// The keymap: each feature's bindings, then the overlays' and the text fields'. Order is the
/// order of the help overlay and the status bar hints.
static GROUPS: &[&[Binding]] = &[
    crate::tui::main::keys::BINDINGS,
    crate::tui::panels::OPENERS,
    crate::tui::main::keys::LAST,
    QUESTIONS,
    crate::tui::knobs::keys::BINDINGS,
    crate::tui::picker::keys::BINDINGS,
    HELP,
];

/// Every binding, in keymap order: the shell's and the main screen's, every registered pane's
/// ([`crate::tui::panels::BINDINGS`]), then the text fields'.
pub fn bindings() -> impl Iterator<Item = &'static Binding> {
    GROUPS
        .iter()
        .chain(crate::tui::panels::BINDINGS)
        .chain(std::iter::once(&TEXT_FIELDS))
        .flat_map(|g| g.iter())
}

/// The questions every screen may ask (quit with unsaved knobs, overwrite a file).
#[rustfmt::skip]
static QUESTIONS: &[Binding] = &[
    // questions
    b(Mode::Confirm, &[C('y'), Code(K::Enter)], A::Accept, "yes", Some("yes")),
    b(Mode::Confirm, &[C('w')], A::SaveThenQuit, "quitting: save the knobs first", None),
    b(Mode::Confirm, &[C('n'), Code(K::Esc)], A::CloseOverlay, "no", Some("no")),
    b(Mode::Confirm, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
];

/// The help overlay.
#[rustfmt::skip]
static HELP: &[Binding] = &[
    // help overlay
    b(Mode::Help, &[Code(K::Down), C('j')], A::ScrollDown, "scroll down", None),
    b(Mode::Help, &[Code(K::Up), C('k')], A::ScrollUp, "scroll up", None),
    b(Mode::Help, &[Code(K::PageDown), C(' ')], A::ListPageDown, "page down", None),
    b(Mode::Help, &[Code(K::PageUp)], A::ListPageUp, "page up", None),
    b(Mode::Help, &[Code(K::Home), C('g')], A::First, "top", None),
    b(Mode::Help, &[Code(K::End), C('G')], A::Last, "bottom", None),
    b(Mode::Help, &[Code(K::Esc), C('?'), C('q'), Code(K::F(1))], A::CloseOverlay, "close", Some("close")),
    b(Mode::Help, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
];

/// Text fields (the goto prompt, a knob's value).
#[rustfmt::skip]
static TEXT_FIELDS: &[Binding] = &[
    // text fields
    b(Mode::Input, &[Code(K::Enter)], A::Accept, "accept", Some("accept")),
    b(Mode::Input, &[Code(K::Esc)], A::CloseOverlay, "cancel (a search: clear it)", Some("cancel")),
    b(Mode::Input, &[Ctrl('u')], A::ClearInput, "clear the field", Some("clear")),
    b(Mode::Input, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
];

/// The action bound to `ev` in `mode`, if any.
pub fn lookup(mode: Mode, ev: &KeyEvent) -> Option<Action> {
    bindings()
        .filter(|b| b.mode == mode)
        .find(|b| b.keys.iter().any(|k| k.matches(ev)))
        .map(|b| b.action)
}

/// "k1/k2" for a binding (a label two keys share, such as Tab's, once).
pub fn keys_label(b: &Binding) -> String {
    let mut labels: Vec<String> = Vec::new();
    for l in b.keys.iter().map(Key::label) {
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    labels.join("/")
}

/// The status-bar hints of a mode: (first key, hint). On the main screen the hints of the
/// focused pane come first, then those for every pane.
pub fn hints(mode: Mode, focus: Pane) -> Vec<(String, &'static str)> {
    let of = |pane_specific: bool| {
        bindings()
            .filter(move |b| b.mode == mode && b.panes.is_empty() != pane_specific)
            .filter(move |b| b.panes.is_empty() || b.panes.contains(&focus))
            .filter_map(|b| Some((b.keys.first()?.label(), b.hint?)))
    };
    of(true).chain(of(false)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_is_bound_twice_in_one_mode() {
        let all: Vec<&Binding> = bindings().collect();
        for (i, a) in all.iter().enumerate() {
            for bnd in &all[i + 1..] {
                if a.mode != bnd.mode {
                    continue;
                }
                for k in a.keys {
                    assert!(!bnd.keys.contains(k), "{:?} bound twice in {:?}", k, a.mode);
                }
            }
        }
    }

    /// A mode's bindings (and its help and hints) are in one run of groups, whichever feature
    /// owns them: one group, or for the main screen its own, the panes' openers and its last.
    #[test]
    fn a_mode_is_bound_in_one_run_of_groups() {
        let mut seen: Vec<(Mode, usize)> = Vec::new();
        for (g, group) in GROUPS.iter().enumerate() {
            for b in group.iter() {
                match seen.iter_mut().find(|(m, _)| *m == b.mode) {
                    Some((_, at)) => {
                        assert!(*at + 1 >= g, "{:?} bound in groups apart", b.mode);
                        *at = g;
                    }
                    None => seen.push((b.mode, g)),
                }
            }
        }
    }

    #[test]
    fn shifted_chars_and_arrows_resolve() {
        let ev = |c, m| KeyEvent::new(c, m);
        assert_eq!(
            lookup(Mode::Main, &ev(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(A::Last)
        );
        assert_eq!(
            lookup(Mode::Main, &ev(KeyCode::Right, KeyModifiers::NONE)),
            Some(A::StepNext)
        );
        assert_eq!(
            lookup(Mode::Main, &ev(KeyCode::Right, KeyModifiers::SHIFT)),
            Some(A::StepNextFast)
        );
        assert_eq!(
            lookup(Mode::Main, &ev(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(A::ForceQuit)
        );
        assert_eq!(
            lookup(Mode::Main, &ev(KeyCode::Char('?'), KeyModifiers::SHIFT)),
            Some(A::Help)
        );
    }
}
