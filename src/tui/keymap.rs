//! Every key the explorer knows, with its description: one table feeds key handling, the help
//! overlay (which lists every binding) and the status bar hints, so they cannot drift apart.

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
    /// Diff mode: the current policy (A) against a second one (B).
    Diff,
    /// Diff mode's knobs panel (either side).
    DiffKnobs,
    /// Diff mode's list to choose B from.
    DiffPick,
    /// Sweep pane: browsing the grid (or waiting for it).
    Sweep,
    /// Sweep pane: choosing the knobs, their ranges and the metric.
    SweepSetup,
    /// Sweep pane: typing a range.
    SweepEdit,
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
            Mode::Diff => "Diff mode (A vs B)",
            Mode::DiffKnobs => "Diff mode: knobs of A or B",
            Mode::DiffPick => "Diff mode: choose policy B",
            Mode::Sweep => "Sweep pane (two knobs as a grid)",
            Mode::SweepSetup => "Sweep pane: knobs, ranges, metric",
            Mode::SweepEdit => "Sweep pane: typing a range",
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
    // diff mode
    OpenDiff,
    NextHunk,
    PrevHunk,
    EditA,
    EditB,
    PickB,
    SwapSides,
    // sweep pane
    OpenSweep,
    SweepEditRange,
    SweepNextMetric,
    SweepPrevMetric,
    SweepSetup,
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
use Key::{Char as C, Code, Ctrl, Shift};
use KeyCode as K;

