//! The diff mode's key bindings: its own, one entry each, gathered by [`crate::tui::keymap`] into
//! the keymap (lookup, help overlay, status-bar hints) in the order given here.

use ratatui::crossterm::event::KeyCode as K;

use crate::tui::keymap::Action as A;
use crate::tui::keymap::Key::{Char as C, Code, Ctrl, Shift};
use crate::tui::keymap::{b, Binding, Mode};

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

/// The diff mode's bindings: the two runs side by side, their knobs, the policy to compare.
#[rustfmt::skip]
pub static BINDINGS: &[Binding] = &[
    // diff mode
    b(Mode::Diff, &[C('E')], A::ToggleWrap, "context diff: wrap long lines / clip them at the border", None),
    b(Mode::Diff, &[Code(K::Right), C('l')], A::StepNext, "next request", Some("step")),
    b(Mode::Diff, &[Code(K::Left), C('h')], A::StepPrev, "previous request", None),
    b(Mode::Diff, &[Shift(K::Right), C('L')], A::StepNextFast, "10 requests forward", None),
    b(Mode::Diff, &[Shift(K::Left), C('H')], A::StepPrevFast, "10 requests back", None),
    b(Mode::Diff, &[Code(K::Home), C('g')], A::First, "first request", None),
    b(Mode::Diff, &[Code(K::End), C('G')], A::Last, "last request", None),
    b(Mode::Diff, &[C(':')], A::Goto, "go to a request (42) or an episode (E3)", None),
    b(Mode::Diff, &[C('c')], A::NextChange, "next request where A and B differ", Some("next diff")),
    b(Mode::Diff, &[C('C')], A::PrevChange, "previous request where A and B differ", None),
    b(Mode::Diff, &[Code(K::Down), C('j')], A::SelectDown, "next episode", None),
    b(Mode::Diff, &[Code(K::Up), C('k')], A::SelectUp, "previous episode", None),
    b(Mode::Diff, &[C('n')], A::Diff(DiffAction::NextHunk), "context: next hunk", Some("hunk")),
    b(Mode::Diff, &[C('N')], A::Diff(DiffAction::PrevHunk), "context: previous hunk", None),
    b(Mode::Diff, &[Code(K::PageDown), Ctrl('d')], A::ScrollDown, "context: scroll both sides down", None),
    b(Mode::Diff, &[Code(K::PageUp), Ctrl('u')], A::ScrollUp, "context: scroll both sides up", None),
    b(Mode::Diff, &[C('a')], A::Diff(DiffAction::EditA), "edit A's knobs (both replays rerun)", Some("knobs A")),
    b(Mode::Diff, &[C('b')], A::Diff(DiffAction::EditB), "edit B's knobs (both replays rerun)", Some("knobs B")),
    b(Mode::Diff, &[C('p')], A::Diff(DiffAction::PickB), "choose policy B again", Some("policy B")),
    b(Mode::Diff, &[C('s')], A::Diff(DiffAction::SwapSides), "swap A and B", None),
    b(Mode::Diff, &[Ctrl('t')], A::CycleTheme, "next theme: dark, light, high-contrast, mono", None),
    b(Mode::Diff, &[C('?'), Code(K::F(1))], A::Help, "this help", Some("help")),
    b(Mode::Diff, &[Code(K::Esc), C('q'), C('d')], A::CloseOverlay, "close diff mode", Some("close")),
    b(Mode::Diff, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    b(Mode::DiffKnobs, &[Code(K::Up), C('k')], A::KnobUp, "previous knob", None),
    b(Mode::DiffKnobs, &[Code(K::Down), C('j')], A::KnobDown, "next knob", None),
    b(Mode::DiffKnobs, &[Code(K::Right), C('l')], A::KnobInc, "increase by one step", Some("adjust")),
    b(Mode::DiffKnobs, &[Code(K::Left), C('h')], A::KnobDec, "decrease by one step", None),
    b(Mode::DiffKnobs, &[Shift(K::Right), C('L')], A::KnobIncBig, "increase by ten steps", None),
    b(Mode::DiffKnobs, &[Shift(K::Left), C('H')], A::KnobDecBig, "decrease by ten steps", None),
    b(Mode::DiffKnobs, &[C('r')], A::KnobReset, "reset the knob to its default", Some("reset")),
    b(Mode::DiffKnobs, &[Code(K::Tab), Code(K::BackTab), Shift(K::BackTab)], A::FocusNext, "edit the other side's knobs", Some("other side")),
    b(Mode::DiffKnobs, &[Code(K::Esc), C('q'), C('a'), C('b')], A::CloseOverlay, "close the panel", Some("close")),
    b(Mode::DiffKnobs, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    b(Mode::DiffPick, &[Code(K::Up), C('k')], A::ListUp, "previous policy", None),
    b(Mode::DiffPick, &[Code(K::Down), C('j')], A::ListDown, "next policy", None),
    b(Mode::DiffPick, &[Code(K::Enter)], A::Accept, "compare with this policy", Some("compare")),
    b(Mode::DiffPick, &[Code(K::Esc), C('q')], A::CloseOverlay, "cancel", Some("cancel")),
    b(Mode::DiffPick, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
];
