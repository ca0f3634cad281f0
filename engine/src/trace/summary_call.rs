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
}

impl CompactionSizes {
    /// No recorded calls and no prompt (generated sessions).
    pub const NONE: CompactionSizes = CompactionSizes {
        calls: Vec::new(),
        shape: CompactionShape::HeadAsText,
        prompt_tokens: 0,
        prompt_text: String::new(),
    };
    /// The recorded call whose summary request is `request`.
    pub fn call(&self, request: usize) -> Option<&CompactionCall> {
        self.calls.iter().find(|c| c.request == request)
    }
}
