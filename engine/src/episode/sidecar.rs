//! Sidecars (MODEL §6): optional JSON files keyed by message id, so they survive any segmentation.
//!
//! - `*.annotations.json`: class / floor overrides, pinned spans, explicit episode starts.
//! - `*.tiers.json`: external representations per episode (first and last message id) and tier.
//! - `*.probes.json`: hidden questions the replay asks of every rendered context.
//!
//! Lookup order for a session: `--sidecars DIR`, else the directory of an export file, else
//! `$XDG_DATA_HOME/tierscope/`; the first file found wins, per kind. In each place the file is
//! named after the export's stem (`E1.probes.json` beside `E1.json`) or the session id
//! (`ses_….probes.json`). tierscope never writes into OpenCode's data dir. The exact formats are documented in `docs/episodes.md`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::model::{RetentionClass, Tier};

/// Errors reading a sidecar that exists (a missing sidecar is not an error).
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    #[error("cannot read sidecar {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("sidecar {path} is not valid: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

// ---------------------------------------------------------------------------------------------
// Probes
// ---------------------------------------------------------------------------------------------

/// A compiled regular expression that compares and serializes as its pattern.
#[derive(Debug, Clone)]
pub struct NeedleRegex(regex::Regex);

impl NeedleRegex {
    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        regex::Regex::new(pattern).map(NeedleRegex)
    }
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
    pub fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

impl PartialEq for NeedleRegex {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}
impl Eq for NeedleRegex {}

impl Serialize for NeedleRegex {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for NeedleRegex {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let pattern = String::deserialize(d)?;
        NeedleRegex::new(&pattern).map_err(serde::de::Error::custom)
    }
}

/// What a probe looks for in a rendered context: exact text or a regular expression.
/// In JSON: `{"exact": "…"}`, `{"regex": "…"}`, or a bare string (= exact).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Needle {
    Exact(String),
    Regex(NeedleRegex),
}

impl Needle {
    /// Whether the needle occurs in `text`.
    pub fn is_found_in(&self, text: &str) -> bool {
        match self {
            Needle::Exact(s) => text.contains(s.as_str()),
            Needle::Regex(r) => r.is_match(text),
        }
    }
    /// The needle's text or pattern.
    pub fn as_str(&self) -> &str {
        match self {
            Needle::Exact(s) => s,
            Needle::Regex(r) => r.as_str(),
        }
    }
}

/// How a probe's needles combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    /// Every needle must be present (usually there is one).
    #[default]
    Exact,
    /// Any one of several needles (paraphrases) is enough.
    Semantic,
}

/// What a probe tests (the chapter's dimensions of what old context must keep).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    Constraint,
    Identifier,
    Decision,
    Rationale,
    #[serde(alias = "rejected alternative", alias = "rejected-alternative")]
    RejectedAlternative,
    Failure,
    Location,
    Provenance,
    Status,
    Trap,
}

impl Dimension {
    pub fn as_str(&self) -> &'static str {
        match self {
            Dimension::Constraint => "constraint",
            Dimension::Identifier => "identifier",
            Dimension::Decision => "decision",
            Dimension::Rationale => "rationale",
            Dimension::RejectedAlternative => "rejected_alternative",
            Dimension::Failure => "failure",
            Dimension::Location => "location",
            Dimension::Provenance => "provenance",
            Dimension::Status => "status",
            Dimension::Trap => "trap",
        }
    }
}

/// A hidden question: from request `due_from_request` on, the rendered context should hold the
/// needle(s) that the message `source_message_id` introduced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    pub id: String,
    pub needles: Vec<Needle>,
    pub source_message_id: String,
    pub due_from_request: usize,
    pub kind: ProbeKind,
    pub dimension: Dimension,
    /// Free text for people (the question the needle answers); not used by the engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
}

