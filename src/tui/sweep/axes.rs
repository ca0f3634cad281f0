//! The sweep pane's axes: the numeric knobs it can vary (only those the policy's driver reads),
//! the default range it proposes for each (inside the knob's range and the policy's
//! constraints), and typed `FROM:TO:STEP` ranges.

use tierscope_engine::policy::{KnobValue, Policy, Thresholds};
use tierscope_engine::sweep::{format_value, Axis};

/// The most values one axis may have in the explorer (the grid must fit 80 columns); the CLI
/// `tierscope sweep` has no such limit.
pub const MAX_AXIS_VALUES: usize = 10;

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
    /// A share of the budget (a pressure threshold, [`Thresholds::KNOBS`]).
    pub budget_share: bool,
}

/// Numeric knobs that are no schedule knob and never an axis: `system_tokens` describes the
/// recording (the size of its system prompt), `thrash_window` defines what the thrash metric
/// counts (points swept over it would count thrash differently, so their thrash would not
/// compare).
pub const NOT_AXES: &[&str] = &["system_tokens", "thrash_window"];

/// The numeric knobs of `p` its driver reads (a knob it ignores would give a flat grid) and
/// that tune the schedule (not [`NOT_AXES`]), in its spec order. A pressure threshold (a share
/// of the budget, [`Thresholds::KNOBS`]) ends at 1.0: the knobs allow up to 2.0 (demote_at 1.5
/// turns demotion off), but a threshold above the budget acts only once the context is over it,
/// so every such point overflows by construction.
pub fn numeric_knobs(p: &Policy) -> Vec<KnobChoice> {
    p.specs
        .iter()
        .filter(|s| p.reads(&s.name) && !NOT_AXES.contains(&s.name.as_str()))
        .filter_map(|s| {
            let KnobValue::Num(default) = s.default else {
                return None;
            };
            let current = match p.knobs.get(&s.name) {
                Some(KnobValue::Num(v)) => *v,
                _ => default,
            };
            let budget_share = Thresholds::KNOBS.contains(&s.name.as_str());
            let max = if budget_share {
                Some(s.max.map_or(1.0, |m| m.min(1.0)))
            } else {
                s.max
            };
            Some(KnobChoice {
                name: s.name.clone(),
                label: crate::tui::safe_line(&s.name),
                min: s.min,
                max,
                step: s
                    .step
                    .filter(|st| *st > 0.0)
                    .unwrap_or(if s.integer { 1.0 } else { 0.01 }),
                integer: s.integer,
                current,
                budget_share,
            })
        })
        .collect()
}

/// Knobs every policy has that say little about its schedule; picked last.
const GENERIC: &[&str] = &["ttl_s"];

