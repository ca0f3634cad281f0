//! Magic Context's fold (`renderDecayedCompartments` and the ×1.15 retry of `materializeM0`,
//! read from source; docs/decay.md): which tier each compartment is rendered at when m[0] is
//! materialized. Pure: rows, a budget, and a way to count the rendered blocks.
//!
//! 1. **Curve rows** are the rows that are not legacy (`legacy = 1`); the newest has index 1.
//!    Legacy rows get no index, add nothing to the pressure and enter at a fixed tier (3 with a
//!    `U:` line, else 4).
//! 2. **Pressure**, once per render: Σ over curve rows of the cost of their tier at p = 1
//!    (Magic Context's constants 322 / 109 / 35 / 20; archived 0) ÷ budget, at least `p_floor`;
//!    1 when the budget is 0.
//! 3. **Tiers** from the curve at that pressure ([`Curve::tier`]).
//! 4. **Budget guard**: while Σ tokens of the rendered blocks exceeds the budget, demote the
//!    oldest row not yet archived by one tier (each row all the way to archived before the next);
//!    then the same against the tokens of the joined body. Both loops share one allowance of
//!    5 × rows demotions, spent only by demotions; comparisons are strict.
//! 5. **Retry**: while the `<session-history>` slice exceeds 1.05 × the history budget, render
//!    again at budget ÷ 1.15ᵏ (k ≤ 3).
//!
//! tierscope's one extension: with floors respected, a row's deepest tier is bounded
//! (`max_tier`); the guard passes over a row at its floor and counts it held.

use super::curve::Curve;

/// Magic Context's per-tier token constants (P1..P4) for the pressure.
pub const TIER_COST: [f64; 4] = [322.0, 109.0, 35.0, 20.0];
/// Tier 5: archived (omitted).
pub const ARCHIVED: u8 = 5;
/// The retry's factor and limit.
pub const RETRY_FACTOR: f64 = 1.15;
pub const RETRY_SLACK: f64 = 1.05;
pub const RETRY_ATTEMPTS: u32 = 3;

/// One compartment as the fold sees it, in sequence order (oldest first).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FoldRow {
    /// `Some(tier)` for a legacy row (legacy = 1): outside the curve, at this tier.
    pub legacy_tier: Option<u8>,
    /// Importance as stored (the curve clamps it to 1..=100; NaN archives the row).
    pub importance: f64,
    /// The curve's half-life factor of that importance ([`Curve::factor`]).
    pub factor: f64,
    /// The deepest tier the row may be shown at: 5 (archived) without floors.
    pub max_tier: u8,
}

impl FoldRow {
    /// A row without a floor.
    pub fn new(curve: &Curve, legacy_tier: Option<u8>, importance: f64) -> FoldRow {
        FoldRow {
            legacy_tier,
            importance,
            factor: curve.factor(importance),
            max_tier: ARCHIVED,
        }
    }
}

/// How the pressure prices a row at its tier at p = 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Costs {
    /// Magic Context's constants (it never uses real sizes for the pressure).
    Constants([f64; 4]),
    /// The row's own rendered tokens (a tierscope extension).
    Measured,
}

/// Token counts of rendered blocks.
pub trait BlockTokens {
    /// Tokens of row `i` rendered at `tier` (0 at tier 5).
    fn row(&mut self, i: usize, tier: u8) -> u64;
    /// Tokens of the joined body: the rows' non-empty renderings at `tiers`, joined by `\n\n`.
    fn body(&mut self, tiers: &[u8]) -> u64;
    /// Tokens of the `<session-history>` slice around that body.
    fn slice(&mut self, tiers: &[u8]) -> u64;
}

/// The result of one render at one budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Render {
    pub tiers: Vec<u8>,
    pub pressure: f64,
    /// Rows the guard passed over at their floor, or clamped by it (floors respected only).
    pub held: Vec<usize>,
    /// Demotions the guard made.
    pub demotions: usize,
}

/// The result of a fold: the final render, the multiplier it was rendered at, and its slice.
#[derive(Debug, Clone, PartialEq)]
pub struct Fold {
    pub render: Render,
    /// 1, 1.15, 1.3225 or 1.520875.
    pub multiplier: f64,
    pub attempts: u32,
    /// Tokens of the `<session-history>` slice of the final render.
    pub slice_tokens: u64,
}

/// Curve index of each row (1 = the newest curve row); `None` for legacy rows.
pub fn curve_indices(rows: &[FoldRow]) -> Vec<Option<usize>> {
    let n_curve = rows.iter().filter(|r| r.legacy_tier.is_none()).count();
    let mut seen = 0;
    rows.iter()
        .map(|r| {
            r.legacy_tier.is_none().then(|| {
                seen += 1;
                n_curve - seen + 1
            })
        })
        .collect()
}

