//! Summaries of the flat baseline's simulated compactions written by a model (issue 32, item
//! 8): one call per [`SummaryRequest`] (the agent's compaction prompt around the history its
//! call would send), through the historian's cache, retries and billing. Generated once: a
//! request already answered, in this run or a cached one, is not sent again.
//!
//! The answer is plain text (no JSON mode): what the agent's compaction call gets back. A
//! leading `<think>` block is taken off; an empty answer is an error. A call that fails is not
//! cached, and its usage still counts in this run's bill.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use super::cache::{CacheKey, CachedCall, HistorianCache};
use super::prompt::{chat_body, RequestParams};
use super::response::parse_summary;
use super::run::{CallRecord, Events, GenerateOptions, Run, Sleeper, UsageTotals};
use super::transport::Transport;
use crate::replay::written::SummaryRequest;
use crate::trace::summary_call::CompactionPrompt;

/// The cache key's strategy field for these calls (tiers have `source` or `cascade`).
pub const STRATEGY: &str = "flat-summary";
/// The cache key's step field, and the call's step in its record.
pub const STEP: &str = "compaction-summary";
/// The cached answer's one text, under this name.
const TEXT_KEY: &str = "summary";

/// A summary the model wrote, now or in an earlier run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Written {
    /// [`SummaryRequest::hash`] of the request it answers.
    pub request: String,
    pub text: String,
    pub call: CallRecord,
    /// When the model wrote it (RFC 3339, UTC).
    pub created: Option<String>,
}

/// A summary that could not be written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the summary of simulated compaction {number} (before request {request}): {why}")]
pub struct SummaryError {
    pub number: usize,
    pub request: usize,
    pub why: String,
}

/// What the summaries cost: the calls behind them, made now or read from the cache.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryBill {
    pub model: String,
    pub endpoint: String,
    /// Requests answered (each once, however many replays showed it).
    pub summaries: usize,
    pub from_cache: usize,
    pub written_now: usize,
    /// Calls that got no usable summary (not cached; a rerun asks again).
    pub failed: usize,
    /// HTTP requests sent, and of them retries.
    pub requests: u64,
    pub retries: u64,
    /// Calls completed now (the failed ones included): what this run cost.
    pub this_run: UsageTotals,
    /// Every call behind the summaries shown: what they cost to write.
    pub all_summaries: UsageTotals,
}

/// Writes summaries through one endpoint and model; shared by every replay of a run.
pub struct SummaryWriter<'a> {
    run: Run<'a>,
    endpoint: String,
    created: String,
    /// Answers by request, kept for the run; the lock is held through a call, so two replays
    /// that need the same summary make one call.
    done: Mutex<BTreeMap<String, Written>>,
    failed: Mutex<Vec<CallRecord>>,
}

