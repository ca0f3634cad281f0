//! The `*.tiers.json` sidecar the historian writes (the existing format, MODEL §6), with lineage
//! on every tier: generator, model, prompt version, strategy, source episode and hash, the tier it
//! was read from, and the usage of the call that wrote it. `--tiers external` loads it as any
//! other tiers sidecar.
//!
//! The file is rewritten atomically after every finished episode, so an interrupted run leaves a
//! valid sidecar of what it finished. It is named `<session id>.tiers.json`, the name the sidecar
//! lookup tries in `--sidecars DIR` and in tierscope's data dir.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::cost::{dollars, GenerationPrice};
use super::run::{CallRecord, EpisodeResult, UsageTotals};
use super::{HistorianStrategy, GENERATOR};
use crate::episode::sidecar::{
    parse_tiers, ExternalEpisode, ExternalTier, SidecarError, TierUsage, TiersFile,
};
use crate::trace::plain_name::{BadId, PlainName};

/// `DIR/<session id>.tiers.json`; an error for a session id that is not a plain file name
/// (it comes from the recording, and must not name a file outside `DIR`).
pub fn sidecar_path(dir: &Path, session_id: &str) -> Result<PathBuf, BadId> {
    Ok(PlainName::new(session_id)?.file_in(dir, ".tiers.json"))
}

/// One episode's entry.
pub fn external_episode(
    r: &EpisodeResult,
    model: &str,
    prompt_version: &str,
    strategy: HistorianStrategy,
    price: Option<&GenerationPrice>,
) -> ExternalEpisode {
    let calls: BTreeMap<&str, &CallRecord> = r.calls.iter().map(|c| (c.id.as_str(), c)).collect();
    let tiers = r
        .tiers
        .iter()
        .map(|t| {
            let call = calls.get(t.call.as_str());
            let usage = TierUsage {
                call: t.call.clone(),
                input_tokens: call.and_then(|c| c.usage).map(|u| u.input_tokens),
                output_tokens: call.and_then(|c| c.usage).map(|u| u.output_tokens),
                cached_input_tokens: call
                    .and_then(|c| c.usage)
                    .and_then(|u| u.cached_input_tokens),
                response_model: call.and_then(|c| c.response_model.clone()),
                // A cost that is not a finite amount is not recorded (JSON has no number for
                // it); `tiers generate` says so in its summary.
                dollars: price.zip(call.and_then(|c| c.usage)).and_then(|(p, u)| {
                    let mut t = UsageTotals::default();
                    t.add(Some(&u));
                    Some(dollars(p, &t)).filter(|d| d.is_finite())
                }),
                priced_as: price
                    .filter(|_| call.is_some_and(|c| c.usage.is_some()))
                    .map(|p| p.priced_as.clone()),
            };
            (
                t.tier.as_str().to_owned(),
                ExternalTier {
                    text: t.text.clone(),
                    generator: Some(GENERATOR.to_owned()),
                    model: Some(model.to_owned()),
                    prompt_version: Some(prompt_version.to_owned()),
                    strategy: Some(strategy.as_str().to_owned()),
                    source_episode: Some(r.input.episode_id.clone()),
                    source_hash: Some(r.content_hash.clone()),
                    from_tier: Some(t.from),
                    usage: Some(usage),
                },
            )
        })
        .collect();
    ExternalEpisode {
        first_message_id: r.input.first_message_id.clone(),
        last_message_id: r.input.last_message_id.clone(),
        title: Some(r.input.title.clone()),
        importance: None,
        tiers,
    }
}

/// What is at the sidecar path already.
#[derive(Debug, Clone, PartialEq)]
pub enum Existing {
    Nothing,
    /// Written by the historian with this lineage: its episodes can be kept.
    Same(Vec<ExternalEpisode>),
    /// Written by the historian with another model, strategy or prompt: replaced.
    OtherRun(String),
    /// Written by someone else (or by hand): not overwritten without `--force`.
    Foreign(String),
}

/// Inspect an existing sidecar at `path` against this run's lineage.
pub fn existing(
    path: &Path,
    model: &str,
    prompt_version: &str,
    strategy: HistorianStrategy,
) -> Result<Existing, SidecarError> {
    // A regular file within the sidecar cap (a FIFO there would block the run).
    let text = match crate::trace::input::read_to_string_capped(
        path,
        crate::trace::input::MAX_SIDECAR_BYTES,
    ) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Nothing),
        Err(source) => {
            return Err(SidecarError::Io {
                path: path.to_owned(),
                source,
            })
        }
    };
    let file = match parse_tiers(&text, path) {
        Ok(f) => f,
        Err(e) => return Ok(Existing::Foreign(e.to_string())),
    };
    let tiers = || file.episodes.iter().flat_map(|e| e.tiers.values());
    if let Some(t) = tiers().find(|t| t.generator.as_deref() != Some(GENERATOR)) {
        return Ok(Existing::Foreign(format!(
            "it holds tiers by {}",
            t.generator.as_deref().unwrap_or("an unnamed generator")
        )));
    }
    let same = tiers().all(|t| {
        t.model.as_deref() == Some(model)
            && t.prompt_version.as_deref() == Some(prompt_version)
            && t.strategy.as_deref() == Some(strategy.as_str())
    });
    if same {
        return Ok(Existing::Same(file.episodes));
    }
    let first = tiers().next();
    Ok(Existing::OtherRun(format!(
        "model {}, strategy {}, prompt {}",
        first.and_then(|t| t.model.as_deref()).unwrap_or("?"),
        first.and_then(|t| t.strategy.as_deref()).unwrap_or("?"),
        first
            .and_then(|t| t.prompt_version.as_deref())
            .unwrap_or("?"),
    )))
}

/// The sidecar's contents: `kept` entries (from an earlier run with the same lineage) whose
/// message range this run did not write, then this run's episodes, all in message order
/// (`order` gives each first message id's position in the session).
pub fn tiers_file(
    session_id: &str,
    kept: &[ExternalEpisode],
    written: &[ExternalEpisode],
    order: &dyn Fn(&str) -> Option<usize>,
) -> TiersFile {
    let mut episodes: Vec<ExternalEpisode> = kept
        .iter()
        .filter(|k| {
            !written.iter().any(|w| {
                w.first_message_id == k.first_message_id && w.last_message_id == k.last_message_id
            })
        })
        .cloned()
        .chain(written.iter().cloned())
        .collect();
    episodes.sort_by_key(|e| {
        (
            order(&e.first_message_id).unwrap_or(usize::MAX),
            e.first_message_id.clone(),
        )
    });
    TiersFile {
        version: Some(1),
        session_id: Some(session_id.to_owned()),
        episodes,
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write the tiers sidecar {path}")]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: crate::output_guard::OutputError,
}

/// Write the sidecar atomically (pretty JSON, one trailing newline), where `guard` allows it.
pub fn write_tiers_file(
    path: &Path,
    file: &TiersFile,
    guard: &crate::output_guard::OutputGuard,
) -> Result<(), WriteError> {
    let err = |source| WriteError {
        path: path.to_owned(),
        source,
    };
    let mut text = serde_json::to_string_pretty(file).map_err(|e| {
        err(crate::output_guard::OutputError::Io {
            path: path.to_owned(),
            source: std::io::Error::other(e),
        })
    })?;
    text.push('\n');
    crate::output_guard::write_file(path, guard, text.as_bytes()).map_err(err)
}