const fn b(
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
const fn bp(
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

const HEAT: &[Pane] = &[Pane::Heatmap];
const LISTS: &[Pane] = &[Pane::Heatmap, Pane::Episodes];
const TEXTS: &[Pane] = &[Pane::Context, Pane::Detail];

/// The whole keymap. Order is the order of the help overlay and the status bar hints.
pub static BINDINGS: &[Binding] = &[
    // main screen (hints: what the focused pane offers first, then what works everywhere)
    bp(
        &[Code(K::Right), C('l')],
        A::StepNext,
        "next request",
        "step",
        &[],
    ),
    b(
        Mode::Main,
        &[Code(K::Left), C('h')],
        A::StepPrev,
        "previous request",
        None,
    ),
    b(
        Mode::Main,
        &[Shift(K::Right), C('L')],
        A::StepNextFast,
        "10 requests forward",
        None,
    ),
    b(
        Mode::Main,
        &[Shift(K::Left), C('H')],
        A::StepPrevFast,
        "10 requests back",
        None,
    ),
    b(
        Mode::Main,
        &[Code(K::Home), C('g')],
        A::First,
        "first request",
        None,
    ),
    b(
        Mode::Main,
        &[Code(K::End), C('G')],
        A::Last,
        "last request",
        None,
    ),
    bp(
        &[C(':')],
        A::Goto,
        "go to a request (42) or an episode (E3)",
        "goto",
        &[],
    ),
    b(
        Mode::Main,
        &[C('u')],
        A::NextUserTurn,
        "next user turn",
        None,
    ),
    b(
        Mode::Main,
        &[C('U')],
        A::PrevUserTurn,
        "previous user turn",
        None,
    ),
    bp(&[C('c')], A::NextChange, "next tier change", "change", HEAT),
    b(
        Mode::Main,
        &[C('C')],
        A::PrevChange,
        "previous tier change",
        None,
    ),
    b(
        Mode::Main,
        &[C('f')],
        A::NextHold,
        "next hold at a floor",
        None,
    ),
    b(
        Mode::Main,
        &[C('F')],
        A::PrevHold,
        "previous hold at a floor",
        None,
    ),
    b(Mode::Main, &[C('t')], A::NextThrash, "next thrash", None),
    b(
        Mode::Main,
        &[C('T')],
        A::PrevThrash,
        "previous thrash",
        None,
    ),
    b(
        Mode::Main,
        &[C('x')],
        A::NextCompaction,
        "next compaction",
        None,
    ),
    b(
        Mode::Main,
        &[C('X')],
        A::PrevCompaction,
        "previous compaction",
        None,
    ),
    bp(&[C(' ')], A::PlayPause, "play / pause", "play", HEAT),
    b(Mode::Main, &[C('=')], A::Faster, "play faster", None),
    b(Mode::Main, &[C('-')], A::Slower, "play slower", None),
    bp(
        &[Code(K::Down), C('j')],
        A::SelectDown,
        "next episode",
        "episode",
        LISTS,
    ),
    b(
        Mode::Main,
        &[Code(K::Up), C('k')],
        A::SelectUp,
        "previous episode",
        None,
    ),
    bp(
        &[Code(K::PageDown), Ctrl('d')],
        A::ScrollDown,
        "scroll the focused pane down (half a page; a short pane: a page)",
        "scroll",
        TEXTS,
    ),
    b(
        Mode::Main,
        &[Code(K::PageUp), Ctrl('u')],
        A::ScrollUp,
        "scroll the focused pane up (half a page; a short pane: a page)",
        None,
    ),
    bp(
        &[Code(K::Tab)],
        A::FocusNext,
        "focus the next pane",
        "focus",
        &[],
    ),
    b(
        Mode::Main,
        &[Code(K::BackTab), Shift(K::BackTab)],
        A::FocusPrev,
        "focus the previous pane",
        None,
    ),
    bp(
        &[C('+')],
        A::Maximize,
        "the focused pane fills the screen (again: every pane)",
        "max",
        &[],
    ),
    bp(
        &[C('z')],
        A::ZoomIn,
        "heatmap: zoom in (fewer requests, wider cells)",
        "zoom",
        HEAT,
    ),
    b(
        Mode::Main,
        &[C('Z')],
        A::ZoomOut,
        "heatmap: zoom out (up to the whole session)",
        None,
    ),
    b(
        Mode::Main,
        &[C('<'), C(',')],
        A::PanLeft,
        "heatmap: scroll left (when zoomed in)",
        None,
    ),
    b(
        Mode::Main,
        &[C('>'), C('.')],
        A::PanRight,
        "heatmap: scroll right (when zoomed in)",
        None,
    ),
    b(
        Mode::Main,
        &[C('v')],
        A::ToggleChart,
        "chart: pressure / cumulative cost",
        None,
    ),
    bp(
        &[C(']')],
        A::NextTierText,
        "detail: show the next tier's text",
        "tier",
        &[Pane::Detail],
    ),
    b(
        Mode::Main,
        &[C('[')],
        A::PrevTierText,
        "detail: show the previous tier's text",
        None,
    ),
    bp(
        &[C('e')],
        A::ToggleContextText,
        "context: every chunk's text / one line per chunk",
        "text",
        &[Pane::Context],
    ),
    bp(
        &[C('E')],
        A::ToggleWrap,
        "context, detail and diff: wrap long lines / clip them at the border",
        "wrap",
        &[Pane::Context, Pane::Detail],
    ),
    bp(
        &[C('y')],
        A::Copy,
        "copy the shown tier text (OSC 52)",
        "copy",
        &[Pane::Detail],
    ),
    bp(
        &[Code(K::Enter)],
        A::DrillIn,
        "open the selected episode's sub-agent session (a list when it has several)",
        "sub-agent",
        &[Pane::Episodes, Pane::Detail],
    ),
    b(
        Mode::Main,
        &[Code(K::Backspace)],
        A::Back,
        "back to the parent session (from a sub-agent session opened with Enter)",
        None,
    ),
    bp(
        &[C('/')],
        A::Search,
        "search episodes by text (filters the table, highlights the matches)",
        "search",
        LISTS,
    ),
    b(
        Mode::Main,
        &[C('n')],
        A::SearchNext,
        "next search match",
        None,
    ),
    b(
        Mode::Main,
        &[C('N')],
        A::SearchPrev,
        "previous search match",
        None,
    ),
    bp(
        &[C('K')],
        A::OpenKnobs,
        "knobs panel (edit the policy's knobs and the budget)",
        "knobs",
        &[],
    ),
    b(
        Mode::Main,
        &[C('p')],
        A::SwitchPolicy,
        "switch policy",
        Some("policy"),
    ),
    b(
        Mode::Main,
        &[C('w')],
        A::SavePolicy,
        "save the current knobs as a policy TOML (asks before overwriting)",
        None,
    ),
    b(
        Mode::Main,
        &[C('d')],
        A::OpenDiff,
        "diff mode: compare with a second policy (A/B)",
        Some("diff"),
    ),
    b(
        Mode::Main,
        &[C('S')],
        A::OpenSweep,
        "sweep pane: two knobs as a grid of a metric",
        None,
    ),
    b(
        Mode::Main,
        &[C(crate::tui::follow::TOGGLE_KEY)],
        A::ToggleFollow,
        "follow the session live as OpenCode writes it (pause / resume)",
        None,
    ),
    b(
        Mode::Main,
        &[Ctrl('t')],
        A::CycleTheme,
        "next theme: dark, light, high-contrast, mono (--theme picks the first)",
        None,
    ),
    b(
        Mode::Main,
        &[C('?'), Code(K::F(1))],
        A::Help,
        "this help",
        Some("help"),
    ),
    b(
        Mode::Main,
        &[Code(K::Esc)],
        A::Cancel,
        "close or cancel: the search, the maximised pane, the sub-agent session",
        None,
    ),
    b(
        Mode::Main,
        &[C('q')],
        A::Quit,
        "quit (asks first when knob edits are unsaved)",
        Some("quit"),
    ),
    b(Mode::Main, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    // sub-agent list
    b(
        Mode::SubAgents,
        &[Code(K::Up), C('k')],
        A::ListUp,
        "previous sub-agent session",
        None,
    ),
    b(
        Mode::SubAgents,
        &[Code(K::Down), C('j')],
        A::ListDown,
        "next sub-agent session",
        None,
    ),
    b(
        Mode::SubAgents,
        &[Code(K::Enter)],
        A::Accept,
        "open it",
        Some("open"),
    ),
    b(
        Mode::SubAgents,
        &[Code(K::Esc), C('q')],
        A::CloseOverlay,
        "close the list",
        Some("close"),
    ),
    b(
        Mode::SubAgents,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
    // questions
    b(
        Mode::Confirm,
        &[C('y'), Code(K::Enter)],
        A::Accept,
        "yes",
        Some("yes"),
    ),
    b(
        Mode::Confirm,
        &[C('w')],
        A::SaveThenQuit,
        "quitting: save the knobs first",
        None,
    ),
    b(
        Mode::Confirm,
        &[C('n'), Code(K::Esc)],
        A::CloseOverlay,
        "no",
        Some("no"),
    ),
    b(
        Mode::Confirm,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
    // knobs panel
    b(
        Mode::Knobs,
        &[Code(K::Up), C('k')],
        A::KnobUp,
        "previous knob",
        None,
    ),
    b(
        Mode::Knobs,
        &[Code(K::Down), C('j')],
        A::KnobDown,
        "next knob",
        None,
    ),
    b(
        Mode::Knobs,
        &[Code(K::Right), C('l')],
        A::KnobInc,
        "increase by one step",
        Some("adjust"),
    ),
    b(
        Mode::Knobs,
        &[Code(K::Left), C('h')],
        A::KnobDec,
        "decrease by one step",
        None,
    ),
    b(
        Mode::Knobs,
        &[Shift(K::Right), C('L')],
        A::KnobIncBig,
        "increase by ten steps",
        None,
    ),
    b(
        Mode::Knobs,
        &[Shift(K::Left), C('H')],
        A::KnobDecBig,
        "decrease by ten steps",
        None,
    ),
    b(
        Mode::Knobs,
        &[Code(K::Enter), C('e')],
        A::KnobType,
        "type an exact value",
        Some("type"),
    ),
    b(
        Mode::Knobs,
        &[C('r')],
        A::KnobReset,
        "reset the knob to its default",
        Some("reset"),
    ),
    b(
        Mode::Knobs,
        &[C('w')],
        A::SavePolicy,
        "save the knobs as a policy TOML",
        Some("save"),
    ),
    b(
        Mode::Knobs,
        &[C('p')],
        A::SwitchPolicy,
        "switch policy",
        None,
    ),
    b(
        Mode::Knobs,
        &[Code(K::Esc), C('K'), C('q')],
        A::CloseOverlay,
        "close the panel",
        Some("close"),
    ),
    b(
        Mode::Knobs,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
    // policy list
    b(
        Mode::PolicyPick,
        &[Code(K::Up), C('k')],
        A::ListUp,
        "previous policy",
        None,
    ),
    b(
        Mode::PolicyPick,
        &[Code(K::Down), C('j')],
        A::ListDown,
        "next policy",
        None,
    ),
    b(
        Mode::PolicyPick,
        &[Code(K::Enter)],
        A::Accept,
        "use this policy",
        Some("use"),
    ),
    b(
        Mode::PolicyPick,
        &[Code(K::Esc), C('q')],
        A::CloseOverlay,
        "close",
        Some("close"),
    ),
    b(
        Mode::PolicyPick,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
    // session picker (other characters type into the filter)
    b(
        Mode::Picker,
        &[Code(K::Up), Ctrl('p')],
        A::ListUp,
        "previous session",
        None,
    ),
    b(
        Mode::Picker,
        &[Code(K::Down), Ctrl('n')],
        A::ListDown,
        "next session",
        None,
    ),
    b(
        Mode::Picker,
        &[Code(K::PageUp)],
        A::ListPageUp,
        "page up",
        None,
    ),
    b(
        Mode::Picker,
        &[Code(K::PageDown)],
        A::ListPageDown,
        "page down",
        None,
    ),
    b(
        Mode::Picker,
        &[Code(K::Enter)],
        A::Accept,
        "open the session",
        Some("open"),
    ),
    b(
        Mode::Picker,
        &[Code(K::Esc)],
        A::Back,
        "clear the filter, else quit",
        Some("clear/quit"),
    ),
    b(
        Mode::Picker,
        &[Ctrl('u')],
        A::ClearInput,
        "clear the filter",
        None,
    ),
    b(
        Mode::Picker,
        &[Code(K::F(1))],
        A::Help,
        "this help",
        Some("help"),
    ),
    b(
        Mode::Picker,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
    // help overlay
    b(
        Mode::Help,
        &[Code(K::Down), C('j')],
        A::ScrollDown,
        "scroll down",
        None,
    ),
    b(
        Mode::Help,
        &[Code(K::Up), C('k')],
        A::ScrollUp,
        "scroll up",
        None,
    ),
    b(
        Mode::Help,
        &[Code(K::PageDown), C(' ')],
        A::ListPageDown,
        "page down",
        None,
    ),
    b(
        Mode::Help,
        &[Code(K::PageUp)],
        A::ListPageUp,
        "page up",
        None,
    ),
    b(Mode::Help, &[Code(K::Home), C('g')], A::First, "top", None),
    b(Mode::Help, &[Code(K::End), C('G')], A::Last, "bottom", None),
    b(
        Mode::Help,
        &[Code(K::Esc), C('?'), C('q'), Code(K::F(1))],
        A::CloseOverlay,
        "close",
        Some("close"),
    ),
    b(Mode::Help, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    // diff mode
    b(
        Mode::Diff,
        &[C('E')],
        A::ToggleWrap,
        "context diff: wrap long lines / clip them at the border",
        None,
    ),
    b(
        Mode::Diff,
        &[Code(K::Right), C('l')],
        A::StepNext,
        "next request",
        Some("step"),
    ),
    b(
        Mode::Diff,
        &[Code(K::Left), C('h')],
        A::StepPrev,
        "previous request",
        None,
    ),
    b(
        Mode::Diff,
        &[Shift(K::Right), C('L')],
        A::StepNextFast,
        "10 requests forward",
        None,
    ),
    b(
        Mode::Diff,
        &[Shift(K::Left), C('H')],
        A::StepPrevFast,
        "10 requests back",
        None,
    ),
    b(
        Mode::Diff,
        &[Code(K::Home), C('g')],
        A::First,
        "first request",
        None,
    ),
    b(
        Mode::Diff,
        &[Code(K::End), C('G')],
        A::Last,
        "last request",
        None,
    ),
    b(
        Mode::Diff,
        &[C(':')],
        A::Goto,
        "go to a request (42) or an episode (E3)",
        None,
    ),
    b(
        Mode::Diff,
        &[C('c')],
        A::NextChange,
        "next request where A and B differ",
        Some("next diff"),
    ),
    b(
        Mode::Diff,
        &[C('C')],
        A::PrevChange,
        "previous request where A and B differ",
        None,
    ),
    b(
        Mode::Diff,
        &[Code(K::Down), C('j')],
        A::SelectDown,
        "next episode",
        None,
    ),
    b(
        Mode::Diff,
        &[Code(K::Up), C('k')],
        A::SelectUp,
        "previous episode",
        None,
    ),
    b(
        Mode::Diff,
        &[C('n')],
        A::NextHunk,
        "context: next hunk",
        Some("hunk"),
    ),
    b(
        Mode::Diff,
        &[C('N')],
        A::PrevHunk,
        "context: previous hunk",
        None,
    ),
    b(
        Mode::Diff,
        &[Code(K::PageDown), Ctrl('d')],
        A::ScrollDown,
        "context: scroll both sides down",
        None,
    ),
    b(
        Mode::Diff,
        &[Code(K::PageUp), Ctrl('u')],
        A::ScrollUp,
        "context: scroll both sides up",
        None,
    ),
    b(
        Mode::Diff,
        &[C('a')],
        A::EditA,
        "edit A's knobs (both replays rerun)",
        Some("knobs A"),
    ),
    b(
        Mode::Diff,
        &[C('b')],
        A::EditB,
        "edit B's knobs (both replays rerun)",
        Some("knobs B"),
    ),
    b(
        Mode::Diff,
        &[C('p')],
        A::PickB,
        "choose policy B again",
        Some("policy B"),
    ),
    b(Mode::Diff, &[C('s')], A::SwapSides, "swap A and B", None),
    b(
        Mode::Diff,
        &[Ctrl('t')],
        A::CycleTheme,
        "next theme: dark, light, high-contrast, mono",
        None,
    ),
    b(
        Mode::Diff,
        &[C('?'), Code(K::F(1))],
        A::Help,
        "this help",
        Some("help"),
    ),
    b(
        Mode::Diff,
        &[Code(K::Esc), C('q'), C('d')],
        A::CloseOverlay,
        "close diff mode",
        Some("close"),
    ),
    b(Mode::Diff, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    b(
        Mode::DiffKnobs,
        &[Code(K::Up), C('k')],
        A::KnobUp,
        "previous knob",
        None,
    ),
    b(
        Mode::DiffKnobs,
        &[Code(K::Down), C('j')],
        A::KnobDown,
        "next knob",
        None,
    ),
    b(
        Mode::DiffKnobs,
        &[Code(K::Right), C('l')],
        A::KnobInc,
        "increase by one step",
        Some("adjust"),
    ),
    b(
        Mode::DiffKnobs,
        &[Code(K::Left), C('h')],
        A::KnobDec,
        "decrease by one step",
        None,
    ),
    b(
        Mode::DiffKnobs,
        &[Shift(K::Right), C('L')],
        A::KnobIncBig,
        "increase by ten steps",
        None,
    ),
    b(
        Mode::DiffKnobs,
        &[Shift(K::Left), C('H')],
        A::KnobDecBig,
        "decrease by ten steps",
        None,
    ),
    b(
        Mode::DiffKnobs,
        &[C('r')],
        A::KnobReset,
        "reset the knob to its default",
        Some("reset"),
    ),
    b(
        Mode::DiffKnobs,
        &[Code(K::Tab), Code(K::BackTab), Shift(K::BackTab)],
        A::FocusNext,
        "edit the other side's knobs",
        Some("other side"),
    ),
    b(
        Mode::DiffKnobs,
        &[Code(K::Esc), C('q'), C('a'), C('b')],
        A::CloseOverlay,
        "close the panel",
        Some("close"),
    ),
    b(
        Mode::DiffKnobs,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
    b(
        Mode::DiffPick,
        &[Code(K::Up), C('k')],
        A::ListUp,
        "previous policy",
        None,
    ),
    b(
        Mode::DiffPick,
        &[Code(K::Down), C('j')],
        A::ListDown,
        "next policy",
        None,
    ),
    b(
        Mode::DiffPick,
        &[Code(K::Enter)],
        A::Accept,
        "compare with this policy",
        Some("compare"),
    ),
    b(
        Mode::DiffPick,
        &[Code(K::Esc), C('q')],
        A::CloseOverlay,
        "cancel",
        Some("cancel"),
    ),
    b(
        Mode::DiffPick,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
    // sweep pane
    b(
        Mode::Sweep,
        &[Code(K::Up), C('k')],
        A::SelectUp,
        "previous row (y value)",
        None,
    ),
    b(
        Mode::Sweep,
        &[Code(K::Down), C('j')],
        A::SelectDown,
        "next row (y value)",
        None,
    ),
    b(
        Mode::Sweep,
        &[Code(K::Left), C('h')],
        A::StepPrev,
        "previous column (x value)",
        None,
    ),
    b(
        Mode::Sweep,
        &[Code(K::Right), C('l')],
        A::StepNext,
        "next column (x value)",
        Some("move"),
    ),
    b(
        Mode::Sweep,
        &[Code(K::Home), C('g')],
        A::First,
        "first point",
        None,
    ),
    b(
        Mode::Sweep,
        &[Code(K::End), C('G')],
        A::Last,
        "last point",
        None,
    ),
    b(
        Mode::Sweep,
        &[Code(K::Enter)],
        A::Accept,
        "load the point's knobs into the main view",
        Some("load"),
    ),
    b(
        Mode::Sweep,
        &[C('m')],
        A::SweepNextMetric,
        "colour by the next metric",
        Some("metric"),
    ),
    b(
        Mode::Sweep,
        &[C('M')],
        A::SweepPrevMetric,
        "colour by the previous metric",
        None,
    ),
    b(
        Mode::Sweep,
        &[C('s'), C('e')],
        A::SweepSetup,
        "change the knobs, ranges or metric",
        Some("setup"),
    ),
    b(
        Mode::Sweep,
        &[C('?'), Code(K::F(1))],
        A::Help,
        "this help",
        None,
    ),
    b(
        Mode::Sweep,
        &[Code(K::Esc), C('q'), C('S')],
        A::CloseOverlay,
        "close the pane (while sweeping: cancel)",
        Some("close"),
    ),
    b(
        Mode::Sweep,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
    b(
        Mode::SweepSetup,
        &[Code(K::Up), C('k')],
        A::ListUp,
        "previous row",
        None,
    ),
    b(
        Mode::SweepSetup,
        &[Code(K::Down), C('j')],
        A::ListDown,
        "next row",
        None,
    ),
    b(
        Mode::SweepSetup,
        &[Code(K::Right), C('l')],
        A::KnobInc,
        "next knob (or metric)",
        Some("change"),
    ),
    b(
        Mode::SweepSetup,
        &[Code(K::Left), C('h')],
        A::KnobDec,
        "previous knob (or metric)",
        None,
    ),
    b(
        Mode::SweepSetup,
        &[C('e')],
        A::SweepEditRange,
        "type the range as FROM:TO:STEP",
        Some("range"),
    ),
    b(
        Mode::SweepSetup,
        &[Code(K::Enter)],
        A::Accept,
        "run the sweep",
        Some("run"),
    ),
    b(
        Mode::SweepSetup,
        &[C('?'), Code(K::F(1))],
        A::Help,
        "this help",
        None,
    ),
    b(
        Mode::SweepSetup,
        &[Code(K::Esc), C('q')],
        A::CloseOverlay,
        "back to the grid, else close the pane",
        Some("close"),
    ),
    b(
        Mode::SweepSetup,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
    b(
        Mode::SweepEdit,
        &[Code(K::Enter)],
        A::Accept,
        "use the range",
        Some("accept"),
    ),
    b(
        Mode::SweepEdit,
        &[Code(K::Esc)],
        A::CloseOverlay,
        "keep the old range",
        Some("cancel"),
    ),
    b(
        Mode::SweepEdit,
        &[Ctrl('u')],
        A::ClearInput,
        "clear the field",
        None,
    ),
    b(
        Mode::SweepEdit,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
    // text fields
    b(
        Mode::Input,
        &[Code(K::Enter)],
        A::Accept,
        "accept",
        Some("accept"),
    ),
    b(
        Mode::Input,
        &[Code(K::Esc)],
        A::CloseOverlay,
        "cancel (a search: clear it)",
        Some("cancel"),
    ),
    b(
        Mode::Input,
        &[Ctrl('u')],
        A::ClearInput,
        "clear the field",
        Some("clear"),
    ),
    b(
        Mode::Input,
        &[Ctrl('c')],
        A::ForceQuit,
        "quit at once",
        None,
    ),
];

/// The action bound to `ev` in `mode`, if any.
pub fn lookup(mode: Mode, ev: &KeyEvent) -> Option<Action> {
    BINDINGS
        .iter()
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
        BINDINGS
            .iter()
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
        for (i, a) in BINDINGS.iter().enumerate() {
            for bnd in &BINDINGS[i + 1..] {
                if a.mode != bnd.mode {
                    continue;
                }
                for k in a.keys {
                    assert!(!bnd.keys.contains(k), "{:?} bound twice in {:?}", k, a.mode);
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
