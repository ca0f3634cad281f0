//! A set of episodes in victim order (class rank, relevant, episode), for `retention`.
//!
//! The order has six ranks before the episode index, so the set is six bitsets over the
//! episodes laid end to end in that order: adding or removing a victim costs O(1) (it happens
//! at every tier change), and a walk in order skips 64 absent episodes per word.

use std::ops::Bound;

/// Victim order: (class rank 0..=2, relevant, episode).
pub(crate) type VictimKey = (u8, bool, usize);

const RANKS: usize = 6;

#[derive(Debug, Clone)]
pub(crate) struct VictimSet {
    /// Bits per rank (the episodes, rounded up to whole words).
    span: usize,
    words: Vec<u64>,
    len: usize,
}

impl VictimSet {
    pub fn new(episodes: usize) -> VictimSet {
        let per_rank = episodes.div_ceil(64).max(1);
        VictimSet {
            span: per_rank * 64,
            words: vec![0; per_rank * RANKS],
            len: 0,
        }
    }

    fn pos(&self, k: VictimKey) -> usize {
        (usize::from(k.0) * 2 + usize::from(k.1)) * self.span + k.2
    }

    fn key(&self, pos: usize) -> VictimKey {
        let rank = pos / self.span;
        ((rank / 2) as u8, rank % 2 == 1, pos % self.span)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn insert(&mut self, k: VictimKey) {
        let p = self.pos(k);
        let (w, b) = (p / 64, 1u64 << (p % 64));
        if self.words[w] & b == 0 {
            self.words[w] |= b;
            self.len += 1;
        }
    }

    pub fn remove(&mut self, k: VictimKey) {
        let p = self.pos(k);
        let (w, b) = (p / 64, 1u64 << (p % 64));
        if self.words[w] & b != 0 {
            self.words[w] &= !b;
            self.len -= 1;
        }
    }

    /// The first member at or after position `from`, before position `to`.
    fn next_from(&self, from: usize, to: usize) -> Option<usize> {
        if from >= to {
            return None;
        }
        let mut w = from / 64;
        let mut bits = self.words.get(w)? & (!0u64 << (from % 64));
        loop {
            if bits != 0 {
                let p = w * 64 + bits.trailing_zeros() as usize;
                return (p < to).then_some(p);
            }
            w += 1;
            if w * 64 >= to {
                return None;
            }
            bits = *self.words.get(w)?;
        }
    }

    /// The first victim after `after` (from the first when `None`).
    pub fn next_after(&self, after: Option<VictimKey>) -> Option<VictimKey> {
        let from = after.map_or(0, |k| self.pos(k) + 1);
        self.next_from(from, self.words.len() * 64)
            .map(|p| self.key(p))
    }

    /// The victims within `bounds`, in victim order.
    pub fn range(
        &self,
        bounds: (Bound<VictimKey>, Bound<VictimKey>),
    ) -> impl Iterator<Item = VictimKey> + '_ {
        let from = match bounds.0 {
            Bound::Included(k) => self.pos(k),
            Bound::Excluded(k) => self.pos(k) + 1,
            Bound::Unbounded => 0,
        };
        let to = match bounds.1 {
            Bound::Included(k) => self.pos(k) + 1,
            Bound::Excluded(k) => self.pos(k),
            Bound::Unbounded => self.words.len() * 64,
        };
        let mut at = from;
        std::iter::from_fn(move || {
            let p = self.next_from(at, to)?;
            at = p + 1;
            Some(self.key(p))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The same operations on a `BTreeSet` of keys give the same members in the same order.
    #[test]
    fn keeps_victim_order_like_an_ordered_set() {
        let n = 150;
        let mut v = VictimSet::new(n);
        let mut b: BTreeSet<VictimKey> = BTreeSet::new();
        let mut x: u64 = 7;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = (
                (x >> 33) as u8 % 3,
                (x >> 40) & 1 == 1,
                (x >> 20) as usize % n,
            );
            if (x >> 50) & 3 == 0 {
                v.remove(k);
                b.remove(&k);
            } else {
                v.insert(k);
                b.insert(k);
            }
            assert_eq!(v.is_empty(), b.is_empty());
        }
        let all: Vec<_> = v.range((Bound::Unbounded, Bound::Unbounded)).collect();
        assert_eq!(all, b.iter().copied().collect::<Vec<_>>());
        let (lo, hi) = ((0u8, true, 40usize), (2u8, false, 77usize));
        let mid: Vec<_> = v
            .range((Bound::Included(lo), Bound::Excluded(hi)))
            .collect();
        assert_eq!(mid, b.range(lo..hi).copied().collect::<Vec<_>>());
        let mut walked = Vec::new();
        let mut at = None;
        while let Some(k) = v.next_after(at) {
            walked.push(k);
            at = Some(k);
        }
        assert_eq!(walked, all);
    }
}
