//! The status bar: the last message (if any), then the keys that matter in the current mode.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::key_spans;
use crate::tui::app::{Level, State};
use crate::tui::keymap;

/// The last message, coloured by its level, and a separator; nothing when there is none.
pub fn flash_spans(state: &State) -> Vec<Span<'static>> {
    let t = &state.theme;
    let Some((msg, level)) = &state.flash else {
        return Vec::new();
    };
    let st = match level {
        Level::Info => t.status_key,
        Level::Warn => t.warn,
        Level::Error => t.error,
    };
    vec![
        Span::styled(format!(" {msg} "), st),
        Span::styled("│", t.status),
    ]
}

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let mut spans = flash_spans(state);
    spans.extend(crate::tui::follow::status_spans(state));
    let hints: Vec<(String, &str)> = keymap::hints(state.mode()).collect();
    spans.extend(key_spans(&hints, t.status_key, t.status));
    if !state.stack.is_empty() {
        spans.push(Span::styled(" Bksp", t.status_key));
        spans.push(Span::styled(" back ", t.status));
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(t.status), area);
}
