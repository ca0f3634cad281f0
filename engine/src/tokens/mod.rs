//! Token counting: exact `o200k_base` / `cl100k_base` counts, each distinct text counted once.
//!
//! Counts are exactly tiktoken's (`encode_ordinary(text).len()`): the replay's error figures
//! are made of them. [`bpe`] counts one text (bpe-openai's encodings behind a pre-tokenizer of
//! our own, one scratch space per thread); [`batch`] counts a batch of texts by their distinct
//! pieces, cut where the count is additive ([`pieces`]), in parallel.
//!
//! Counts are cached by content hash (xxh3-128 of the text) in memory and on disk, so a second
//! load of the same recording tokenizes nothing and the replay never tokenizes at all (it only
//! adds up the counts stored on chunks).
//!
//! The disk cache lives at `$TIERSCOPE_CACHE_DIR/tokens-<tokenizer>-<version>.bin`, else
//! `$XDG_CACHE_HOME/tierscope/…` (the platform's cache dir). The tokenizer and its version are in
//! the file name and in the header, so a different tokenizer never reads another's counts. The file
//! is capped at [`DISK_CACHE_CAP_BYTES`] (16 MiB, about 830,000 texts): when full, the entries used
//! by the current process are kept first. It is written atomically (temp file + rename); a file
//! that is truncated, corrupt or from another format version is ignored and rewritten. A cache
//! dir inside an agent's data dir or beside an input database is not used at all (see
//! [`Tokenizer::with_disk_cache_for`]).

mod batch;
mod bpe;
mod disk;
mod pieces;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use disk::{decode, encode, header_len, ENTRY_BYTES};
pub(crate) use disk::{write_atomically, write_replaceable};

/// Size cap of the on-disk cache file.
pub const DISK_CACHE_CAP_BYTES: usize = 16 * 1024 * 1024;
/// Environment variable that relocates the cache directory.
pub const CACHE_DIR_ENV: &str = "TIERSCOPE_CACHE_DIR";

/// The counting implementation's version; part of every cache key and of the label in outputs.
const TOKENIZER_VERSION: &str = "bpe-openai-0.3";

/// Which BPE to count with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TokenizerKind {
    /// `o200k_base` (GPT-4o and later); the default.
    #[default]
    O200k,
    /// `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
}

impl TokenizerKind {
    pub fn name(&self) -> &'static str {
        match self {
            TokenizerKind::O200k => "o200k_base",
            TokenizerKind::Cl100k => "cl100k_base",
        }
    }

    /// The counting implementation's version (part of the cache key).
    pub fn version(&self) -> &'static str {
        TOKENIZER_VERSION
    }
}

impl std::str::FromStr for TokenizerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "o200k" | "o200k_base" => Ok(TokenizerKind::O200k),
            "cl100k" | "cl100k_base" => Ok(TokenizerKind::Cl100k),
            other => Err(format!(
                "unknown tokenizer {other:?} (expected o200k or cl100k)"
            )),
        }
    }
}

impl std::fmt::Display for TokenizerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenCacheError {
    #[error("cannot write token cache {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Counting statistics of one [`Tokenizer`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TokenStats {
    /// Texts actually run through the BPE.
    pub tokenized: u64,
    /// Counts answered from the cache (memory or disk).
    pub cached: u64,
    /// Entries read from the disk cache at start.
    pub disk_entries: u64,
}

/// See [`Tokenizer::batch`].
pub struct CountBatch<'t> {
    tokenizer: &'t Tokenizer,
    /// Marks the cache entries this batch tokenized: met again in a later part, they are
    /// neither cached nor tokenized, as a repeat within one call is not.
    id: u32,
    /// Pieces counted so far, across the parts.
    pieces: batch::PieceCounts,
}

