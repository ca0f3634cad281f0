//! The generation loop: every episode's calls, from the cache where it has them, else through the
//! transport with retries, on a small pool of threads (`concurrency`). Each episode's outcome is
//! handed to the caller as soon as it is known (the caller writes the sidecar incrementally), in
//! completion order; the report and the sidecar are ordered by episode.
//!
//! An episode fails alone (its error names the episode, the step and what was wrong) and is not
//! cached, so the next run asks again for it and only it. A reply that says every call would fail
//! (401, 403, 404, a transport that cannot be set up, an endpoint no retry could reach) stops the
//! run: the episodes left are skipped rather than each spending requests on the same error.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use serde::Serialize;

use super::cache::{CacheKey, CachedCall, HistorianCache};
use super::input::EpisodeInput;
use super::prompt::{request_body, steps, RequestParams, Step, PROMPT_VERSION};
use super::response::{parse_tiers, Usage};
use super::retry::RetryPolicy;
use super::transport::Transport;
use super::HistorianStrategy;
use crate::episode::Tier;

/// What a run asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    pub params: RequestParams,
    pub strategy: HistorianStrategy,
    /// Episodes generated at once (at least 1).
    pub concurrency: usize,
    /// Ask for `response_format: json_object` (dropped for the rest of the run when refused).
    pub json_mode: bool,
    /// Ignore cached answers (they are overwritten by the new ones).
    pub refresh: bool,
    pub retry: RetryPolicy,
}

impl GenerateOptions {
    pub fn new(model: &str, strategy: HistorianStrategy) -> GenerateOptions {
        GenerateOptions {
            params: RequestParams {
                model: model.to_owned(),
                ..RequestParams::default()
            },
            strategy,
            concurrency: 4,
            json_mode: true,
            refresh: false,
            retry: RetryPolicy::default(),
        }
    }
}

/// Waiting between attempts (tests record the waits instead of sleeping).
pub trait Sleeper: Sync {
    fn sleep(&self, d: Duration);
}

/// The real clock.
pub struct ThreadSleeper;

impl Sleeper for ThreadSleeper {
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// What happens during a run, for a progress display (called from worker threads).
pub trait Events: Sync {
    /// A call will be repeated after `wait`.
    fn retrying(&self, _episode: &str, _why: &str, _wait: Duration) {}
    /// Something a user should know (the endpoint refused JSON mode, a cache file was unusable).
    fn note(&self, _message: &str) {}
}

/// No display.
pub struct Quiet;
impl Events for Quiet {}

/// One call of an episode, made now or read from the cache.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// The cache key's id; tiers written by this call carry it in their lineage.
    pub id: String,
    pub step: String,
    pub from_cache: bool,
    /// HTTP requests sent for it in this run (0 from the cache; more than 1 after retries).
    pub requests: u32,
    pub usage: Option<Usage>,
    pub json_mode: bool,
    pub response_model: Option<String>,
}

impl CallRecord {
    /// A call not made yet, under `key`, for `step`.
    pub(super) fn new(key: &CacheKey, step: String) -> CallRecord {
        CallRecord {
            id: key.id(),
            step,
            from_cache: false,
            requests: 0,
            usage: None,
            json_mode: false,
            response_model: None,
        }
    }

    /// Answered from the cache by `c`.
    pub(super) fn answered_by_cache(&mut self, c: &CachedCall) {
        self.from_cache = true;
        self.usage = c.usage;
        self.json_mode = c.json_mode;
        self.response_model = c.response_model.clone();
    }
}

/// One tier the historian wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeneratedTier {
    pub tier: Tier,
    pub text: String,
    /// The tier the call read (`full` for `source`; the tier above for `cascade`).
    pub from: Tier,
    /// [`CallRecord::id`] of the call that wrote it.
    pub call: String,
}

