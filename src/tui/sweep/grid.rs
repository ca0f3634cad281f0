//! A finished sweep as the pane draws it (texts made safe, the value range of the chosen metric,
//! where the current knobs sit) and the metrics it can be coloured by.

use tierscope_engine::sweep::{Metrics, SweepResult};

/// A metric the grid can be coloured by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Cost,
    Divergence,
    MeanTokens,
    Overflow,
    Thrash,
    Holds,
    Violations,
    Survival,
}

impl Metric {
    pub const ALL: [Metric; 8] = [
        Metric::Cost,
        Metric::Divergence,
        Metric::MeanTokens,
        Metric::Overflow,
        Metric::Thrash,
        Metric::Holds,
        Metric::Violations,
        Metric::Survival,
    ];

    pub fn label(&self) -> &'static str {
        match self {
            Metric::Cost => "cost ($)",
            Metric::Divergence => "divergence cost vs full (tokens)",
            Metric::MeanTokens => "mean tokens",
            Metric::Overflow => "overflow (requests over budget)",
            Metric::Thrash => "thrash",
            Metric::Holds => "holds",
            Metric::Violations => "floor + pin violations",
            Metric::Survival => "probe survival",
        }
    }

    /// Survival is the one metric where more is better.
    pub fn higher_is_better(&self) -> bool {
        *self == Metric::Survival
    }

    /// The metric's value at a point (`None` for survival without probes).
    pub fn value(&self, m: &Metrics) -> Option<f64> {
        Some(match self {
            Metric::Cost => m.cost,
            Metric::Divergence => m.divergence_tokens as f64,
            Metric::MeanTokens => m.mean_tokens,
            Metric::Overflow => m.overflow_requests as f64,
            Metric::Thrash => m.thrash as f64,
            Metric::Holds => m.holds as f64,
            Metric::Violations => m.violations as f64,
            Metric::Survival => return m.probe_survival,
        })
    }

    /// A value as the legend and the cells print it.
    pub fn format(&self, v: f64) -> String {
        match self {
            Metric::Cost => format!("${v:.3}"),
            // Survival moves in small steps between neighbours: three decimals.
            Metric::Survival => format!("{v:.3}"),
            Metric::MeanTokens | Metric::Divergence => compact(v),
            _ => format!("{}", v.round() as i64),
        }
    }

    /// The next metric (`by` = ±1), wrapping.
    pub fn cycle(self, by: isize) -> Metric {
        let n = Metric::ALL.len() as isize;
        let i = Metric::ALL.iter().position(|m| *m == self).unwrap_or(0) as isize;
        Metric::ALL[(i + by).rem_euclid(n) as usize]
    }
}

/// 12345 → "12.3k", 1234567 → "1.23M": cells are narrow.
pub fn compact(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{}", v.round() as i64)
    }
}

/// A finished sweep, ready to draw. `result.axes` is `[y, x]`: rows are the y knob's values,
/// columns the x knob's, so `result.at(&[row, col])` is the cell.
#[derive(Debug, Clone)]
pub struct SweepGrid {
    pub result: SweepResult,
    /// Safe policy name.
    pub policy: String,
    /// Why each point is invalid, made safe (indexed like `result.points`).
    pub reasons: Vec<Option<String>>,
    /// The cell of the knobs the main view had when the sweep ran, if it is on the grid.
    pub current: Option<(usize, usize)>,
}

impl SweepGrid {
    pub fn build(result: SweepResult, x_current: f64, y_current: f64) -> SweepGrid {
        let reasons = result
            .points
            .iter()
            .map(|p| p.reason.as_deref().map(crate::tui::safe_line))
            .collect();
        let near = |vals: Vec<f64>, v: f64| {
            vals.iter()
                .position(|a| (a - v).abs() <= 1e-9 * v.abs().max(1.0))
        };
        let current = match result.axes.as_slice() {
            [y, x] => near(y.values(), y_current).zip(near(x.values(), x_current)),
            _ => None,
        };
        SweepGrid {
            policy: crate::tui::safe_line(&result.policy),
            result,
            reasons,
            current,
        }
    }

    pub fn rows(&self) -> usize {
        self.result.axes.first().map_or(0, |a| a.len())
    }

    pub fn cols(&self) -> usize {
        self.result.axes.get(1).map_or(0, |a| a.len())
    }

    /// Index into `result.points` of a cell.
    pub fn index(&self, row: usize, col: usize) -> Option<usize> {
        (row < self.rows() && col < self.cols()).then(|| row * self.cols() + col)
    }

    /// The smallest and largest value of `m` over the valid points.
    pub fn range(&self, m: Metric) -> Option<(f64, f64)> {
        let vals = self
            .result
            .points
            .iter()
            .filter_map(|p| p.metrics.as_ref().and_then(|x| m.value(x)));
        vals.fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((f64::min(lo, v), f64::max(hi, v))),
        })
    }

    /// The colour bin of a value: 0 = best … `bins - 1` = worst.
    pub fn bin(&self, m: Metric, v: f64, bins: usize) -> usize {
        let Some((lo, hi)) = self.range(m) else {
            return 0;
        };
        if hi <= lo || bins < 2 {
            return 0;
        }
        let mut f = (v - lo) / (hi - lo);
        if m.higher_is_better() {
            f = 1.0 - f;
        }
        ((f * bins as f64).floor() as usize).min(bins - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_cycle_and_survival_is_inverted() {
        assert_eq!(Metric::Cost.cycle(-1), Metric::Survival);
        assert_eq!(Metric::Survival.cycle(1), Metric::Cost);
        assert!(Metric::Survival.higher_is_better());
        assert_eq!(compact(12345.0), "12.3k");
        assert_eq!(Metric::Cost.format(0.41234), "$0.412");
    }
}