impl Probe {
    /// Whether `text` (a rendered context) answers the probe.
    pub fn is_answered_by(&self, text: &str) -> bool {
        match self.kind {
            ProbeKind::Exact => {
                !self.needles.is_empty() && self.needles.iter().all(|n| n.is_found_in(text))
            }
            ProbeKind::Semantic => self.needles.iter().any(|n| n.is_found_in(text)),
        }
    }
    /// Whether the probe is due at request `t`.
    pub fn is_due(&self, t: usize) -> bool {
        t >= self.due_from_request
    }
}

/// A needle as written in the file: a bare string (exact) or `{exact}` / `{regex}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum NeedleIn {
    Bare(String),
    Tagged(Needle),
}

impl From<NeedleIn> for Needle {
    fn from(n: NeedleIn) -> Self {
        match n {
            NeedleIn::Bare(s) => Needle::Exact(s),
            NeedleIn::Tagged(n) => n,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbeIn {
    id: String,
    #[serde(default)]
    needle: Option<NeedleIn>,
    #[serde(default)]
    needles: Vec<NeedleIn>,
    source_message_id: String,
    due_from_request: usize,
    #[serde(default)]
    kind: ProbeKind,
    dimension: Dimension,
    #[serde(default)]
    question: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbesFile {
    #[serde(default)]
    #[allow(dead_code)] // read for validation only
    version: Option<u32>,
    #[serde(default)]
    #[allow(dead_code)]
    session_id: Option<String>,
    probes: Vec<ProbeIn>,
}

/// Parse a `*.probes.json` document.
pub fn parse_probes(text: &str, path: &Path) -> Result<Vec<Probe>, SidecarError> {
    let file: ProbesFile = serde_json::from_str(text).map_err(|e| invalid(path, e))?;
    let mut out = Vec::with_capacity(file.probes.len());
    for p in file.probes {
        let mut needles: Vec<Needle> = p.needle.into_iter().map(Needle::from).collect();
        needles.extend(p.needles.into_iter().map(Needle::from));
        if needles.is_empty() {
            return Err(SidecarError::Invalid {
                path: path.to_owned(),
                reason: format!("probe {:?} has no needle", p.id),
            });
        }
        out.push(Probe {
            id: p.id,
            needles,
            source_message_id: p.source_message_id,
            due_from_request: p.due_from_request,
            kind: p.kind,
            dimension: p.dimension,
            question: p.question,
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Annotations
// ---------------------------------------------------------------------------------------------

/// `*.annotations.json`: overrides applied after the rules.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Annotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Message ids that start an episode (used by `--episodes annotations`; the first message
    /// always starts one).
    #[serde(default)]
    pub episode_starts: Vec<String>,
    /// Class / floor overrides for the episode that holds `message_id`.
    #[serde(default)]
    pub overrides: Vec<EpisodeOverride>,
    /// Spans pinned by hand.
    #[serde(default)]
    pub pins: Vec<PinAnnotation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodeOverride {
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<RetentionClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<Tier>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A pinned span: the whole text of the message, an exact substring of it (`text`), or a char
/// range `[start, end)` of the message's text (`Message::text()`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinAnnotation {
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

pub fn parse_annotations(text: &str, path: &Path) -> Result<Annotations, SidecarError> {
    serde_json::from_str(text).map_err(|e| invalid(path, e))
}

// ---------------------------------------------------------------------------------------------
// External tiers
// ---------------------------------------------------------------------------------------------

/// `*.tiers.json`: representations written by someone else.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TiersFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub episodes: Vec<ExternalEpisode>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalEpisode {
    pub first_message_id: String,
    pub last_message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f64>,
    /// Tier name (`full`, `dense`, `compact`, `anchor`, or `p1`..`p4`) → representation.
    pub tiers: std::collections::BTreeMap<String, ExternalTier>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalTier {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_version: Option<String>,
    /// Lineage a model-written tier carries (the historian writes all of these): `source` (from
    /// the episode's full text) or `cascade` (from the tier above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// The episode it was written from (`E3`) and the hash of what the model was shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_episode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_hash: Option<String>,
    /// The tier the model read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_tier: Option<Tier>,
    /// What the call that wrote it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TierUsage>,
}

/// The usage of the call that wrote a tier. One call may write several tiers (`source` writes
/// dense, compact and anchor at once): they share its `call` id, and totals count each call once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierUsage {
    pub call: String,
    /// `None` when the endpoint reported no usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// The model that answered, as the response named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// What the call cost when it was made, and at whose prices (the pricing table's entry, or
    /// `--price`): kept so a model the table does not know stays priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dollars: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priced_as: Option<String>,
}

pub fn parse_tiers(text: &str, path: &Path) -> Result<TiersFile, SidecarError> {
    serde_json::from_str(text).map_err(|e| invalid(path, e))
}

// ---------------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------------

/// The three sidecar kinds, by file suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SidecarKind {
    Annotations,
    Tiers,
    Probes,
}

impl SidecarKind {
    pub fn suffix(&self) -> &'static str {
        match self {
            SidecarKind::Annotations => "annotations.json",
            SidecarKind::Tiers => "tiers.json",
            SidecarKind::Probes => "probes.json",
        }
    }
}

/// Where to look for a session's sidecars.
#[derive(Debug, Clone, Default)]
pub struct SidecarLocator {
    /// `--sidecars DIR`.
    pub dir: Option<PathBuf>,
    /// The export file the trace came from, if any.
    pub export_file: Option<PathBuf>,
    /// `$XDG_DATA_HOME/tierscope` (resolved by the caller; `None` to skip).
    pub data_dir: Option<PathBuf>,
}

impl SidecarLocator {
    /// The default data dir: `$XDG_DATA_HOME/tierscope` (or the platform's equivalent).
    pub fn default_data_dir() -> Option<PathBuf> {
        use etcetera::BaseStrategy;
        etcetera::choose_base_strategy()
            .ok()
            .map(|s| s.data_dir().join("tierscope"))
    }

    /// Candidate paths in lookup order: the `--sidecars` dir, then the export's dir, then the
    /// data dir; in each, the export's stem then the session id.
    pub fn candidates(&self, session_id: &str, kind: SidecarKind) -> Vec<PathBuf> {
        let stem = self
            .export_file
            .as_ref()
            .and_then(|p| p.file_stem())
            .map(|s| s.to_string_lossy().into_owned());
        let export_dir = self.export_file.as_ref().and_then(|p| p.parent()).map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".").to_path_buf()
            } else {
                p.to_path_buf()
            }
        });
        let mut names: Vec<String> = Vec::new();
        if let Some(stem) = stem {
            names.push(format!("{stem}.{}", kind.suffix()));
        }
        // The session id comes from the recording: only a plain name is looked up.
        if let Ok(id) = crate::trace::plain_name::PlainName::new(session_id) {
            names.push(format!("{}.{}", id.as_str(), kind.suffix()));
        }
        names.dedup();
        let mut out: Vec<PathBuf> = Vec::new();
        for dir in [self.dir.clone(), export_dir, self.data_dir.clone()]
            .into_iter()
            .flatten()
        {
            for n in &names {
                let p = dir.join(n);
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }

    /// The locator for a sub-agent session of the same load: by session id only (a child must not
    /// take its parent export's `<stem>.*` files), in the `--sidecars` dir (else the export's dir)
    /// and the data dir.
    pub fn for_child(&self) -> SidecarLocator {
        let export_dir = self
            .export_file
            .as_ref()
            .and_then(|p| p.parent())
            .map(Path::to_path_buf);
        SidecarLocator {
            dir: self.dir.clone().or(export_dir),
            export_file: None,
            data_dir: self.data_dir.clone(),
        }
    }

    /// The first candidate that exists, read to a string.
    pub fn read(
        &self,
        session_id: &str,
        kind: SidecarKind,
    ) -> Result<Option<(PathBuf, String)>, SidecarError> {
        for path in self.candidates(session_id, kind) {
            if path.is_file() {
                let text = crate::trace::input::read_to_string_capped(
                    &path,
                    crate::trace::input::MAX_SIDECAR_BYTES,
                )
                .map_err(|source| SidecarError::Io {
                    path: path.clone(),
                    source,
                })?;
                return Ok(Some((path, text)));
            }
        }
        Ok(None)
    }
}

/// The sidecars found for one session.
#[derive(Debug, Clone, Default)]
pub struct Sidecars {
    pub annotations: Option<(PathBuf, Annotations)>,
    pub tiers: Option<(PathBuf, TiersFile)>,
    pub probes: Option<(PathBuf, Vec<Probe>)>,
}

impl Sidecars {
    /// Find and parse every sidecar of `session_id`.
    pub fn find(locator: &SidecarLocator, session_id: &str) -> Result<Sidecars, SidecarError> {
        let mut out = Sidecars::default();
        if let Some((p, t)) = locator.read(session_id, SidecarKind::Annotations)? {
            let a = parse_annotations(&t, &p)?;
            out.annotations = Some((p, a));
        }
        if let Some((p, t)) = locator.read(session_id, SidecarKind::Tiers)? {
            let a = parse_tiers(&t, &p)?;
            out.tiers = Some((p, a));
        }
        if let Some((p, t)) = locator.read(session_id, SidecarKind::Probes)? {
            let a = parse_probes(&t, &p)?;
            out.probes = Some((p, a));
        }
        Ok(out)
    }
}

fn invalid(path: &Path, e: impl std::fmt::Display) -> SidecarError {
    SidecarError::Invalid {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_parse_all_needle_forms() {
        let text = r#"{"version":1,"probes":[
          {"id":"p1","needle":"/bin/sh","source_message_id":"m1","due_from_request":3,"dimension":"constraint"},
          {"id":"p2","needles":[{"exact":"a"},{"regex":"b+c"}],"source_message_id":"m2",
           "due_from_request":0,"kind":"semantic","dimension":"rejected alternative"}]}"#;
        let p = parse_probes(text, Path::new("x")).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].needles, vec![Needle::Exact("/bin/sh".into())]);
        assert_eq!(p[1].dimension, Dimension::RejectedAlternative);
        assert!(p[1].is_answered_by("xx bbbc"));
        assert!(!p[0].is_answered_by("bash"));
        assert!(p[0].is_due(3) && !p[0].is_due(2));
    }

    #[test]
    fn probe_without_needle_is_rejected() {
        let text = r#"{"probes":[{"id":"p","source_message_id":"m","due_from_request":0,"dimension":"trap"}]}"#;
        assert!(parse_probes(text, Path::new("x")).is_err());
    }

    #[test]
    fn lookup_prefers_sidecar_dir_then_export_dir_then_data_dir() {
        let loc = SidecarLocator {
            dir: None,
            export_file: Some(PathBuf::from("/a/E1.json")),
            data_dir: Some(PathBuf::from("/d")),
        };
        assert_eq!(
            loc.candidates("ses_x", SidecarKind::Probes),
            vec![
                PathBuf::from("/a/E1.probes.json"),
                PathBuf::from("/a/ses_x.probes.json"),
                PathBuf::from("/d/E1.probes.json"),
                PathBuf::from("/d/ses_x.probes.json"),
            ]
        );
        let loc = SidecarLocator {
            dir: Some(PathBuf::from("/s")),
            ..loc
        };
        assert_eq!(
            loc.candidates("ses_x", SidecarKind::Tiers)[0],
            PathBuf::from("/s/E1.tiers.json")
        );
        assert_eq!(
            loc.for_child().candidates("ses_c", SidecarKind::Tiers),
            vec![
                PathBuf::from("/s/ses_c.tiers.json"),
                PathBuf::from("/d/ses_c.tiers.json"),
            ]
        );
    }
}