/// An episode's tiers and the calls that wrote them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeResult {
    pub input: EpisodeInput,
    pub content_hash: String,
    pub tiers: Vec<GeneratedTier>,
    pub calls: Vec<CallRecord>,
}

/// An episode that got no tiers, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeFailure {
    pub index: usize,
    pub episode_id: String,
    pub error: String,
    /// Calls of this episode that completed before the failing one, and the failing one.
    pub calls: Vec<CallRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum Outcome {
    Done(EpisodeResult),
    Failed(EpisodeFailure),
    /// Not started, or stopped in flight, because the run stopped.
    Skipped {
        index: usize,
        episode_id: String,
        /// Calls it made before the run stopped (none when it never started).
        calls: Vec<CallRecord>,
    },
}

impl Outcome {
    pub fn index(&self) -> usize {
        match self {
            Outcome::Done(r) => r.input.index,
            Outcome::Failed(f) => f.index,
            Outcome::Skipped { index, .. } => *index,
        }
    }
    pub fn calls(&self) -> &[CallRecord] {
        match self {
            Outcome::Done(r) => &r.calls,
            Outcome::Failed(f) => &f.calls,
            Outcome::Skipped { calls, .. } => calls,
        }
    }
}

/// Token totals over calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UsageTotals {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    /// Completed calls whose response had no `usage` (their tokens are not in the totals).
    pub calls_without_usage: u64,
    /// A sum passed `u64::MAX` (a server reported absurd figures) and stopped there: the totals
    /// are a floor, not a count.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub saturated: bool,
}

