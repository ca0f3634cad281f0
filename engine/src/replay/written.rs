//! Model-written summaries of the flat baseline's simulated compactions (issue 32, item 8).
//!
//! Without them a simulated compaction's summary is a stand-in: the recorded summary of another
//! point of the session, or the covered episodes' compact tiers (an upper bound on what a
//! written summary keeps). With them, a model wrote each summary once from the request the
//! agent's compaction call would have sent ([`SummaryRequest`]: the agent's own compaction
//! prompt around the simulated history), and the replay shows that text, so a summary that
//! drops the reason loses the probes that ask for it.
//!
//! The replay itself makes no call: it reads a [`SummaryBook`] (request → text), and where a
//! simulated compaction's request is not in it, it says so ([`CompactionRun::pending_summary`])
//! and carries on with the stand-in. The caller has the model write that request's summary and
//! replays again ([`crate::research::flat_summaries`]): a summary's size moves every later
//! compaction, so they are written in order.
//!
//! [`CompactionRun::pending_summary`]: super::output::CompactionRun::pending_summary

use std::collections::HashMap;

use serde::Serialize;

use crate::trace::summary_call::CompactionPrompt;

/// Format version of a request's identity (part of every [`SummaryRequest::hash`]).
const REQUEST_VERSION: u32 = 1;

/// What a model is asked for one simulated compaction's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRequest {
    /// The compaction's number in the pass (from 1) and the request it comes before.
    pub number: usize,
    pub request: usize,
    /// The compaction call's system prompt, where the agent sends one.
    pub system: Option<String>,
    /// The user message: the agent's prompt with the history (and an earlier summary) in place.
    pub user: String,
    /// xxh3-128 (hex) of the model, the system prompt and the user message: what the summary
    /// answers (the cache key of its call).
    pub hash: String,
}

impl SummaryRequest {
    pub fn new(
        number: usize,
        request: usize,
        model: &str,
        system: Option<String>,
        user: String,
    ) -> SummaryRequest {
        let mut bytes = Vec::new();
        for s in [
            &REQUEST_VERSION.to_string(),
            model,
            system.as_deref().unwrap_or("\u{0}none"),
            &user,
        ] {
            bytes.extend_from_slice(&(s.len() as u64).to_le_bytes());
            bytes.extend_from_slice(s.as_bytes());
        }
        let hash = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes));
        SummaryRequest {
            number,
            request,
            system,
            user,
            hash,
        }
    }
}

/// How a written summary was made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryLineage {
    /// The call's id (its cache key).
    pub call: String,
    /// The model asked, and the one that answered (as the response named it).
    pub model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// The endpoint, without credentials.
    pub endpoint: String,
    /// Where the compaction prompt came from, and its hash ([`CompactionPrompt::hash`]).
    pub prompt: String,
    pub prompt_hash: String,
    /// When the summary was written (RFC 3339, UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// The call's usage as the endpoint reported it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
}

/// One summary a model wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WrittenSummary {
    /// [`SummaryRequest::hash`] of the request it answers.
    pub request: String,
    pub text: String,
    /// Its tokens as the replay counts (the session's tokenizer, calibrated as the chunks are).
    pub tokens: u64,
    pub lineage: SummaryLineage,
}

/// The summaries a model wrote for one model and prompt, by request.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryBook {
    /// The model asked (part of every request's identity).
    pub model: String,
    /// The agent's compaction prompt the requests are built with.
    pub prompt: CompactionPrompt,
    entries: Vec<WrittenSummary>,
    by_request: HashMap<String, usize>,
}

impl SummaryBook {
    pub fn new(model: &str, prompt: CompactionPrompt) -> SummaryBook {
        SummaryBook {
            model: model.to_owned(),
            prompt,
            entries: Vec::new(),
            by_request: HashMap::new(),
        }
    }

    /// The entry answering request `hash`.
    pub fn find(&self, hash: &str) -> Option<usize> {
        self.by_request.get(hash).copied()
    }

    pub fn get(&self, i: usize) -> Option<&WrittenSummary> {
        self.entries.get(i)
    }

    pub fn entries(&self) -> &[WrittenSummary] {
        &self.entries
    }

    /// Add a summary (one for a request already answered replaces it); its index.
    pub fn insert(&mut self, w: WrittenSummary) -> usize {
        match self.by_request.get(&w.request) {
            Some(&i) => {
                self.entries[i] = w;
                i
            }
            None => {
                self.by_request
                    .insert(w.request.clone(), self.entries.len());
                self.entries.push(w);
                self.entries.len() - 1
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_named_by_its_model_and_texts() {
        let a = SummaryRequest::new(1, 9, "m", Some("s".into()), "u".into());
        assert_eq!(a.hash.len(), 32);
        // The number and the request do not name it: the same text at another point is the
        // same request.
        assert_eq!(
            a.hash,
            SummaryRequest::new(2, 30, "m", Some("s".into()), "u".into()).hash
        );
        for other in [
            SummaryRequest::new(1, 9, "m2", Some("s".into()), "u".into()),
            SummaryRequest::new(1, 9, "m", None, "u".into()),
            SummaryRequest::new(1, 9, "m", Some("s".into()), "u2".into()),
            // The boundary between the fields counts.
            SummaryRequest::new(1, 9, "m", Some("su".into()), String::new()),
        ] {
            assert_ne!(a.hash, other.hash);
        }
    }
}
