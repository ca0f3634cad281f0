//! The tier heatmap: episodes (rows) × requests (columns, spread over the width), each cell the
//! applied tier, with marks for changes, holds at a floor, deferred changes and thrash, and the
//! request cursor as a column. Tiers are told apart by glyph as well as colour, so the mono theme
//! loses nothing.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::Widget;

use super::Viewport;
use crate::tui::theme::Theme;
use crate::tui::view_model::{cell, Grid};
use tierscope_engine::episode::model::Tier;

pub fn tier_glyph(t: Tier) -> &'static str {
    match t {
        Tier::Full => "█",
        Tier::Dense => "▓",
        Tier::Compact => "▒",
        Tier::Anchor => "░",
        Tier::Dropped => "·",
    }
}

/// An episode shown at `full` from a chunk on.
pub const TAIL_GLYPH: &str = tierscope_engine::replay::TAIL_MARK;

/// Glyph and style of one cell value (after bucket aggregation).
pub fn cell_look(v: u8, theme: &Theme) -> (&'static str, Style) {
    let state = v & cell::STATE;
    let base = match state {
        cell::NONE => (" ", theme.tier_future),
        cell::ACTIVE => ("◆", theme.tier_active),
        // The right half: the head is gone, the tail is kept.
        cell::TAIL_ONLY => (TAIL_GLYPH, theme.tier(Tier::Full)),
        s => {
            let t = Tier::from_depth(usize::from(s - cell::TIER0)).unwrap_or(Tier::Dropped);
            (tier_glyph(t), theme.tier(t))
        }
    };
    if v & cell::THRASH != 0 {
        ("!", theme.mark_thrash)
    } else if v & cell::CHANGE != 0 {
        let g = if v & cell::PROMOTE != 0 { "▲" } else { "▼" };
        (g, base.1.patch(theme.mark_change))
    } else if v & cell::HOLD != 0 {
        ("⊥", theme.mark_hold)
    } else if v & cell::DEFERRED != 0 {
        ("…", theme.mark_deferred)
    } else {
        base
    }
}

/// The value a column shows for one row: the state at the cursor if the cursor is in the
/// bucket, else at the bucket's last request; marks from every request of the bucket.
pub fn bucket_value(grid: &Grid, row: usize, range: std::ops::Range<usize>, cursor: usize) -> u8 {
    if range.is_empty() {
        return cell::NONE;
    }
    let at = if range.contains(&cursor) {
        cursor
    } else {
        range.end - 1
    };
    let marks = grid.marks(row, range.start..=range.end - 1);
    grid.state(row, at) | marks
}

/// One row's label: the id, and the title when the label column has room for it.
pub struct RowLabel<'a> {
    pub id: &'a str,
    pub title: &'a str,
    /// A search match (drawn in the match style).
    pub hit: bool,
}

pub struct Heatmap<'a> {
    pub grid: &'a Grid,
    pub labels: &'a [RowLabel<'a>],
    pub vp: Viewport,
    pub first_row: usize,
    pub selected: usize,
    pub cursor: usize,
    pub theme: &'a Theme,
    pub label_width: u16,
}

/// A request-number tick every this many requests: the smallest of 1, 2, 5, 10, 20, 50, …
/// that leaves `min_cells` cells between ticks.
fn tick_step(vp: &Viewport, min_cells: usize) -> usize {
    let per_cell = vp.span as f64 / vp.width.max(1) as f64;
    let mut step = 1usize;
    for k in 0.. {
        let base = 10usize.saturating_pow(k);
        for m in [1, 2, 5] {
            step = base.saturating_mul(m);
            if step as f64 / per_cell >= min_cells as f64 {
                return step;
            }
        }
        if base > vp.total {
            break;
        }
    }
    step
}

