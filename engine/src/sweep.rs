//! Threshold sweeps: one policy replayed over a grid of knob values, each point measured (cost,
//! divergence cost, mean tokens, overflow, thrash, holds, violations, probe survival) and the
//! Pareto front marked: staying within the budget first (a point with no request over the budget
//! beats any that has one), then lower cost, thrash and overflow, higher survival.
//!
//! Ranges are inclusive: `KEY=FROM:TO:STEP` has round((TO − FROM) / STEP) + 1 values. A grid point
//! whose knobs break the policy's constraints (e.g. `promote_at ≥ target`) is kept in the result
//! as `invalid` with the reason and is not replayed. Points are replayed in parallel (rayon);
//! the result's order is the grid's (first axis slowest), whatever the thread timing.

use rayon::prelude::*;
use serde::Serialize;

use crate::policy::Policy;
use crate::replay;
use crate::session::LoadedSession;

/// The most points one sweep may have.
pub const MAX_POINTS: usize = 100_000;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SweepError {
    #[error("--vary {text:?}: expected KEY=FROM:TO:STEP (e.g. demote_at=0.7:0.95:0.05)")]
    Syntax { text: String },
    #[error("--vary {key}: {reason}")]
    Range { key: String, reason: String },
    #[error("policy {policy:?} has no numeric knob {key:?} (its numeric knobs: {})", known.join(", "))]
    UnknownKnob {
        policy: String,
        key: String,
        known: Vec<String>,
    },
    #[error("the grid has {points} points; at most {MAX_POINTS} are allowed")]
    TooLarge { points: usize },
    #[error("a sweep needs at least one --vary axis")]
    NoAxes,
}

/// One knob varied over an inclusive range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Axis {
    pub key: String,
    pub from: f64,
    pub to: f64,
    pub step: f64,
}

/// Remove floating-point noise (0.30000000000000004 → 0.3) so values print and compare cleanly.
fn tidy(v: f64) -> f64 {
    (v * 1e9).round() / 1e9
}

/// A knob value as `--set` text: whole numbers without a decimal point.
pub fn format_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

impl Axis {
    /// Parse `KEY=FROM:TO:STEP`.
    pub fn parse(text: &str) -> Result<Axis, SweepError> {
        let syntax = || SweepError::Syntax {
            text: text.to_owned(),
        };
        let (key, range) = text.split_once('=').ok_or_else(syntax)?;
        let parts: Vec<&str> = range.split(':').collect();
        let [from, to, step] = parts.as_slice() else {
            return Err(syntax());
        };
        let num = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        let (Some(from), Some(to), Some(step)) = (num(from), num(to), num(step)) else {
            return Err(syntax());
        };
        let axis = Axis {
            key: key.trim().to_owned(),
            from,
            to,
            step,
        };
        axis.check()?;
        Ok(axis)
    }

    fn check(&self) -> Result<(), SweepError> {
        let err = |reason: String| SweepError::Range {
            key: self.key.clone(),
            reason,
        };
        if self.key.is_empty() {
            return Err(err("empty knob name".into()));
        }
        if self.step == 0.0 {
            return Err(err("STEP must not be 0".into()));
        }
        if (self.to - self.from) / self.step < -1e-9 {
            return Err(err(format!(
                "STEP {} never gets from {} to {}",
                self.step, self.from, self.to
            )));
        }
        Ok(())
    }

    /// Number of values: round((to − from) / step) + 1.
    pub fn len(&self) -> usize {
        ((self.to - self.from) / self.step).round().max(0.0) as usize + 1
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// The values, `from` first.
    pub fn values(&self) -> Vec<f64> {
        (0..self.len())
            .map(|i| tidy(self.from + i as f64 * self.step))
            .collect()
    }
}

/// What one replayed point measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Metrics {
    pub cost: f64,
    pub divergence_tokens: i64,
    pub divergence_dollars: f64,
    pub mean_tokens: f64,
    pub max_overflow: u64,
    /// Requests whose context went over the budget.
    pub overflow_requests: u64,
    pub thrash: u64,
    pub holds: u64,
    /// Floor plus pin violations.
    pub violations: u64,
    pub changes: u64,
    pub probe_survival: Option<f64>,
}

/// One grid point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The knob values, in axis order.
    pub knobs: Vec<(String, f64)>,
    /// `ok` or `invalid`.
    pub status: String,
    /// Why the point is invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// On the Pareto front (within the budget where any point is; lower cost, thrash and
    /// overflow, higher survival).
    pub pareto: bool,
}

