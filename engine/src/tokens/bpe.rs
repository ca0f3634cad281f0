//! The counting core: exactly tiktoken's token counts (`encode_ordinary(text).len()`), fast.
//!
//! tiktoken splits a text with a regex (the pre-tokenizer) and byte-pair encodes each piece on
//! its own. Here the byte-pair encodings are bpe-openai's (its vocabularies ship inside the crate,
//! built from the same `.tiktoken` rank files; its backtracking encoder gives the same tokens as
//! tiktoken's merge loop), and the pre-tokenizer is ours, for two reasons:
//!
//! - **One scratch space per worker thread.** A shared regex keeps a pool of match caches that
//!   every thread takes from and returns to on every match, so the threads contend for it (with
//!   tiktoken-rs's shared singleton, two threads were slower than one). Each thread here has
//!   its own cache and memo (a `thread_local!`), built once per thread, and the compiled regex
//!   and the encoding tables are shared read-only.
//! - **A memo of short pieces.** Most pieces are one word; a per-thread map from a piece's bytes
//!   to its count skips the encoder for the words seen before, which session text repeats.
//!   It is keyed by the bytes themselves, so it is exact.
//!
//! The regexes are tiktoken's `o200k_base` / `cl100k_base` patterns with the one look-ahead they
//! use, `\s+(?!\S)`, which `regex-automata` has no syntax for, expressed without it: `\s+$`
//! (a whitespace run that ends the text) and `\s+\s` with its last character given back (a run
//! followed by more text keeps its last whitespace for the next piece). Identity with tiktoken
//! is tested on every text of every recording (`tests/it/tokens_exact.rs`) and on generated text.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;

use bpe_openai::byte_pair_encoding::BytePairEncoding;
use regex_automata::meta::{Cache, Regex};
use regex_automata::{Anchored, Input};

use super::TokenizerKind;

/// Pieces up to this many bytes go through the memo (longer ones are rarely repeated).
const MEMO_PIECE_BYTES: usize = 24;
/// Entries per thread before the memo is emptied (~2 MB).
const MEMO_ENTRIES: usize = 65_536;

/// The letters-and-marks alternatives of `o200k_base` (case-aware words with contractions).
const O200K_WORDS: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
);
const CL100K_WORDS: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)",
    r"|[^\r\n\p{L}\p{N}]?\p{L}+",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*",
);
/// The whitespace alternatives both encodings end with, `\s*[\r\n]+|\s+(?!\S)|\s+`, as three
/// patterns in priority order; the second's last character is the look-ahead (given back).
const SPACE_PATTERNS: [(&str, bool); 3] = [
    (r"\s*[\r\n]+|\s+$", false),
    (r"\s+\s", true),
    (r"\s+", false),
];

/// One encoding's shared, read-only half.
struct Encoding {
    /// Anchored multi-pattern regex; pattern `k` gives back its last character when
    /// `lookahead[k]`.
    pre: Regex,
    lookahead: Vec<bool>,
    bpe: &'static BytePairEncoding,
}

impl Encoding {
    fn new(words: &str, bpe: &'static BytePairEncoding) -> Encoding {
        let first = format!("{words}|{}", SPACE_PATTERNS[0].0);
        let patterns = [first.as_str(), SPACE_PATTERNS[1].0, SPACE_PATTERNS[2].0];
        let pre = Regex::new_many(&patterns)
            // The patterns are constants; the unit tests build both.
            .unwrap_or_else(|e| panic!("tokenizer pre-tokenizer regex: {e}"));
        Encoding {
            pre,
            lookahead: SPACE_PATTERNS.iter().map(|(_, l)| *l).collect(),
            bpe,
        }
    }
}

static O200K: LazyLock<Encoding> =
    LazyLock::new(|| Encoding::new(O200K_WORDS, &bpe_openai::o200k_base().bpe));
static CL100K: LazyLock<Encoding> =
    LazyLock::new(|| Encoding::new(CL100K_WORDS, &bpe_openai::cl100k_base().bpe));

fn encoding(kind: TokenizerKind) -> &'static Encoding {
    match kind {
        TokenizerKind::O200k => &O200K,
        TokenizerKind::Cl100k => &CL100K,
    }
}

