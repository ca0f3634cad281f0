//! One call of a run, whatever it asks for (an episode's tiers, a simulated compaction's
//! summary): the cache first, else the transport with retries ([`super::retry`]), the answer
//! parsed by the caller's rule and stored once it is usable.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::cache::{CacheKey, CachedCall, HistorianCache, Lookup};
use super::response::parse_completion;
use super::retry::{classify, Verdict};
use super::run::{CallRecord, Events, GenerateOptions, Run, Sleeper, STOPPED};
use super::transport::{Transport, TransportError};
use crate::text::clip_chars;

impl<'a> Run<'a> {
    pub(super) fn new(
        opts: &'a GenerateOptions,
        transport: &'a dyn Transport,
        cache: Option<&'a HistorianCache>,
        sleeper: &'a dyn Sleeper,
        events: &'a dyn Events,
    ) -> Run<'a> {
        Run {
            opts,
            transport,
            cache,
            sleeper,
            events,
            json_ok: AtomicBool::new(opts.json_mode),
            json_dropped: AtomicBool::new(false),
            abort: Mutex::new(None),
            aborting: AtomicBool::new(false),
        }
    }
}

impl Run<'_> {
    /// Stop the run: calls not started are skipped, calls in flight end at their next attempt.
    pub(super) fn stop(&self, why: String) {
        if let Ok(mut a) = self.abort.lock() {
            a.get_or_insert(why);
        }
        self.aborting.store(true, Ordering::Relaxed);
    }

    /// Why the run stopped, if it did.
    pub(super) fn aborted(&self) -> Option<String> {
        self.abort.lock().map(|a| a.clone()).unwrap_or(None)
    }

    /// The cached answer under `key` (none with `refresh`); an unusable file is said and
    /// treated as missing. `label` names the call in messages.
    pub(super) fn cached(&self, label: &str, key: &CacheKey) -> Option<CachedCall> {
        let cache = self.cache.filter(|_| !self.opts.refresh)?;
        match cache.get(key) {
            Lookup::Hit(c) => Some(*c),
            Lookup::Unusable(p) => {
                self.events.note(&format!(
                    "{label}: cache file {} is unusable; asking again",
                    p.display()
                ));
                None
            }
            Lookup::Miss => None,
        }
    }

    /// Keep an answer (`still`: what happens without it, for the message when it cannot be
    /// written).
    pub(super) fn store(&self, label: &str, call: &CachedCall, still: &str) {
        let Some(cache) = self.cache else { return };
        if let Err(e) = cache.put(call) {
            self.events.note(&format!(
                "{label}: {e}: {}; {still}, but a rerun will ask again",
                e.source
            ));
        }
    }

    /// Send the request `body` builds (with or without `response_format`) until it gets an
    /// answer `parse` accepts, an error not worth retrying, or no retries left. The answer's
    /// usage, model and JSON mode go on `rec` even when `parse` refuses it (it was paid for).
    pub(super) fn send<T>(
        &self,
        label: &str,
        key: &CacheKey,
        rec: &mut CallRecord,
        body: &dyn Fn(bool) -> String,
        parse: &dyn Fn(&str) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut retries = 0u32;
        loop {
            if self.aborting.load(Ordering::Relaxed) {
                return Err(STOPPED.to_owned());
            }
            let json = self.json_ok.load(Ordering::Relaxed);
            let body = body(json);
            rec.requests += 1;
            let mut unreachable = false;
            let (why, retry_after) = match self.transport.post(&body) {
                Err(TransportError::Fatal(m)) => {
                    self.stop(m.clone());
                    return Err(m);
                }
                Err(e) => {
                    unreachable = matches!(e, TransportError::Connection(_));
                    (e.to_string(), None)
                }
                Ok(reply) => match classify(&reply, json) {
                    Verdict::Success => {
                        let c = parse_completion(&reply.body).map_err(|e| e.to_string())?;
                        // An unusable answer was still paid for: its usage stays on the record.
                        rec.usage = c.usage;
                        rec.json_mode = json;
                        rec.response_model = c.model.clone();
                        return parse(&c.content);
                    }
                    Verdict::DropJsonMode => {
                        if !self.json_dropped.swap(true, Ordering::Relaxed) {
                            self.events.note(
                                "the endpoint refuses response_format json_object; asking without it \
                                 (answers are still parsed strictly)",
                            );
                        }
                        self.json_ok.store(false, Ordering::Relaxed);
                        continue;
                    }
                    Verdict::Fail => return Err(http_error(reply.status, &reply.body)),
                    Verdict::Abort => {
                        let e = http_error(reply.status, &reply.body);
                        self.stop(format!("the endpoint answered {e}"));
                        return Err(e);
                    }
                    Verdict::Retry(after) => (http_error(reply.status, &reply.body), after),
                },
            };
            if let Some(a) = retry_after.filter(|a| *a > self.opts.retry.max_retry_after) {
                return Err(format!(
                    "{why}; the server asks to wait {}s (Retry-After), longer than {}s",
                    a.as_secs(),
                    self.opts.retry.max_retry_after.as_secs()
                ));
            }
            if retries >= self.opts.retry.max_retries {
                let e = format!("gave up after {} attempts: {why}", rec.requests);
                // An endpoint no retry could reach is unreachable for every call alike.
                if unreachable {
                    self.stop(format!("the endpoint is unreachable ({e})"));
                }
                return Err(e);
            }
            let wait = self.opts.retry.backoff(retries, key.seed(), retry_after);
            self.events.retrying(label, &why, wait);
            self.sleeper.sleep(wait);
            retries += 1;
        }
    }
}

/// `HTTP 429: Rate limit reached …`: the server's own message when its body has the usual
/// `{"error": {"message": …}}`, else the start of the body.
pub(super) fn http_error(status: u16, body: &str) -> String {
    let msg = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            e.get("message")
                .and_then(|m| m.as_str())
                .or_else(|| e.as_str())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| body.trim().to_owned());
    let msg = clip_chars(crate::text::first_line(&msg), 200);
    if msg.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {msg}")
    }
}
