//! The flat baseline with model-written summaries (issue 32, item 8).
//!
//! A simulated compaction's summary is otherwise a stand-in (a recorded summary of another
//! point, or the covered episodes' compact tiers: by construction what the tiers keep, so flat
//! keeps every probe they keep). Here a model writes each one, asked with the agent's own
//! compaction prompt ([`CompactionPrompt`]: the session's, or one the user gives) around the
//! history the call would send. The loop: replay with the summaries known so far; at the first
//! simulated compaction whose request has none ([`CompactionRun::pending_summary`]), have the
//! model write it ([`SummaryWriter`]: cached, retried, billed) and replay again, since its size
//! moves every later compaction. A pass that needs no new summary is the replay.
//!
//! [`CompactionRun::pending_summary`]: crate::replay::CompactionRun::pending_summary

use std::ops::ControlFlow;

use serde::Serialize;

use crate::historian::cost::{dollars, finite_dollars, GenerationPrice};
use crate::historian::summary::{SummaryBill, SummaryError, SummaryWriter, Written};
use crate::policy::{KindRole, Policy};
use crate::replay::written::{SummaryBook, SummaryLineage, SummaryRequest, WrittenSummary};
use crate::replay::{self, FrameSink, Input, Keep, PolicyInfo, Replay, TraceInfo};
use crate::session::LoadedSession;
use crate::tokens::TokenizerKind;
use crate::trace::summary_call::CompactionPrompt;

/// Why the flat baseline's summaries could not be written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlatSummaryError {
    #[error(
        "no compaction prompt of {agent} to ask a model with (the adapter knows it only by its \
         size); give one with --summary-prompt FILE"
    )]
    NoPrompt { agent: String },
    #[error(transparent)]
    Call(#[from] SummaryError),
    /// A summary was written for a request and the next pass asked for it again: a bug.
    #[error("the summary of simulated compaction {0} was written but not taken up; stopping")]
    NoProgress(usize),
}

/// What writes the flat baseline's summaries in a run.
pub struct SummarySource<'w> {
    pub writer: &'w SummaryWriter<'w>,
    /// A prompt the user gave (`--summary-prompt`); else each session's agent's.
    pub prompt: Option<CompactionPrompt>,
}

impl SummarySource<'_> {
    /// The prompt to ask with for `s`.
    pub fn prompt_for(&self, s: &LoadedSession) -> Result<CompactionPrompt, FlatSummaryError> {
        self.prompt
            .clone()
            .or_else(|| s.compaction.prompt.clone())
            .ok_or_else(|| FlatSummaryError::NoPrompt {
                agent: s.trace.origin.agent.to_owned(),
            })
    }
}

/// The summaries `policy` shows at `budget` on `s`, each written; `None` when it shows none (a
/// policy that is not flat, or does not simulate a compaction there). Without a prompt for `s`
/// that is an error only where a summary is needed.
pub fn complete_book(
    s: &LoadedSession,
    policy: &Policy,
    budget: Option<u64>,
    src: &SummarySource<'_>,
) -> Result<Option<SummaryBook>, FlatSummaryError> {
    if policy.role() != KindRole::Compaction {
        return Ok(None);
    }
    let prompt = match src.prompt_for(s) {
        Ok(p) => p,
        Err(e) => {
            // Asked with any prompt, does the pass need a summary at all?
            let none = CompactionPrompt {
                system: None,
                first: String::new(),
                update: None,
                provenance: String::new(),
            };
            let book = SummaryBook::new(src.writer.model(), none);
            let input = Input {
                summaries: Some(&book),
                ..Input::from(s)
            };
            return match pending(&input, policy, budget) {
                None => Ok(None),
                Some(_) => Err(e),
            };
        }
    };
    let mut book = SummaryBook::new(src.writer.model(), prompt);
    let count = counter(s);
    // Each pass adds one summary, and a pass compacts at most once per request.
    for _ in 0..=s.trace.requests.len() {
        let input = Input {
            summaries: Some(&book),
            ..Input::from(s)
        };
        let Some(req) = pending(&input, policy, budget) else {
            return Ok((!book.entries().is_empty()).then_some(book));
        };
        if book.find(&req.hash).is_some() {
            return Err(FlatSummaryError::NoProgress(req.number));
        }
        let w = src.writer.write(&req, &book.prompt)?;
        let entry = WrittenSummary {
            request: req.hash.clone(),
            tokens: count(&w.text),
            lineage: lineage(&w, src.writer, &book.prompt),
            text: w.text,
        };
        book.insert(entry);
    }
    Err(FlatSummaryError::NoProgress(0))
}

/// `policy` on `s` at `budget` with its summaries written, and the book it showed.
pub fn replay_written(
    s: &LoadedSession,
    policy: &Policy,
    budget: Option<u64>,
    src: &SummarySource<'_>,
) -> Result<(Replay, Option<SummaryBook>), FlatSummaryError> {
    let book = complete_book(s, policy, budget, src)?;
    let input = Input {
        summaries: book.as_ref(),
        ..Input::from(s)
    };
    let r = replay::replay(&input, policy, budget);
    Ok((r, book))
}

