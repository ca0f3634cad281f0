//! The heatmap's data: episodes × requests, kept per episode as runs and marks rather than one
//! byte per cell, so building it and its memory follow what happens in a replay (tier changes,
//! holds, deferrals), not requests × episodes (2 GB for 100k requests × 20k episodes).

use std::ops::RangeInclusive;

use tierscope_engine::episode::model::Tier;

/// A heatmap cell: the low 3 bits say what the episode is at that request, the high bits mark
/// what happened there.
pub mod cell {
    /// The episode does not exist yet at this request.
    pub const NONE: u8 = 0;
    /// The episode is active (rendered as it stands).
    pub const ACTIVE: u8 = 1;
    /// Closed at tier `t`: `TIER0 + t.depth()` (full 2 … dropped 6).
    pub const TIER0: u8 = 2;
    /// Closed at `full`, shown only from a chunk on: its head is in a compaction summary, or
    /// before the request's view.
    pub const TAIL_ONLY: u8 = 7;
    pub const STATE: u8 = 0x07;
    pub const CHANGE: u8 = 0x08;
    pub const HOLD: u8 = 0x10;
    pub const DEFERRED: u8 = 0x20;
    pub const THRASH: u8 = 0x40;
    /// With CHANGE: the change went up (a promotion).
    pub const PROMOTE: u8 = 0x80;
}

/// One episode's row.
#[derive(Debug, Clone, Default, PartialEq)]
struct Row {
    /// (first request, state): each run lasts until the next starts; `NONE` before the first.
    states: Vec<(usize, u8)>,
    /// Marks of single requests (changes, thrash), by request, one entry per request.
    points: Vec<(usize, u8)>,
    /// Runs of requests held at the floor, and of requests with a deferred change: sorted,
    /// disjoint within each list.
    holds: Vec<(usize, usize)>,
    deferred: Vec<(usize, usize)>,
}

/// Episodes × requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grid {
    pub rows: usize,
    pub cols: usize,
    data: Vec<Row>,
}

impl Grid {
    pub fn new(rows: usize, cols: usize) -> Grid {
        Grid {
            rows,
            cols,
            data: vec![Row::default(); rows],
        }
    }

    /// The cell at (row, col): its state and its marks.
    pub fn get(&self, row: usize, col: usize) -> u8 {
        if row >= self.rows || col >= self.cols {
            return cell::NONE;
        }
        self.state(row, col) | self.marks(row, col..=col)
    }

    /// The state (low bits) at (row, col).
    pub fn state(&self, row: usize, col: usize) -> u8 {
        let Some(r) = self.data.get(row).filter(|_| col < self.cols) else {
            return cell::NONE;
        };
        match r.states.partition_point(|s| s.0 <= col) {
            0 => cell::NONE,
            i => r.states[i - 1].1,
        }
    }

    /// Every mark (high bits) of `row` over requests `range`.
    pub fn marks(&self, row: usize, range: RangeInclusive<usize>) -> u8 {
        let Some(r) = self.data.get(row) else {
            return 0;
        };
        let (a, b) = (*range.start(), *range.end());
        let first = r.points.partition_point(|p| p.0 < a);
        let mut m = r.points[first..]
            .iter()
            .take_while(|p| p.0 <= b)
            .fold(0u8, |m, p| m | p.1);
        let meets = |spans: &[(usize, usize)]| {
            let i = spans.partition_point(|s| s.1 < a);
            spans.get(i).is_some_and(|s| s.0 <= b)
        };
        if meets(&r.holds) {
            m |= cell::HOLD;
        }
        if meets(&r.deferred) {
            m |= cell::DEFERRED;
        }
        m
    }

    /// Set the state of requests `from..=to` of `row` (marks stay).
    pub fn set_state(&mut self, row: usize, from: usize, to: usize, state: u8) {
        let to = to.min(self.cols.saturating_sub(1));
        if row >= self.rows || from > to {
            return;
        }
        let after = self.state(row, to + 1);
        let states = &mut self.data[row].states;
        let lo = states.partition_point(|s| s.0 < from);
        let hi = states.partition_point(|s| s.0 <= to + 1);
        let mut new = vec![(from, state)];
        if to + 1 < self.cols && !states[lo..hi].iter().any(|s| s.0 == to + 1) {
            new.push((to + 1, after));
        }
        // The run that starts at `to + 1`, if any, is kept as it is.
        let keep_next = states[lo..hi].iter().any(|s| s.0 == to + 1);
        let end = if keep_next { hi - 1 } else { hi };
        states.splice(lo..end, new);
        // Neighbours with one state are one run.
        states.dedup_by(|b, a| a.1 == b.1);
    }

    /// Set a cell: its state and, replacing any, its marks.
    pub fn set(&mut self, row: usize, col: usize, v: u8) {
        if row >= self.rows || col >= self.cols {
            return;
        }
        self.set_state(row, col, col, v & cell::STATE);
        let points = &mut self.data[row].points;
        let i = points.partition_point(|p| p.0 < col);
        match points.get_mut(i) {
            Some(p) if p.0 == col => p.1 = v & !cell::STATE,
            _ => points.insert(i, (col, v & !cell::STATE)),
        }
    }