/// The two knobs the pane starts with (x, y), as indices into `knobs` (the knobs the driver
/// reads, so an age-driven policy never gets its unread pressure thresholds); `None` with fewer
/// than two numeric knobs.
pub fn default_pair(knobs: &[KnobChoice], preferred: &[(&str, &str)]) -> Option<(usize, usize)> {
    let idx = |n: &str| knobs.iter().position(|k| k.name == n);
    for (a, b) in preferred {
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

/// Values tried on each side of the current one when proposing a range.
const REACH: i64 = 24;

/// Whether `p` accepts the knob values `sets` together (range, whole numbers, constraints).
fn accepts(p: &Policy, sets: &[(&str, f64)]) -> bool {
    let o: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| ((*k).to_owned(), format_value(*v)))
        .collect();
    p.clone().with_overrides(&o).is_ok()
}

/// The step the pane proposes for a knob: about a sixth of its range when that range is a few
/// dozen slider steps, else about 10 % of the current value (a 0..86,400 s TTL or a 0.05..2
/// threshold swept end to end would put nearly every point where nobody runs it); always a
/// whole number of slider steps.
fn proposed_step(p: &Policy, k: &KnobChoice) -> f64 {
    let step = k.step;
    let mut lo = k.min.unwrap_or(k.current - 3.0 * step);
    let mut hi = k.max.unwrap_or(k.current + 3.0 * step).max(lo);
    // A threshold between its neighbours (demote_at above target, at most the budget): the
    // sixths of the part of its range the policy accepts, not of 0.05..1.
    if k.budget_share && (hi - lo) / step <= 400.0 {
        let n = ((hi - lo) / step).round() as i64;
        let ok: Vec<f64> = (0..=n)
            .map(|i| tidy(lo + i as f64 * step))
            .filter(|v| accepts(p, &[(k.name.as_str(), *v)]))
            .collect();
        if let (Some(a), Some(b)) = (ok.first(), ok.last()) {
            (lo, hi) = (*a, *b);
        }
    }
    let s = if (hi - lo) / step <= 48.0 {
        ((hi - lo) / 6.0 / step).round().max(1.0) * step
    } else {
        (k.current.abs() * 0.1 / step).round().max(1.0) * step
    };
    if k.integer {
        s.round().max(1.0)
    } else {
        s
    }
}

/// The range the pane proposes for knob `k` of `p`: up to seven values on a grid through the
/// current value, every one inside the knob's range and accepted by the policy's constraints
/// with the other knobs as they are and, when `other` is given, with every value of that axis
/// (so the default grid has no invalid point). The values are the run of accepted ones around
/// the current value (the nearest run when the current value itself is refused).
pub fn proposed_axis(p: &Policy, k: &KnobChoice, other: Option<&Axis>) -> Axis {
    let s = proposed_step(p, k);
    let others = other.map(|a| (a.key.as_str(), a.values()));
    // Inside the knob's range as the pane means it (a pressure threshold ends at the budget).
    let inside =
        |v: f64| k.min.is_none_or(|m| v >= m - 1e-9) && k.max.is_none_or(|m| v <= m + 1e-9);
    let ok = |v: f64| {
        inside(v)
            && match &others {
                Some((key, vals)) if !vals.is_empty() => vals
                    .iter()
                    .all(|o| accepts(p, &[(k.name.as_str(), v), (key, *o)])),
                _ => accepts(p, &[(k.name.as_str(), v)]),
            }
    };
    let at = |i: i64| tidy(k.current + i as f64 * s);
    let valid: Vec<i64> = (-REACH..=REACH).filter(|&i| ok(at(i))).collect();
    // The run of consecutive accepted offsets holding 0, else the one nearest to it.
    let mut runs: Vec<(i64, i64)> = Vec::new();
    for &i in &valid {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == i => *end = i,
            _ => runs.push((i, i)),
        }
    }
    let dist = |(a, b): &(i64, i64)| {
        if *a > 0 {
            *a
        } else if *b < 0 {
            -*b
        } else {
            0
        }
    };
    let Some(&(a, b)) = runs.iter().min_by_key(|r| dist(r)) else {
        // Nothing accepted (the policy is already invalid): the current value alone.
        return Axis {
            key: k.name.clone(),
            from: tidy(k.current),
            to: tidy(k.current),
            step: tidy(s),
        };
    };
    // Seven values centred on the current one (or the run's end nearest to it).
    let want = 7i64.min(MAX_AXIS_VALUES as i64);
    let centre = 0i64.clamp(a, b);
    let mut lo = (centre - want / 2).max(a);
    let hi = (lo + want - 1).min(b);
    lo = (hi - want + 1).max(a);
    Axis {
        key: k.name.clone(),
        from: at(lo),
        to: at(hi),
        step: tidy(s),
    }
}

/// The axes the pane starts with for knobs `x` and `y` of `p`: x valid with y as it is, then y
/// valid with every x value.
pub fn proposed_axes(p: &Policy, x: &KnobChoice, y: &KnobChoice) -> (Axis, Axis) {
    let xa = proposed_axis(p, x, None);
    let ya = proposed_axis(p, y, Some(&xa));
    (xa, ya)
}