impl UsageTotals {
    pub fn add(&mut self, usage: Option<&Usage>) {
        self.calls = self.calls.saturating_add(1);
        match usage {
            Some(u) => {
                for (sum, n) in [
                    (&mut self.input_tokens, u.input_tokens),
                    (&mut self.output_tokens, u.output_tokens),
                    (
                        &mut self.cached_input_tokens,
                        u.cached_input_tokens.unwrap_or(0),
                    ),
                ] {
                    *sum = sum.checked_add(n).unwrap_or_else(|| {
                        self.saturated = true;
                        u64::MAX
                    });
                }
            }
            None => self.calls_without_usage = self.calls_without_usage.saturating_add(1),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    pub model: String,
    pub strategy: HistorianStrategy,
    pub prompt_version: String,
    pub episodes: usize,
    /// Episodes with every call from the cache.
    pub from_cache: usize,
    /// Episodes with at least one call made now.
    pub generated: usize,
    pub failed: Vec<EpisodeFailure>,
    pub skipped: usize,
    /// Why the run stopped early.
    pub aborted: Option<String>,
    /// HTTP requests sent (every attempt).
    pub requests: u64,
    /// Attempts after a first one (429, 5xx, timeouts).
    pub retries: u64,
    /// Calls completed now: what this run cost.
    pub this_run: UsageTotals,
    /// Every call behind the tiers written (now and cached): what the tiers cost to create.
    pub all_tiers: UsageTotals,
    /// The endpoint refused `response_format` and the run went on without it.
    pub json_mode_dropped: bool,
}

/// Run the historian over `inputs`. `on_outcome` sees each episode's outcome as it completes.
pub fn generate(
    inputs: &[EpisodeInput],
    opts: &GenerateOptions,
    transport: &dyn Transport,
    cache: Option<&HistorianCache>,
    sleeper: &dyn Sleeper,
    events: &dyn Events,
    on_outcome: &mut dyn FnMut(&Outcome),
) -> RunReport {
    let run = Run::new(opts, transport, cache, sleeper, events);
    let next = AtomicUsize::new(0);
    let mut outcomes: BTreeMap<usize, Outcome> = BTreeMap::new();
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel::<Outcome>();
        for _ in 0..opts.concurrency.clamp(1, inputs.len().max(1)) {
            let tx = tx.clone();
            let (run, next) = (&run, &next);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(input) = inputs.get(i) else { break };
                let o = if run.aborting.load(Ordering::Relaxed) {
                    Outcome::Skipped {
                        index: input.index,
                        episode_id: input.episode_id.clone(),
                        calls: Vec::new(),
                    }
                } else {
                    run.episode(input)
                };
                if tx.send(o).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for o in rx {
            on_outcome(&o);
            outcomes.insert(o.index(), o);
        }
    });
    let mut report = RunReport {
        model: opts.params.model.clone(),
        strategy: opts.strategy,
        prompt_version: PROMPT_VERSION.to_owned(),
        episodes: inputs.len(),
        from_cache: 0,
        generated: 0,
        failed: Vec::new(),
        skipped: 0,
        aborted: run.aborted(),
        requests: 0,
        retries: 0,
        this_run: UsageTotals::default(),
        all_tiers: UsageTotals::default(),
        json_mode_dropped: run.json_dropped.load(Ordering::Relaxed),
    };
    for o in outcomes.into_values() {
        for c in o.calls() {
            report.requests += u64::from(c.requests);
            report.retries += u64::from(c.requests.saturating_sub(1));
        }
        match o {
            Outcome::Done(r) => {
                if r.calls.iter().all(|c| c.from_cache) {
                    report.from_cache += 1;
                } else {
                    report.generated += 1;
                }
                for c in &r.calls {
                    report.all_tiers.add(c.usage.as_ref());
                    if !c.from_cache {
                        report.this_run.add(c.usage.as_ref());
                    }
                }
            }
            Outcome::Failed(f) => {
                // Calls that completed before the failing step were paid for.
                for c in f
                    .calls
                    .iter()
                    .filter(|c| !c.from_cache && c.usage.is_some())
                {
                    report.this_run.add(c.usage.as_ref());
                }
                report.failed.push(f);
            }
            Outcome::Skipped { .. } => report.skipped += 1,
        }
    }
    report
}

/// The error of a call cut short because another call stopped the run.
pub(super) const STOPPED: &str = "not finished: the run stopped";

/// One run's calls: its settings, where answers come from and go, and what every call of it
/// shares (JSON mode refused, the run stopped). The retry loop is [`super::send`].
pub(super) struct Run<'a> {
    pub(super) opts: &'a GenerateOptions,
    pub(super) transport: &'a dyn Transport,
    pub(super) cache: Option<&'a HistorianCache>,
    pub(super) sleeper: &'a dyn Sleeper,
    pub(super) events: &'a dyn Events,
    /// Whether requests still carry `response_format`.
    pub(super) json_ok: AtomicBool,
    pub(super) json_dropped: AtomicBool,
    pub(super) abort: Mutex<Option<String>>,
    pub(super) aborting: AtomicBool,
}

