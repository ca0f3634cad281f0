//! The historian's transport over HTTP: a blocking `ureq` agent (rustls) posting to the chat
//! completions URL, with a global timeout per request. Statuses are data here, not errors, so
//! the engine sees every 4xx/5xx body and `Retry-After`. Redirects are never followed (one to
//! another host would carry the episode's text, and an answer from there would become tiers):
//! a 3xx is an error naming where it pointed. An answer above [`MAX_BODY_BYTES`] is an error that
//! says so. The API key goes into the `Authorization` header and nowhere else; every body and
//! error message is redacted before it leaves this module.

use std::time::{Duration, SystemTime};

use tierscope_engine::historian::transport::{
    display_url, redact, HttpReply, Transport, TransportError,
};

/// Bodies larger than this are cut (a completion of three tiers is a few kilobytes).
const MAX_BODY_BYTES: u64 = 8 * 1024 * 1024;

pub struct HttpTransport {
    agent: ureq::Agent,
    url: String,
    key: Option<String>,
    timeout: Duration,
}

impl HttpTransport {
    pub fn new(url: &str, key: Option<String>, timeout: Duration) -> HttpTransport {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(timeout))
            .user_agent(concat!("tierscope/", env!("CARGO_PKG_VERSION")))
            .build();
        HttpTransport {
            agent: config.into(),
            url: url.to_owned(),
            key: key.filter(|k| !k.is_empty()),
            timeout,
        }
    }

    fn clean(&self, text: &str) -> String {
        redact(text, self.key.as_deref())
    }
}

impl Transport for HttpTransport {
    fn post(&self, body: &str) -> Result<HttpReply, TransportError> {
        let mut req = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json");
        if let Some(k) = &self.key {
            req = req.header("Authorization", &format!("Bearer {k}"));
        }
        match req.send(body) {
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                let header = |name: &str| {
                    resp.headers()
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned)
                };
                if (300..400).contains(&status) {
                    let to = header("location").unwrap_or_else(|| "nowhere".to_owned());
                    return Err(TransportError::Fatal(self.clean(&format!(
                        "the endpoint redirects (HTTP {status}) to {}; redirects are not \
                         followed: give the final URL as --endpoint",
                        tierscope_engine::text::clip_chars(&display_url(&to), 200)
                    ))));
                }
                let retry_after =
                    header("retry-after").and_then(|v| parse_retry_after(&v, SystemTime::now()));
                if let Some(n) = header("content-length")
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .filter(|n| *n > MAX_BODY_BYTES)
                {
                    return Err(too_large(Some(n)));
                }
                let text = resp
                    .body_mut()
                    .with_config()
                    .limit(MAX_BODY_BYTES)
                    .read_to_string()
                    .map_err(|e| match e {
                        ureq::Error::BodyExceedsLimit(_) => too_large(None),
                        e => self.error(e),
                    })?;
                Ok(HttpReply {
                    status,
                    retry_after,
                    body: self.clean(&text),
                })
            }
            Err(e) => Err(self.error(e)),
        }
    }
}

impl HttpTransport {
    fn error(&self, e: ureq::Error) -> TransportError {
        use ureq::Error as E;
        match e {
            E::Timeout(_) => TransportError::Timeout(self.timeout),
            E::BadUri(_) | E::InvalidProxyUrl | E::Tls(_) | E::Rustls(_) => {
                TransportError::Fatal(self.clean(&e.to_string()))
            }
            other => TransportError::Connection(self.clean(&other.to_string())),
        }
    }
}

/// An answer above the limit: not retried (the server would answer the same), and not called
/// unreachable.
fn too_large(size: Option<u64>) -> TransportError {
    TransportError::Fatal(match size {
        Some(n) => format!("answer too large ({n} bytes, limit {MAX_BODY_BYTES})"),
        None => format!("answer too large (over the limit of {MAX_BODY_BYTES} bytes)"),
    })
}

/// `Retry-After`: delay seconds (integer, or a decimal as some gateways send), or an HTTP date.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(at.timestamp()).ok()?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480); // 2015-10-21 07:28:00
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after(" 1.5 ", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        // A date in the past means now.
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-3", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }
}
