//! The historian's one network operation, behind a trait: POST a JSON body to the chat
//! completions endpoint and hand back the status, the `Retry-After` delay and the body. The binary
//! implements it over HTTP; tests use a local mock server or an in-process fake.
//!
//! A transport owns the credential. Everything it returns (bodies, error messages) has the
//! credential taken out with [`redact`] first, because some servers echo what they were sent.

use std::time::Duration;

/// An HTTP reply of any status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpReply {
    pub status: u16,
    /// From the `Retry-After` header (seconds or an HTTP date), when present.
    pub retry_after: Option<Duration>,
    pub body: String,
}

/// A request that got no HTTP reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// No reply within the timeout: worth retrying.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The connection failed or broke (refused, reset, DNS): worth retrying.
    #[error("{0}")]
    Connection(String),
    /// The request cannot succeed as configured (a bad URL, TLS set-up): not retried.
    #[error("{0}")]
    Fatal(String),
}

/// POST one chat completions request.
pub trait Transport: Sync {
    fn post(&self, body: &str) -> Result<HttpReply, TransportError>;
}

/// `text` with every occurrence of `secret` replaced by `[redacted]` (nothing to do for an empty
/// or missing secret).
pub fn redact(text: &str, secret: Option<&str>) -> String {
    match secret.filter(|s| !s.is_empty()) {
        Some(s) => text.replace(s, "[redacted]"),
        None => text.to_owned(),
    }
}

/// The chat completions URL for what a user typed: a full `…/chat/completions` URL as is, a base
/// ending in `/v1` (OpenAI, vLLM, llama.cpp, Ollama's `http://localhost:11434/v1`) with
/// `/chat/completions`, a bare server address with `/v1/chat/completions`. The path is joined
/// before the query and the fragment (RFC 3986: the first `?` starts the query, the first `#` the
/// fragment), so Azure's `…/v1?api-version=…` keeps its query.
pub fn completions_url(endpoint: &str) -> String {
    let e = endpoint.trim();
    let cut = e.find(['?', '#']).unwrap_or(e.len());
    let (base, tail) = e.split_at(cut);
    let base = base.trim_end_matches('/');
    let path = if base.ends_with("/chat/completions") {
        base.to_owned()
    } else if base.ends_with("/v1") || base.rsplit('/').next().is_some_and(is_version_segment) {
        format!("{base}/chat/completions")
    } else {
        format!("{base}/v1/chat/completions")
    };
    format!("{path}{tail}")
}

/// `v1`, `v4` (some gateways version their OpenAI-compatible path differently).
fn is_version_segment(s: &str) -> bool {
    s.len() >= 2 && s.starts_with('v') && s[1..].chars().all(|c| c.is_ascii_digit())
}

/// A URL for printing: user info (`user:password@`) and the query string removed, since either
/// may carry a credential.
pub fn display_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let host = host.rsplit('@').next().unwrap_or(host);
    match scheme {
        Some(s) => format!("{s}://{host}{path}"),
        None => format!("{host}{path}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_become_the_completions_url() {
        for (given, want) in [
            (
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "http://localhost:11434/v1",
                "http://localhost:11434/v1/chat/completions",
            ),
            (
                "http://127.0.0.1:8080",
                "http://127.0.0.1:8080/v1/chat/completions",
            ),
            (
                "http://h/v1/chat/completions",
                "http://h/v1/chat/completions",
            ),
            (
                "https://gw.example/api/v4",
                "https://gw.example/api/v4/chat/completions",
            ),
            // Azure: the query stays a query.
            (
                "https://r.openai.azure.com/openai/v1?api-version=preview",
                "https://r.openai.azure.com/openai/v1/chat/completions?api-version=preview",
            ),
            (
                "https://r.openai.azure.com/openai/v1/?api-version=2024-10-21&x=a/b",
                "https://r.openai.azure.com/openai/v1/chat/completions?api-version=2024-10-21&x=a/b",
            ),
            (
                "http://h:8080?k=v/v1",
                "http://h:8080/v1/chat/completions?k=v/v1",
            ),
            (
                "http://h/v1/chat/completions?api-version=1#top",
                "http://h/v1/chat/completions?api-version=1#top",
            ),
        ] {
            assert_eq!(completions_url(given), want, "{given}");
        }
    }

    #[test]
    fn printed_urls_carry_no_credentials() {
        assert_eq!(
            display_url("https://user:sk-x@gw.example/v1/chat/completions?key=sk-y"),
            "https://gw.example/v1/chat/completions"
        );
        assert_eq!(
            display_url("http://127.0.0.1:9/v1"),
            "http://127.0.0.1:9/v1"
        );
        assert_eq!(
            redact("Bearer sk-abc and sk-abc", Some("sk-abc")),
            "Bearer [redacted] and [redacted]"
        );
        assert_eq!(redact("x", Some("")), "x");
    }
}
