//! What the sweep pane reads: the metrics it can map, the numeric knobs it can vary (with the
//! default ranges it proposes), and a finished sweep prepared for display (texts made safe,
//! value range of the chosen metric, where the current knobs sit).

use tierscope_engine::policy::{KnobValue, Policy};
use tierscope_engine::sweep::{Axis, Metrics, SweepResult};

/// The most values one axis may have in the explorer (the grid must fit 80 columns); the CLI
/// `tierscope sweep` has no such limit.
pub const MAX_AXIS_VALUES: usize = 10;

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
            Metric::Divergence => "divergence cost (tokens)",
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

/// A numeric knob of the policy that can be an axis.
#[derive(Debug, Clone, PartialEq)]
pub struct KnobChoice {
    /// The knob's key (as `--set` takes it).
    pub name: String,
    /// The name made safe for the terminal (policy files are user input).
    pub label: String,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub step: f64,
    pub integer: bool,
    /// The policy's current value.
    pub current: f64,
}

/// The numeric knobs of `p`, in its spec order.
pub fn numeric_knobs(p: &Policy) -> Vec<KnobChoice> {
    p.specs
        .iter()
        .filter_map(|s| {
            let KnobValue::Num(default) = s.default else {
                return None;
            };
            let current = match p.knobs.get(&s.name) {
                Some(KnobValue::Num(v)) => *v,
                _ => default,
            };
            Some(KnobChoice {
                name: s.name.clone(),
                label: crate::tui::safe_line(&s.name),
                min: s.min,
                max: s.max,
                step: s
                    .step
                    .filter(|st| *st > 0.0)
                    .unwrap_or(if s.integer { 1.0 } else { 0.01 }),
                integer: s.integer,
                current,
            })
        })
        .collect()
}

/// Pairs worth sweeping first, by policy family: the hysteresis thresholds of the pressure
/// policies, the decay curve's shape, OpenCode's compaction tail, the age driver's steps.
const PREFERRED: &[(&str, &str)] = &[
    ("demote_at", "promote_at"),
    ("h50", "d"),
    ("execute_threshold", "history_budget_percentage"),
    ("preserve_recent_share", "tail_turns"),
    ("dense_after", "compact_after"),
];

/// Knobs every policy has that say little about its schedule; picked last.
const GENERIC: &[&str] = &["system_tokens", "thrash_window", "ttl_s"];

/// The two knobs the pane starts with (x, y), as indices into `knobs`; `None` with fewer than
/// two numeric knobs. A progressive policy on the age driver ignores its pressure thresholds,
/// so its age steps come first.
pub fn default_pair(p: &Policy, knobs: &[KnobChoice]) -> Option<(usize, usize)> {
    let idx = |n: &str| knobs.iter().position(|k| k.name == n);
    let age = matches!(p.knobs.get("driver"), Some(KnobValue::Choice(c)) if c == "age");
    let first = age.then_some(&("dense_after", "compact_after"));
    for (a, b) in first.into_iter().chain(PREFERRED) {
        if let (Some(x), Some(y)) = (idx(a), idx(b)) {
            return Some((x, y));
        }
    }
    let mut order: Vec<usize> = (0..knobs.len())
        .filter(|i| !GENERIC.contains(&knobs[*i].name.as_str()))
        .collect();
    order.extend((0..knobs.len()).filter(|i| GENERIC.contains(&knobs[*i].name.as_str())));
    match order.as_slice() {
        [x, y, ..] => Some((*x, *y)),
        _ => None,
    }
}

fn tidy(v: f64) -> f64 {
    (v * 1e9).round() / 1e9
}

/// The range the pane proposes for a knob: its whole min..max in about seven values when that
/// span is a few dozen slider steps, else the current value ± about 30 % (a 0..86,400 s TTL or a
/// 0.05..2 threshold swept end to end would put nearly every point where nobody runs it).
pub fn default_axis(k: &KnobChoice) -> Axis {
    let step = k.step;
    let lo = k.min.unwrap_or(k.current - 3.0 * step);
    let hi = k.max.unwrap_or(k.current + 3.0 * step).max(lo);
    let (from, s, n) = if (hi - lo) / step <= 48.0 {
        // Whole range: a multiple of the slider step, about six intervals.
        let s = (((hi - lo) / 6.0 / step).round().max(1.0)) * step;
        let n = ((hi - lo) / s + 1e-9).floor() as usize + 1;
        (lo, s, n)
    } else {
        let rel = (k.current.abs() * 0.1 / step).round().max(1.0) * step;
        let from = (k.current - 3.0 * rel).max(lo);
        // Start on the value's grid so the current value is one of the points.
        let from = k.current - ((k.current - from) / rel + 1e-9).floor() * rel;
        let to = (k.current + 3.0 * rel).min(hi);
        let n = ((to - from) / rel + 1e-9).floor() as usize + 1;
        (from, rel, n)
    };
    let s = if k.integer { s.round().max(1.0) } else { s };
    let n = n.clamp(1, MAX_AXIS_VALUES);
    Axis {
        key: k.name.clone(),
        from: tidy(from),
        to: tidy(from + (n - 1) as f64 * s),
        step: tidy(s),
    }
}