impl Run<'_> {
    fn episode(&self, input: &EpisodeInput) -> Outcome {
        let hash = input.content_hash();
        let mut tiers: Vec<GeneratedTier> = Vec::new();
        let mut calls = Vec::new();
        // What the next call reads: the full text, then (cascade) the tier the model just wrote.
        let mut text = input.source.clone();
        for step in steps(self.opts.strategy) {
            let key = CacheKey::new(
                &hash,
                self.opts.strategy,
                &self.opts.params.model,
                PROMPT_VERSION,
                &step.name(),
            );
            let (result, record) = self.call(input, &step, &text, &key);
            let call_id = record.id.clone();
            calls.push(record);
            match result {
                Ok(written) => {
                    if let Some(t) = step.targets.last().and_then(|t| written.get(t)) {
                        text = t.clone();
                    }
                    tiers.extend(written.into_iter().map(|(tier, text)| GeneratedTier {
                        tier,
                        text,
                        from: step.from,
                        call: call_id.clone(),
                    }))
                }
                Err(e) if e == STOPPED => {
                    return Outcome::Skipped {
                        index: input.index,
                        episode_id: input.episode_id.clone(),
                        calls,
                    }
                }
                Err(e) => {
                    return Outcome::Failed(EpisodeFailure {
                        index: input.index,
                        episode_id: input.episode_id.clone(),
                        error: format!("{} ({}): {e}", input.episode_id, step.name()),
                        calls,
                    })
                }
            }
        }
        Outcome::Done(EpisodeResult {
            input: input.clone(),
            content_hash: hash,
            tiers,
            calls,
        })
    }

    /// One step: from the cache, else through the transport with retries.
    fn call(
        &self,
        input: &EpisodeInput,
        step: &Step,
        text: &str,
        key: &CacheKey,
    ) -> (Result<BTreeMap<Tier, String>, String>, CallRecord) {
        let mut rec = CallRecord::new(key, step.name());
        let label = input.episode_id.as_str();
        if let Some(c) = self.cached(label, key) {
            if let Some(t) = cached_tiers(&c, &step.targets) {
                rec.answered_by_cache(&c);
                return (Ok(t), rec);
            }
        }
        let result = self.send(
            label,
            key,
            &mut rec,
            &|json| request_body(&self.opts.params, input, step, text, json),
            &|content| parse_tiers(content, &step.targets).map_err(|e| e.to_string()),
        );
        if let Ok(t) = &result {
            let call = CachedCall::new(
                key.clone(),
                t.iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                    .collect(),
                rec.usage,
                rec.response_model.clone(),
                rec.json_mode,
            );
            self.store(label, &call, "the tiers are still written");
        }
        (result, rec)
    }
}

