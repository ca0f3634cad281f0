//! The historian (issue 18): lower tiers written by a model through any OpenAI-compatible
//! `/v1/chat/completions` endpoint, **generated once** and then rendered deterministically like
//! every other tier (MODEL §5 `external`). Generation is the chapter's loss event, and it is
//! billed: every call's tokens travel with the tiers it wrote.
//!
//! The engine side is plain functions and data; the network is behind [`transport::Transport`]
//! (the binary implements it with a blocking HTTP client; tests use a mock or an in-process fake):
//!
//! - [`input`]: what one episode gives the historian (its full text, pins, ids, content hash);
//! - [`prompt`]: the versioned prompt (`prompt-v1.md`, embedded) and the chat request;
//! - [`response`]: the completion and the strict parse of `{"tiers": {…}}`;
//! - [`cache`]: generate-once on disk, keyed by (episode content hash, strategy, model, prompt
//!   version, step), written atomically as each call completes, so an interrupted run resumes;
//! - [`retry`]: which replies are retried, exponential backoff with deterministic jitter,
//!   `Retry-After` honoured;
//! - [`run`]: the generation loop (a small thread pool, one result per episode), each call
//!   through the cache, else the transport with retries (`send`);
//! - [`summary`]: the same calls for the summaries of the flat baseline's simulated
//!   compactions (issue 32), written with the agent's own compaction prompt;
//! - [`write`]: the `*.tiers.json` sidecar with lineage per tier;
//! - [`cost`]: calls, tokens and dollars from the bundled pricing table;

pub mod cache;
pub mod cost;
pub mod input;
pub mod prompt;
pub mod response;
pub mod retry;
pub mod run;
mod send;
pub mod summary;
pub mod transport;
pub mod write;

/// How the historian builds an episode's tiers (`--strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HistorianStrategy {
    /// One call per episode: dense, compact and anchor each written from the full text.
    #[default]
    Source,
    /// Three calls per episode: dense from full, compact from that dense, anchor from that
    /// compact, so lower tiers inherit the errors of higher ones (the chapter's other arm).
    Cascade,
}

impl HistorianStrategy {
    pub fn as_str(&self) -> &'static str {
        match self {
            HistorianStrategy::Source => "source",
            HistorianStrategy::Cascade => "cascade",
        }
    }
}

impl std::fmt::Display for HistorianStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for HistorianStrategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "source" => Ok(HistorianStrategy::Source),
            "cascade" => Ok(HistorianStrategy::Cascade),
            other => Err(format!(
                "unknown historian strategy {other:?} (expected source or cascade)"
            )),
        }
    }
}

/// The generator name written into every tier's lineage.
pub const GENERATOR: &str = "tierscope-historian/1";
