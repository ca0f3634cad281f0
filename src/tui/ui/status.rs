//! The status bar: the last message (if any), a hint when nothing fades at the default budget,
//! then the keys that matter where the user is (on the main screen: the focused pane's first).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{fit_hints, key_spans};
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

/// Below this peak pressure, at a budget nobody chose, the schedule has nothing to do.
const IDLE_PRESSURE: f64 = 0.5;

/// "peak pressure 6 % at the default budget: nothing fades — try --budget or K" when the
/// default budget is so large that no episode ever changes tier (in few words when `narrow`, so
/// the footer keeps its keys).
pub fn idle_hint(state: &State, narrow: bool) -> Option<String> {
    let r = state.on_screen.replay.as_deref()?;
    if state.on_screen.budget.is_some()
        || r.totals.changes > 0
        || r.peak_pressure >= IDLE_PRESSURE
        || r.frames.is_empty()
    {
        return None;
    }
    let peak = r.peak_pressure * 100.0;
    Some(if narrow {
        format!("peak {peak:.0} %: nothing fades (K: budget)")
    } else {
        format!("peak pressure {peak:.0} % at the default budget: nothing fades, try --budget or K")
    })
}

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let mut lead = flash_spans(state);
    // In full where the main keys still fit beside it, else in a few words.
    let unmeetable = state.on_screen.replay.as_deref().and_then(|r| {
        let long = r.budget_warning.clone()?;
        if long.chars().count() + 44 <= usize::from(area.width) {
            Some(long)
        } else {
            r.budget_warning_short.clone()
        }
    });
    if lead.is_empty() {
        if let Some(w) = unmeetable {
            lead.push(Span::styled(format!(" ⚠ {w} "), t.error));
            lead.push(Span::styled("│", t.status));
        } else if let Some(h) = idle_hint(state, area.width < 120) {
            lead.push(Span::styled(format!(" {h} "), t.warn));
            lead.push(Span::styled("│", t.status));
        }
    }
    lead.extend(crate::tui::follow::status_spans(state));
    let mut tail = Vec::new();
    if !state.main.stack.is_empty() {
        tail.push(Span::styled(" Bksp", t.status_key));
        tail.push(Span::styled(" back ", t.status));
    }
    draw_bar(state, lead, state.mode(), tail, f, area);
}

/// A status bar: `lead`, then the hints of `mode` that fit whole in what is left of the width
/// (see [`fit_hints`]), then `tail`.
pub fn draw_bar(
    state: &State,
    lead: Vec<Span<'static>>,
    mode: keymap::Mode,
    tail: Vec<Span<'static>>,
    f: &mut Frame,
    area: Rect,
) {
    let t = &state.theme;
    let used: usize = lead.iter().chain(&tail).map(Span::width).sum();
    let hints = keymap::hints(mode, state.main.focus);
    let hints = fit_hints(&hints, usize::from(area.width).saturating_sub(used));
    let mut spans = lead;
    spans.extend(key_spans(&hints, t.status_key, t.status));
    spans.extend(tail);
    f.render_widget(Paragraph::new(Line::from(spans)).style(t.status), area);
}