impl Point {
    pub fn is_valid(&self) -> bool {
        self.metrics.is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepResult {
    pub policy: String,
    pub budget: u64,
    pub budget_source: String,
    pub axes: Vec<Axis>,
    /// Row-major: the first axis varies slowest.
    pub points: Vec<Point>,
    /// `opencode`: which trigger ran and why (the same at every point: `trigger` is a choice,
    /// not an axis).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
}

impl SweepResult {
    /// The point at grid coordinates (one index per axis).
    pub fn at(&self, coords: &[usize]) -> Option<&Point> {
        if coords.len() != self.axes.len() {
            return None;
        }
        let mut idx = 0;
        for (c, a) in coords.iter().zip(&self.axes) {
            if *c >= a.len() {
                return None;
            }
            idx = idx * a.len() + c;
        }
        self.points.get(idx)
    }
    pub fn valid(&self) -> usize {
        self.points.iter().filter(|p| p.is_valid()).count()
    }
}

/// Every combination of the axes' values, first axis slowest.
pub fn grid(axes: &[Axis]) -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = vec![Vec::new()];
    for a in axes {
        let vals = a.values();
        out = out
            .into_iter()
            .flat_map(|prefix| {
                vals.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push(*v);
                    p
                })
            })
            .collect();
    }
    out
}

/// Check that every axis names a numeric knob of the policy and the grid is not too large.
pub fn validate(policy: &Policy, axes: &[Axis]) -> Result<usize, SweepError> {
    if axes.is_empty() {
        return Err(SweepError::NoAxes);
    }
    let numeric: Vec<String> = policy
        .specs
        .iter()
        .filter(|s| matches!(s.default, crate::policy::KnobValue::Num(_)))
        .map(|s| s.name.clone())
        .collect();
    let mut points: usize = 1;
    for a in axes {
        a.check()?;
        if !numeric.contains(&a.key) {
            return Err(SweepError::UnknownKnob {
                policy: policy.name.clone(),
                key: a.key.clone(),
                known: numeric,
            });
        }
        points = points.saturating_mul(a.len());
    }
    if points > MAX_POINTS {
        return Err(SweepError::TooLarge { points });
    }
    Ok(points)
}

/// Sweep with the default budget and no progress report (the TUI's sweep pane).
pub fn run(s: &LoadedSession, policy: &Policy, axes: &[Axis]) -> Result<SweepResult, SweepError> {
    run_with(s, policy, axes, None, &|| {})
}

/// Sweep `policy` over the grid of `axes` at `budget`; `tick` is called once per finished point
/// (from worker threads).
pub fn run_with(
    s: &LoadedSession,
    policy: &Policy,
    axes: &[Axis],
    budget: Option<u64>,
    tick: &(dyn Fn() + Sync),
) -> Result<SweepResult, SweepError> {
    validate(policy, axes)?;
    let input = replay::Input::from(s);
    let (budget_v, budget_source) = replay::resolve_budget(&s.trace, budget);
    let (mut points, triggers): (Vec<Point>, Vec<Option<String>>) = grid(axes)
        .into_par_iter()
        .map(|values| {
            let knobs: Vec<(String, f64)> = axes
                .iter()
                .zip(&values)
                .map(|(a, v)| (a.key.clone(), *v))
                .collect();
            let overrides: Vec<(String, String)> = knobs
                .iter()
                .map(|(k, v)| (k.clone(), format_value(*v)))
                .collect();
            let mut trigger = None;
            let point = match policy.clone().with_overrides(&overrides) {
                Err(e) => Point {
                    knobs,
                    status: "invalid".into(),
                    reason: Some(e.to_string()),
                    metrics: None,
                    pareto: false,
                },
                Ok(p) => {
                    // The budget as given: without one, every point replays at the default
                    // (and `opencode` with `trigger = auto` follows the recording).
                    let r = replay::replay(&input, &p, budget);
                    trigger = r
                        .policy
                        .compaction
                        .as_ref()
                        .map(|c| format!("trigger {} ({})", c.trigger, c.why));
                    let sm = &r.summary;
                    Point {
                        knobs,
                        status: "ok".into(),
                        reason: None,
                        metrics: Some(Metrics {
                            cost: sm.cost,
                            divergence_tokens: sm.divergence_cost.tokens,
                            divergence_dollars: sm.divergence_cost.dollars,
                            mean_tokens: sm.mean_tokens,
                            max_overflow: sm.max_overflow,
                            overflow_requests: r.frames.iter().filter(|f| f.overflow > 0).count()
                                as u64,
                            thrash: sm.thrash,
                            holds: sm.holds,
                            violations: sm.floor_violations + sm.pin_violations,
                            changes: sm.changes,
                            probe_survival: sm.probe_survival,
                        }),
                        pareto: false,
                    }
                }
            };
            tick();
            (point, trigger)
        })
        .unzip();
    let trigger = triggers.into_iter().flatten().next();
    mark_pareto(&mut points);
    Ok(SweepResult {
        policy: policy.name.clone(),
        budget: budget_v,
        budget_source,
        axes: axes.to_vec(),
        points,
        trigger,
    })
}

/// `a` dominates `b`. The budget is a constraint: a point with no request over it dominates
/// any point with one. Otherwise `a` is no worse in cost, thrash, requests over the budget and
/// survival, and better in one of them. Without probes survival is equal everywhere and does
/// not count.
pub fn dominates(a: &Metrics, b: &Metrics) -> bool {
    let (fa, fb) = (a.overflow_requests == 0, b.overflow_requests == 0);
    if fa != fb {
        return fa;
    }
    let sa = a.probe_survival.unwrap_or(0.0);
    let sb = b.probe_survival.unwrap_or(0.0);
    let (oa, ob) = (a.overflow_requests, b.overflow_requests);
    let no_worse = a.cost <= b.cost && a.thrash <= b.thrash && oa <= ob && sa >= sb;
    let better = a.cost < b.cost || a.thrash < b.thrash || oa < ob || sa > sb;
    no_worse && better
}

