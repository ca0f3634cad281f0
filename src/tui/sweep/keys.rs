//! The sweep pane's key bindings: its own, one entry each, gathered by [`crate::tui::keymap`] into
//! the keymap (lookup, help overlay, status-bar hints) in the order given here.

use ratatui::crossterm::event::KeyCode as K;

use crate::tui::keymap::Action as A;
use crate::tui::keymap::Key::{Char as C, Code, Ctrl};
use crate::tui::keymap::{b, Binding, Mode};
use crate::tui::panels::{PanelAction, PanelId, PanelMode};

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

/// Where the sweep pane reads its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepMode {
    /// Browsing the grid (or waiting for it).
    Grid,
    /// Choosing the knobs, their ranges and the metric.
    Setup,
    /// Typing a range.
    Edit,
}

impl SweepMode {
    /// Its section's title in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            SweepMode::Grid => "Sweep pane (two knobs as a grid)",
            SweepMode::Setup => "Sweep pane: knobs, ranges, metric",
            SweepMode::Edit => "Sweep pane: typing a range",
        }
    }
}

/// The sweep pane's modes as the keymap names them.
pub const GRID: Mode = Mode::Panel(PanelMode::Sweep(SweepMode::Grid));
pub const SETUP: Mode = Mode::Panel(PanelMode::Sweep(SweepMode::Setup));
pub const EDIT: Mode = Mode::Panel(PanelMode::Sweep(SweepMode::Edit));

/// A sweep-pane action as the keymap holds it.
pub const fn own(a: SweepAction) -> A {
    A::Panel(PanelAction::Sweep(a))
}

/// The main screen's key that opens the sweep pane.
#[rustfmt::skip]
pub const OPEN: Binding = b(Mode::Main, &[C('S')], A::Open(PanelId::Sweep), "sweep pane: two knobs as a grid of a metric", None);

/// The sweep pane's bindings: the grid, its setup and its fields.
#[rustfmt::skip]
pub static BINDINGS: &[Binding] = &[
    // sweep pane
    b(GRID, &[Code(K::Up), C('k')], A::SelectUp, "previous row (y value)", None),
    b(GRID, &[Code(K::Down), C('j')], A::SelectDown, "next row (y value)", None),
    b(GRID, &[Code(K::Left), C('h')], A::StepPrev, "previous column (x value)", None),
    b(GRID, &[Code(K::Right), C('l')], A::StepNext, "next column (x value)", Some("move")),
    b(GRID, &[Code(K::Home), C('g')], A::First, "first point", None),
    b(GRID, &[Code(K::End), C('G')], A::Last, "last point", None),
    b(GRID, &[Code(K::Enter)], A::Accept, "load the point's knobs into the main view", Some("load")),
    b(GRID, &[C('m')], own(SweepAction::NextMetric), "colour by the next metric", Some("metric")),
    b(GRID, &[C('M')], own(SweepAction::PrevMetric), "colour by the previous metric", None),
    b(GRID, &[C('s'), C('e')], own(SweepAction::Setup), "change the knobs, ranges or metric", Some("setup")),
    b(GRID, &[C('?'), Code(K::F(1))], A::Help, "this help", None),
    b(GRID, &[Code(K::Esc), C('q'), C('S')], A::CloseOverlay, "close the pane (while sweeping: cancel)", Some("close")),
    b(GRID, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    b(SETUP, &[Code(K::Up), C('k')], A::ListUp, "previous row", None),
    b(SETUP, &[Code(K::Down), C('j')], A::ListDown, "next row", None),
    b(SETUP, &[Code(K::Right), C('l')], A::KnobInc, "next knob (or metric)", Some("change")),
    b(SETUP, &[Code(K::Left), C('h')], A::KnobDec, "previous knob (or metric)", None),
    b(SETUP, &[C('e')], own(SweepAction::EditRange), "type the range as FROM:TO:STEP", Some("range")),
    b(SETUP, &[Code(K::Enter)], A::Accept, "run the sweep", Some("run")),
    b(SETUP, &[C('?'), Code(K::F(1))], A::Help, "this help", None),
    b(SETUP, &[Code(K::Esc), C('q')], A::CloseOverlay, "back to the grid, else close the pane", Some("close")),
    b(SETUP, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    b(EDIT, &[Code(K::Enter)], A::Accept, "use the range", Some("accept")),
    b(EDIT, &[Code(K::Esc)], A::CloseOverlay, "keep the old range", Some("cancel")),
    b(EDIT, &[Ctrl('u')], A::ClearInput, "clear the field", None),
    b(EDIT, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
];