/// `computeBudgetPressure`: Σ cost of each curve row's tier at p = 1, ÷ budget, ≥ `p_floor`.
pub fn pressure(
    curve: &Curve,
    rows: &[FoldRow],
    budget: f64,
    costs: Costs,
    tok: &mut dyn BlockTokens,
) -> f64 {
    if budget <= 0.0 {
        return 1.0;
    }
    let mut natural = 0.0;
    for (i, (r, idx)) in rows.iter().zip(curve_indices(rows)).enumerate() {
        let Some(idx) = idx else { continue };
        let t = curve.tier_with_factor(idx, r.factor, 1.0);
        if t < ARCHIVED {
            natural += match costs {
                Costs::Constants(c) => c[usize::from(t) - 1],
                Costs::Measured => tok.row(i, t) as f64,
            };
        }
    }
    (natural / budget).max(curve.p_floor)
}

/// `computeTiers`: legacy rows at their fixed tier, curve rows from the curve at the pressure;
/// then bounded by `max_tier` (floors), noting the rows held there.
pub fn compute_tiers(
    curve: &Curve,
    rows: &[FoldRow],
    pressure: f64,
    held: &mut Vec<usize>,
) -> Vec<u8> {
    rows.iter()
        .zip(curve_indices(rows))
        .enumerate()
        .map(|(i, (r, idx))| {
            let t = match (r.legacy_tier, idx) {
                (Some(t), _) => t,
                (None, Some(idx)) => curve.tier_with_factor(idx, r.factor, pressure),
                (None, None) => ARCHIVED,
            };
            if t > r.max_tier {
                held.push(i);
                r.max_tier
            } else {
                t
            }
        })
        .collect()
}

/// The guard's walk: the oldest row not yet at its deepest tier, and the shared allowance of
/// 5 × rows demotions.
struct Guard {
    oldest: usize,
    allowance: usize,
}

impl Guard {
    /// Demote the oldest row that can go lower by one tier; `None` when none can or the
    /// allowance is spent. Rows passed over at a floor above archived are held.
    fn demote(
        &mut self,
        rows: &[FoldRow],
        tiers: &mut [u8],
        held: &mut Vec<usize>,
    ) -> Option<usize> {
        if self.allowance == 0 {
            return None;
        }
        while self.oldest < rows.len() && tiers[self.oldest] >= rows[self.oldest].max_tier {
            if tiers[self.oldest] < ARCHIVED {
                held.push(self.oldest);
            }
            self.oldest += 1;
        }
        let i = self.oldest;
        if i == rows.len() {
            return None;
        }
        tiers[i] += 1;
        self.allowance -= 1;
        Some(i)
    }
}

/// `renderDecayedCompartments` at budget `b`: the tiers after the curve and the guard.
pub fn render_decayed(
    curve: &Curve,
    rows: &[FoldRow],
    b: f64,
    costs: Costs,
    tok: &mut dyn BlockTokens,
) -> Render {
    let p = pressure(curve, rows, b, costs, tok);
    let mut held = Vec::new();
    let mut tiers = compute_tiers(curve, rows, p, &mut held);
    let mut demotions = 0;
    if !rows.is_empty() && b > 0.0 {
        let mut running: u64 = (0..rows.len()).map(|i| tok.row(i, tiers[i])).sum();
        let mut guard = Guard {
            oldest: 0,
            allowance: 5 * rows.len(),
        };
        while running as f64 > b {
            let Some(i) = guard.demote(rows, &mut tiers, &mut held) else {
                break;
            };
            running = running + tok.row(i, tiers[i]) - tok.row(i, tiers[i] - 1);
            demotions += 1;
        }
        let mut exact = tok.body(&tiers);
        while exact as f64 > b {
            if guard.demote(rows, &mut tiers, &mut held).is_none() {
                break;
            }
            demotions += 1;
            exact = tok.body(&tiers);
        }
    }
    held.sort_unstable();
    held.dedup();
    Render {
        tiers,
        pressure: p,
        held,
        demotions,
    }
}

