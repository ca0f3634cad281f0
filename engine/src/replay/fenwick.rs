//! A Fenwick tree of token counts per closed episode: the tokens rendered before episode `e` in
//! O(log n), which is what lets the divergence of a request be found without re-adding the
//! context.

/// Prefix sums over per-episode token counts.
#[derive(Debug, Clone)]
pub(crate) struct Fenwick(Vec<i64>);

impl Fenwick {
    pub fn new(n: usize) -> Fenwick {
        Fenwick(vec![0; n + 1])
    }

    /// Add `d` to entry `i`.
    pub fn add(&mut self, i: usize, d: i64) {
        let mut i = i + 1;
        while i < self.0.len() {
            self.0[i] += d;
            i += i & i.wrapping_neg();
        }
    }

    /// Σ of entries `0..i` (all of them when `i` is past the end).
    pub fn prefix(&self, i: usize) -> i64 {
        let mut i = i.min(self.0.len() - 1);
        let mut s = 0;
        while i > 0 {
            s += self.0[i];
            i -= i & i.wrapping_neg();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every prefix equals the naive sum after any sequence of updates.
    #[test]
    fn prefix_sums_match_a_naive_sum() {
        let n = 37;
        let mut f = Fenwick::new(n);
        let mut v = vec![0i64; n];
        let mut x: u64 = 0x9E37_79B9;
        for step in 0..500 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x % n as u64) as usize;
            let d = (x >> 32) as i64 % 1000 - if step % 3 == 0 { 700 } else { 0 };
            f.add(i, d);
            v[i] += d;
            for j in 0..=n + 2 {
                let naive: i64 = v[..j.min(n)].iter().sum();
                assert_eq!(f.prefix(j), naive, "prefix {j} after step {step}");
            }
        }
    }

    #[test]
    fn empty_tree_sums_to_zero() {
        let f = Fenwick::new(0);
        assert_eq!(f.prefix(0), 0);
        assert_eq!(f.prefix(5), 0);
    }
}
