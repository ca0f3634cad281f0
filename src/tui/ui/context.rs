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
    // The title's parts go in whole while they fit the top border (its corners take two).
    let mut title = format!(
        " Context t {}{}: {} chunks {} tok",
        c.request,
        if stale { "…" } else { "" },
        c.chunks.len(),
        short(c.total_tokens as f64),
    );
    for part in [
        format!(", kept {}", short(c.divergence_tokens as f64)),
        format!(", {changed} changed"),
    ] {
        if title.chars().count() + part.chars().count() + 3 > usize::from(area.width) {
            break;
        }
        title.push_str(&part);
    }
    title.push(' ');
    let inner_h = usize::from(area.height.saturating_sub(2));
    let inner_w = usize::from(area.width.saturating_sub(2));
    if state.context_expanded {
        let lines = expanded(state, c, inner_h, inner_w);
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
            lines.push(divergence_line(c, t, inner_w));
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
            if inner_w >= 54 {
                "── no divergence: the previous context is a prefix ──"
            } else {
                "── no divergence ──"
            },
            t.dim,
        )));
    }
    f.render_widget(
        Paragraph::new(lines).block(pane_block(title, focused, t)),
        area,
    );
}

/// The divergence marker, in words that fit `width` (a narrow pane gets the short form).
fn divergence_line<'a>(c: &ContextModel, t: &crate::tui::theme::Theme, width: usize) -> Line<'a> {
    let kept = c.divergence_tokens;
    let redo = c.total_tokens.saturating_sub(kept);
    let long = format!(
        "── divergence: {} tok of prefix kept, {} to reprocess",
        thousands(kept),
        thousands(redo)
    );
    let brief = format!(
        "── ↯ kept {}, redo {} ──",
        short(kept as f64),
        short(redo as f64)
    );
    let text = [format!("{long} ──"), long]
        .into_iter()
        .find(|s| s.chars().count() <= width)
        .unwrap_or(brief);
    Line::from(Span::styled(text, t.divergence))
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
fn expanded<'a>(state: &State, c: &'a ContextModel, h: usize, w: usize) -> Vec<Line<'a>> {
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
                out.push(divergence_line(c, t, w));
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