/// Mark every valid point that no other valid point dominates.
pub fn mark_pareto(points: &mut [Point]) {
    let metrics: Vec<Option<Metrics>> = points.iter().map(|p| p.metrics).collect();
    for (i, p) in points.iter_mut().enumerate() {
        p.pareto = match &metrics[i] {
            None => false,
            Some(m) => !metrics
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && o.as_ref().is_some_and(|o| dominates(o, m))),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_are_inclusive_and_tidy() {
        let a = Axis::parse("demote_at=0.7:0.95:0.05").unwrap();
        assert_eq!(a.len(), 6);
        assert_eq!(a.values(), vec![0.7, 0.75, 0.8, 0.85, 0.9, 0.95]);
        let b = Axis::parse("min_dwell=1:6:1").unwrap();
        assert_eq!(b.values(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(format_value(3.0), "3");
        assert_eq!(format_value(0.75), "0.75");
        assert_eq!(Axis::parse("x=1:1:5").unwrap().len(), 1);
        assert_eq!(
            Axis::parse("x=5:1:-2").unwrap().values(),
            vec![5.0, 3.0, 1.0]
        );
        assert!(Axis::parse("x=1:5:0").is_err());
        assert!(Axis::parse("x=5:1:1").is_err());
        assert!(Axis::parse("x=1:5").is_err());
        assert!(Axis::parse("1:5:1").is_err());
        assert_eq!(grid(&[a, b]).len(), 36);
    }

    fn m(cost: f64, thrash: u64, surv: f64) -> Metrics {
        over(cost, thrash, surv, 0)
    }

    fn over(cost: f64, thrash: u64, surv: f64, overflow_requests: u64) -> Metrics {
        Metrics {
            cost,
            divergence_tokens: 0,
            divergence_dollars: 0.0,
            mean_tokens: 0.0,
            max_overflow: overflow_requests * 100,
            overflow_requests,
            thrash,
            holds: 0,
            violations: 0,
            changes: 0,
            probe_survival: Some(surv),
        }
    }

    #[test]
    fn pareto_front_by_hand() {
        // a: cheap, some thrash, mid survival      → front (cheapest)
        // b: dearer, no thrash, same survival as a → front (least thrash)
        // c: dearer than a, more thrash, worse     → dominated by a
        // d: dearest, best survival                → front (best survival)
        // e: equal to a in everything              → front (ties do not dominate)
        // f: invalid                               → never on the front
        let mk = |name: &str, metrics: Option<Metrics>| Point {
            knobs: vec![(name.into(), 0.0)],
            status: if metrics.is_some() {
                "ok".into()
            } else {
                "invalid".into()
            },
            reason: None,
            metrics,
            pareto: false,
        };
        let mut pts = vec![
            mk("a", Some(m(1.0, 2, 0.8))),
            mk("b", Some(m(2.0, 0, 0.8))),
            mk("c", Some(m(1.5, 3, 0.7))),
            mk("d", Some(m(3.0, 1, 0.95))),
            mk("e", Some(m(1.0, 2, 0.8))),
            mk("f", None),
        ];
        mark_pareto(&mut pts);
        let front: Vec<&str> = pts
            .iter()
            .filter(|p| p.pareto)
            .map(|p| p.knobs[0].0.as_str())
            .collect();
        assert_eq!(front, vec!["a", "b", "d", "e"]);
    }

    #[test]
    fn overflow_keeps_a_point_off_the_front() {
        let mk = |name: &str, metrics: Metrics| Point {
            knobs: vec![(name.into(), 0.0)],
            status: "ok".into(),
            reason: None,
            metrics: Some(metrics),
            pareto: false,
        };
        let front = |pts: &mut Vec<Point>| {
            mark_pareto(pts);
            pts.iter()
                .filter(|p| p.pareto)
                .map(|p| p.knobs[0].0.clone())
                .collect::<Vec<_>>()
        };
        // cheap: cheapest but 9 requests over the budget; safe: dearer, none over, no thrash.
        let mut pts = vec![
            mk("cheap", over(1.0, 0, 0.0, 9)),
            mk("safe", over(1.2, 0, 0.0, 0)),
            mk("thrashy", over(1.1, 3, 0.0, 0)),
        ];
        assert_eq!(front(&mut pts), ["safe", "thrashy"]);
        // When every point overflows, fewer requests over the budget is an objective.
        let mut pts = vec![
            mk("a", over(1.0, 0, 0.0, 9)),
            mk("b", over(1.2, 0, 0.0, 2)),
            mk("c", over(1.3, 0, 0.0, 5)),
        ];
        assert_eq!(front(&mut pts), ["a", "b"]);
    }
}