impl<'a> SummaryWriter<'a> {
    /// `opts`: the model, its parameters, retries and `refresh` (its JSON mode is not used);
    /// `endpoint`: the URL to name in lineage (without credentials); `created`: the date
    /// stamped on summaries written now.
    pub fn new(
        opts: &'a GenerateOptions,
        transport: &'a dyn Transport,
        cache: Option<&'a HistorianCache>,
        sleeper: &'a dyn Sleeper,
        events: &'a dyn Events,
        endpoint: &str,
        created: &str,
    ) -> SummaryWriter<'a> {
        SummaryWriter {
            run: Run::new(opts, transport, cache, sleeper, events),
            endpoint: endpoint.to_owned(),
            created: created.to_owned(),
            done: Mutex::new(BTreeMap::new()),
            failed: Mutex::new(Vec::new()),
        }
    }

    pub fn model(&self) -> &str {
        &self.run.opts.params.model
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The summary answering `req`, asked with `prompt`: from this run, the cache, or the model.
    pub fn write(
        &self,
        req: &SummaryRequest,
        prompt: &CompactionPrompt,
    ) -> Result<Written, SummaryError> {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(w) = done.get(&req.hash) {
            return Ok(w.clone());
        }
        let key = cache_key(req, self.model(), prompt);
        let label = format!("compaction {}", req.number);
        let mut rec = CallRecord::new(&key, STEP.to_owned());
        let cached = self
            .run
            .cached(&label, &key)
            .and_then(|c| Some((c.tiers.get(TEXT_KEY)?.clone(), c)));
        let w = match cached {
            Some((text, c)) => {
                rec.answered_by_cache(&c);
                Written {
                    request: req.hash.clone(),
                    text,
                    call: rec,
                    created: c.created,
                }
            }
            None => {
                let sent = self.run.send(
                    &label,
                    &key,
                    &mut rec,
                    &|_| request_body(&self.run.opts.params, req),
                    &|content| parse_summary(content).map_err(|e| e.to_string()),
                );
                let text = match sent {
                    Ok(t) => t,
                    Err(why) => {
                        self.failed
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(rec);
                        return Err(SummaryError {
                            number: req.number,
                            request: req.request,
                            why,
                        });
                    }
                };
                let mut call = CachedCall::new(
                    key,
                    BTreeMap::from([(TEXT_KEY.to_owned(), text.clone())]),
                    rec.usage,
                    rec.response_model.clone(),
                    false,
                );
                call.created = Some(self.created.clone());
                self.run.store(&label, &call, "the summary is still used");
                Written {
                    request: req.hash.clone(),
                    text,
                    call: rec,
                    created: call.created,
                }
            }
        };
        done.insert(req.hash.clone(), w.clone());
        Ok(w)
    }

    /// Every summary written or read so far, by request.
    pub fn written(&self) -> Vec<Written> {
        let done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        done.values().cloned().collect()
    }

    /// What the summaries so far cost.
    pub fn bill(&self) -> SummaryBill {
        let written = self.written();
        let failed = self
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut bill = SummaryBill {
            model: self.model().to_owned(),
            endpoint: self.endpoint.clone(),
            summaries: written.len(),
            from_cache: written.iter().filter(|w| w.call.from_cache).count(),
            written_now: written.iter().filter(|w| !w.call.from_cache).count(),
            failed: failed.len(),
            requests: 0,
            retries: 0,
            this_run: UsageTotals::default(),
            all_summaries: UsageTotals::default(),
        };
        for c in written.iter().map(|w| &w.call).chain(&failed) {
            bill.requests += u64::from(c.requests);
            bill.retries += u64::from(c.requests.saturating_sub(1));
        }
        for w in &written {
            bill.all_summaries.add(w.call.usage.as_ref());
            if !w.call.from_cache {
                bill.this_run.add(w.call.usage.as_ref());
            }
        }
        for c in failed.iter().filter(|c| c.usage.is_some()) {
            bill.this_run.add(c.usage.as_ref());
        }
        bill
    }
}

/// The cache key of `req`'s call: the request's hash, the model, the prompt's hash.
pub fn cache_key(req: &SummaryRequest, model: &str, prompt: &CompactionPrompt) -> CacheKey {
    CacheKey {
        episode_hash: req.hash.clone(),
        strategy: STRATEGY.to_owned(),
        model: model.to_owned(),
        prompt_version: prompt.hash(),
        step: STEP.to_owned(),
    }
}

