//! The main screen's key bindings: its own, one entry each, gathered by [`crate::tui::keymap`] into
//! the keymap (lookup, help overlay, status-bar hints) in the order given here.

use ratatui::crossterm::event::KeyCode as K;

use crate::tui::keymap::Action as A;
use crate::tui::keymap::Key::{Char as C, Code, Ctrl, Shift};
use crate::tui::keymap::{b, bp, Binding, Mode};
use crate::tui::keymap::{HEAT, LISTS, TEXTS};
use crate::tui::main::Pane;

/// The main screen's bindings and its sub-agent list's.
#[rustfmt::skip]
pub static BINDINGS: &[Binding] = &[
    // main screen (hints: what the focused pane offers first, then what works everywhere)
    bp(&[Code(K::Right), C('l')], A::StepNext, "next request", "step", &[]),
    b(Mode::Main, &[Code(K::Left), C('h')], A::StepPrev, "previous request", None),
    b(Mode::Main, &[Shift(K::Right), C('L')], A::StepNextFast, "10 requests forward", None),
    b(Mode::Main, &[Shift(K::Left), C('H')], A::StepPrevFast, "10 requests back", None),
    b(Mode::Main, &[Code(K::Home), C('g')], A::First, "first request", None),
    b(Mode::Main, &[Code(K::End), C('G')], A::Last, "last request", None),
    bp(&[C(':')], A::Goto, "go to a request (42) or an episode (E3)", "goto", &[]),
    b(Mode::Main, &[C('u')], A::NextUserTurn, "next user turn", None),
    b(Mode::Main, &[C('U')], A::PrevUserTurn, "previous user turn", None),
    bp(&[C('c')], A::NextChange, "next tier change", "change", HEAT),
    b(Mode::Main, &[C('C')], A::PrevChange, "previous tier change", None),
    b(Mode::Main, &[C('f')], A::NextHold, "next hold at a floor", None),
    b(Mode::Main, &[C('F')], A::PrevHold, "previous hold at a floor", None),
    b(Mode::Main, &[C('t')], A::NextThrash, "next thrash", None),
    b(Mode::Main, &[C('T')], A::PrevThrash, "previous thrash", None),
    b(Mode::Main, &[C('x')], A::NextCompaction, "next compaction", None),
    b(Mode::Main, &[C('X')], A::PrevCompaction, "previous compaction", None),
    bp(&[C(' ')], A::PlayPause, "play / pause", "play", HEAT),
    b(Mode::Main, &[C('=')], A::Faster, "play faster", None),
    b(Mode::Main, &[C('-')], A::Slower, "play slower", None),
    bp(&[Code(K::Down), C('j')], A::SelectDown, "next episode", "episode", LISTS),
    b(Mode::Main, &[Code(K::Up), C('k')], A::SelectUp, "previous episode", None),
    bp(&[Code(K::PageDown), Ctrl('d')], A::ScrollDown, "scroll the focused pane down (half a page; a short pane: a page)", "scroll", TEXTS),
    b(Mode::Main, &[Code(K::PageUp), Ctrl('u')], A::ScrollUp, "scroll the focused pane up (half a page; a short pane: a page)", None),
    bp(&[Code(K::Tab)], A::FocusNext, "focus the next pane", "focus", &[]),
    b(Mode::Main, &[Code(K::BackTab), Shift(K::BackTab)], A::FocusPrev, "focus the previous pane", None),
    bp(&[C('+')], A::Maximize, "the focused pane fills the screen (again: every pane)", "max", &[]),
    bp(&[C('z')], A::ZoomIn, "heatmap: zoom in (fewer requests, wider cells)", "zoom", HEAT),
    b(Mode::Main, &[C('Z')], A::ZoomOut, "heatmap: zoom out (up to the whole session)", None),
    b(Mode::Main, &[C('<'), C(',')], A::PanLeft, "heatmap: scroll left (when zoomed in)", None),
    b(Mode::Main, &[C('>'), C('.')], A::PanRight, "heatmap: scroll right (when zoomed in)", None),
    b(Mode::Main, &[C('v')], A::ToggleChart, "chart: pressure / cumulative cost", None),
    bp(&[C(']')], A::NextTierText, "detail: show the next tier's text", "tier", &[Pane::Detail]),
    b(Mode::Main, &[C('[')], A::PrevTierText, "detail: show the previous tier's text", None),
    bp(&[C('e')], A::ToggleContextText, "context: every chunk's text / one line per chunk", "text", &[Pane::Context]),
    bp(&[C('E')], A::ToggleWrap, "context, detail and diff: wrap long lines / clip them at the border", "wrap", &[Pane::Context, Pane::Detail]),
    bp(&[C('y')], A::Copy, "copy the shown tier text (OSC 52)", "copy", &[Pane::Detail]),
    bp(&[Code(K::Enter)], A::DrillIn, "open the selected episode's sub-agent session (a list when it has several)", "sub-agent", &[Pane::Episodes, Pane::Detail]),
    b(Mode::Main, &[Code(K::Backspace)], A::Back, "back to the parent session (from a sub-agent session opened with Enter)", None),
    bp(&[C('/')], A::Search, "search episodes by text (filters the table, highlights the matches)", "search", LISTS),
    b(Mode::Main, &[C('n')], A::SearchNext, "next search match", None),
    b(Mode::Main, &[C('N')], A::SearchPrev, "previous search match", None),
    bp(&[C('K')], A::OpenKnobs, "knobs panel (edit the policy's knobs and the budget)", "knobs", &[]),
    b(Mode::Main, &[C('p')], A::SwitchPolicy, "switch policy", Some("policy")),
    b(Mode::Main, &[C('w')], A::SavePolicy, "save the current knobs as a policy TOML (asks before overwriting)", None),
];

/// The main screen's last bindings (after the keys that open the panes,
/// [`crate::tui::panels::OPENERS`]): following, the theme, help, quitting; and its sub-agent
/// list's.
#[rustfmt::skip]
pub static LAST: &[Binding] = &[
    b(Mode::Main, &[C(crate::tui::follow::TOGGLE_KEY)], A::ToggleFollow, "follow the session live as its agent writes it (pause / resume)", None),
    b(Mode::Main, &[Ctrl('t')], A::CycleTheme, "next theme: dark, light, high-contrast, mono (--theme picks the first)", None),
    b(Mode::Main, &[C('?'), Code(K::F(1))], A::Help, "this help", Some("help")),
    b(Mode::Main, &[Code(K::Esc)], A::Cancel, "close or cancel: the search, the maximised pane, the sub-agent session", None),
    b(Mode::Main, &[C('q')], A::Quit, "quit (asks first when knob edits are unsaved)", Some("quit")),
    b(Mode::Main, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    // sub-agent list
    b(Mode::SubAgents, &[Code(K::Up), C('k')], A::ListUp, "previous sub-agent session", None),
    b(Mode::SubAgents, &[Code(K::Down), C('j')], A::ListDown, "next sub-agent session", None),
    b(Mode::SubAgents, &[Code(K::Enter)], A::Accept, "open it", Some("open")),
    b(Mode::SubAgents, &[Code(K::Esc), C('q')], A::CloseOverlay, "close the list", Some("close")),
    b(Mode::SubAgents, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
];
