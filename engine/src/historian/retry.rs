//! Which replies are worth another attempt, and how long to wait before it.
//!
//! Retried: 408, 409, 425, 429 and every 5xx (and 529, "overloaded"), and requests that got no
//! reply (timeouts, refused or broken connections). The wait is exponential with jitter: attempt
//! *n* waits `d/2 + jitter·d/2` with `d = min(cap, base·2ⁿ)`, the jitter drawn from a generator
//! seeded by the call's cache key, so a run's waits are the same every time (and tests can check
//! them) while concurrent calls still spread out. A `Retry-After` from the server is a floor;
//! one longer than `max_retry_after` ends the call instead of stalling the run.
//!
//! Not retried: a 400/422 that refuses `response_format` (the call is repeated once without it, and
//! the rest of the run leaves it out), 401/403/404 (the key, the permission or the model/endpoint
//! is wrong for every episode alike: the run stops), any other 4xx (the episode fails with the
//! server's message). A redirect (3xx) is never followed: it stops the run. A connection that
//! still fails after the last retry stops the run too.

use std::time::Duration;

use super::transport::HttpReply;
use crate::rng::Rng;

/// Retry settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts after the first.
    pub max_retries: u32,
    pub base: Duration,
    pub cap: Duration,
    /// A `Retry-After` longer than this fails the call.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 5,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
            max_retry_after: Duration::from_secs(600),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0 for the first retry) of the call seeded `seed`.
    pub fn backoff(&self, retry: u32, seed: u64, retry_after: Option<Duration>) -> Duration {
        let d = self
            .base
            .saturating_mul(1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX))
            .min(self.cap);
        let mut rng = Rng::new(seed ^ u64::from(retry).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let half = d / 2;
        let jittered = half + half.mul_f64(rng.unit());
        retry_after.map_or(jittered, |r| r.max(jittered))
    }
}

/// What to do with a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx: parse it.
    Success,
    /// Try again after a backoff (`Retry-After`, when the server sent one).
    Retry(Option<Duration>),
    /// The endpoint does not take `response_format`: repeat without it.
    DropJsonMode,
    /// This episode fails; the others go on.
    Fail,
    /// Every call would fail the same way: stop the run.
    Abort,
}

/// Classify a reply to a request that did (`json_mode`) or did not carry `response_format`.
pub fn classify(reply: &HttpReply, json_mode: bool) -> Verdict {
    match reply.status {
        200..=299 => Verdict::Success,
        400 | 422 if json_mode && refuses_response_format(&reply.body) => Verdict::DropJsonMode,
        // A redirect would send the episode's text (and the key) where the user did not say:
        // never followed, and every call would meet it.
        300..=399 | 401 | 403 | 404 => Verdict::Abort,
        408 | 409 | 425 | 429 | 500..=599 => Verdict::Retry(reply.retry_after),
        _ => Verdict::Fail,
    }
}

/// Whether an error body is about `response_format` / JSON mode (OpenAI, vLLM, llama.cpp and
/// gateways word it differently; all name the parameter or the mode).
fn refuses_response_format(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    [
        "response_format",
        "json_object",
        "json mode",
        "response format",
    ]
    .iter()
    .any(|k| b.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, body: &str) -> HttpReply {
        HttpReply {
            status,
            retry_after: None,
            body: body.to_owned(),
        }
    }

    #[test]
    fn statuses_are_classified() {
        assert_eq!(classify(&reply(200, ""), true), Verdict::Success);
        assert_eq!(classify(&reply(429, ""), true), Verdict::Retry(None));
        for s in [408, 500, 502, 503, 504, 529] {
            assert_eq!(classify(&reply(s, ""), true), Verdict::Retry(None), "{s}");
        }
        for s in [301, 302, 307, 308, 401, 403, 404] {
            assert_eq!(classify(&reply(s, ""), true), Verdict::Abort, "{s}");
        }
        let rf = r#"{"error":{"message":"Invalid parameter: 'response_format' of type 'json_object' is not supported with this model.","param":"response_format"}}"#;
        assert_eq!(classify(&reply(400, rf), true), Verdict::DropJsonMode);
        // Without JSON mode a 400 is the episode's own problem (e.g. its context is too long).
        assert_eq!(classify(&reply(400, rf), false), Verdict::Fail);
        let long = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#;
        assert_eq!(classify(&reply(400, long), true), Verdict::Fail);
        let with_after = HttpReply {
            retry_after: Some(Duration::from_secs(7)),
            ..reply(503, "")
        };
        assert_eq!(
            classify(&with_after, true),
            Verdict::Retry(Some(Duration::from_secs(7)))
        );
    }

    #[test]
    fn backoff_grows_is_capped_jittered_deterministically_and_honours_retry_after() {
        let p = RetryPolicy::default();
        let waits: Vec<Duration> = (0..8).map(|n| p.backoff(n, 42, None)).collect();
        assert_eq!(
            waits,
            (0..8).map(|n| p.backoff(n, 42, None)).collect::<Vec<_>>()
        );
        for (n, w) in waits.iter().enumerate() {
            let d = (p.base * 2u32.pow(n as u32)).min(p.cap);
            assert!(
                *w >= d / 2 && *w <= d,
                "retry {n}: {w:?} not in [{:?}, {d:?}]",
                d / 2
            );
        }
        assert!(waits[7] <= p.cap);
        // Two calls do not wait in lockstep.
        assert_ne!(p.backoff(2, 1, None), p.backoff(2, 2, None));
        // The server's Retry-After is a floor, not a ceiling.
        assert_eq!(
            p.backoff(0, 42, Some(Duration::from_secs(30))),
            Duration::from_secs(30)
        );
        assert!(p.backoff(6, 42, Some(Duration::from_millis(1))) >= Duration::from_secs(30));
        // No overflow on absurd attempt numbers.
        assert!(p.backoff(500, 1, None) <= p.cap);
    }
}