/// A short piece as a memo key (no allocation).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct ShortPiece {
    len: u8,
    bytes: [u8; MEMO_PIECE_BYTES],
}

impl ShortPiece {
    fn new(piece: &[u8]) -> Option<ShortPiece> {
        let mut bytes = [0u8; MEMO_PIECE_BYTES];
        bytes.get_mut(..piece.len())?.copy_from_slice(piece);
        Some(ShortPiece {
            len: piece.len() as u8,
            bytes,
        })
    }
}

/// One thread's mutable half of an encoding: its regex cache and its memo.
struct Scratch {
    cache: Cache,
    memo: HashMap<ShortPiece, u32, rustc_hash::FxBuildHasher>,
}

impl Scratch {
    fn new(enc: &Encoding) -> Scratch {
        Scratch {
            cache: enc.pre.create_cache(),
            memo: HashMap::with_hasher(Default::default()),
        }
    }

    fn count(&mut self, enc: &Encoding, text: &str) -> usize {
        let mut at = 0;
        let mut n = 0;
        while at < text.len() {
            let rest = &text[at..];
            let Some(m) = enc
                .pre
                .search_with(&mut self.cache, &Input::new(rest).anchored(Anchored::Yes))
            else {
                // Unreachable: the alternatives cover every character (`\s+` or
                // `[^\s\p{L}\p{N}]+` or a letter or a digit). Count the rest as one piece
                // rather than loop.
                return n + self.piece(enc, rest.as_bytes());
            };
            let mut end = m.end();
            if enc.lookahead[m.pattern().as_usize()] {
                end -= rest[..end].chars().next_back().map_or(0, char::len_utf8);
            }
            if end == 0 {
                return n + self.piece(enc, rest.as_bytes());
            }
            n += self.piece(enc, &rest.as_bytes()[..end]);
            at += end;
        }
        n
    }

    fn piece(&mut self, enc: &Encoding, piece: &[u8]) -> usize {
        let Some(key) = ShortPiece::new(piece) else {
            return enc.bpe.count(piece);
        };
        if let Some(n) = self.memo.get(&key) {
            return *n as usize;
        }
        let n = enc.bpe.count(piece);
        if self.memo.len() >= MEMO_ENTRIES {
            self.memo.clear();
        }
        self.memo.insert(key, n as u32);
        n
    }
}

thread_local! {
    /// This thread's scratch per encoding (index: [`slot`]), made on its first count.
    static SCRATCH: RefCell<[Option<Scratch>; 2]> = const { RefCell::new([None, None]) };
}

fn slot(kind: TokenizerKind) -> usize {
    match kind {
        TokenizerKind::O200k => 0,
        TokenizerKind::Cl100k => 1,
    }
}

/// The exact token count of `text` (tiktoken's `encode_ordinary(text).len()`), on this
/// thread's scratch space.
pub(super) fn count(kind: TokenizerKind, text: &str) -> u32 {
    let enc = encoding(kind);
    let n = SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        s[slot(kind)]
            .get_or_insert_with(|| Scratch::new(enc))
            .count(enc, text)
    });
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_texts() {
        assert_eq!(count(TokenizerKind::O200k, ""), 0);
        assert_eq!(count(TokenizerKind::O200k, "hello world"), 2);
        assert_eq!(count(TokenizerKind::Cl100k, "hello world"), 2);
    }

    #[test]
    fn memo_and_encoder_agree_and_threads_agree() {
        let text =
            "The cat's hat   \n\n  sat\tthere. /usr/bin/env 12345 ünïcödé 漢字 🙂 ".repeat(40);
        let direct = bpe_openai::o200k_base().count(text.as_str()) as u32;
        assert_eq!(count(TokenizerKind::O200k, &text), direct);
        // Again from the memo, and on other threads with scratch spaces of their own.
        assert_eq!(count(TokenizerKind::O200k, &text), direct);
        let other: Vec<u32> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2)
                .map(|_| s.spawn(|| count(TokenizerKind::O200k, &text)))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or(0)).collect()
        });
        assert_eq!(other, vec![direct, direct]);
    }
}
