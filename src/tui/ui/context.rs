//! The rendered context at the cursor, chunk by chunk (episode, tier, tokens), with the
//! divergence point against the previous request marked and the changed chunks highlighted.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{pane_block, thousands};
use crate::tui::app::{Pane, State};
use crate::tui::model::{ChunkRow, ContextModel};
use crate::tui::widgets::chart::short;

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let focused = state.focus == Pane::Context;
    let Some(c) = &state.context else {
        let msg = if state.context_pending || state.replay_pending {
            "rendering…"
        } else if state.session.is_some() && state.requests() == 0 {
            "no requests: no context was sent to the model yet"
        } else {
            "no context yet"
        };
        f.render_widget(
            Paragraph::new(msg)
                .style(t.dim)
                .wrap(ratatui::widgets::Wrap { trim: true })
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
    if state.context_expanded {
        let lines = expanded(state, c, inner_h);
        f.render_widget(
            Paragraph::new(lines).block(pane_block(title, focused, t)),
            area,
        );
        return;
    }
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
                format!(
                    "{:<8}",
                    if ch.tier == ch.label {
                        ""
                    } else {
                        ch.tier.as_str()
                    }
                ),
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

fn divergence_line<'a>(c: &ContextModel, t: &crate::tui::theme::Theme) -> Line<'a> {
    Line::from(Span::styled(
        format!(
            "── divergence: {} tok of prefix kept, {} to reprocess ──",
            thousands(c.divergence_tokens),
            thousands(c.total_tokens.saturating_sub(c.divergence_tokens))
        ),
        t.divergence,
    ))
}

fn header<'a>(ch: &ChunkRow, t: &crate::tui::theme::Theme) -> Line<'a> {
    let st = if ch.changed {
        t.chunk_changed
    } else {
        t.title_focus
    };
    Line::from(vec![
        Span::styled(if ch.changed { "▌" } else { "▸" }, st),
        Span::styled(
            format!(
                "{} {} {} tok{}",
                ch.label,
                if ch.tier == ch.label {
                    ""
                } else {
                    ch.tier.as_str()
                },
                ch.tokens,
                if ch.changed { " (changed)" } else { "" }
            ),
            st,
        ),
    ])
}

/// Every chunk's text from the scroll line on, each chunk under a header line.
fn expanded<'a>(state: &State, c: &'a ContextModel, h: usize) -> Vec<Line<'a>> {
    let t = &state.theme;
    let mut out: Vec<Line> = Vec::with_capacity(h);
    let n = c.chunks.len();
    if n == 0 {
        return out;
    }
    let scroll = state.context_scroll.min(c.lines.len());
    // The chunk holding the scroll line (chunks with no text hold none; take the last start ≤).
    let mut chunk = c
        .chunk_start
        .partition_point(|&s| s <= scroll)
        .saturating_sub(1);
    let mut li = scroll;
    while out.len() < h && chunk < n {
        let start = c.chunk_start[chunk];
        let end = c
            .chunk_start
            .get(chunk + 1)
            .copied()
            .unwrap_or(c.lines.len());
        if li <= start {
            if c.divergence_chunk == Some(chunk) {
                out.push(divergence_line(c, t));
            }
            if out.len() < h {
                out.push(header(&c.chunks[chunk], t));
            }
            li = start;
        }
        let style = if c.chunks[chunk].changed {
            t.chunk_changed
        } else {
            t.base
        };
        while li < end && out.len() < h {
            out.push(Line::from(Span::styled(c.lines[li].1.as_str(), style)));
            li += 1;
        }
        chunk += 1;
        li = li.max(c.chunk_start.get(chunk).copied().unwrap_or(li));
    }
    out
}