/// The cached tiers, if they are exactly the step's targets.
fn cached_tiers(c: &CachedCall, targets: &[Tier]) -> Option<BTreeMap<Tier, String>> {
    let t: BTreeMap<Tier, String> = c
        .tiers
        .iter()
        .filter_map(|(k, v)| Some((k.parse::<Tier>().ok()?, v.clone())))
        .collect();
    (t.len() == targets.len() && targets.iter().all(|x| t.contains_key(x))).then_some(t)
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, VecDeque};

    use super::super::input::sample;
    use super::super::transport::{HttpReply, TransportError};
    use super::*;

    /// An in-process endpoint: scripted replies per episode, then deterministic tiers.
    #[derive(Default)]
    struct Fake {
        script: Mutex<HashMap<String, VecDeque<Result<HttpReply, TransportError>>>>,
        bodies: Mutex<Vec<serde_json::Value>>,
    }

    fn ok(content: &str) -> HttpReply {
        HttpReply {
            status: 200,
            retry_after: None,
            body: serde_json::json!({
                "model": "fake-1",
                "choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20}
            })
            .to_string(),
        }
    }

    fn status(code: u16, body: &str, after: Option<u64>) -> Result<HttpReply, TransportError> {
        Ok(HttpReply {
            status: code,
            retry_after: after.map(Duration::from_secs),
            body: body.to_owned(),
        })
    }

    impl Fake {
        fn then(&self, episode: &str, r: Result<HttpReply, TransportError>) -> &Self {
            self.script
                .lock()
                .unwrap()
                .entry(episode.to_owned())
                .or_default()
                .push_back(r);
            self
        }
        fn requests(&self) -> usize {
            self.bodies.lock().unwrap().len()
        }
        fn user(&self, k: usize) -> String {
            self.bodies.lock().unwrap()[k]["messages"][1]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    }

    impl Transport for Fake {
        fn post(&self, body: &str) -> Result<HttpReply, TransportError> {
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            let user = v["messages"][1]["content"].as_str().unwrap().to_owned();
            self.bodies.lock().unwrap().push(v);
            let episode = user[8..].split(':').next().unwrap().to_owned();
            if let Some(r) = self
                .script
                .lock()
                .unwrap()
                .get_mut(&episode)
                .and_then(VecDeque::pop_front)
            {
                return r;
            }
            // Deterministic tiers naming the episode and the tier they read.
            let from = user
                .split("<source tier=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let want: Vec<&str> = ["dense", "compact", "anchor"]
                .into_iter()
                .filter(|t| user.contains(&format!("\"{t}\": \"…\"")))
                .collect();
            let tiers: serde_json::Map<String, serde_json::Value> = want
                .iter()
                .map(|t| ((*t).to_owned(), format!("{episode} {t} from {from}").into()))
                .collect();
            Ok(ok(&serde_json::json!({ "tiers": tiers }).to_string()))
        }
    }

    #[derive(Default)]
    struct Waits(Mutex<Vec<Duration>>);
    impl Sleeper for Waits {
        fn sleep(&self, d: Duration) {
            self.0.lock().unwrap().push(d);
        }
    }

    fn inputs(n: usize) -> Vec<EpisodeInput> {
        (0..n)
            .map(|k| sample(&format!("E{k}"), &format!("user: task {k}")))
            .collect()
    }

    fn opts(strategy: HistorianStrategy) -> GenerateOptions {
        GenerateOptions {
            concurrency: 1,
            ..GenerateOptions::new("fake", strategy)
        }
    }

    fn go(
        inputs: &[EpisodeInput],
        o: &GenerateOptions,
        t: &Fake,
        cache: Option<&HistorianCache>,
        waits: &Waits,
    ) -> (RunReport, Vec<Outcome>) {
        let mut seen = Vec::new();
        let r = generate(inputs, o, t, cache, waits, &Quiet, &mut |x| {
            seen.push(x.clone())
        });
        seen.sort_by_key(Outcome::index);
        (r, seen)
    }

    fn done(o: &Outcome) -> &EpisodeResult {
        match o {
            Outcome::Done(r) => r,
            other => panic!("not done: {other:?}"),
        }
    }

    #[test]
    fn source_is_one_call_per_episode_and_a_second_run_sends_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HistorianCache::new(dir.path());
        let fake = Fake::default();
        let ins = inputs(3);
        let o = GenerateOptions {
            concurrency: 3,
            ..opts(HistorianStrategy::Source)
        };
        let (r, out) = go(&ins, &o, &fake, Some(&cache), &Waits::default());
        assert_eq!(fake.requests(), 3);
        assert_eq!(
            (r.generated, r.from_cache, r.requests, r.retries),
            (3, 0, 3, 0)
        );
        assert_eq!(r.this_run.input_tokens, 300);
        let e1 = done(&out[1]);
        let texts: Vec<(&str, &str)> = e1
            .tiers
            .iter()
            .map(|t| (t.tier.as_str(), t.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            [
                ("dense", "E1 dense from full"),
                ("compact", "E1 compact from full"),
                ("anchor", "E1 anchor from full")
            ]
        );
        // Every request asked for JSON mode and named the model.
        assert!(fake
            .bodies
            .lock()
            .unwrap()
            .iter()
            .all(|b| b["response_format"]["type"] == "json_object" && b["model"] == "fake"));

        let fresh = Fake::default();
        let (r2, out2) = go(&ins, &o, &fresh, Some(&cache), &Waits::default());
        assert_eq!(fresh.requests(), 0, "generate once");
        assert_eq!((r2.generated, r2.from_cache, r2.requests), (0, 3, 0));
        assert_eq!(r2.this_run, UsageTotals::default());
        assert_eq!(r2.all_tiers, r.all_tiers, "the tiers' cost is remembered");
        for (a, b) in out.iter().zip(&out2) {
            assert_eq!(done(a).tiers, done(b).tiers);
        }
        // --refresh asks again.
        let again = Fake::default();
        let o3 = GenerateOptions { refresh: true, ..o };
        go(&ins, &o3, &again, Some(&cache), &Waits::default());
        assert_eq!(again.requests(), 3);
    }

    #[test]
    fn cascade_chains_three_calls_each_reading_the_tier_above() {
        let fake = Fake::default();
        let (r, out) = go(
            &inputs(1),
            &opts(HistorianStrategy::Cascade),
            &fake,
            None,
            &Waits::default(),
        );
        assert_eq!(r.requests, 3);
        assert!(fake
            .user(1)
            .contains("<source tier=\"dense\">\nE0 dense from full\n</source>"));
        assert!(fake
            .user(2)
            .contains("<source tier=\"compact\">\nE0 compact from dense\n</source>"));
        let e = done(&out[0]);
        assert_eq!(e.calls.len(), 3);
        assert_eq!(e.tiers[2].text, "E0 anchor from compact");
        assert_eq!(e.tiers[2].from, Tier::Compact);
        assert_ne!(e.tiers[0].call, e.tiers[1].call);
    }

    #[test]
    fn rate_limits_and_server_errors_are_retried_with_backoff_honouring_retry_after() {
        let fake = Fake::default();
        fake.then(
            "E0",
            status(
                429,
                r#"{"error":{"message":"Rate limit reached"}}"#,
                Some(3),
            ),
        )
        .then("E0", status(503, "overloaded", None))
        .then("E0", Err(TransportError::Timeout(Duration::from_secs(1))));
        let waits = Waits::default();
        let o = opts(HistorianStrategy::Source);
        let (r, out) = go(&inputs(1), &o, &fake, None, &waits);
        assert!(matches!(out[0], Outcome::Done(_)));
        assert_eq!((r.requests, r.retries), (4, 3));
        let w = waits.0.lock().unwrap().clone();
        assert_eq!(w.len(), 3);
        assert!(
            w[0] >= Duration::from_secs(3),
            "Retry-After is a floor: {w:?}"
        );
        assert!(
            w[1] >= Duration::from_secs(1) && w[2] >= Duration::from_secs(2),
            "{w:?}"
        );
        // The same run waits the same way again (deterministic jitter).
        let fake2 = Fake::default();
        fake2
            .then("E0", status(429, "", Some(3)))
            .then("E0", status(503, "", None))
            .then("E0", Err(TransportError::Timeout(Duration::from_secs(1))));
        let waits2 = Waits::default();
        go(&inputs(1), &o, &fake2, None, &waits2);
        assert_eq!(*waits2.0.lock().unwrap(), w);
    }

    #[test]
    fn retries_end_and_the_episode_fails_alone_then_resumes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HistorianCache::new(dir.path());
        let fake = Fake::default();
        for _ in 0..3 {
            fake.then("E1", status(500, r#"{"error":{"message":"boom"}}"#, None));
        }
        let o = GenerateOptions {
            retry: RetryPolicy {
                max_retries: 2,
                ..RetryPolicy::default()
            },
            ..opts(HistorianStrategy::Source)
        };
        let ins = inputs(3);
        let (r, out) = go(&ins, &o, &fake, Some(&cache), &Waits::default());
        assert_eq!(r.failed.len(), 1);
        assert_eq!(
            r.failed[0].error,
            "E1 (full>dense+compact+anchor): gave up after 3 attempts: HTTP 500: boom"
        );
        assert!(matches!(out[0], Outcome::Done(_)) && matches!(out[2], Outcome::Done(_)));
        // The next run asks only for the episode that failed.
        let fake2 = Fake::default();
        let (r2, _) = go(&ins, &o, &fake2, Some(&cache), &Waits::default());
        assert_eq!(fake2.requests(), 1);
        assert!(fake2.user(0).starts_with("Episode E1:"));
        assert_eq!((r2.from_cache, r2.generated, r2.failed.len()), (2, 1, 0));
    }

    #[test]
    fn a_refused_response_format_is_dropped_for_the_rest_of_the_run() {
        let fake = Fake::default();
        fake.then("E0", status(400, r#"{"error":{"message":"'response_format' of type 'json_object' is not supported"}}"#, None));
        let (r, out) = go(
            &inputs(2),
            &opts(HistorianStrategy::Source),
            &fake,
            None,
            &Waits::default(),
        );
        assert!(r.json_mode_dropped);
        assert_eq!(r.retries, 1, "the repeat without it is one more request");
        let b = fake.bodies.lock().unwrap();
        assert!(b[0].get("response_format").is_some());
        assert!(b[1..].iter().all(|x| x.get("response_format").is_none()));
        assert!(done(&out[1]).calls.iter().all(|c| !c.json_mode));
    }

    #[test]
    fn a_malformed_answer_is_a_clear_episode_error_and_is_not_cached() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HistorianCache::new(dir.path());
        let fake = Fake::default();
        fake.then("E0", Ok(ok("Sure! Here are your tiers: {\"tiers\": ")));
        fake.then("E1", Ok(ok(r#"{"tiers": {"dense": "d", "compact": "c"}}"#)));
        let (r, _) = go(
            &inputs(2),
            &opts(HistorianStrategy::Source),
            &fake,
            Some(&cache),
            &Waits::default(),
        );
        let errors: Vec<&str> = r.failed.iter().map(|f| f.error.as_str()).collect();
        assert!(
            errors[0].starts_with("E0 (full>dense+compact+anchor): the answer is not JSON"),
            "{errors:?}"
        );
        assert!(errors[0].contains("Sure! Here are"), "{errors:?}");
        assert!(errors[1].ends_with("missing anchor"), "{errors:?}");
        assert_eq!(
            std::fs::read_dir(dir.path())
                .map(|d| d.count())
                .unwrap_or(0),
            0
        );
        // The unusable answers were paid for: this run's bill has them, the tiers' has nothing.
        assert_eq!((r.this_run.calls, r.this_run.input_tokens), (2, 200));
        assert_eq!(r.all_tiers.calls, 0);
    }

    #[test]
    fn a_rejected_key_stops_the_run() {
        let fake = Fake::default();
        fake.then(
            "E0",
            status(
                401,
                r#"{"error":{"message":"Incorrect API key provided"}}"#,
                None,
            ),
        );
        let (r, out) = go(
            &inputs(3),
            &opts(HistorianStrategy::Source),
            &fake,
            None,
            &Waits::default(),
        );
        assert_eq!(fake.requests(), 1);
        assert_eq!(
            r.aborted.as_deref(),
            Some("the endpoint answered HTTP 401: Incorrect API key provided")
        );
        assert_eq!((r.failed.len(), r.skipped), (1, 2));
        assert!(matches!(out[2], Outcome::Skipped { .. }));
    }

    #[test]
    fn an_unreachable_endpoint_stops_the_run_after_its_retries() {
        let fake = Fake::default();
        for _ in 0..3 {
            fake.then(
                "E0",
                Err(TransportError::Connection("Connection refused".into())),
            );
        }
        let o = GenerateOptions {
            retry: RetryPolicy {
                max_retries: 2,
                ..RetryPolicy::default()
            },
            ..opts(HistorianStrategy::Source)
        };
        let (r, _) = go(&inputs(3), &o, &fake, None, &Waits::default());
        assert_eq!(fake.requests(), 3);
        assert_eq!(
            r.aborted.as_deref(),
            Some("the endpoint is unreachable (gave up after 3 attempts: Connection refused)")
        );
        assert_eq!(r.skipped, 2);
    }

    #[test]
    fn a_retry_after_beyond_the_limit_fails_the_call_instead_of_stalling() {
        let fake = Fake::default();
        fake.then("E0", status(429, "", Some(3600)));
        let waits = Waits::default();
        let (r, _) = go(
            &inputs(1),
            &opts(HistorianStrategy::Source),
            &fake,
            None,
            &waits,
        );
        assert!(
            r.failed[0].error.contains("asks to wait 3600s"),
            "{}",
            r.failed[0].error
        );
        assert!(waits.0.lock().unwrap().is_empty());
    }
}
