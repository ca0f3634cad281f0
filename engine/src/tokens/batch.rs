//! Counting many texts at once: each distinct piece once, on every core.
//!
//! The texts are cut at their exact cuts ([`super::pieces`]); a piece already counted in this
//! call (the same line in a message's full, pruned and dense chunks, a result header that
//! recurs) is not counted again, and a text's count is the sum of its pieces'. It is one
//! parallel pass over the texts: the counts of the pieces seen so far are shared through a map
//! split into shards, so the threads never wait for each other at a phase boundary (on a busy
//! machine a phase waits for its slowest thread's time slice) and rarely for a lock.

use std::sync::{Mutex, PoisonError};

use rayon::prelude::*;

use super::{bpe, key, pieces::pieces, KeyMap, TokenizerKind};

/// Shards of the map of piece counts (a power of two; picked by the key's high bits).
const SHARDS: usize = 64;

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
    shards: Vec<Mutex<KeyMap<u32>>>,
}

impl PieceCounts {
    pub(super) fn new() -> PieceCounts {
        PieceCounts {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    /// The count of the piece with key `k`, counted by `count` if no thread has yet. Two
    /// threads meeting a new piece at once may both count it: the same exact count, stored
    /// twice.
    fn get_or_count(&self, k: u128, count: impl FnOnce() -> u32) -> u32 {
        // The maps index by the low bits; the shard comes from the high ones.
        let shard = &self.shards[(k >> 122) as usize % SHARDS];
        // A poisoned shard only means another thread panicked mid-insert; its map is valid.
        let lock = || shard.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = lock().get(&k) {
            return *n;
        }
        let n = count();
        lock().insert(k, n);
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
}
