//! The knobs panel (every knob of the current policy as a slider, plus the budget) and the policy
//! list. Each change reruns the replay off the UI thread; the panel shows "replaying…" meanwhile.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::{fmt_knob, knob_value};
use crate::tui::app::State;
use crate::tui::ui::{centered, pane_block, scrollbar, thousands};
use crate::tui::widgets::slider::Slider;
use tierscope_engine::policy::KnobValue;

/// Value, shown minimum, shown maximum and default of a slider.
type SliderRange = (f64, f64, f64, Option<f64>);

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let Some(selected) = state.knobs.panel else {
        return;
    };
    let t = &state.theme;
    let p = &state.on_screen.policy;
    let rows = 1 + p.specs.len();
    // Docked over the bottom panes so the heatmap, the chart and the metrics stay in view
    // while knobs change (that is the point of turning them).
    let rect = dock(state, area, rows as u16 + 6);
    crate::tui::ui::clear(f, rect, t.base);
    let status = if state.on_screen.pending {
        "replaying…"
    } else {
        "up to date"
    };
    let title = format!(" Knobs: {} ({}) — {status} ", p.name, p.kind);
    let block = pane_block(title, true, t);
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    if inner.height < 3 || inner.width < 30 {
        return;
    }
    let name_w: u16 = (inner.width / 3).clamp(22, 30);
    // The value column holds the widest value whole (a choice such as ‹cache-expiry›).
    let widest = p
        .specs
        .iter()
        .map(|s| match knob_value(p, s) {
            KnobValue::Num(n) => fmt_knob(n, s.integer).chars().count(),
            KnobValue::Choice(c) => c.chars().count() + 2,
            other => other.to_string().chars().count().max(5),
        })
        .max()
        .unwrap_or(0);
    let val_w: u16 = (widest as u16 + 1).clamp(12, inner.width.saturating_sub(name_w + 2).max(12));
    let slider_w = inner.width.saturating_sub(name_w + val_w + 2).min(40);
    // Rows visible: leave two lines for the help of the selected knob.
    let help = if selected == 0 {
        "tokens the rendered context may use; ←/→ move by 1 %, Enter types it, r resets to the model's limit"
            .to_owned()
    } else {
        p.specs
            .get(selected - 1)
            .map(|s| {
                let range = match (s.min, s.max, s.step) {
                    (Some(a), Some(b), Some(st)) => format!(" [{a} … {b}, step {st}]"),
                    _ if !s.choices.is_empty() => format!(" [{}]", s.choices.join(" | ")),
                    _ => String::new(),
                };
                let unread = if p.reads(&s.name) {
                    ""
                } else {
                    " (not read with these settings: moving it changes nothing)"
                };
                format!("{}{range}{unread}", s.help)
            })
            .unwrap_or_default()
    };
    // The selected knob's help, wrapped whole (up to four rows), below the list.
    let help_para = Paragraph::new(Line::from(Span::styled(help, t.dim))).wrap(Wrap { trim: true });
    let help_h = (help_para.line_count(inner.width) as u16)
        .clamp(2, 4)
        .min(inner.height.saturating_sub(3));
    let list_h = usize::from(inner.height.saturating_sub(help_h));
    let first = selected.saturating_sub(list_h.saturating_sub(1));
    let list_scroll = crate::tui::geometry::Scroll::of(rows, list_h);
    for (vis, row) in (first..rows).take(list_h).enumerate() {
        let y = inner.y + vis as u16;
        let focused = row == selected;
        // A knob the policy's driver does not read is dimmed (moving it changes nothing).
        let read = row == 0 || p.specs.get(row - 1).is_some_and(|s| p.reads(&s.name));
        let name_style = match (focused, read) {
            (true, _) => t.selection,
            (false, true) => t.base,
            (false, false) => t.dim,
        };
        let (name, value, range): (String, String, Option<SliderRange>) = if row == 0 {
            let b = state.on_screen.effective_budget() as f64;
            // Where it came from, in the header's words.
            let src = match (&state.on_screen.budget, state.on_screen.replay.as_deref()) {
                (Some(_), _) => "set",
                (None, Some(r)) => r.budget_origin(),
                (None, None) => "default",
            };
            (
                format!("budget ({src})"),
                thousands(b as u64),
                Some((b, 0.0, (b * 2.0).max(1000.0), None)),
            )
        } else {
            let spec = &p.specs[row - 1];
            let v = knob_value(p, spec);
            let modified = v != spec.default;
            let unread = if p.reads(&spec.name) { "" } else { " (unused)" };
            let name = format!("{}{}{unread}", spec.name, if modified { " *" } else { "" });
            match (&v, spec.min, spec.max) {
                (KnobValue::Num(n), Some(lo), Some(hi)) => {
                    let d = match spec.default {
                        KnobValue::Num(d) => Some(d),
                        _ => None,
                    };
                    // Huge ranges (token counts) are shown around the value, not 0..max.
                    let hi_shown = if hi > 1000.0 && hi > lo {
                        hi.min((n.abs().max(d.unwrap_or(0.0)) * 4.0).max(lo + 10.0))
                    } else {
                        hi
                    };
                    (
                        name,
                        fmt_knob(*n, spec.integer),
                        Some((*n, lo, hi_shown, d)),
                    )
                }
                (KnobValue::Bool(b), _, _) => {
                    (name, if *b { "[on]".into() } else { "[off]".into() }, None)
                }
                (KnobValue::Choice(c), _, _) => (name, format!("‹{c}›"), None),
                (other, _, _) => (name, other.to_string(), None),
            }
        };
        f.buffer_mut().set_stringn(
            inner.x,
            y,
            format!("{name:<w$}", w = usize::from(name_w)),
            usize::from(name_w),
            name_style,
        );
        f.buffer_mut().set_stringn(
            inner.x + name_w,
            y,
            format!("{value:>w$} ", w = usize::from(val_w - 1)),
            usize::from(val_w),
            if focused { t.key } else { t.base },
        );
        if let Some((v, lo, hi, d)) = range {
            if slider_w >= 5 {
                f.render_widget(
                    Slider {
                        value: v,
                        min: lo,
                        max: hi,
                        default: d,
                        theme: t,
                        focused,
                    },
                    Rect::new(inner.x + name_w + val_w + 1, y, slider_w, 1),
                );
            }
        }
    }
    let list_rect = Rect::new(rect.x, rect.y, rect.width, list_h as u16 + 2);
    scrollbar(f, list_rect, first, list_scroll, t);
    let help_area = Rect::new(
        inner.x,
        inner.bottom().saturating_sub(help_h),
        inner.width,
        help_h,
    );
    crate::tui::ui::clear(f, help_area, t.base);
    f.render_widget(help_para, help_area);
}

