//! The knobs panel's and the policy list's key bindings, one entry each, gathered by
//! [`crate::tui::keymap`] into the keymap (lookup, help overlay, status-bar hints) in this order.

use ratatui::crossterm::event::KeyCode as K;

use crate::tui::keymap::Action as A;
use crate::tui::keymap::Key::{Char as C, Code, Ctrl, Shift};
use crate::tui::keymap::{b, Binding, Mode};

#[rustfmt::skip]
pub static BINDINGS: &[Binding] = &[
    // knobs panel
    b(Mode::Knobs, &[Code(K::Up), C('k')], A::KnobUp, "previous knob", None),
    b(Mode::Knobs, &[Code(K::Down), C('j')], A::KnobDown, "next knob", None),
    b(Mode::Knobs, &[Code(K::Right), C('l')], A::KnobInc, "increase by one step", Some("adjust")),
    b(Mode::Knobs, &[Code(K::Left), C('h')], A::KnobDec, "decrease by one step", None),
    b(Mode::Knobs, &[Shift(K::Right), C('L')], A::KnobIncBig, "increase by ten steps", None),
    b(Mode::Knobs, &[Shift(K::Left), C('H')], A::KnobDecBig, "decrease by ten steps", None),
    b(Mode::Knobs, &[Code(K::Enter), C('e')], A::KnobType, "type an exact value", Some("type")),
    b(Mode::Knobs, &[C('r')], A::KnobReset, "reset the knob to its default", Some("reset")),
    b(Mode::Knobs, &[C('w')], A::SavePolicy, "save the knobs as a policy TOML", Some("save")),
    b(Mode::Knobs, &[C('p')], A::SwitchPolicy, "switch policy", None),
    b(Mode::Knobs, &[Code(K::Esc), C('K'), C('q')], A::CloseOverlay, "close the panel", Some("close")),
    b(Mode::Knobs, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
    // policy list
    b(Mode::PolicyPick, &[Code(K::Up), C('k')], A::ListUp, "previous policy", None),
    b(Mode::PolicyPick, &[Code(K::Down), C('j')], A::ListDown, "next policy", None),
    b(Mode::PolicyPick, &[Code(K::Enter)], A::Accept, "use this policy", Some("use")),
    b(Mode::PolicyPick, &[Code(K::Esc), C('q')], A::CloseOverlay, "close", Some("close")),
    b(Mode::PolicyPick, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
];