/// The first simulated compaction of a pass whose summary the input's book lacks: the pass's
/// head says it (the pass that reports it runs without output; the sink stops at the head).
fn pending(input: &Input<'_>, policy: &Policy, budget: Option<u64>) -> Option<SummaryRequest> {
    struct Head(Option<SummaryRequest>);
    impl FrameSink for Head {
        fn head(&mut self, _: &TraceInfo, p: &PolicyInfo) -> ControlFlow<()> {
            self.0 = p
                .compaction
                .as_ref()
                .and_then(|c| c.pending_summary.clone());
            ControlFlow::Break(())
        }
        fn frame(&mut self, _: replay::Frame) -> ControlFlow<()> {
            ControlFlow::Break(())
        }
    }
    let mut head = Head(None);
    replay::replay_into(
        input,
        policy,
        budget,
        None,
        Keep { views: false },
        &mut head,
    );
    head.0
}

/// Tokens of a text as the replay counts `s`'s chunks: its tokenizer, scaled as they were.
fn counter(s: &LoadedSession) -> impl Fn(&str) -> u64 + '_ {
    let kind = s
        .tokenizer
        .split('@')
        .next()
        .and_then(|k| k.parse::<TokenizerKind>().ok())
        .unwrap_or_default();
    let factor = s
        .calibration
        .as_ref()
        .filter(|c| c.applied)
        .map(|c| c.factor);
    move |text: &str| {
        let n = u64::from(crate::tokens::count_exact(kind, text));
        factor.map_or(n, |f| (n as f64 * f).round() as u64)
    }
}

fn lineage(w: &Written, writer: &SummaryWriter<'_>, prompt: &CompactionPrompt) -> SummaryLineage {
    SummaryLineage {
        call: w.call.id.clone(),
        model: writer.model().to_owned(),
        response_model: w.call.response_model.clone(),
        endpoint: writer.endpoint().to_owned(),
        prompt: prompt.provenance.clone(),
        prompt_hash: prompt.hash(),
        created: w.created.clone(),
        input_tokens: w.call.usage.map(|u| u.input_tokens),
        output_tokens: w.call.usage.map(|u| u.output_tokens),
    }
}

/// The flat baseline's written summaries in a run's output: who wrote them with what, each
/// summary and its lineage, and what they cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatSummaryReport {
    pub model: String,
    pub endpoint: String,
    /// The prompt's provenance and hash (`None`: the session has none, and no summary was
    /// needed).
    pub prompt: Option<String>,
    pub prompt_hash: Option<String>,
    pub bill: SummaryBill,
    /// The prices used (`None`: the model is not in the pricing table and none was given).
    pub price: Option<GenerationPrice>,
    pub this_run_dollars: Option<f64>,
    pub all_summaries_dollars: Option<f64>,
    /// Why a priced bill has no dollars.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_error: Option<String>,
    /// Every summary written or read, by request: `written:<call>` in a row's
    /// `compaction.summary_text` names it.
    pub summaries: Vec<ReportedSummary>,
}

/// One written summary in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportedSummary {
    /// [`SummaryRequest::hash`] of the request it answers.
    pub request: String,
    /// Read from the cache in this run (else written now).
    pub from_cache: bool,
    pub lineage: SummaryLineage,
    pub text: String,
}

/// The report of `src`'s summaries so far on `s`, priced at `price`.
pub fn report(
    src: &SummarySource<'_>,
    s: &LoadedSession,
    price: Option<GenerationPrice>,
) -> FlatSummaryReport {
    let prompt = src.prompt_for(s).ok();
    let bill = src.writer.bill();
    let priced = |u| price.as_ref().map(|p| finite_dollars(dollars(p, u)));
    let (this_run, all) = (priced(&bill.this_run), priced(&bill.all_summaries));
    let cost_error = [&this_run, &all]
        .into_iter()
        .find_map(|d| d.clone().and_then(Result::err));
    FlatSummaryReport {
        model: bill.model.clone(),
        endpoint: bill.endpoint.clone(),
        prompt: prompt.as_ref().map(|p| p.provenance.clone()),
        prompt_hash: prompt.as_ref().map(CompactionPrompt::hash),
        summaries: prompt.as_ref().map_or_else(Vec::new, |prompt| {
            src.writer
                .written()
                .into_iter()
                .map(|w| ReportedSummary {
                    lineage: lineage(&w, src.writer, prompt),
                    request: w.request,
                    from_cache: w.call.from_cache,
                    text: w.text,
                })
                .collect()
        }),
        bill,
        price,
        this_run_dollars: this_run.and_then(Result::ok),
        all_summaries_dollars: all.and_then(Result::ok),
        cost_error,
    }
}
