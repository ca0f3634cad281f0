//! Magic Context's decay curve (reference `magic-context.md` §1.4, pseudocode (a)), with its
//! constants as knobs. Pure functions; the decay policy in [`crate::replay`] calls them at folds.

/// The curve's constants (Magic Context's values by default).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Curve {
    /// Half-life in episodes at importance 50 and pressure 1 (`H50` = 24).
    pub h50: f64,
    /// Importance points per doubling of the half-life (`D` = 25).
    pub d: f64,
    /// z-boundaries P1→P2, P2→P3, P3→P4, P4→archived.
    pub z: [f64; 4],
    /// Pressure floor (`P_FLOOR` = 0.1).
    pub p_floor: f64,
}

impl Default for Curve {
    fn default() -> Self {
        Curve {
            h50: 24.0,
            d: 25.0,
            z: [0.201, 0.729, 1.322, 2.587],
            p_floor: 0.1,
        }
    }
}

impl Curve {
    /// The z-score of an episode: age ÷ half-life. `index` is 1 for the newest episode;
    /// importance is clamped to 1..=100.
    pub fn z(&self, index: usize, importance: f64, pressure: f64) -> f64 {
        self.z_with_factor(index, self.factor(importance), pressure)
    }

    /// The half-life factor of an importance, 2^((I − 50) / D) with I clamped to 1..=100
    /// (constant per episode, so callers may compute it once).
    pub fn factor(&self, importance: f64) -> f64 {
        2f64.powf((importance.clamp(1.0, 100.0) - 50.0) / self.d)
    }

    /// [`Curve::z`] with the importance factor precomputed.
    pub fn z_with_factor(&self, index: usize, factor: f64, pressure: f64) -> f64 {
        let a = index.max(1) as f64 - 1.0;
        let h = self.h50 * factor / pressure.max(self.p_floor);
        a / h
    }

    /// Magic Context's tier, 1 (P1 = full) … 5 (archived = omitted). The anchor-overlap term
    /// `G·o` is left out: Magic Context always passes `o = 0`.
    pub fn tier(&self, index: usize, importance: f64, pressure: f64) -> u8 {
        self.tier_with_factor(index, self.factor(importance), pressure)
    }

    /// [`Curve::tier`] with the importance factor precomputed.
    pub fn tier_with_factor(&self, index: usize, factor: f64, pressure: f64) -> u8 {
        let z = self.z_with_factor(index, factor, pressure);
        if z < self.z[0] {
            1
        } else if z < self.z[1] {
            2
        } else if z < self.z[2] {
            3
        } else if z < self.z[3] {
            4
        } else {
            5
        }
    }

    /// Pressure once per fold: Σ cost of each episode's tier at p = 1, ÷ history budget, at
    /// least `p_floor`; 1 when the budget is 0. `items` are (index, importance, costs[P1..P4]).
    pub fn pressure<'a>(
        &self,
        items: impl Iterator<Item = (usize, f64, &'a [f64; 4])>,
        history_budget: f64,
    ) -> f64 {
        if history_budget <= 0.0 {
            return 1.0;
        }
        let natural: f64 = items
            .map(|(index, imp, costs)| match self.tier(index, imp, 1.0) {
                t @ 1..=4 => costs[usize::from(t) - 1],
                _ => 0.0,
            })
            .sum();
        (natural / history_budget).max(self.p_floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tier windows Magic Context publishes for p = 1 (the table below): for each importance,
    /// the last position of P1, P2, P3, P4 (archived from the next one).
    #[test]
    fn reproduces_published_tier_windows_exactly() {
        let c = Curve::default();
        let table: [(f64, [usize; 4]); 5] = [
            (10.0, [2, 6, 11, 21]),
            (25.0, [3, 9, 16, 32]),
            (50.0, [5, 18, 32, 63]),
            (75.0, [10, 35, 64, 125]),
            (100.0, [20, 70, 127, 249]),
        ];
        for (imp, last) in table {
            let mut expected = Vec::new();
            let mut lo = 1;
            for (t, hi) in last.iter().enumerate() {
                for _ in lo..=*hi {
                    expected.push(t as u8 + 1);
                }
                lo = hi + 1;
            }
            expected.push(5);
            let got: Vec<u8> = (1..=last[3] + 1).map(|i| c.tier(i, imp, 1.0)).collect();
            assert_eq!(got, expected, "importance {imp}");
            assert_eq!(c.tier(last[3] + 200, imp, 1.0), 5);
        }
        // The spot checks of decay-curve.test.ts.
        assert_eq!(c.tier(5, 50.0, 1.0), 1);
        assert_eq!(c.tier(6, 50.0, 1.0), 2);
        assert_eq!(c.tier(19, 50.0, 1.0), 3);
        assert_eq!(c.tier(33, 50.0, 1.0), 4);
        assert_eq!(c.tier(64, 50.0, 1.0), 5);
        assert_eq!(c.tier(250, 100.0, 1.0), 5);
        // Pressure 0.5 doubles the windows: importance 50 is P1 1–10, archived from 126.
        assert_eq!(c.tier(10, 50.0, 0.5), 1);
        assert_eq!(c.tier(11, 50.0, 0.5), 2);
        assert_eq!(c.tier(125, 50.0, 0.5), 4);
        assert_eq!(c.tier(126, 50.0, 0.5), 5);
    }

    #[test]
    fn monotone_in_age_and_importance() {
        let c = Curve::default();
        for imp in [1.0, 30.0, 50.0, 99.0] {
            let mut prev = 1;
            for i in 1..400 {
                let t = c.tier(i, imp, 1.0);
                assert!(t >= prev);
                assert!(c.tier(i, imp + 1.0, 1.0) <= t);
                prev = t;
            }
        }
    }
}