    /// Add single-request marks (changes, thrash) to a cell.
    pub fn or(&mut self, row: usize, col: usize, bits: u8) {
        if row >= self.rows || col >= self.cols {
            return;
        }
        let points = &mut self.data[row].points;
        let i = points.partition_point(|p| p.0 < col);
        match points.get_mut(i) {
            Some(p) if p.0 == col => p.1 |= bits,
            _ => points.insert(i, (col, bits)),
        }
    }

    /// Mark requests `from..=to` of `row` held at the floor.
    pub fn hold(&mut self, row: usize, from: usize, to: usize) {
        self.span(row, from, to, true);
    }

    /// Mark requests `from..=to` of `row` as waiting with a deferred change.
    pub fn defer(&mut self, row: usize, from: usize, to: usize) {
        self.span(row, from, to, false);
    }

    fn span(&mut self, row: usize, from: usize, to: usize, hold: bool) {
        let to = to.min(self.cols.saturating_sub(1));
        if row >= self.rows || from > to {
            return;
        }
        let r = &mut self.data[row];
        let spans = if hold { &mut r.holds } else { &mut r.deferred };
        // Merge with every span it meets or touches.
        let lo = spans.partition_point(|s| s.1 + 1 < from);
        let hi = spans.partition_point(|s| s.0 <= to + 1);
        let (mut a, mut b) = (from, to);
        for s in &spans[lo..hi] {
            a = a.min(s.0);
            b = b.max(s.1);
        }
        spans.splice(lo..hi, [(a, b)]);
    }

    /// The applied tier at a cell, if the episode is closed there.
    pub fn tier(&self, row: usize, col: usize) -> Option<Tier> {
        if row >= self.rows || col >= self.cols {
            return None;
        }
        let s = self.state(row, col);
        if s == cell::TAIL_ONLY {
            Some(Tier::Full)
        } else if s >= cell::TIER0 {
            Tier::from_depth(usize::from(s - cell::TIER0))
        } else {
            None
        }
    }

    /// Whether some cell has state `state`.
    pub fn any_state(&self, state: u8) -> bool {
        self.data
            .iter()
            .any(|r| r.states.iter().any(|s| s.1 == state))
    }

    /// How many cells carry mark `bit`.
    pub fn cells_with(&self, bit: u8) -> u64 {
        let spans = |l: &[(usize, usize)]| l.iter().map(|s| (s.1 - s.0 + 1) as u64).sum::<u64>();
        self.data
            .iter()
            .map(|r| {
                let mut n = r.points.iter().filter(|p| p.1 & bit != 0).count() as u64;
                if bit & cell::HOLD != 0 {
                    n += spans(&r.holds);
                }
                if bit & cell::DEFERRED != 0 {
                    n += spans(&r.deferred);
                }
                n
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same cells through a dense reference: every cell read back as written.
    #[test]
    fn runs_and_marks_read_back_like_a_dense_grid() {
        let (rows, cols) = (3, 12);
        let mut g = Grid::new(rows, cols);
        let mut dense = vec![0u8; rows * cols];
        let state = |g: &mut Grid, d: &mut Vec<u8>, r: usize, a: usize, b: usize, v: u8| {
            g.set_state(r, a, b, v);
            for c in a..=b.min(cols - 1) {
                d[r * cols + c] = (d[r * cols + c] & !cell::STATE) | v;
            }
        };
        state(&mut g, &mut dense, 0, 0, 3, cell::ACTIVE);
        state(&mut g, &mut dense, 0, 4, 11, cell::TIER0);
        state(&mut g, &mut dense, 0, 6, 8, cell::TIER0 + 2);
        state(&mut g, &mut dense, 0, 7, 7, cell::TAIL_ONLY);
        state(&mut g, &mut dense, 1, 2, 20, cell::TIER0 + 1);
        state(&mut g, &mut dense, 1, 0, 5, cell::TIER0 + 1);
        g.or(0, 6, cell::CHANGE);
        dense[6] |= cell::CHANGE;
        g.hold(1, 3, 5);
        g.hold(1, 6, 6);
        g.hold(1, 9, 10);
        for c in (3..=6).chain(9..=10) {
            dense[cols + c] |= cell::HOLD;
        }
        g.defer(2, 1, 1);
        dense[2 * cols + 1] |= cell::DEFERRED;
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(g.get(r, c), dense[r * cols + c], "row {r} col {c}");
            }
        }
        assert_eq!(g.cells_with(cell::HOLD), 6);
        assert_eq!(g.marks(1, 7..=8), 0);
        assert_eq!(g.marks(1, 7..=9), cell::HOLD);
        assert!(g.any_state(cell::TAIL_ONLY));
        assert_eq!(g.get(5, 0), cell::NONE);
    }
}
