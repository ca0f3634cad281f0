//! Generate once: every answer the historian got, on disk, keyed by (episode content hash,
//! strategy, model, prompt version, step). A second identical run reads them and sends nothing;
//! an interrupted run finds the calls that completed and sends only the rest.
//!
//! One small JSON file per call under `<cache dir>/historian/` (default: `$TIERSCOPE_CACHE_DIR`,
//! else the XDG cache dir and `tierscope`; never OpenCode's data dir), written atomically (a temp
//! file, then a rename) the moment the call completes. Each file carries an xxh3 checksum of its
//! content (one written before files did is used and rewritten with it) and is read as untrusted input ([`crate::cache_file`]: a regular file of at most
//! [`MAX_FILE_BYTES`], never through a symlink, never blocking on a FIFO). A file that is not
//! that, does not parse, fails its checksum or holds another key (a truncated write from a crash,
//! an edit, a hash collision) is treated as missing and rewritten. The files hold the tiers and
//! the usage, never the endpoint or a credential.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cache_file::Refused;

use super::response::Usage;
use super::HistorianStrategy;

/// Cache file format version (part of every key).
const CACHE_VERSION: u32 = 1;

/// The largest cache file read (one call's tiers: a few KB).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// The key of the checksum in a cache file: xxh3-64 (hex) of the compact JSON of the rest.
const CHECKSUM_KEY: &str = "xxh3";

/// What a cached answer answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheKey {
    /// [`super::input::EpisodeInput::content_hash`].
    pub episode_hash: String,
    pub strategy: String,
    pub model: String,
    pub prompt_version: String,
    /// [`super::prompt::Step::name`]: which tier the call read and which it wrote.
    pub step: String,
}

impl CacheKey {
    pub fn new(
        episode_hash: &str,
        strategy: HistorianStrategy,
        model: &str,
        prompt_version: &str,
        step: &str,
    ) -> CacheKey {
        CacheKey {
            episode_hash: episode_hash.to_owned(),
            strategy: strategy.as_str().to_owned(),
            model: model.to_owned(),
            prompt_version: prompt_version.to_owned(),
            step: step.to_owned(),
        }
    }

    /// The key as 32 hex digits (the file name and the call id in the sidecar's lineage).
    pub fn id(&self) -> String {
        let mut bytes = Vec::new();
        for s in [
            &CACHE_VERSION.to_string(),
            &self.episode_hash,
            &self.strategy,
            &self.model,
            &self.prompt_version,
            &self.step,
        ] {
            bytes.extend_from_slice(&(s.len() as u64).to_le_bytes());
            bytes.extend_from_slice(s.as_bytes());
        }
        format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes))
    }

    /// A seed for this call's backoff jitter (deterministic per call).
    pub fn seed(&self) -> u64 {
        u64::from_str_radix(&self.id()[..16], 16).unwrap_or(0)
    }
}

/// One completed call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachedCall {
    pub version: u32,
    pub key: CacheKey,
    /// Tier name → text.
    pub tiers: BTreeMap<String, String>,
    pub usage: Option<Usage>,
    /// The model that answered, as the response named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// Whether the request carried `response_format: json_object`.
    pub json_mode: bool,
    /// When the answer came (RFC 3339, UTC), where the caller records it (the summaries of
    /// simulated compactions carry it in their lineage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
}

