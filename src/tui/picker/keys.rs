//! The session picker's key bindings, one entry each, gathered by [`crate::tui::keymap`] into
//! the keymap (lookup, help overlay, status-bar hints) in this order.

use ratatui::crossterm::event::KeyCode as K;

use crate::tui::keymap::Action as A;
use crate::tui::keymap::Key::{Code, Ctrl};
use crate::tui::keymap::{b, Binding, Mode};

#[rustfmt::skip]
pub static BINDINGS: &[Binding] = &[
    // session picker (other characters type into the filter)
    b(Mode::Picker, &[Code(K::Up), Ctrl('p')], A::ListUp, "previous session", None),
    b(Mode::Picker, &[Code(K::Down), Ctrl('n')], A::ListDown, "next session", None),
    b(Mode::Picker, &[Code(K::PageUp)], A::ListPageUp, "page up", None),
    b(Mode::Picker, &[Code(K::PageDown)], A::ListPageDown, "page down", None),
    b(Mode::Picker, &[Code(K::Enter)], A::Accept, "open the session", Some("open")),
    b(Mode::Picker, &[Code(K::Esc)], A::Back, "clear the filter, else quit", Some("clear/quit")),
    b(Mode::Picker, &[Ctrl('u')], A::ClearInput, "clear the filter", None),
    b(Mode::Picker, &[Code(K::F(1))], A::Help, "this help", Some("help")),
    b(Mode::Picker, &[Ctrl('c')], A::ForceQuit, "quit at once", None),
];
