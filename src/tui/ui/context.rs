//! The rendered context at the cursor, chunk by chunk (episode, tier, tokens), with the
//! divergence point against the previous request marked and the changed chunks highlighted.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{pane_block, thousands};
use crate::tui::app::{Pane, State};
use crate::tui::widgets::chart::short;

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let focused = state.focus == Pane::Context;
    let Some(c) = &state.context else {
        let msg = if state.context_pending || state.replay_pending {
            "rendering…"
        } else {
            "no context yet"
        };
        f.render_widget(
            Paragraph::new(msg)
                .style(t.dim)
                .block(pane_block(" Context ", focused, t)),
            area,
        );
        return;
    };
    let stale = c.request != state.cursor;
    let changed = c.chunks.iter().filter(|x| x.changed).count();
    let title = format!(
        " Context t {}{}: {} chunks {} tok, kept {}, {} changed ",
        c.request,
        if stale { "…" } else { "" },
        c.chunks.len(),
        short(c.total_tokens as f64),
        short(c.divergence_tokens as f64),
        changed
    );
    let inner_h = usize::from(area.height.saturating_sub(2));
    let mut lines: Vec<Line> = Vec::with_capacity(inner_h);
    let mut i = state.context_scroll.min(c.chunks.len().saturating_sub(1));
    while lines.len() < inner_h && i < c.chunks.len() {
        if c.divergence_chunk == Some(i) {
            lines.push(Line::from(Span::styled(
                format!(
                    "── divergence: {} tok of prefix kept, {} to reprocess ──",
                    thousands(c.divergence_tokens),
                    thousands(c.total_tokens.saturating_sub(c.divergence_tokens))
                ),
                t.divergence,
            )));
            if lines.len() >= inner_h {
                break;
            }
        }
        let ch = &c.chunks[i];
        let mark = if ch.changed { "▌" } else { " " };
        let style = if ch.changed { t.chunk_changed } else { t.base };
        lines.push(Line::from(vec![
            Span::styled(mark, t.chunk_changed),
            Span::styled(format!("{:<7}", ch.label), style),
            Span::styled(
                format!("{:<8}", if ch.tier == ch.label { "" } else { ch.tier.as_str() }),
                t.dim,
            ),
            Span::styled(format!("{:>6} ", short(ch.tokens as f64)), t.dim),
            Span::styled(ch.preview.clone(), if ch.changed { style } else { t.base }),
        ]));
        i += 1;
    }
    if c.divergence_chunk.is_none() && lines.len() < inner_h && i >= c.chunks.len() {
        lines.push(Line::from(Span::styled(
            "── no divergence: the previous context is a prefix ──",
            t.dim,
        )));
    }
    f.render_widget(
        Paragraph::new(lines).block(pane_block(title, focused, t)),
        area,
    );
}
