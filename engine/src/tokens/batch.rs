//! Counting many texts at once: each distinct piece once, on every core.
//!
//! The texts are cut at their exact cuts ([`super::pieces`]); a piece already counted in this
//! call (the same line in a message's full, pruned and dense chunks, a result header that
//! recurs) is not counted again, and a text's count is the sum of its pieces'. The pieces are
//! counted in parallel, which also spreads one long text over the cores.

use std::collections::hash_map::Entry;

use rayon::prelude::*;

use super::{bpe, key, pieces::pieces, KeyMap, TokenizerKind};

/// Texts are cut and counted in batches of about this many bytes, so the list of pieces (32
/// bytes each) stays small while the counts of distinct pieces are kept for the whole call.
const BATCH_BYTES: usize = 8 << 20;

/// The exact token count of each text.
pub(super) fn count_texts(kind: TokenizerKind, texts: &[&str]) -> Vec<u32> {
    let mut known: KeyMap<u32> = KeyMap::default();
    let mut out = Vec::with_capacity(texts.len());
    let mut rest = texts;
    while !rest.is_empty() {
        let batch = take_batch(&mut rest);
        let cut: Vec<Vec<(u128, &str)>> = batch
            .par_iter()
            .map(|t| pieces(t).map(|p| (key(p), p)).collect())
            .collect();
        let mut fresh: Vec<(u128, &str)> = Vec::new();
        for &(k, p) in cut.iter().flatten() {
            if let Entry::Vacant(v) = known.entry(k) {
                v.insert(0);
                fresh.push((k, p));
            }
        }
        let counted: Vec<u32> = fresh.par_iter().map(|(_, p)| bpe::count(kind, p)).collect();
        for ((k, _), n) in fresh.iter().zip(counted) {
            known.insert(*k, n);
        }
        out.extend(cut.iter().map(|ps| {
            ps.iter()
                .map(|(k, _)| known.get(k).copied().unwrap_or(0))
                .fold(0u32, u32::saturating_add)
        }));
    }
    out
}

/// The leading texts of `rest` up to [`BATCH_BYTES`] (at least one), taken off it.
fn take_batch<'a, 'b>(rest: &mut &'b [&'a str]) -> &'b [&'a str] {
    let mut bytes = 0;
    let n = rest
        .iter()
        .position(|t| {
            bytes += t.len();
            bytes > BATCH_BYTES
        })
        .map_or(rest.len(), |i| i.max(1));
    let (batch, tail) = rest.split_at(n);
    *rest = tail;
    batch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batched_counts_are_the_whole_texts_counts() {
        let line = "[tool bash] {\"command\":\"ls\"}\n[result bash completed, exit 0]\n";
        let big = line.repeat(BATCH_BYTES / line.len() + 10);
        let texts = [
            "",
            "hello world",
            big.as_str(),
            "user:\nhello world\n  indented\n/abs/path\n",
            big.as_str(),
        ];
        let want: Vec<u32> = texts
            .iter()
            .map(|t| bpe::count(TokenizerKind::O200k, t))
            .collect();
        assert_eq!(count_texts(TokenizerKind::O200k, &texts), want);
    }

    #[test]
    fn batches_cover_every_text_once() {
        let big = "x".repeat(BATCH_BYTES);
        let texts = ["a", "b", big.as_str(), "c", &big[1..], &big[..2]];
        let mut rest = &texts[..];
        let mut sizes = Vec::new();
        while !rest.is_empty() {
            sizes.push(take_batch(&mut rest).len());
        }
        // A batch stops before the text that would take it past the cap; a text longer than
        // the cap is a batch of its own.
        assert_eq!(sizes, vec![2, 1, 2, 1]);
    }
}
