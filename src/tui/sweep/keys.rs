//! The sweep pane's key bindings: its own, one entry each, gathered by [`crate::tui::keymap`] into
//! the keymap (lookup, help overlay, status-bar hints) in the order given here.

use ratatui::crossterm::event::KeyCode as K;

use crate::tui::keymap::Action as A;
use crate::tui::keymap::Key::{Char as C, Code, Ctrl};
use crate::tui::keymap::{b, Binding, Mode};

/// What only the sweep pane does; the shared actions (move, lists, help) are [`Action`](A)'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepAction {
    /// Type the range of the selected knob.
    EditRange,
    NextMetric,
    PrevMetric,
    /// Back to choosing the knobs, their ranges and the metric.
    Setup,
}

/// The sweep pane's bindings: the grid, its setup and its fields.
#[rustfmt::skip]
pub static BINDINGS: &[Binding] = &[
    // sweep pane
    b(Mode::Sweep, &[Code(K::Up), C('k')], A::SelectUp, "previous row (y value)", None),
    b(Mode::Sweep, &[Code(K::Down), C('j')], A::SelectDown, "next row (y value)", None),
    b(Mode::Sweep, &[Code(K::Left), C('h')], A::StepPrev, "previous column (x value)", None),
    b(Mode::Sweep, &[Code(K::Right), C('l')], A::StepNext, "next column (x value)", Some("move")),
    b(Mode::Sweep, &[Code(K::Home), C('g')], A::First, "first point", None),
    b(Mode::Sweep, &[Code(K::End), C('G')], A::Last, "last point", None),
    b(Mode::Sweep, &[Code(K::Enter)], A::Accept, "load the point's knobs into the main view", Some("load")),
    b(Mode::Sweep, &[C('m')], A::Sweep(SweepAction::NextMetric), "colour by the next metric", Some("metric")),
    b(Mode::Sweep, &[C('M')], A::Sweep(SweepAction::PrevMetric), "colour by the previous metric", None),
    b(Mode::Sweep, &[C('s'), C('e')], A::Sweep(SweepAction::Setup), "change the knobs, ranges or metric", Some("setup")),
    b(Mode::Sweep, &[C('?'), Code(K::F(1))], A::Help, "this help", None),
    b(Mode::Sweep, &[Code(K::Esc), C('q'), C('S')], A::CloseOverlay, "close the pane (while sweeping: cancel)", Some("close")),
    b(Mode::Sweep, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    b(Mode::SweepSetup, &[Code(K::Up), C('k')], A::ListUp, "previous row", None),
    b(Mode::SweepSetup, &[Code(K::Down), C('j')], A::ListDown, "next row", None),
    b(Mode::SweepSetup, &[Code(K::Right), C('l')], A::KnobInc, "next knob (or metric)", Some("change")),
    b(Mode::SweepSetup, &[Code(K::Left), C('h')], A::KnobDec, "previous knob (or metric)", None),
    b(Mode::SweepSetup, &[C('e')], A::Sweep(SweepAction::EditRange), "type the range as FROM:TO:STEP", Some("range")),
    b(Mode::SweepSetup, &[Code(K::Enter)], A::Accept, "run the sweep", Some("run")),
    b(Mode::SweepSetup, &[C('?'), Code(K::F(1))], A::Help, "this help", None),
    b(Mode::SweepSetup, &[Code(K::Esc), C('q')], A::CloseOverlay, "back to the grid, else close the pane", Some("close")),
    b(Mode::SweepSetup, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    b(Mode::SweepEdit, &[Code(K::Enter)], A::Accept, "use the range", Some("accept")),
    b(Mode::SweepEdit, &[Code(K::Esc)], A::CloseOverlay, "keep the old range", Some("cancel")),
    b(Mode::SweepEdit, &[Ctrl('u')], A::ClearInput, "clear the field", None),
    b(Mode::SweepEdit, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
];