/// The chat request of `req`: the agent's system prompt, if any, and the user message.
fn request_body(params: &RequestParams, req: &SummaryRequest) -> String {
    let mut messages: Vec<(&str, &str)> = Vec::new();
    if let Some(s) = &req.system {
        messages.push(("system", s));
    }
    messages.push(("user", &req.user));
    chat_body(params, &messages, false)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::super::run::Quiet;
    use super::super::transport::{HttpReply, TransportError};
    use super::*;

    /// Answers every request with a summary quoting the last line of its user message.
    #[derive(Default)]
    struct Echo {
        bodies: Mutex<Vec<serde_json::Value>>,
        fail_first: AtomicUsize,
    }

    impl Transport for Echo {
        fn post(&self, body: &str) -> Result<HttpReply, TransportError> {
            let v: serde_json::Value = serde_json::from_str(body).expect("JSON");
            let user = v["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_str())
                .unwrap_or("")
                .to_owned();
            self.bodies.lock().unwrap().push(v);
            if self.fail_first.load(Ordering::Relaxed) > 0 {
                self.fail_first.fetch_sub(1, Ordering::Relaxed);
                return Ok(HttpReply {
                    status: 400,
                    retry_after: None,
                    body: r#"{"error":{"message":"context too long"}}"#.into(),
                });
            }
            let last = user.lines().last().unwrap_or("").to_owned();
            Ok(HttpReply {
                status: 200,
                retry_after: None,
                body: serde_json::json!({
                    "model": "echo-1",
                    "choices": [{"message": {"content": format!("<think>hm</think>\nsummary: {last}")}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 5}
                })
                .to_string(),
            })
        }
    }

    struct NoSleep;
    impl Sleeper for NoSleep {
        fn sleep(&self, _: std::time::Duration) {}
    }

    /// A writer through `t` into `cache`, stamping `created`.
    fn writer<'a>(
        opts: &'a GenerateOptions,
        t: &'a Echo,
        cache: &'a HistorianCache,
        created: &str,
    ) -> SummaryWriter<'a> {
        SummaryWriter::new(
            opts,
            t,
            Some(cache),
            &NoSleep,
            &Quiet,
            "http://h/v1",
            created,
        )
    }

    fn prompt() -> CompactionPrompt {
        CompactionPrompt {
            system: Some("You summarise.".into()),
            first: "{{history}}\n\nSummarise.".into(),
            update: None,
            provenance: "test".into(),
        }
    }

    #[test]
    fn a_request_is_written_once_cached_and_billed() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HistorianCache::new(dir.path());
        let opts = GenerateOptions::new("m", super::super::HistorianStrategy::Source);
        let echo = Echo::default();
        let w = writer(&opts, &echo, &cache, "2026-01-02T03:04:05Z");
        let req = SummaryRequest::new(
            1,
            7,
            "m",
            Some("You summarise.".into()),
            "a\nb: the reason".into(),
        );
        let a = w.write(&req, &prompt()).unwrap();
        assert_eq!(a.text, "summary: b: the reason");
        assert_eq!(a.created.as_deref(), Some("2026-01-02T03:04:05Z"));
        // Asked again in the run: no second call.
        assert_eq!(w.write(&req, &prompt()).unwrap(), a);
        let sent = echo.bodies.lock().unwrap().clone();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0]["messages"][0]["role"], "system");
        assert!(sent[0].get("response_format").is_none());
        let bill = w.bill();
        assert_eq!(
            (bill.summaries, bill.written_now, bill.from_cache),
            (1, 1, 0)
        );
        assert_eq!(bill.this_run.input_tokens, 50);

        // Another run reads it from the cache, with its date.
        let fresh = Echo::default();
        let w2 = writer(&opts, &fresh, &cache, "2027-01-01T00:00:00Z");
        let b = w2.write(&req, &prompt()).unwrap();
        assert_eq!(fresh.bodies.lock().unwrap().len(), 0);
        assert_eq!(
            (b.text.as_str(), b.created.as_deref()),
            (a.text.as_str(), a.created.as_deref())
        );
        let bill = w2.bill();
        assert_eq!((bill.from_cache, bill.this_run.calls), (1, 0));
        assert_eq!(bill.all_summaries.input_tokens, 50);
    }

    #[test]
    fn a_failed_call_is_an_error_that_names_the_compaction_and_is_not_cached() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HistorianCache::new(dir.path());
        let opts = GenerateOptions::new("m", super::super::HistorianStrategy::Source);
        let echo = Echo::default();
        echo.fail_first.store(1, Ordering::Relaxed);
        let w = writer(&opts, &echo, &cache, "d");
        let req = SummaryRequest::new(3, 40, "m", None, "x".into());
        let e = w.write(&req, &prompt()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the summary of simulated compaction 3 (before request 40): HTTP 400: context too long"
        );
        assert_eq!(w.bill().failed, 1);
        // Not cached: the next call asks.
        assert!(w.write(&req, &prompt()).is_ok());
        assert_eq!(echo.bodies.lock().unwrap().len(), 2);
    }
}