impl Widget for Heatmap<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.height < 2 || area.width <= self.label_width {
            return;
        }
        let t = self.theme;
        let x0 = area.x + self.label_width;
        let vp = self.vp;
        // Axis: request numbers at round intervals, the cursor's number above its cells.
        let axis_y = area.y;
        buf.set_stringn(area.x, axis_y, "req", usize::from(self.label_width), t.dim);
        let step = tick_step(&vp, 7);
        let mut r = vp.first.div_ceil(step) * step;
        while r < (vp.first + vp.span).min(vp.total) {
            if let Some(cells) = vp.cells_of(r) {
                let x = x0 + cells.start as u16;
                let label = format!("┊{r}");
                if x + label.chars().count() as u16 <= area.right() {
                    buf.set_string(x, axis_y, &label, t.dim);
                }
            }
            r += step;
        }
        let cursor_cells = vp.cells_of(self.cursor);
        if let Some(cc) = &cursor_cells {
            let label = format!("▼{}", self.cursor);
            let w = label.chars().count() as u16;
            let x = (x0 + cc.start as u16).min(area.right().saturating_sub(w));
            buf.set_string(x, axis_y, &label, t.cursor);
        }
        let used = vp.used_cells();
        let rows = usize::from(area.height - 1);
        for i in 0..rows {
            let row = self.first_row + i;
            if row >= self.grid.rows {
                break;
            }
            let y = area.y + 1 + i as u16;
            let label = self.labels.get(row);
            let label_style = match label {
                _ if row == self.selected => t.selection,
                Some(l) if l.hit => t.search_match,
                _ => t.dim,
            };
            let lw = usize::from(self.label_width.saturating_sub(1));
            let text = match label {
                Some(l) if l.title.is_empty() => l.id.to_owned(),
                Some(l) => format!("{:<4} {}", l.id, l.title),
                None => String::new(),
            };
            let text = tierscope_engine::text::clip_chars(&text, lw);
            buf.set_stringn(area.x, y, format!("{text:<lw$}"), lw, label_style);
            let mut prev: Option<usize> = None;
            for x in 0..used {
                let range = vp.range(x);
                if range.is_empty() {
                    continue;
                }
                // A request several cells wide shows its mark once, in its first cell.
                let first_cell = prev != Some(range.start);
                prev = Some(range.start);
                let v = bucket_value(self.grid, row, range.clone(), self.cursor);
                let (g, mut st) = if first_cell {
                    cell_look(v, t)
                } else {
                    cell_look(v & cell::STATE, t)
                };
                if cursor_cells.as_ref().is_some_and(|c| c.contains(&x)) {
                    st = st.patch(t.cursor);
                }
                buf.set_string(x0 + x as u16, y, g, st);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_keep_marks_and_show_the_cursor_state() {
        let mut g = Grid::new(1, 4);
        g.set(0, 0, cell::ACTIVE);
        g.set(0, 1, cell::TIER0);
        g.set(0, 2, (cell::TIER0 + 2) | cell::CHANGE);
        g.set(0, 3, cell::TIER0 + 2);
        assert_eq!(bucket_value(&g, 0, 0..4, 1), cell::TIER0 | cell::CHANGE);
        assert_eq!(
            bucket_value(&g, 0, 0..4, 9),
            (cell::TIER0 + 2) | cell::CHANGE
        );
        let theme = Theme::default_for_env();
        assert_eq!(cell_look(cell::TIER0 + 3, &theme).0, "░");
        assert_eq!(cell_look(cell::TAIL_ONLY, &theme).0, TAIL_GLYPH);
        assert_eq!(cell_look(cell::TAIL_ONLY | cell::CHANGE, &theme).0, "▼");
        assert_eq!(cell_look(cell::TIER0 | cell::HOLD, &theme).0, "⊥");
    }

    #[test]
    fn ticks_are_round_and_spaced() {
        let vp = Viewport::new(0, None, 150, 24);
        assert_eq!(tick_step(&vp, 7), 2);
        let vp = Viewport::new(0, None, 100, 2000);
        assert_eq!(tick_step(&vp, 7), 200);
    }
}
