//! The diff mode's key bindings: its own, one entry each, gathered by [`crate::tui::keymap`] into
//! the keymap (lookup, help overlay, status-bar hints) in the order given here.

use ratatui::crossterm::event::KeyCode as K;

use crate::tui::keymap::Action as A;
use crate::tui::keymap::Key::{Char as C, Code, Ctrl, Shift};
use crate::tui::keymap::{b, Binding, Mode};
use crate::tui::panels::{PanelAction, PanelId, PanelMode};

/// What only diff mode does; the shared actions (move, scroll, knobs) are [`Action`](A)'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffAction {
    NextHunk,
    PrevHunk,
    EditA,
    EditB,
    PickB,
    SwapSides,
}

/// Where diff mode reads its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffMode {
    /// The two runs side by side.
    Browse,
    /// The knobs panel of either side.
    Knobs,
    /// The list to choose B from.
    Pick,
}

impl DiffMode {
    /// Its section's title in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            DiffMode::Browse => "Diff mode (A vs B)",
            DiffMode::Knobs => "Diff mode: knobs of A or B",
            DiffMode::Pick => "Diff mode: choose policy B",
        }
    }
}

/// Diff mode's modes as the keymap names them.
pub const BROWSE: Mode = Mode::Panel(PanelMode::Diff(DiffMode::Browse));
pub const KNOBS: Mode = Mode::Panel(PanelMode::Diff(DiffMode::Knobs));
pub const PICK: Mode = Mode::Panel(PanelMode::Diff(DiffMode::Pick));

/// A diff-mode action as the keymap holds it.
pub const fn own(a: DiffAction) -> A {
    A::Panel(PanelAction::Diff(a))
}

/// The main screen's key that opens diff mode.
#[rustfmt::skip]
pub const OPEN: Binding = b(Mode::Main, &[C('d')], A::Open(PanelId::Diff), "diff mode: compare with a second policy (A/B)", Some("diff"));

/// The diff mode's bindings: the two runs side by side, their knobs, the policy to compare.
#[rustfmt::skip]
pub static BINDINGS: &[Binding] = &[
    // diff mode
    b(BROWSE, &[C('E')], A::ToggleWrap, "context diff: wrap long lines / clip them at the border", None),
    b(BROWSE, &[Code(K::Right), C('l')], A::StepNext, "next request", Some("step")),
    b(BROWSE, &[Code(K::Left), C('h')], A::StepPrev, "previous request", None),
    b(BROWSE, &[Shift(K::Right), C('L')], A::StepNextFast, "10 requests forward", None),
    b(BROWSE, &[Shift(K::Left), C('H')], A::StepPrevFast, "10 requests back", None),
    b(BROWSE, &[Code(K::Home), C('g')], A::First, "first request", None),
    b(BROWSE, &[Code(K::End), C('G')], A::Last, "last request", None),
    b(BROWSE, &[C(':')], A::Goto, "go to a request (42) or an episode (E3)", None),
    b(BROWSE, &[C('c')], A::NextChange, "next request where A and B differ", Some("next diff")),
    b(BROWSE, &[C('C')], A::PrevChange, "previous request where A and B differ", None),
    b(BROWSE, &[Code(K::Down), C('j')], A::SelectDown, "next episode", None),
    b(BROWSE, &[Code(K::Up), C('k')], A::SelectUp, "previous episode", None),
    b(BROWSE, &[C('n')], own(DiffAction::NextHunk), "context: next hunk", Some("hunk")),
    b(BROWSE, &[C('N')], own(DiffAction::PrevHunk), "context: previous hunk", None),
    b(BROWSE, &[Code(K::PageDown), Ctrl('d')], A::ScrollDown, "context: scroll both sides down", None),
    b(BROWSE, &[Code(K::PageUp), Ctrl('u')], A::ScrollUp, "context: scroll both sides up", None),
    b(BROWSE, &[C('a')], own(DiffAction::EditA), "edit A's knobs (both replays rerun)", Some("knobs A")),
    b(BROWSE, &[C('b')], own(DiffAction::EditB), "edit B's knobs (both replays rerun)", Some("knobs B")),
    b(BROWSE, &[C('p')], own(DiffAction::PickB), "choose policy B again", Some("policy B")),
    b(BROWSE, &[C('s')], own(DiffAction::SwapSides), "swap A and B", None),
    b(BROWSE, &[Ctrl('t')], A::CycleTheme, "next theme: dark, light, high-contrast, mono", None),
    b(BROWSE, &[C('?'), Code(K::F(1))], A::Help, "this help", Some("help")),
    b(BROWSE, &[Code(K::Esc), C('q'), C('d')], A::CloseOverlay, "close diff mode", Some("close")),
    b(BROWSE, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    b(KNOBS, &[Code(K::Up), C('k')], A::KnobUp, "previous knob", None),
    b(KNOBS, &[Code(K::Down), C('j')], A::KnobDown, "next knob", None),
    b(KNOBS, &[Code(K::Right), C('l')], A::KnobInc, "increase by one step", Some("adjust")),
    b(KNOBS, &[Code(K::Left), C('h')], A::KnobDec, "decrease by one step", None),
    b(KNOBS, &[Shift(K::Right), C('L')], A::KnobIncBig, "increase by ten steps", None),
    b(KNOBS, &[Shift(K::Left), C('H')], A::KnobDecBig, "decrease by ten steps", None),
    b(KNOBS, &[C('r')], A::KnobReset, "reset the knob to its default", Some("reset")),
    b(KNOBS, &[Code(K::Tab), Code(K::BackTab), Shift(K::BackTab)], A::FocusNext, "edit the other side's knobs", Some("other side")),
    b(KNOBS, &[Code(K::Esc), C('q'), C('a'), C('b')], A::CloseOverlay, "close the panel", Some("close")),
    b(KNOBS, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    b(PICK, &[Code(K::Up), C('k')], A::ListUp, "previous policy", None),
    b(PICK, &[Code(K::Down), C('j')], A::ListDown, "next policy", None),
    b(PICK, &[Code(K::Enter)], A::Accept, "compare with this policy", Some("compare")),
    b(PICK, &[Code(K::Esc), C('q')], A::CloseOverlay, "cancel", Some("cancel")),
    b(PICK, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
];