impl CountBatch<'_> {
    /// The token counts of `texts`, the next part of the batch.
    pub fn count(&mut self, texts: &[&str]) -> Vec<u32> {
        let t = self.tokenizer;
        let keys: Vec<u128> = texts.par_iter().map(|t| key(t)).collect();
        let mut out = vec![0u32; texts.len()];
        let mut missing: Vec<usize> = Vec::new();
        {
            let mut cache = t.lock();
            let mut seen_missing: KeyMap<()> = KeyMap::default();
            for (i, k) in keys.iter().enumerate() {
                if let Some(e) = cache.get_mut(k) {
                    e.used = true;
                    out[i] = e.tokens;
                    if e.batch != self.id {
                        t.cached.fetch_add(1, Ordering::Relaxed);
                    }
                } else if seen_missing.insert(*k, ()).is_none() {
                    missing.push(i);
                }
            }
        }
        if missing.is_empty() {
            return out;
        }
        let missing_texts: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
        self.pieces.bound();
        let counted = batch::count_texts(t.kind, &missing_texts, &self.pieces);
        t.tokenized
            .fetch_add(counted.len() as u64, Ordering::Relaxed);
        let mut cache = t.lock();
        for (k, n) in missing.iter().map(|&i| keys[i]).zip(counted) {
            cache.insert(
                k,
                Entry {
                    tokens: n,
                    used: true,
                    batch: self.id,
                },
            );
        }
        for (i, k) in keys.iter().enumerate() {
            if let Some(e) = cache.get(k) {
                out[i] = e.tokens;
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    tokens: u32,
    /// Used by this process (kept first when the disk cache is full).
    used: bool,
    /// The [`CountBatch`] that tokenized it (0: read from disk).
    batch: u32,
}

/// A token counter with a content-hash cache. Cheap to share by reference across threads.
pub struct Tokenizer {
    kind: TokenizerKind,
    cache: Mutex<KeyMap<Entry>>,
    disk_path: Option<PathBuf>,
    /// Why there is no disk cache although a dir was given (see [`Tokenizer::with_disk_cache_for`]).
    disk_refused: Option<String>,
    tokenized: AtomicU64,
    cached: AtomicU64,
    disk_entries: u64,
    /// Batches started (see [`CountBatch`]).
    batches: AtomicU32,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("kind", &self.kind)
            .field("disk_path", &self.disk_path)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Tokenizer {
    /// A tokenizer with no disk cache (tests, generated traces).
    pub fn in_memory(kind: TokenizerKind) -> Tokenizer {
        Tokenizer::build(kind, None)
    }

    /// A tokenizer backed by the disk cache in `dir` (see the module docs); `None` = the default
    /// dir ([`default_cache_dir`]), or memory only when there is none.
    pub fn with_disk_cache(kind: TokenizerKind, dir: Option<&Path>) -> Tokenizer {
        Tokenizer::with_disk_cache_for(kind, dir, &[])
    }

    /// [`Tokenizer::with_disk_cache`] for a load that reads `inputs`: a dir inside an agent's
    /// data dir, or beside an input database, is neither read nor written (as the listing cache:
    /// [`crate::output_guard::cache_dir_refusal`]); the tokenizer then counts in memory only and
    /// [`Tokenizer::disk_refused`] says why.
    pub fn with_disk_cache_for(
        kind: TokenizerKind,
        dir: Option<&Path>,
        inputs: &[&Path],
    ) -> Tokenizer {
        let dir = dir.map(Path::to_path_buf).or_else(default_cache_dir);
        let mut refused = None;
        let path = dir.and_then(
            |d| match crate::output_guard::cache_dir_refusal(&d, inputs) {
                Some(r) => {
                    refused = Some(format!(
                        "token cache not kept in {}: {} (set {CACHE_DIR_ENV} to another dir)",
                        d.display(),
                        r.conflict
                    ));
                    None
                }
                None => Some(d.join(cache_file_name(kind))),
            },
        );
        let mut t = Tokenizer::build(kind, path);
        t.disk_refused = refused;
        t
    }

    /// Why the disk cache was not used, when its dir was refused.
    pub fn disk_refused(&self) -> Option<&str> {
        self.disk_refused.as_deref()
    }

    fn build(kind: TokenizerKind, disk_path: Option<PathBuf>) -> Tokenizer {
        let mut map = KeyMap::default();
        if let Some(p) = &disk_path {
            // A missing, corrupt or hostile file (see `cache_file`) is simply an empty cache.
            if let Ok(bytes) = crate::cache_file::read(p, DISK_CACHE_CAP_BYTES as u64) {
                if let Some(entries) = decode(&bytes, kind) {
                    for (k, tokens) in entries {
                        map.insert(
                            k,
                            Entry {
                                tokens,
                                used: false,
                                batch: 0,
                            },
                        );
                    }
                }
            }
        }
        let disk_entries = map.len() as u64;
        Tokenizer {
            kind,
            cache: Mutex::new(map),
            disk_path,
            disk_refused: None,
            tokenized: AtomicU64::new(0),
            cached: AtomicU64::new(0),
            disk_entries,
            batches: AtomicU32::new(0),
        }
    }

    pub fn kind(&self) -> TokenizerKind {
        self.kind
    }
    /// The BPE's name, e.g. `o200k_base`.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }
    /// The implementation's version (part of the cache key).
    pub fn version(&self) -> &'static str {
        self.kind.version()
    }
    /// `name@version`, as shown in outputs.
    pub fn label(&self) -> String {
        format!("{}@{}", self.name(), self.version())
    }

    /// How many texts were actually tokenized (cache misses) by this tokenizer.
    pub fn tokenized_count(&self) -> u64 {
        self.tokenized.load(Ordering::Relaxed)
    }

    pub fn stats(&self) -> TokenStats {
        TokenStats {
            tokenized: self.tokenized_count(),
            cached: self.cached.load(Ordering::Relaxed),
            disk_entries: self.disk_entries,
        }
    }

    /// Token count of one text.
    pub fn count(&self, text: &str) -> u32 {
        self.count_many(&[text])[0]
    }

    /// Token counts of many texts; the cache misses are counted together (by their distinct
    /// pieces, in parallel).
    pub fn count_many(&self, texts: &[&str]) -> Vec<u32> {
        self.batch().count(texts)
    }

    /// One batch of texts counted in parts: a long load counts each window of episodes as it is
    /// drafted, so that their texts are never all held at once. The counts and the statistics
    /// are those of one [`Tokenizer::count_many`] over all the parts.
    pub fn batch(&self) -> CountBatch<'_> {
        CountBatch {
            tokenizer: self,
            id: self.batches.fetch_add(1, Ordering::Relaxed) + 1,
            pieces: batch::PieceCounts::new(),
        }
    }

    /// Write the cache to disk (atomically, capped at [`DISK_CACHE_CAP_BYTES`]). A no-op without
    /// a disk path.
    pub fn save(&self) -> Result<(), TokenCacheError> {
        self.save_capped(DISK_CACHE_CAP_BYTES)
    }

    fn save_capped(&self, cap_bytes: usize) -> Result<(), TokenCacheError> {
        let Some(path) = &self.disk_path else {
            return Ok(());
        };
        let bytes = {
            let cache = self.lock();
            let max = cap_bytes.saturating_sub(header_len(self.kind) + 8) / ENTRY_BYTES;
            // Nothing was added since the file was read (entries come only from tokenizing)
            // and all fit: it already holds exactly these entries. A warm load writes nothing.
            if self.disk_entries > 0
                && cache.len() as u64 == self.disk_entries
                && cache.len() <= max
            {
                return Ok(());
            }
            let mut entries: Vec<(u128, Entry)> = cache.iter().map(|(k, e)| (*k, *e)).collect();
            // Used entries first, then by key so the file is deterministic.
            entries.sort_by_key(|(k, e)| (!e.used, *k));
            entries.truncate(max);
            entries.sort_by_key(|(k, _)| *k);
            encode(
                self.kind,
                entries.iter().map(|(k, e)| (*k, e.tokens)),
                entries.len(),
            )
        };
        disk::write_replaceable(path, &bytes).map_err(|source| TokenCacheError::Write {
            path: path.clone(),
            source,
        })
    }

    /// Where the disk cache lives, if any.
    pub fn disk_path(&self) -> Option<&Path> {
        self.disk_path.as_deref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, KeyMap<Entry>> {
        // A poisoned lock only means another thread panicked mid-insert; the map is still valid.
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The exact token count of one text, with no cache and no cutting (benches, and callers that
/// count a text once).
pub fn count_exact(kind: TokenizerKind, text: &str) -> u32 {
    bpe::count(kind, text)
}

/// `$TIERSCOPE_CACHE_DIR`, else the platform cache dir + `tierscope`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os(CACHE_DIR_ENV).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    use etcetera::BaseStrategy;
    etcetera::choose_base_strategy()
        .ok()
        .map(|s| s.cache_dir().join("tierscope"))
}

/// `tokens-<tokenizer>-<version>.bin`.
pub fn cache_file_name(kind: TokenizerKind) -> String {
    format!("tokens-{}-{}.bin", kind.name(), kind.version())
}

/// The content hash used as cache key.
fn key(text: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(text.as_bytes())
}

/// A map keyed by [`key`]s. The key is already a uniform hash, so the map uses its low 64 bits
/// instead of hashing it again (a second hash of every piece's key would be pure cost).
type KeyMap<V> = HashMap<u128, V, std::hash::BuildHasherDefault<KeyHasher>>;

#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write_u128(&mut self, k: u128) {
        self.0 = k as u64;
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = k;
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u128 keys are hashed here; any other input still gets a usable hash.
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_counted_in_parts_counts_and_reports_as_one_call() {
        let texts = [
            "hello world",
            "snapprune.sh: 35",
            "hello world",
            "known before",
            "[tool bash] ls\nline two\n",
            "snapprune.sh: 35",
            "known before",
            "[tool bash] ls\nline three\n",
        ];
        let fresh = || {
            let t = Tokenizer::in_memory(TokenizerKind::O200k);
            t.count("known before");
            t
        };
        let whole = fresh();
        let want = whole.count_many(&texts);
        for cut in [1, 2, 3, 5] {
            let parts = fresh();
            let mut batch = parts.batch();
            let got: Vec<u32> = texts.chunks(cut).flat_map(|c| batch.count(c)).collect();
            assert_eq!(got, want, "parts of {cut}");
            assert_eq!(parts.stats(), whole.stats(), "parts of {cut}");
        }
        // Two texts new to the cache, each counted once however it recurs; the one known before
        // is answered from the cache every time it is met.
        assert_eq!(whole.stats().tokenized, 1 + 4);
        assert_eq!(whole.stats().cached, 2);
    }

    #[test]
    fn counts_are_cached_and_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let t = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        let a = t.count_many(&["hello world", "hello world", "snapprune.sh: 35"]);
        assert_eq!(a[0], 2);
        assert_eq!(a[0], a[1]);
        assert_eq!(t.tokenized_count(), 2);
        t.save().unwrap();
        let t2 = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        assert_eq!(
            t2.count_many(&["hello world", "snapprune.sh: 35"]),
            vec![a[0], a[2]]
        );
        assert_eq!(t2.tokenized_count(), 0);
        // Another tokenizer does not read these counts.
        let t3 = Tokenizer::with_disk_cache(TokenizerKind::Cl100k, Some(dir.path()));
        t3.count("hello world");
        assert_eq!(t3.tokenized_count(), 1);
    }

    #[test]
    fn a_load_that_adds_nothing_leaves_the_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let t = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        t.count_many(&["a", "b"]);
        t.save().unwrap();
        let path = t.disk_path().unwrap().to_owned();
        let before = (
            std::fs::read(&path).unwrap(),
            std::fs::metadata(&path).unwrap().modified().unwrap(),
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        let warm = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        warm.count_many(&["b", "a"]);
        warm.save().unwrap();
        let after = (
            std::fs::read(&path).unwrap(),
            std::fs::metadata(&path).unwrap().modified().unwrap(),
        );
        assert_eq!(after, before, "not rewritten");
        // A new text is saved.
        let more = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        more.count("c");
        more.save().unwrap();
        let again = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        assert_eq!(again.stats().disk_entries, 3);
    }

    #[test]
    fn disk_cache_is_capped_keeping_used_entries() {
        let dir = tempfile::tempdir().unwrap();
        let t = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        t.count_many(&["a", "b", "c"]);
        t.save().unwrap();
        // A new process uses only "c"; with room for two entries, "c" must survive.
        let t2 = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        t2.count("c");
        let cap = header_len(TokenizerKind::O200k) + 8 + 2 * ENTRY_BYTES;
        t2.save_capped(cap).unwrap();
        let len = std::fs::metadata(t2.disk_path().unwrap()).unwrap().len() as usize;
        assert!(len <= cap, "{len} > {cap}");
        let t3 = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        assert_eq!(t3.stats().disk_entries, 2);
        t3.count("c");
        assert_eq!(t3.tokenized_count(), 0);
    }

    #[test]
    fn corrupt_cache_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(cache_file_name(TokenizerKind::O200k));
        std::fs::write(&path, b"TSTOKv1\n\x05garbage").unwrap();
        let t = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        assert_eq!(t.count("hello world"), 2);
        assert_eq!(t.tokenized_count(), 1);
        t.save().unwrap();
        let t2 = Tokenizer::with_disk_cache(TokenizerKind::O200k, Some(dir.path()));
        assert_eq!(t2.stats().disk_entries, 1);
        // A flipped byte fails the checksum.
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 10;
        bytes[last] ^= 0xff;
        assert!(decode(&bytes, TokenizerKind::O200k).is_none());
    }
}
