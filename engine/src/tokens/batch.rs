//! Counting many texts at once: each distinct piece once, on every core.
//!
//! The texts are cut at their exact cuts ([`super::pieces`]); a piece already counted in this
//! call (the same line in a message's full, pruned and dense chunks, a result header that
//! recurs) is not counted again, and a text's count is the sum of its pieces'. It is one
//! parallel pass over the texts: the counts of the pieces seen so far are shared through a map
//! split into shards, so the threads never wait for each other at a phase boundary (on a busy
//! machine a phase waits for its slowest thread's time slice) and rarely for a lock.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use rayon::prelude::*;

use super::{bpe, key, pieces::pieces, KeyHasher, TokenizerKind};

/// Shards of the map of piece counts (a power of two; picked by the key's high bits).
const SHARDS: usize = 64;

/// Pieces kept between the parts of a batch before the map starts again, so the map's memory
/// stays bounded however many distinct pieces a session has. Forgetting only costs the pieces
/// met again later a second count; the counts are the same.
const PIECES_KEPT: usize = 1 << 18;

/// A piece's key in two words: 8-byte aligned, a map entry is 24 bytes instead of the 32 of a
/// `u128` key.
#[derive(Clone, Copy, PartialEq, Eq)]
struct PieceKey([u64; 2]);

impl PieceKey {
    fn of(k: u128) -> PieceKey {
        PieceKey([k as u64, (k >> 64) as u64])
    }
}

impl Hash for PieceKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        // Already a uniform hash (see `KeyHasher`).
        h.write_u64(self.0[0]);
    }
}

type PieceMap = HashMap<PieceKey, u32, BuildHasherDefault<KeyHasher>>;

/// The exact token count of each text; `known` holds the pieces counted before (in earlier
/// parts of the same batch) and gets the new ones.
pub(super) fn count_texts(kind: TokenizerKind, texts: &[&str], known: &PieceCounts) -> Vec<u32> {
    texts
        .par_iter()
        .map(|t| {
            pieces(t)
                .map(|p| known.get_or_count(key(p), || bpe::count(kind, p)))
                .fold(0u32, u32::saturating_add)
        })
        .collect()
}

/// Counts of the pieces seen in one batch, keyed by content hash.
pub(super) struct PieceCounts {
    shards: Vec<Mutex<PieceMap>>,
    /// Pieces in the shards.
    len: AtomicUsize,
}

impl PieceCounts {
    pub(super) fn new() -> PieceCounts {
        PieceCounts {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            len: AtomicUsize::new(0),
        }
    }

    /// Between two parts of a batch: start again when more than [`PIECES_KEPT`] are held.
    pub(super) fn bound(&mut self) {
        if *self.len.get_mut() > PIECES_KEPT {
            for s in &mut self.shards {
                *s.get_mut().unwrap_or_else(PoisonError::into_inner) = PieceMap::default();
            }
            *self.len.get_mut() = 0;
        }
    }

    /// The count of the piece with key `k`, counted by `count` if no thread has yet. Two
    /// threads meeting a new piece at once may both count it: the same exact count, stored
    /// twice.
    fn get_or_count(&self, k: u128, count: impl FnOnce() -> u32) -> u32 {
        // The maps index by the low bits; the shard comes from the high ones.
        let shard = &self.shards[(k >> 122) as usize % SHARDS];
        let k = PieceKey::of(k);
        // A poisoned shard only means another thread panicked mid-insert; its map is valid.
        let lock = || shard.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = lock().get(&k) {
            return *n;
        }
        let n = count();
        if lock().insert(k, n).is_none() {
            self.len.fetch_add(1, Ordering::Relaxed);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_the_whole_texts_counts() {
        let line = "[tool bash] {\"command\":\"ls\"}\n[result bash completed, exit 0]\n";
        let big = line.repeat(5_000);
        let texts = [
            "",
            "hello world",
            big.as_str(),
            "user:\nhello world\n  indented\n/abs/path\n",
            big.as_str(),
            "hello world",
        ];
        let want: Vec<u32> = texts
            .iter()
            .map(|t| bpe::count(TokenizerKind::O200k, t))
            .collect();
        assert_eq!(
            count_texts(TokenizerKind::O200k, &texts, &PieceCounts::new()),
            want
        );
    }

    #[test]
    fn a_piece_is_counted_once() {
        let known = PieceCounts::new();
        let mut calls = 0;
        for _ in 0..3 {
            assert_eq!(
                known.get_or_count(7, || {
                    calls += 1;
                    5
                }),
                5
            );
        }
        assert_eq!(calls, 1);
    }

    #[test]
    fn the_pieces_kept_between_parts_are_bounded() {
        let mut known = PieceCounts::new();
        for k in 0..=PIECES_KEPT as u128 {
            known.get_or_count(k << 70 | k, || 1);
        }
        known.get_or_count(3, || 1);
        known.bound();
        assert_eq!(*known.len.get_mut(), 0);
        // Forgotten: met again, a piece is counted again (to the same count).
        let mut calls = 0;
        known.get_or_count(3, || {
            calls += 1;
            1
        });
        assert_eq!(calls, 1);
        // Below the bound, nothing is forgotten.
        known.bound();
        assert_eq!(*known.len.get_mut(), 1);
    }
}
