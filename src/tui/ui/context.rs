//! The rendered context at the cursor, chunk by chunk (episode, tier, tokens), with the
//! divergence point against the previous request marked and the changed chunks highlighted. It
//! opens with the divergence in view and the pane filled; a scrollbar and "▲/▼ n more" say what
//! is out of view. Reports its scroll limits.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{hidden_rows, pane_block, scrollbar, thousands};
use crate::tui::app::State;
use crate::tui::geometry::Scroll;
use crate::tui::main::Pane;
use crate::tui::theme::Theme;
use crate::tui::view_model::{ChunkRow, ContextModel, ContextRow};
use crate::tui::widgets::chart::short;

pub fn render(state: &State, f: &mut Frame, area: Rect) -> Scroll {
    let t = &state.theme;
    let cv = &state.main.context;
    let focused = state.main.focus == Pane::Context;
    let page = usize::from(area.height.saturating_sub(2));
    let Some(c) = &cv.model else {
        let msg = if cv.pending || state.schedule.pending {
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
        return Scroll::default();
    };
    let rows = c.rows(cv.expanded);
    let scroll = Scroll::of(rows.len(), page);
    let top = cv.scroll.min(scroll.max);
    let stale = c.request != state.main.cursor;
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
    let inner_w = usize::from(area.width.saturating_sub(2));
    let lines: Vec<Line> = rows
        .iter()
        .skip(top)
        .take(page)
        .map(|row| match *row {
            ContextRow::Divergence => divergence_line(c, t, inner_w),
            ContextRow::NoDivergence => Line::from(Span::styled(
                if inner_w >= 54 {
                    "── no divergence: the previous context is a prefix ──"
                } else {
                    "── no divergence ──"
                },
                t.dim,
            )),
            ContextRow::Chunk(i) if cv.expanded => header(&c.chunks[i], t),
            ContextRow::Chunk(i) => chunk_line(&c.chunks[i], t),
            ContextRow::Line(l) => {
                let (chunk, text) = &c.lines[l];
                let style = if c.chunks.get(*chunk).is_some_and(|x| x.changed) {
                    t.chunk_changed
                } else {
                    t.base
                };
                Line::from(Span::styled(text.as_str(), style))
            }
        })
        .collect();
    let block = pane_block(title, focused, t)
        .title_bottom(Line::from(Span::styled(hidden_rows(top, scroll), t.dim)).right_aligned());
    f.render_widget(Paragraph::new(lines).block(block), area);
    scrollbar(f, area, top, scroll, t);
    scroll
}

fn chunk_line<'a>(ch: &'a ChunkRow, t: &Theme) -> Line<'a> {
    let mark = if ch.changed { "▌" } else { " " };
    let style = if ch.changed { t.chunk_changed } else { t.base };
    Line::from(vec![
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
        Span::styled(ch.preview.as_str(), style),
    ])
}

/// The divergence marker, in words that fit `width` (a narrow pane gets the short form).
fn divergence_line<'a>(c: &ContextModel, t: &Theme, width: usize) -> Line<'a> {
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

fn header<'a>(ch: &ChunkRow, t: &Theme) -> Line<'a> {
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
