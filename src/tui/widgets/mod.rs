//! Custom widgets: the tier heatmap, the pressure/cost strip chart and the knob slider. They
//! share [`Viewport`], so the heatmap and the chart line up column for column.

pub mod chart;
pub mod heatmap;
pub mod slider;
pub mod wrap;

/// Which requests the cells of a time-axis widget show: `span` requests from `first` spread over
/// `width` cells, so the trace fills the width whatever its length. With fewer requests than
/// cells a request takes several cells (their count differs by at most one); with more, a cell
/// takes several requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewport {
    /// The request at the first cell.
    pub first: usize,
    /// Requests shown (at least 1).
    pub span: usize,
    /// Cells available.
    pub width: usize,
    /// Requests in the trace.
    pub total: usize,
}

/// Most cells one request may take when zoomed in.
pub const MAX_CELLS_PER_REQUEST: usize = 16;

impl Viewport {
    /// A viewport of `width` cells over `total` requests showing `span` of them from `first`
    /// (`None`: the whole trace), kept inside the trace.
    pub fn new(first: usize, span: Option<usize>, width: usize, total: usize) -> Viewport {
        let span = span.unwrap_or(total).clamp(1, total.max(1));
        let first = first.min(total.saturating_sub(span));
        Viewport {
            first,
            span,
            width,
            total,
        }
    }

    /// The smallest span worth zooming in to (a request at most [`MAX_CELLS_PER_REQUEST`] wide).
    pub fn min_span(width: usize) -> usize {
        width.div_ceil(MAX_CELLS_PER_REQUEST).max(1)
    }

    /// Requests shown by cell `x` (empty past the end of the trace or the width).
    pub fn range(&self, x: usize) -> std::ops::Range<usize> {
        if x >= self.width || self.total == 0 {
            return 0..0;
        }
        let (s, w) = (self.span, self.width);
        let (a, b) = if s >= w {
            ((x * s).div_ceil(w), ((x + 1) * s).div_ceil(w))
        } else {
            (x * s / w, x * s / w + 1)
        };
        let end = (self.first + self.span).min(self.total);
        (self.first + a).min(end)..(self.first + b).min(end)
    }

    /// The cells showing request `r`, if it is in view.
    pub fn cells_of(&self, r: usize) -> Option<std::ops::Range<usize>> {
        if r < self.first || r >= (self.first + self.span).min(self.total) || self.width == 0 {
            return None;
        }
        let (k, s, w) = (r - self.first, self.span, self.width);
        Some(if s >= w {
            let x = k * w / s;
            x..x + 1
        } else {
            (k * w).div_ceil(s)..((k + 1) * w).div_ceil(s)
        })
    }

    /// Cells that hold requests.
    pub fn used_cells(&self) -> usize {
        let last = (self.first + self.span).min(self.total);
        if last <= self.first {
            return 0;
        }
        self.cells_of(last - 1).map_or(0, |c| c.end)
    }

    /// Whether the whole trace is in view.
    pub fn fits(&self) -> bool {
        self.first == 0 && self.span >= self.total
    }

    /// How big a request is on screen, for the heatmap's title: `1 req = 6 cells`,
    /// `1 req = 6–7 cells`, or `1 cell = 2–3 req`.
    pub fn scale_label(&self) -> String {
        let (s, w) = (self.span.max(1), self.width.max(1));
        let range = |lo: usize, hi: usize| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}–{hi}")
            }
        };
        if s < w {
            let cells = range(w / s, w.div_ceil(s));
            format!("1 req = {cells} cells")
        } else if s == w {
            "1 req = 1 cell".to_owned()
        } else {
            format!("1 cell = {} req", range(s / w, s.div_ceil(w)))
        }
    }

    /// `first` moved so that request `r` is in view, a few requests from the edges when the
    /// view is wide enough.
    pub fn follow(&self, r: usize) -> usize {
        if self.span >= self.total {
            return 0;
        }
        let margin = (self.span / 8).min(4);
        let max_first = self.total - self.span;
        let mut f = self.first.min(max_first);
        if r < f + margin {
            f = r.saturating_sub(margin);
        } else if r + margin >= f + self.span {
            f = (r + margin + 1).saturating_sub(self.span);
        }
        f.min(max_first)
    }
}

#[cfg(test)]
mod tests {
    use super::Viewport;

    #[test]
    fn a_short_trace_fills_the_width() {
        // 24 requests over 152 cells: 6 or 7 cells each, every cell used.
        let vp = Viewport::new(0, None, 152, 24);
        assert_eq!(vp.used_cells(), 152);
        let widths: Vec<usize> = (0..24)
            .map(|r| vp.cells_of(r).map_or(0, |c| c.len()))
            .collect();
        assert!(widths.iter().all(|w| *w == 6 || *w == 7), "{widths:?}");
        assert_eq!(widths.iter().sum::<usize>(), 152);
        assert_eq!(vp.scale_label(), "1 req = 6–7 cells");
        // Every cell maps back to the request it belongs to.
        for r in 0..24 {
            for x in vp.cells_of(r).unwrap_or(0..0) {
                assert_eq!(vp.range(x), r..r + 1);
            }
        }
    }

    #[test]
    fn a_long_trace_shares_cells_and_follows_the_cursor() {
        let vp = Viewport::new(0, None, 100, 250);
        assert_eq!(vp.used_cells(), 100);
        assert_eq!(vp.scale_label(), "1 cell = 2–3 req");
        // The cells cover every request once, in order.
        let mut next = 0;
        for x in 0..100 {
            let r = vp.range(x);
            assert_eq!(r.start, next);
            assert!(!r.is_empty());
            next = r.end;
            assert!(vp.cells_of(r.start).is_some_and(|c| c.contains(&x)));
        }
        assert_eq!(next, 250);
        // Zoomed to 40 requests: the cursor stays in view, the view inside the trace.
        let z = Viewport::new(0, Some(40), 100, 250);
        let f = z.follow(120);
        assert!(f <= 120 && 120 < f + 40, "{f}");
        assert_eq!(Viewport::new(f, Some(40), 100, 250).follow(249), 210);
        assert_eq!(Viewport::new(300, Some(40), 100, 250).first, 210);
        assert!(z.cells_of(45).is_none());
        assert_eq!(Viewport::min_span(160), 10);
    }
}