/// An axis as the range field shows and takes it: `FROM:TO:STEP`.
pub fn axis_text(a: &Axis) -> String {
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
    // Every value inside the knob's range (a pressure threshold: at most the budget, 1.0).
    let (lo, hi) = (a.from.min(a.to), a.from.max(a.to));
    if let Some(m) = k.min.filter(|m| lo < m - 1e-9) {
        return Err(format!(
            "{} starts below its minimum {}",
            k.label,
            format_value(m)
        ));
    }
    if let Some(m) = k.max.filter(|m| hi > m + 1e-9) {
        let why = if k.budget_share {
            " (a share of the budget: above 1 it acts only after the context overflows)"
        } else {
            ""
        };
        return Err(format!(
            "{} goes above its maximum {}{why}",
            k.label,
            format_value(m)
        ));
    }
    Ok(a)
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
            budget_share: Thresholds::KNOBS.contains(&name),
        }
    }

    fn policy(name: &str) -> Policy {
        tierscope_engine::policy::load(name, &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    fn choice(p: &Policy, name: &str) -> KnobChoice {
        numeric_knobs(p)
            .into_iter()
            .find(|k| k.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
    }

    /// Every point of the grid the pane proposes for `(x, y)` is accepted by the policy.
    fn all_valid(p: &Policy, x: &str, y: &str) -> (Axis, Axis) {
        let (xa, ya) = proposed_axes(p, &choice(p, x), &choice(p, y));
        for xv in xa.values() {
            for yv in ya.values() {
                assert!(
                    accepts(p, &[(x, xv), (y, yv)]),
                    "{x}={xv} {y}={yv} is refused ({xa:?} × {ya:?})"
                );
            }
        }
        (xa, ya)
    }

    #[test]
    fn proposed_ranges_hold_the_current_value_and_keep_the_constraints() {
        // promote_at < target < demote_at: demote_at stays above target 0.75, promote_at
        // below it, and both hold their current value.
        let r = policy("retention");
        let (d, pr) = all_valid(&r, "demote_at", "promote_at");
        assert!(d.values().contains(&0.9) && d.from > 0.75, "{d:?}");
        // Never above the budget: a threshold over 1 overflows by construction.
        assert!(d.to <= 1.0 && pr.to <= 1.0, "{d:?} {pr:?}");
        assert!(pr.values().contains(&0.6) && pr.to < 0.75, "{pr:?}");
        assert!(d.len() >= 5 && pr.len() >= 5, "{d:?} {pr:?}");
        // dense_after <= compact_after <= anchor_after, across the two axes.
        let age = policy("age");
        let (da, ca) = all_valid(&age, "dense_after", "compact_after");
        assert!(da.values().contains(&2.0) && ca.values().contains(&4.0));
        assert!(da.len() >= 3 && ca.len() >= 3, "{da:?} {ca:?}");
        // A narrow range is swept in sixths of it; integers stay whole and stop at the minimum.
        let decay = policy("decay");
        let (e, _) = all_valid(&decay, "execute_threshold", "history_budget_percentage");
        assert_eq!(e.step, 0.1);
        let (m, _) = all_valid(&r, "min_dwell", "demote_at");
        assert_eq!(m.values(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // z1 < z2 < z3 < z4 on two neighbours.
        all_valid(&decay, "z1", "z2");
    }

    #[test]
    fn typed_ranges_are_checked() {
        let k = knob("demote_at", 0.05, 2.0, 0.01, false, 0.9);
        assert_eq!(parse_axis(&k, "0.7:0.95:0.05").map(|a| a.len()), Ok(6));
        assert!(parse_axis(&k, "0.7:0.95").is_err());
        let e = parse_axis(&k, "0:1:0.01").unwrap_err();
        assert!(e.contains("at most 10"), "{e}");
        assert_eq!(
            axis_text(&parse_axis(&k, "0.5:1:0.25").unwrap()),
            "0.5:1:0.25".to_owned()
        );
        // A pressure threshold ends at the budget in the pane.
        let r = policy("retention");
        let d = choice(&r, "demote_at");
        assert_eq!(d.max, Some(1.0));
        let e = parse_axis(&d, "0.9:1.2:0.1").unwrap_err();
        assert!(e.contains("maximum 1"), "{e}");
        assert!(parse_axis(&d, "0:0.5:0.1").unwrap_err().contains("minimum"));
    }

    #[test]
    fn default_pairs_follow_the_policy() {
        let pair = |name: &str| {
            let p = policy(name);
            let k = numeric_knobs(&p);
            let preferred = p.sweep_pairs();
            default_pair(&k, preferred).map(|(x, y)| (k[x].name.clone(), k[y].name.clone()))
        };
        let s = |a: &str, b: &str| Some((a.to_owned(), b.to_owned()));
        assert_eq!(pair("retention"), s("demote_at", "promote_at"));
        assert_eq!(pair("age"), s("dense_after", "compact_after"));
        assert_eq!(pair("decay"), s("h50", "d"));
        // `full` tunes nothing: its numeric knobs are the recording's system chunk, what thrash
        // counts and the cache TTL, so it has no pair to sweep.
        assert!(pair("full").is_none());
        // system_tokens (the recording's) and thrash_window (what thrash counts) are no axes.
        for name in ["retention", "age", "decay", "full", "opencode"] {
            let k = numeric_knobs(&policy(name));
            assert!(
                k.iter().all(|k| !NOT_AXES.contains(&k.name.as_str())),
                "{name}: {k:?}"
            );
        }
        // The age driver does not read the pressure thresholds: they are not offered.
        let age = numeric_knobs(&policy("age"));
        assert!(age
            .iter()
            .all(|k| k.name != "demote_at" && k.name != "relevance_window"));
    }
}