/// A fold at history budget `hb`: [`render_decayed`], retried at `hb ÷ 1.15ᵏ` while the slice
/// exceeds `1.05 × hb`.
pub fn fold(
    curve: &Curve,
    rows: &[FoldRow],
    hb: f64,
    costs: Costs,
    tok: &mut dyn BlockTokens,
) -> Fold {
    let mut multiplier = 1.0;
    let mut render = render_decayed(curve, rows, hb, costs, tok);
    let mut slice = tok.slice(&render.tiers);
    let mut attempts = 0;
    while hb > 0.0 && slice as f64 > hb * RETRY_SLACK && attempts < RETRY_ATTEMPTS {
        multiplier *= RETRY_FACTOR;
        render = render_decayed(curve, rows, hb / multiplier, costs, tok);
        slice = tok.slice(&render.tiers);
        attempts += 1;
    }
    Fold {
        render,
        multiplier,
        attempts,
        slice_tokens: slice,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks as fixed token counts per (row, tier), the joined body as their sum plus a
    /// separator cost, the slice as the body plus a wrapper cost.
    struct Table {
        rows: Vec<[u64; 5]>,
        sep: u64,
        wrap: u64,
    }
    impl BlockTokens for Table {
        fn row(&mut self, i: usize, tier: u8) -> u64 {
            self.rows[i][usize::from(tier) - 1]
        }
        fn body(&mut self, tiers: &[u8]) -> u64 {
            let parts: Vec<u64> = tiers
                .iter()
                .enumerate()
                .map(|(i, t)| self.rows[i][usize::from(*t) - 1])
                .filter(|&n| n > 0)
                .collect();
            parts.iter().sum::<u64>() + self.sep * parts.len().saturating_sub(1) as u64
        }
        fn slice(&mut self, tiers: &[u8]) -> u64 {
            self.body(tiers) + self.wrap
        }
    }

    fn v2(importance: f64) -> FoldRow {
        FoldRow::new(&Curve::default(), None, importance)
    }

    const C: Costs = Costs::Constants(TIER_COST);
    /// Costs that keep the pressure at its floor, to look at the guard alone.
    const FLAT: Costs = Costs::Constants([0.0; 4]);

    /// Spec E2 (score-projection-parity): eight rows, budget 1,250; rescoring the oldest row to
    /// 100 demotes another row through the pressure.
    #[test]
    fn pressure_with_rescored_importance() {
        let curve = Curve::default();
        let mut tok = Table {
            rows: vec![[1, 1, 1, 1, 0]; 8],
            sep: 0,
            wrap: 0,
        };
        let mut rows: Vec<FoldRow> = [1.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0]
            .into_iter()
            .map(v2)
            .collect();
        let p = pressure(&curve, &rows, 1250.0, C, &mut tok);
        assert!((p - 1.4904).abs() < 1e-12, "{p}");
        let r = render_decayed(&curve, &rows, 1250.0, C, &mut tok);
        assert_eq!(r.tiers, vec![4, 2, 2, 2, 1, 1, 1, 1]);
        rows[0] = v2(100.0);
        let r = render_decayed(&curve, &rows, 1250.0, C, &mut tok);
        assert!((r.pressure - 1.72).abs() < 1e-12);
        assert_eq!(r.tiers, vec![1, 2, 2, 2, 2, 1, 1, 1]);
    }

    /// Spec E3 and E4: the pressure floor, and saturation over a long session.
    #[test]
    fn pressure_floor_and_saturation() {
        let curve = Curve::default();
        let mut tok = Table {
            rows: vec![[1, 1, 1, 1, 0]; 300],
            sep: 0,
            wrap: 0,
        };
        let ten: Vec<FoldRow> = (0..10).map(|_| v2(50.0)).collect();
        let r = render_decayed(&curve, &ten, 60_000.0, C, &mut tok);
        assert_eq!(r.pressure, 0.1);
        assert_eq!(r.tiers, vec![1; 10]);
        let rows: Vec<FoldRow> = (0..300).map(|_| v2(50.0)).collect();
        let p = pressure(&curve, &rows, 19_500.0, C, &mut tok);
        assert_eq!(p, 4137.0 / 19_500.0);
        let mut held = Vec::new();
        let tiers = compute_tiers(&curve, &rows, p, &mut held);
        // Oldest first: index 300 is row 0. P1 = indexes 1–23, P2 = 24–83, P3 = 84–150,
        // P4 = 151–293, archived = 294–300.
        let tier_of_index = |idx: usize| tiers[300 - idx];
        assert_eq!((tier_of_index(23), tier_of_index(24)), (1, 2));
        assert_eq!((tier_of_index(83), tier_of_index(84)), (2, 3));
        assert_eq!((tier_of_index(150), tier_of_index(151)), (3, 4));
        assert_eq!((tier_of_index(293), tier_of_index(294)), (4, 5));
        assert!(held.is_empty());
    }

    /// Spec E6 with the fallback estimator: four rows, the guard demotes the oldest row all
    /// the way (P4 → archived) at budget 30.
    #[test]
    fn the_guard_demotes_oldest_first() {
        let curve = Curve::default();
        // Heuristic tokens of E6 (P1..P4, archived 0).
        let rows_tok = vec![
            [24, 20, 12, 6, 0],
            [36, 20, 12, 11, 0],
            [32, 20, 13, 11, 0],
            [22, 16, 10, 6, 0],
        ];
        let rows: Vec<FoldRow> = (0..4).map(|_| v2(50.0)).collect();
        let mut tok = Table {
            rows: rows_tok,
            sep: 0,
            wrap: 0,
        };
        let r = render_decayed(&curve, &rows, 1e7, C, &mut tok);
        assert_eq!(r.tiers, vec![1, 1, 1, 1]);
        let r = render_decayed(&curve, &rows, 120.0, C, &mut tok);
        assert_eq!(r.tiers, vec![4, 3, 2, 1]);
        assert_eq!(r.demotions, 0);
        let r = render_decayed(&curve, &rows, 60.0, C, &mut tok);
        assert_eq!(r.tiers, vec![5, 4, 3, 1]);
        let r = render_decayed(&curve, &rows, 30.0, C, &mut tok);
        assert_eq!(
            r.tiers,
            vec![5, 5, 5, 1],
            "33 > 30: row 2 goes P4 → archived"
        );
        assert_eq!(r.demotions, 1);
    }

    /// The second loop counts the joined body: separators can push it over the budget.
    #[test]
    fn the_joined_body_is_checked_after_the_blocks() {
        let curve = Curve::default();
        let rows: Vec<FoldRow> = (0..3).map(|_| v2(50.0)).collect();
        let mut tok = Table {
            rows: vec![[10, 8, 6, 4, 0]; 3],
            sep: 2,
            wrap: 0,
        };
        // Σ blocks = 30 ≤ 31, but the body is 30 + 2·2 = 34 > 31: demote row 0 to P2 (32), to
        // P3 (30).
        let r = render_decayed(&curve, &rows, 31.0, FLAT, &mut tok);
        assert_eq!(r.tiers, vec![3, 1, 1]);
        assert_eq!(r.demotions, 2);
    }

    /// The retry, in the shape of Magic Context's m0-decay-pressure-retry golden (40 rows at
    /// budget 20 end after three attempts with one P4 and 39 archived), with made-up block
    /// sizes: the slice stays over 1.05 × 20 until the last attempt.
    #[test]
    fn the_retry_divides_the_budget() {
        let curve = Curve::default();
        let rows: Vec<FoldRow> = (0..40).map(|_| v2(50.0)).collect();
        let mut tok = Table {
            rows: vec![[40, 30, 20, 13, 0]; 40],
            sep: 1,
            wrap: 9,
        };
        let f = fold(&curve, &rows, 20.0, C, &mut tok);
        assert_eq!(f.attempts, 3);
        assert!((f.multiplier - 1.15f64.powi(3)).abs() < 1e-12);
        let count = |t: u8| f.render.tiers.iter().filter(|&&x| x == t).count();
        assert_eq!(
            (count(1), count(2), count(3), count(4), count(5)),
            (0, 0, 0, 1, 39)
        );
    }

    /// Legacy rows: no index, no pressure, a fixed tier; the guard demotes them like any row.
    #[test]
    fn legacy_rows_stay_off_the_curve() {
        let curve = Curve::default();
        let mut rows = vec![
            FoldRow::new(&curve, Some(3), 50.0),
            FoldRow::new(&curve, Some(4), 50.0),
            v2(80.0),
            v2(30.0),
            v2(50.0),
        ];
        assert_eq!(
            curve_indices(&rows),
            vec![None, None, Some(3), Some(2), Some(1)]
        );
        let mut tok = Table {
            rows: vec![[5, 4, 3, 2, 0]; 5],
            sep: 0,
            wrap: 0,
        };
        let r = render_decayed(&curve, &rows, 1e7, C, &mut tok);
        assert_eq!(r.pressure, 0.1, "3 × 322 / 10⁷, floored");
        assert_eq!(r.tiers, vec![3, 4, 1, 1, 1]);
        // Σ = 3 + 2 + 5 + 5 + 5 = 20 > 17: the legacy row 0 goes 3 → 4 → archived.
        let r = render_decayed(&curve, &rows, 17.0, FLAT, &mut tok);
        assert_eq!(r.tiers, vec![5, 4, 1, 1, 1]);
        // A floor stops the guard at tier 3; the row is held and the next ones demoted:
        // 20 → 18 (row 1 archived) → 17 (row 2 to P2).
        rows[0].max_tier = 3;
        let r = render_decayed(&curve, &rows, 17.0, FLAT, &mut tok);
        assert_eq!(r.tiers, vec![3, 5, 2, 1, 1]);
        assert_eq!(r.held, vec![0]);
    }

    /// A NaN importance (non-numeric text in the column) archives the row.
    #[test]
    fn nan_importance_archives() {
        let curve = Curve::default();
        let rows = vec![v2(f64::NAN), v2(50.0)];
        let mut tok = Table {
            rows: vec![[1, 1, 1, 1, 0]; 2],
            sep: 0,
            wrap: 0,
        };
        assert_eq!(
            render_decayed(&curve, &rows, 1e6, C, &mut tok).tiers,
            vec![5, 1]
        );
    }
}
