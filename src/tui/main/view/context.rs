//! The rendered context at the cursor, chunk by chunk (episode, tier, tokens), with the
//! divergence point against the previous request marked and the changed chunks highlighted. It
//! opens with the divergence in view and the pane filled; a scrollbar and "▲/▼ n more" say what
//! is out of view. Reports its scroll limits.
//!
//! Long lines wrap to the pane (continuations indented), so a chunk's text is read whole: a row
//! of the model takes as many screen lines as it needs, at most [`PREVIEW_ROWS`] for a chunk's
//! preview in the one-line-per-chunk view (`e` shows all of it). `E` turns wrapping off (rows
//! clipped at the border). The scroll position counts screen lines; [`ContextLayout`] maps them
//! to rows, for the view and for `update` alike.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::tui::app::State;
use crate::tui::geometry::Scroll;
use crate::tui::main::Pane;
use crate::tui::theme::Theme;
use crate::tui::ui::{hidden_rows, pane_block, scrollbar, thousands};
use crate::tui::view_model::{ChunkRow, ContextModel, ContextRow};
use crate::tui::widgets::chart::short;
use crate::tui::widgets::wrap;

/// Most lines a chunk's preview wraps to in the one-line-per-chunk view.
pub const PREVIEW_ROWS: usize = 3;
/// Continuation lines start this far in.
const INDENT: usize = 2;

/// Where each row of the context starts, in screen lines, at one width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextLayout {
    /// `starts[i]`: the first line of row `i`; the last entry is the total.
    starts: Vec<usize>,
}

impl ContextLayout {
    /// The layout of `c`'s rows in a pane `width` columns wide inside its border (0: unknown,
    /// one line a row), wrapped unless `clip`.
    pub fn of(c: &ContextModel, expanded: bool, clip: bool, width: usize, t: &Theme) -> Self {
        let rows = c.rows(expanded);
        let mut starts = Vec::with_capacity(rows.len() + 1);
        let mut at = 0;
        for row in rows {
            starts.push(at);
            at += if clip || width == 0 {
                1
            } else {
                row_height(c, *row, expanded, t, width)
            };
        }
        starts.push(at);
        ContextLayout { starts }
    }

    /// Screen lines in all.
    pub fn total(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// The first line of row `row`.
    pub fn line_of(&self, row: usize) -> usize {
        self.starts
            .get(row)
            .copied()
            .unwrap_or_else(|| self.total())
    }

    /// The row shown at line `line` and how many of its lines are above it.
    pub fn row_at(&self, line: usize) -> (usize, usize) {
        let rows = self.starts.len().saturating_sub(1);
        let i = self
            .starts
            .partition_point(|&s| s <= line)
            .saturating_sub(1);
        let i = i.min(rows.saturating_sub(1));
        (i, line.saturating_sub(self.line_of(i)))
    }
}

fn row_height(c: &ContextModel, row: ContextRow, expanded: bool, t: &Theme, width: usize) -> usize {
    let h = match row {
        ContextRow::Line(l) => c
            .lines
            .get(l)
            .map_or(1, |(_, text)| wrap::height(text, 0, width, INDENT)),
        _ => wrap::height(
            &row_line(c, row, expanded, t, width).to_string(),
            0,
            width,
            INDENT,
        ),
    };
    match row {
        ContextRow::Chunk(_) if !expanded => h.min(PREVIEW_ROWS),
        _ => h,
    }
}

/// One row of the context as a line, unwrapped.
fn row_line<'a>(
    c: &'a ContextModel,
    row: ContextRow,
    expanded: bool,
    t: &Theme,
    inner_w: usize,
) -> Line<'a> {
    match row {
        ContextRow::Divergence => divergence_line(c, t, inner_w),
        ContextRow::Note => Line::from(Span::styled(
            format!("   why: {}", c.note.as_deref().unwrap_or_default()),
            t.dim,
        )),
        ContextRow::NoDivergence => Line::from(Span::styled(
            if inner_w >= 54 {
                "── no divergence: the previous context is a prefix ──"
            } else {
                "── no divergence ──"
            },
            t.dim,
        )),
        ContextRow::Chunk(i) if expanded => header(&c.chunks[i], t),
        ContextRow::Chunk(i) => chunk_line(&c.chunks[i], t),
        ContextRow::Line(l) => {
            let Some((chunk, text)) = c.lines.get(l) else {
                return Line::default();
            };
            let style = if c.chunks.get(*chunk).is_some_and(|x| x.changed) {
                t.chunk_changed
            } else {
                t.base
            };
            Line::from(Span::styled(text.as_str(), style))
        }
    }
}

pub fn render(state: &State, f: &mut Frame, area: Rect) -> Scroll {
    let t = &state.theme;
    let cv = &state.main.context;
    let focused = state.main.focus == Pane::Context;
    let page = usize::from(area.height.saturating_sub(2));
    let Some(c) = &cv.model else {
        let msg = if cv.pending || state.on_screen.pending {
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
    let inner_w = usize::from(area.width.saturating_sub(2));
    let rows = c.rows(cv.expanded);
    let layout = ContextLayout::of(c, cv.expanded, cv.clip, inner_w, t);
    let scroll = Scroll::of(layout.total(), page);
    let top = cv.scroll.min(scroll.max);
    let stale = c.request != state.main.cursor;
    let changed = c.chunks.iter().filter(|x| x.changed).count();
    // The title's parts go in whole while they fit the top border (its corners take two).
    let mut title = format!(
        " Context r{}{}: {} chunks {} tok",
        c.request,
        if stale { "…" } else { "" },
        c.chunks.len(),
        short(c.total_tokens as f64),
    );
    for part in [
        format!(", kept {}", short(c.divergence_tokens as f64)),
        format!(", {changed} changed"),
        if cv.clip { ", clipped (E)" } else { "" }.to_owned(),
    ] {
        if title.chars().count() + part.chars().count() + 3 > usize::from(area.width) {
            break;
        }
        title.push_str(&part);
    }
    title.push(' ');
    // The rows from the one at the top line, wrapped, the lines above `top` skipped.
    let (first, skip) = layout.row_at(top);
    let mut lines: Vec<Line> = Vec::with_capacity(page);
    for &row in rows.iter().skip(first) {
        let line = row_line(c, row, cv.expanded, t, inner_w);
        if cv.clip {
            lines.push(line);
        } else {
            let cap = matches!(row, ContextRow::Chunk(_) if !cv.expanded).then_some(PREVIEW_ROWS);
            lines.extend(wrap::wrap(line, inner_w, INDENT, cap));
        }
        if lines.len() >= page + skip {
            break;
        }
    }
    let lines: Vec<Line> = lines.into_iter().skip(skip).take(page).collect();
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
