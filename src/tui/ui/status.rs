//! The status bar: the last message (if any), then the keys that matter in the current mode.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::key_spans;
use crate::tui::app::{Level, State};
use crate::tui::keymap;

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let mut spans = Vec::new();
    if let Some((msg, level)) = &state.flash {
        let st = match level {
            Level::Info => t.status_key,
            Level::Warn => t.warn,
            Level::Error => t.error,
        };
        spans.push(Span::styled(format!(" {msg} "), st));
        spans.push(Span::styled("│", t.status));
    }
    spans.extend(crate::tui::follow::status_spans(state));
    let hints: Vec<(String, &str)> = keymap::hints(state.mode()).collect();
    spans.extend(key_spans(&hints, t.status_key, t.status));
    if !state.stack.is_empty() {
        spans.push(Span::styled(" Bksp", t.status_key));
        spans.push(Span::styled(" back ", t.status));
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(t.status), area);
}
