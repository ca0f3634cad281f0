//! Custom widgets: the tier heatmap, the pressure/cost strip chart and the knob slider. They
//! share [`Viewport`], so the heatmap and the chart line up column for column.

pub mod chart;
pub mod heatmap;
pub mod slider;

/// Which requests the columns of a time-axis widget show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewport {
    /// The request at column 0.
    pub first: usize,
    /// Requests per column (zoom out); at least 1.
    pub per_col: usize,
    /// Cells per column (zoom in, for short traces on wide terminals); at least 1.
    pub col_w: usize,
    /// Columns available (each `col_w` cells wide).
    pub cols: usize,
    /// Requests in the trace.
    pub total: usize,
}

impl Viewport {
    /// Requests shown by column `col` (empty past the end of the trace).
    pub fn range(&self, col: usize) -> std::ops::Range<usize> {
        let per = self.per_col.max(1);
        let a = self
            .first
            .saturating_add(col.saturating_mul(per))
            .min(self.total);
        let b = a.saturating_add(per).min(self.total);
        a..b
    }
    /// The column showing request `r`, if visible.
    pub fn col_of(&self, r: usize) -> Option<usize> {
        if r < self.first || r >= self.total {
            return None;
        }
        let c = (r - self.first) / self.per_col.max(1);
        (c < self.cols).then_some(c)
    }
    /// Columns that hold requests.
    pub fn used_cols(&self) -> usize {
        let per = self.per_col.max(1);
        (self.total.saturating_sub(self.first))
            .div_ceil(per)
            .min(self.cols)
    }
    /// The column under cell offset `x` (cells from the first column).
    pub fn col_at(&self, x: usize) -> usize {
        x / self.col_w.max(1)
    }
    /// The viewport that fits `total` requests into `width` cells: several requests per column
    /// when they do not fit, several cells per request (at most 16) when there is room.
    pub fn fit(total: usize, width: usize) -> (usize, usize) {
        let per = Viewport::fit_zoom(total, width);
        let w = if per == 1 && total > 0 {
            (width / total).clamp(1, 16)
        } else {
            1
        };
        (per, w)
    }
    /// The smallest zoom at which `total` requests fit in `cols` columns.
    pub fn fit_zoom(total: usize, cols: usize) -> usize {
        if cols == 0 {
            return 1;
        }
        total.div_ceil(cols).max(1)
    }
    /// `first` moved so that request `r` is visible (keeps a margin of a few columns).
    pub fn follow(first: usize, per_col: usize, cols: usize, total: usize, r: usize) -> usize {
        let per = per_col.max(1);
        let span = cols.saturating_mul(per);
        if span == 0 || total <= span {
            return 0;
        }
        let margin = (cols / 8).min(4) * per;
        let max_first = total.saturating_sub(span).div_ceil(per) * per;
        let mut f = first.min(max_first);
        if r < f + margin {
            f = r.saturating_sub(margin) / per * per;
        } else if r + margin >= f + span {
            f = (r + margin + per).saturating_sub(span).div_ceil(per) * per;
        }
        f.min(max_first)
    }
}

#[cfg(test)]
mod tests {
    use super::Viewport;

    #[test]
    fn viewport_maps_requests_and_follows_the_cursor() {
        let vp = Viewport {
            first: 10,
            per_col: 3,
            col_w: 1,
            cols: 5,
            total: 30,
        };
        assert_eq!(vp.range(0), 10..13);
        assert_eq!(vp.range(4), 22..25);
        assert_eq!(vp.col_of(12), Some(0));
        assert_eq!(vp.col_of(25), None);
        assert_eq!(vp.col_of(9), None);
        assert_eq!(Viewport::fit_zoom(2000, 100), 20);
        assert_eq!(Viewport::follow(0, 1, 10, 5, 4), 0);
        let f = Viewport::follow(0, 1, 20, 100, 50);
        assert!(f <= 50 && 50 < f + 20);
        let f = Viewport::follow(90, 1, 20, 100, 10);
        assert!(f <= 10 && 10 < f + 20);
        assert_eq!(Viewport::follow(0, 1, 20, 100, 99), 80);
        assert_eq!(Viewport::fit(24, 115), (1, 4));
        assert_eq!(Viewport::fit(2000, 100), (20, 1));
        assert_eq!(Viewport::fit(3, 200), (1, 16));
    }
}
