//! What an agent's summary (compaction) calls sent, sized. The agent's adapter builds each
//! recorded call as the agent sent it and the fixed prompt a simulated call adds
//! ([`crate::trace::adapter::Adapter::summary_calls`]); the loader counts them with its tokenizer;
//! the replay sizes recorded and simulated calls from them.

use serde::Serialize;

use super::model::CompactionShape;

/// One recorded summary call as the agent built it, before it is counted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BuiltSummaryCall {
    /// Index of the compaction in [`super::model::Trace::compactions`].
    pub compaction: usize,
    /// The summary call's request index.
    pub request: usize,
    pub shape: CompactionShape,
    /// Messages of the history it showed.
    pub history_messages: usize,
    /// Tool outputs clipped for it.
    pub clipped_outputs: usize,
    /// An earlier summary quoted in the prompt (not sent as messages).
    pub previous_summary: bool,
    /// The request's text: system prompt, history, instruction.
    pub text: String,
}

impl BuiltSummaryCall {
    /// The sized call (`tokens` = the count of [`BuiltSummaryCall::text`]).
    pub fn sized(&self, tokens: u64) -> CompactionCall {
        CompactionCall {
            compaction: self.compaction,
            request: self.request,
            shape: self.shape,
            history_messages: self.history_messages,
            clipped_outputs: self.clipped_outputs,
            previous_summary: self.previous_summary,
            tokens,
            text: self.text.clone(),
            shared_with_previous: 0,
        }
    }
}

/// An agent's summary calls of one trace, as built: the recorded ones, and the fixed part (system
/// prompt, instruction, template) that a call the policy simulates adds to the history it
/// summarises.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryCalls {
    pub built: Vec<BuiltSummaryCall>,
    pub fixed_prompt: String,
    /// The fixed prompt's size where the adapter knows it as a measured count rather than a
    /// text it ships (it then wins over counting `fixed_prompt`).
    pub fixed_prompt_tokens: Option<u64>,
    /// The agent's compaction prompt as texts a model can be asked with, where the adapter
    /// ships them (`None`: known only by its size).
    pub prompt: Option<CompactionPrompt>,
}

/// Where the history goes in a [`CompactionPrompt`]'s user message.
pub const HISTORY: &str = "{{history}}";
/// Where the earlier summary goes in [`CompactionPrompt::update`].
pub const PREVIOUS_SUMMARY: &str = "{{previous_summary}}";

/// An agent's compaction prompt as data: what a model writing the summary of a simulated
/// compaction is asked, in the agent's own words. The user messages hold [`HISTORY`] where the
/// conversation goes (a message-shaped agent's instruction follows it), and the update message
/// [`PREVIOUS_SUMMARY`] where the agent quotes an earlier summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactionPrompt {
    /// The compaction call's own system prompt, where the agent sends one.
    pub system: Option<String>,
    /// The user message of a first summary.
    pub first: String,
    /// The user message when an earlier summary exists (`None`: the earlier summary leads the
    /// history, as a message-shaped agent sends it).
    pub update: Option<String>,
    /// Where the texts come from (the release, the file, the recording that shows them).
    pub provenance: String,
}

impl CompactionPrompt {
    /// xxh3-64 of the texts (hex): names the prompt in lineage and cache keys.
    pub fn hash(&self) -> String {
        let mut bytes = Vec::new();
        for s in [
            self.system.as_deref().unwrap_or("\u{0}none"),
            &self.first,
            self.update.as_deref().unwrap_or("\u{0}none"),
        ] {
            bytes.extend_from_slice(&(s.len() as u64).to_le_bytes());
            bytes.extend_from_slice(s.as_bytes());
        }
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes))
    }
}

/// A summary call sized: the built request's token count (filled in by the loader, which owns
/// the tokenizer).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionCall {
    pub compaction: usize,
    pub request: usize,
    pub shape: CompactionShape,
    pub history_messages: usize,
    pub clipped_outputs: usize,
    pub previous_summary: bool,
    /// Tokens of [`BuiltSummaryCall::text`].
    pub tokens: u64,
    /// The call's text, kept so that what the replay sized is what `render` prints (not in the
    /// JSON: a session's worth of history per call).
    #[serde(skip)]
    pub text: String,
    /// Tokens of the text this call begins with that the previous built call began with too
    /// (0 for the first): what a model's cache could serve of it after that call, beside the
    /// system chunk.
    #[serde(skip)]
    pub shared_with_previous: u64,
}

/// Everything the replay needs to size summary calls: the recorded ones as the agent built them,
/// and what a call the policy simulates adds to the history it summarises.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionSizes {
    pub calls: Vec<CompactionCall>,
    pub shape: CompactionShape,
    /// Tokens of the fixed summary prompt (system prompt, instruction, template).
    pub prompt_tokens: u64,
    /// Its text where the adapter ships it (empty where it knows only the count).
    #[serde(skip)]
    pub prompt_text: String,
    /// The agent's compaction prompt as texts a model can be asked with (model-written
    /// summaries of simulated compactions).
    #[serde(skip)]
    pub prompt: Option<CompactionPrompt>,
    /// What each recorded summary shares from its start with the one before it, where the
    /// model's cache serves any prefix.
    #[serde(skip)]
    pub summary_heads: Vec<SummaryHead>,
}

/// The text a recorded summary begins with that the previous recorded summary began with too
/// (an agent's summaries follow one template and restate the same goal): after a new summary
/// a model's prefix cache still serves it. Keyed by the two summaries' first chunks (content
/// hashes), which is where a request after the new summary first differs from one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryHead {
    pub before: u64,
    pub after: u64,
    pub tokens: u64,
}

impl CompactionSizes {
    /// No recorded calls and no prompt (generated sessions).
    pub const NONE: CompactionSizes = CompactionSizes {
        calls: Vec::new(),
        shape: CompactionShape::HeadAsText,
        prompt_tokens: 0,
        prompt_text: String::new(),
        prompt: None,
        summary_heads: Vec::new(),
    };
    /// The recorded call whose summary request is `request`.
    pub fn call(&self, request: usize) -> Option<&CompactionCall> {
        self.calls.iter().find(|c| c.request == request)
    }

    /// Tokens the summary whose first chunk is `after` shares from its start with the one before
    /// it, whose first chunk is `before` (0 where they are not consecutive recorded summaries).
    pub fn summary_head(&self, before: u64, after: u64) -> u64 {
        self.summary_heads
            .iter()
            .find(|h| h.before == before && h.after == after)
            .map_or(0, |h| h.tokens)
    }

    /// The built call before the one at `request`, if any.
    pub fn previous_call(&self, request: usize) -> Option<&CompactionCall> {
        let i = self.calls.iter().position(|c| c.request == request)?;
        i.checked_sub(1).and_then(|j| self.calls.get(j))
    }
}