impl CachedCall {
    pub fn new(
        key: CacheKey,
        tiers: BTreeMap<String, String>,
        usage: Option<Usage>,
        response_model: Option<String>,
        json_mode: bool,
    ) -> CachedCall {
        CachedCall {
            version: CACHE_VERSION,
            key,
            tiers,
            usage,
            response_model,
            json_mode,
            created: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write the historian cache file {path}")]
pub struct CacheWriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// What a lookup found.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    Hit(Box<CachedCall>),
    Miss,
    /// A file was there but unusable (named, so the run can say so); treated as a miss.
    Unusable(PathBuf),
}

/// The on-disk cache.
#[derive(Debug, Clone)]
pub struct HistorianCache {
    dir: PathBuf,
}

impl HistorianCache {
    /// The cache in `dir` (created on the first write).
    pub fn new(dir: impl Into<PathBuf>) -> HistorianCache {
        HistorianCache { dir: dir.into() }
    }

    /// `<tierscope cache dir>/historian`, if there is a cache dir.
    pub fn default_dir() -> Option<PathBuf> {
        crate::tokens::default_cache_dir().map(|d| d.join("historian"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(format!("{}.json", key.id()))
    }

    pub fn get(&self, key: &CacheKey) -> Lookup {
        let path = self.path(key);
        let bytes = match crate::cache_file::read(&path, MAX_FILE_BYTES) {
            Ok(b) => b,
            Err(Refused::Open(std::io::ErrorKind::NotFound)) => return Lookup::Miss,
            Err(_) => return Lookup::Unusable(path),
        };
        match decode(&bytes) {
            Some((c, sealed)) if c.version == CACHE_VERSION && &c.key == key => {
                if !sealed {
                    // Written before files carried a checksum: kept (it was paid for), and
                    // rewritten with one.
                    let _ = self.put(&c);
                }
                Lookup::Hit(Box::new(c))
            }
            _ => Lookup::Unusable(path),
        }
    }

    pub fn put(&self, call: &CachedCall) -> Result<(), CacheWriteError> {
        let path = self.path(&call.key);
        crate::tokens::write_atomically(&path, encode(call).as_bytes())
            .map_err(|source| CacheWriteError { path, source })
    }
}

/// The file's text: the call as pretty JSON with its checksum as the last key.
fn encode(call: &CachedCall) -> String {
    let mut v = serde_json::to_value(call).unwrap_or_default();
    let sum = checksum(&v);
    if let Some(obj) = v.as_object_mut() {
        obj.insert(CHECKSUM_KEY.to_owned(), Value::String(sum));
    }
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
    text.push('\n');
    text
}

/// The call in a file's bytes, when it parses and its checksum holds, and whether it had one (a
/// file written before they did has none).
fn decode(bytes: &[u8]) -> Option<(CachedCall, bool)> {
    let mut v: Value = serde_json::from_slice(bytes).ok()?;
    let sum = v.as_object_mut()?.remove(CHECKSUM_KEY);
    if let Some(sum) = &sum {
        if sum.as_str()? != checksum(&v) {
            return None;
        }
    }
    Some((serde_json::from_value(v).ok()?, sum.is_some()))
}

fn checksum(v: &Value) -> String {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(model: &str) -> CacheKey {
        CacheKey::new(
            "00ff",
            HistorianStrategy::Source,
            model,
            "historian-v1",
            "full>dense+compact+anchor",
        )
    }

    #[test]
    fn every_key_field_changes_the_id() {
        use HistorianStrategy::{Cascade, Source};
        let step = "full>dense+compact+anchor";
        let k = |hash, strategy, model, prompt, step| {
            CacheKey::new(hash, strategy, model, prompt, step).id()
        };
        let ids = [
            k("00ff", Source, "m", "historian-v1", step),
            k("00ff", Source, "m2", "historian-v1", step),
            k("00fe", Source, "m", "historian-v1", step),
            k("00ff", Cascade, "m", "historian-v1", step),
            k("00ff", Source, "m", "historian-v2", step),
            k("00ff", Source, "m", "historian-v1", "full>dense"),
        ];
        let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
        assert_eq!(ids[0], key("m").id());
    }

    #[test]
    fn put_then_get_and_a_corrupt_or_foreign_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HistorianCache::new(dir.path().join("historian"));
        let k = key("m");
        assert_eq!(cache.get(&k), Lookup::Miss);
        let mut tiers = BTreeMap::new();
        tiers.insert("anchor".to_owned(), "a".to_owned());
        let call = CachedCall::new(k.clone(), tiers, None, Some("m-1".into()), true);
        cache.put(&call).unwrap();
        assert_eq!(cache.get(&k), Lookup::Hit(Box::new(call.clone())));
        let path = cache.path(&k);
        std::fs::write(&path, "{\"version\": 1, \"key\"").unwrap();
        assert_eq!(cache.get(&k), Lookup::Unusable(path.clone()));
        // A file under this key's name that holds another key.
        let other = CachedCall::new(key("other"), BTreeMap::new(), None, None, true);
        std::fs::write(&path, serde_json::to_string(&other).unwrap()).unwrap();
        assert_eq!(cache.get(&k), Lookup::Unusable(path.clone()));
        // A file from before checksums: a hit, rewritten with one.
        std::fs::write(&path, serde_json::to_string(&call).unwrap()).unwrap();
        assert_eq!(cache.get(&k), Lookup::Hit(Box::new(call.clone())));
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains(CHECKSUM_KEY));
        // A file edited after it was written (its checksum no longer holds).
        cache.put(&call).unwrap();
        let edited = std::fs::read_to_string(&path)
            .unwrap()
            .replace("\"a\"", "\"b\"");
        std::fs::write(&path, edited).unwrap();
        assert_eq!(cache.get(&k), Lookup::Unusable(path.clone()));
        cache.put(&call).unwrap();
        assert_eq!(cache.get(&k), Lookup::Hit(Box::new(call)));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_a_fifo_or_a_giant_at_an_entry_is_unusable_at_once_and_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HistorianCache::new(dir.path());
        let k = key("m");
        let path = cache.path(&k);
        let call = CachedCall::new(k.clone(), BTreeMap::new(), None, None, false);
        let fifo = |p: &Path| {
            let made = std::process::Command::new("mkfifo").arg(p).status();
            assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        };
        let plant: [&dyn Fn(&Path); 3] = [
            &|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
            &|p| std::fs::File::create(p).unwrap().set_len(20 << 30).unwrap(),
            &fifo,
        ];
        for plant in plant {
            let _ = std::fs::remove_file(&path);
            plant(&path);
            assert_eq!(cache.get(&k), Lookup::Unusable(path.clone()));
            cache.put(&call).unwrap();
            assert_eq!(cache.get(&k), Lookup::Hit(Box::new(call.clone())));
        }
    }
}
