//! What the view reports about the frame it drew, for `update` to act on: the page size and the
//! furthest scroll of each scrollable pane, and where the main screen's panes are (for mouse hit
//! tests). [`crate::tui::ui::geometry`] computes it from the same layout the view draws with; the
//! runner hands it back as [`crate::tui::app::Msg::Geometry`] when it changed. `update` never lays
//! anything out itself: it holds logical positions (a cursor, a selection, a top line) and asks
//! the last reported geometry how far a page goes.

use ratatui::layout::Rect;

/// A scrollable list or text as drawn: rows shown at once and the largest useful top row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scroll {
    pub page: usize,
    pub max: usize,
}

impl Scroll {
    /// The scroll of `rows` rows in a view `page` rows high.
    pub fn of(rows: usize, page: usize) -> Scroll {
        Scroll {
            page,
            max: rows.saturating_sub(page),
        }
    }

    /// `top` moved by `by` rows (down when positive), kept within `0..=max`.
    pub fn moved(&self, top: usize, by: isize) -> usize {
        top.saturating_add_signed(by).min(self.max)
    }

    /// Half a page (at least one row): what PgUp / PgDn move by.
    pub fn half_page(&self) -> isize {
        (self.page / 2).max(1) as isize
    }

    /// What PgUp / PgDn move a text pane by: half a page, but on a short pane (fewer than ten
    /// rows, as at 80×24) all but one row, so a long page is read in a few keys.
    pub fn text_step(&self) -> isize {
        if self.page < 10 {
            self.page.saturating_sub(1).max(1) as isize
        } else {
            self.half_page()
        }
    }
}

/// The main screen's panes as last drawn. Zero-sized rectangles are panes not on screen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MainGeometry {
    /// The heatmap block, title included (wheel target).
    pub heat: Rect,
    /// Episode labels and cells of the heatmap (clicks select an episode or a request).
    pub heat_labels: Rect,
    pub heat_cells: Rect,
    /// Episode rows the heatmap shows at once.
    pub heat_rows: usize,
    /// The chart's plot (a click moves the cursor; its columns are the heatmap's).
    pub chart: Rect,
    pub table: Rect,
    /// The table's rows (below its header).
    pub table_body: Rect,
    pub context: Rect,
    pub context_scroll: Scroll,
    pub detail: Rect,
    pub detail_scroll: Scroll,
}

/// Everything `update` needs to know about the screen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Geometry {
    pub main: MainGeometry,
    /// The help overlay's text, and the row it shows at the top (where a section it opened at
    /// starts).
    pub help: Scroll,
    pub help_top: usize,
    /// Rows of the session picker's list.
    pub picker_rows: usize,
    /// The text pane of the open panel that has one (diff mode's context diff).
    pub panel_text: Scroll,
}

#[cfg(test)]
mod tests {
    use super::Scroll;

    #[test]
    fn scrolls_stop_at_both_ends() {
        let s = Scroll::of(30, 10);
        assert_eq!(s.max, 20);
        assert_eq!(s.moved(5, -9), 0);
        assert_eq!(s.moved(15, 9), 20);
        assert_eq!(Scroll::of(4, 10).max, 0);
        assert_eq!(Scroll::of(4, 1).half_page(), 1);
    }
}
