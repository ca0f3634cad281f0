//! The session picker: the source's sessions (sub-agents under their parents), filtered as the
//! user types.

pub mod keys;
pub mod view;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};

use crate::tui::app::{Effect, HelpView, Overlay, Screen, State};
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

pub fn on_key(state: &mut State, k: &KeyEvent, action: Option<Action>, fx: &mut Vec<Effect>) {
    let page = state.geometry.picker_rows.max(1) as isize;
    let p = &mut state.picker;
    match action {
        Some(Action::ListUp) => p.move_by(-1),
        Some(Action::ListDown) => p.move_by(1),
        Some(Action::ListPageUp) => p.move_by(-page),
        Some(Action::ListPageDown) => p.move_by(page),
        Some(Action::Accept) => {
            if let Some(&i) = p.matches().get(p.selected) {
                let id = p.sessions[i].id.clone();
                state.screen = Screen::Loading(format!("loading session {id}…"));
                fx.push(Effect::LoadSession { id: Some(id) });
            }
        }
        Some(Action::Back) => {
            if p.filter.is_empty() {
                state.quit = true;
            } else {
                p.filter.clear();
                p.selected = 0;
            }
        }
        Some(Action::ClearInput) => {
            p.filter.clear();
            p.selected = 0;
        }
        Some(Action::Help) => state.overlay = Overlay::Help(HelpView::at(Mode::Picker)),
        Some(Action::ForceQuit) => state.quit = true,
        _ => match k.code {
            KeyCode::Backspace => {
                p.filter.pop();
                p.selected = 0;
            }
            KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                p.filter.push(c);
                p.selected = 0;
            }
            _ => {}
        },
    }
}

pub fn on_mouse(state: &mut State, m: MouseEvent) {
    match m.kind {
        MouseEventKind::ScrollDown => state.picker.move_by(1),
        MouseEventKind::ScrollUp => state.picker.move_by(-1),
        _ => {}
    }
}
