//! The session picker: the source's sessions (sub-agents under their parents), filtered as the
//! user types. Its updates change only its own state and hand back an [`Out`].

pub mod keys;
pub mod view;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};

use crate::tui::app::{Effect, State};
use crate::tui::component::{Ask, Out};
use crate::tui::keymap::{Action, Mode};
use crate::tui::view_model::SessionEntry;

#[derive(Debug, Clone, Default)]
pub struct PickerState {
    pub sessions: Vec<SessionEntry>,
    pub filter: String,
    pub selected: usize,
}

impl PickerState {
    /// Rows that match the filter, as indices into `sessions`.
    pub fn matches(&self) -> Vec<usize> {
        let f = self.filter.to_lowercase();
        self.sessions
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                f.is_empty()
                    || s.title.to_lowercase().contains(&f)
                    || s.directory.to_lowercase().contains(&f)
                    || s.agent.contains(&f)
                    || s.id.to_lowercase().contains(&f)
            })
            .map(|(i, _)| i)
            .collect()
    }

    fn move_by(&mut self, by: isize) {
        let n = self.matches().len();
        self.selected = self
            .selected
            .saturating_add_signed(by)
            .min(n.saturating_sub(1));
    }
}

impl PickerState {
    /// Keys of the picker; `page` is the rows the list last showed.
    pub fn on_key(&mut self, page: usize, k: &KeyEvent, action: Option<Action>, out: &mut Out) {
        let page = page.max(1) as isize;
        match action {
            Some(Action::ListUp) => self.move_by(-1),
            Some(Action::ListDown) => self.move_by(1),
            Some(Action::ListPageUp) => self.move_by(-page),
            Some(Action::ListPageDown) => self.move_by(page),
            Some(Action::Accept) => {
                if let Some(&i) = self.matches().get(self.selected) {
                    out.ask(Ask::OpenSession(self.sessions[i].id.clone()));
                }
            }
            Some(Action::Back) if self.filter.is_empty() => out.ask(Ask::ForceQuit),
            Some(Action::Back | Action::ClearInput) => {
                self.filter.clear();
                self.selected = 0;
            }
            Some(Action::Help) => out.ask(Ask::Help(Mode::Picker)),
            Some(Action::ForceQuit) => out.ask(Ask::ForceQuit),
            _ => match k.code {
                KeyCode::Backspace => {
                    self.filter.pop();
                    self.selected = 0;
                }
                KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                    self.filter.push(c);
                    self.selected = 0;
                }
                _ => {}
            },
        }
    }

    /// The wheel moves the selection.
    pub fn on_mouse(&mut self, m: MouseEvent) {
        match m.kind {
            MouseEventKind::ScrollDown => self.move_by(1),
            MouseEventKind::ScrollUp => self.move_by(-1),
            _ => {}
        }
    }
}

/// Runs a picker update `f` and carries out what it hands back.
pub fn update(state: &mut State, fx: &mut Vec<Effect>, f: impl FnOnce(&mut PickerState, &mut Out)) {
    let mut out = Out::default();
    f(&mut state.picker, &mut out);
    crate::tui::component::carry_out(state, None, out, fx);
}