/// An axis as the range field shows and takes it: `FROM:TO:STEP`.
pub fn axis_text(a: &Axis) -> String {
    use tierscope_engine::sweep::format_value;
    format!(
        "{}:{}:{}",
        format_value(a.from),
        format_value(a.to),
        format_value(a.step)
    )
}

/// Parses a typed `FROM:TO:STEP` for knob `k`, with the explorer's size limit.
pub fn parse_axis(k: &KnobChoice, text: &str) -> Result<Axis, String> {
    let a = Axis::parse(&format!("{}={}", k.name, text.trim())).map_err(|e| {
        // The library's message names `--vary`; here the field is the range.
        e.to_string()
            .replace(&format!("--vary {}", k.name), "range")
            .replace("--vary ", "range ")
    })?;
    if a.len() > MAX_AXIS_VALUES {
        return Err(format!(
            "{} values; at most {MAX_AXIS_VALUES} per axis here (tierscope sweep takes more)",
            a.len()
        ));
    }
    Ok(a)
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

    fn knob(name: &str, min: f64, max: f64, step: f64, integer: bool, cur: f64) -> KnobChoice {
        KnobChoice {
            name: name.into(),
            label: name.into(),
            min: Some(min),
            max: Some(max),
            step,
            integer,
            current: cur,
        }
    }

    #[test]
    fn default_ranges_are_small_and_hold_the_current_value() {
        // A wide threshold: current ± ~30 %, on the current value's grid.
        let a = default_axis(&knob("demote_at", 0.05, 2.0, 0.01, false, 0.9));
        assert_eq!((a.from, a.to, a.step, a.len()), (0.63, 1.17, 0.09, 7));
        assert!(a.values().contains(&0.9));
        // A narrow range: the whole min..max.
        let b = default_axis(&knob("execute_threshold", 0.2, 0.9, 0.05, false, 0.65));
        assert_eq!((b.from, b.step), (0.2, 0.1));
        assert!(b.len() >= 6 && b.len() <= 8, "{b:?}");
        // Integers stay whole and clamp at the minimum.
        let c = default_axis(&knob("min_dwell", 0.0, 1000.0, 1.0, true, 3.0));
        assert_eq!(c.values(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    }

    #[test]
    fn typed_ranges_are_checked() {
        let k = knob("demote_at", 0.05, 2.0, 0.01, false, 0.9);
        assert_eq!(parse_axis(&k, "0.7:0.95:0.05").map(|a| a.len()), Ok(6));
        assert!(parse_axis(&k, "0.7:0.95").is_err());
        let e = parse_axis(&k, "0:1:0.01").unwrap_err();
        assert!(e.contains("at most 10"), "{e}");
        assert_eq!(
            axis_text(&parse_axis(&k, "1:2:0.5").unwrap()),
            "1:2:0.5".to_owned()
        );
    }

    #[test]
    fn default_pairs_follow_the_policy() {
        let pair = |name: &str| {
            let p = tierscope_engine::policy::load(name, &[]).unwrap();
            let k = numeric_knobs(&p);
            default_pair(&p, &k).map(|(x, y)| (k[x].name.clone(), k[y].name.clone()))
        };
        let s = |a: &str, b: &str| Some((a.to_owned(), b.to_owned()));
        assert_eq!(pair("retention"), s("demote_at", "promote_at"));
        assert_eq!(pair("age"), s("dense_after", "compact_after"));
        assert_eq!(pair("decay"), s("h50", "d"));
        // Only generic knobs: still two of them.
        assert!(pair("full").is_some());
    }

    #[test]
    fn metrics_cycle_and_survival_is_inverted() {
        assert_eq!(Metric::Cost.cycle(-1), Metric::Survival);
        assert_eq!(Metric::Survival.cycle(1), Metric::Cost);
        assert!(Metric::Survival.higher_is_better());
        assert_eq!(compact(12345.0), "12.3k");
        assert_eq!(Metric::Cost.format(0.41234), "$0.412");
    }
}