/// The knobs panel's rectangle: the bottom panes' area (right-aligned, at most 100 wide; on a
/// short terminal the chart's too), or centred when the main screen is not laid out.
fn dock(state: &State, area: Rect, want_h: u16) -> Rect {
    let r = crate::tui::main::view::layout::main_rects(area, state);
    if r.too_small || state.screen != crate::tui::app::Screen::Main {
        return centered(area, area.width.saturating_sub(4).min(96), want_h);
    }
    let bottom = r.metrics.y;
    // Over the bottom panes; on a short terminal over the chart too (the heatmap and the
    // metrics stay in view either way).
    let top = if bottom.saturating_sub(r.table.y) < want_h.min(12) && r.chart_block.height > 0 {
        r.chart_block.y
    } else {
        r.table.y
    };
    let h = want_h
        .min(bottom.saturating_sub(top))
        .max(6.min(bottom - top));
    let w = area.width.min(100);
    Rect::new(area.right() - w, bottom - h, w, h)
}

pub fn render_policies(state: &State, f: &mut Frame, area: Rect, selected: usize) {
    let t = &state.theme;
    let n = state.knobs.names.len();
    let rect = centered(area, area.width.saturating_sub(4).min(100), n as u16 + 2);
    crate::tui::ui::clear(f, rect, t.base);
    // Inside the borders, after "● name         " (15) and a space: descriptions end in "…".
    let desc_w = usize::from(rect.width.saturating_sub(2 + 16));
    let mut lines = Vec::new();
    for (i, name) in state.knobs.names.iter().enumerate() {
        let desc = state.knobs.descs.get(i).cloned().unwrap_or_default();
        let cur = if *name == state.on_screen.policy.name {
            "●"
        } else {
            " "
        };
        let st = if i == selected { t.selection } else { t.base };
        lines.push(Line::from(vec![
            Span::styled(format!("{cur} {name:<13}"), st),
            Span::styled(
                format!(" {}", tierscope_engine::text::clip_chars(&desc, desc_w)),
                if i == selected { st } else { t.dim },
            ),
        ]));
    }
    f.render_widget(
        Paragraph::new(lines).block(pane_block(" Policy (Enter to use) ", true, t)),
        rect,
    );
}
