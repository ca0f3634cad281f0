//! The tier heatmap: episodes (rows) × requests (columns), each cell the applied tier, with marks
//! for changes, holds at a floor, deferred changes and thrash, and the request cursor as a column.
//! Tiers are told apart by glyph as well as colour, so the mono theme loses nothing.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::Widget;

use super::Viewport;
use crate::tui::model::{cell, Grid};
use crate::tui::theme::Theme;
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

/// Glyph and style of one cell value (after bucket aggregation).
pub fn cell_look(v: u8, theme: &Theme) -> (&'static str, Style) {
    let state = v & cell::STATE;
    let base = match state {
        cell::NONE => (" ", theme.tier_future),
        cell::ACTIVE => ("◆", theme.tier_active),
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
    let mut marks = 0u8;
    for c in range {
        marks |= grid.get(row, c) & !cell::STATE;
    }
    (grid.get(row, at) & cell::STATE) | marks
}

pub struct Heatmap<'a> {
    pub grid: &'a Grid,
    /// Row labels (episode ids).
    pub labels: &'a [&'a str],
    pub vp: Viewport,
    pub first_row: usize,
    pub selected: usize,
    pub cursor: usize,
    pub theme: &'a Theme,
    pub label_width: u16,
}

impl Widget for Heatmap<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.height < 2 || area.width <= self.label_width {
            return;
        }
        let t = self.theme;
        let x0 = area.x + self.label_width;
        // Axis: request numbers at regular columns, the cursor's number above its column.
        let axis_y = area.y;
        buf.set_stringn(area.x, axis_y, "req", usize::from(self.label_width), t.dim);
        let used = self.vp.used_cols();
        let tick_every = 10usize;
        let mut c = 0;
        let cw = self.vp.col_w.max(1);
        let tick_every = (tick_every / cw).max(1) * if cw > 1 { 2 } else { 1 };
        while c < used {
            let r = self.vp.range(c).start;
            let label = format!("{r}");
            let x = x0 + (c * cw) as u16;
            if x + label.len() as u16 <= area.right() {
                buf.set_string(x, axis_y, "┊", t.dim);
                buf.set_stringn(
                    x + 1,
                    axis_y,
                    &label,
                    usize::from(area.right() - x - 1),
                    t.dim,
                );
            }
            c += tick_every;
        }
        let cursor_col = self.vp.col_of(self.cursor);
        if let Some(cc) = cursor_col {
            let label = format!("▼{}", self.cursor);
            let w = label.chars().count() as u16;
            let x = (x0 + (cc * cw) as u16).min(area.right().saturating_sub(w));
            buf.set_string(x, axis_y, &label, t.cursor);
        }
        let rows = usize::from(area.height - 1);
        for i in 0..rows {
            let row = self.first_row + i;
            if row >= self.grid.rows {
                break;
            }
            let y = area.y + 1 + i as u16;
            let label_style = if row == self.selected {
                t.selection
            } else {
                t.dim
            };
            let label = self.labels.get(row).copied().unwrap_or("");
            let lw = usize::from(self.label_width.saturating_sub(1));
            buf.set_stringn(area.x, y, format!("{label:<lw$}"), lw, label_style);
            for col in 0..used {
                let v = bucket_value(self.grid, row, self.vp.range(col), self.cursor);
                let (g, mut st) = cell_look(v, t);
                if Some(col) == cursor_col {
                    st = st.patch(t.cursor);
                }
                // A wide column repeats the tier glyph; a mark shows once, in its first cell.
                let fill = cell_look(v & cell::STATE, t).0;
                for k in 0..cw {
                    let x = x0 + (col * cw + k) as u16;
                    if x >= area.right() {
                        break;
                    }
                    let sym = if k == 0 { g } else { fill };
                    let sst = if k == 0 {
                        st
                    } else {
                        let base = cell_look(v & cell::STATE, t).1;
                        if Some(col) == cursor_col {
                            base.patch(t.cursor)
                        } else {
                            base
                        }
                    };
                    buf.set_string(x, y, sym, sst);
                }
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
        assert_eq!(cell_look(cell::TIER0 | cell::HOLD, &theme).0, "⊥");
    }
}
