//! The model endpoint of `tiers generate` as a hostile or unusual server would have it, against
//! mock servers on 127.0.0.1: a redirect (to another host) is never followed and nothing it
//! would have answered becomes tiers; an endpoint with a query string (Azure's `api-version`)
//! keeps its query after the joined path; an oversized answer is named as such, not as an
//! unreachable endpoint; absurd usage figures neither wrap nor print as negative.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::historian_common::mock::{Fault, MockServer};

const BIN: &str = env!("CARGO_BIN_EXE_tierscope");
const M1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/M1.json");

struct Run {
    dir: tempfile::TempDir,
}

impl Run {
    fn new() -> Run {
        Run {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    /// `tiers generate M1 --episode E0 --endpoint ENDPOINT …` + `extra`, no key.
    fn generate(&self, endpoint: &str, extra: &[&str]) -> Output {
        let out = self.out();
        let cache = self.dir.path().join("cache");
        Command::new(BIN)
            .args(["tiers", "generate", "--endpoint", endpoint])
            .args(["--model", "mock-historian", "--episode", "E0"])
            .args(["--retry-base-ms", "1", "--max-retries", "2"])
            .arg("--out")
            .arg(&out)
            .arg("--cache-dir")
            .arg(cache.join("historian"))
            .args(extra)
            .arg(M1)
            .env("TIERSCOPE_CACHE_DIR", &cache)
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// The tiers sidecars written.
    fn sidecars(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.out()) {
            Ok(rd) => rd
                .map(|e| e.unwrap().path())
                .filter(|p| p.to_string_lossy().ends_with(".tiers.json"))
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_redirect_to_another_host_is_not_followed_and_nothing_is_stored() {
    let elsewhere = MockServer::start();
    let endpoint = MockServer::start();
    // Another host: the same machine by another name and port.
    let to = elsewhere
        .url()
        .replace("127.0.0.1", "localhost")
        .replace("/v1", "/v1/chat/completions");
    for code in [302, 307] {
        let run = Run::new();
        endpoint.fault("E0", Fault::Redirect(code, to.clone()));
        let o = run.generate(&endpoint.url(), &[]);
        let err = stderr(&o);
        assert!(!o.status.success(), "HTTP {code}: {err}");
        assert!(
            err.contains(&format!("the endpoint redirects (HTTP {code}) to {to}"))
                && err.contains("redirects are not followed"),
            "HTTP {code}: {err}"
        );
        assert!(!err.contains("unreachable"), "{err}");
        assert!(run.sidecars().is_empty(), "HTTP {code}: tiers were stored");
    }
    assert!(
        elsewhere.received().is_empty(),
        "the redirect was followed: {:?}",
        elsewhere.received()
    );
    // One request per run: a redirect is not retried.
    assert_eq!(endpoint.received().len(), 2);
}

#[test]
fn an_endpoint_with_a_query_keeps_it_after_the_joined_path() {
    let mock = MockServer::start();
    let run = Run::new();
    let endpoint = format!("{}?api-version=2024-10-21", mock.url());
    let o = run.generate(&endpoint, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = mock.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, "/v1/chat/completions");
    assert_eq!(got[0].query.as_deref(), Some("api-version=2024-10-21"));
    assert_eq!(run.sidecars().len(), 1);
}

#[test]
fn an_oversized_answer_is_called_too_large_not_unreachable() {
    const LIMIT: usize = 8 * 1024 * 1024;
    for (with_length, want) in [
        (
            true,
            format!("answer too large ({} bytes, limit {LIMIT})", LIMIT + 1),
        ),
        (
            false,
            format!("answer too large (over the limit of {LIMIT} bytes)"),
        ),
    ] {
        let mock = MockServer::start();
        let run = Run::new();
        mock.fault("E0", Fault::Huge(LIMIT + 1, with_length));
        let o = run.generate(&mock.url(), &[]);
        let err = stderr(&o);
        assert!(!o.status.success(), "{err}");
        assert!(err.contains(&want), "length {with_length}: {err}");
        assert!(!err.contains("unreachable"), "{err}");
        // Not retried: the server would answer the same.
        assert_eq!(mock.received().len(), 1, "{err}");
        assert!(run.sidecars().is_empty());
    }
}

#[test]
fn absurd_usage_saturates_and_an_absurd_cost_is_said_not_printed_as_inf() {
    let mock = MockServer::start();
    let run = Run::new();
    mock.fault("E0", Fault::Usage(u64::MAX, u64::MAX));
    let o = run.generate(&mock.url(), &["--price", "1e300,1e300"]);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains(
            "1 call, 18,446,744,073,709,551,615 tokens in, 18,446,744,073,709,551,615 out"
        ),
        "{out}"
    );
    assert!(!out.contains("-1"), "{out}");
    assert!(
        out.contains(
            "the cost is not a finite amount (the usage figures or the prices are absurd)"
        ),
        "{out}"
    );
    assert!(!out.contains("inf"), "{out}");

    // JSON: the dollars are null and the summary says why; the sidecar is still written.
    let again = run.generate(&mock.url(), &["--price", "1e300,1e300", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert!(v["all_tiers_dollars"].is_null(), "{v}");
    assert_eq!(
        v["cost_error"],
        "the cost is not a finite amount (the usage figures or the prices are absurd)"
    );
    assert_eq!(v["report"]["all_tiers"]["input_tokens"], u64::MAX);
    let sidecars = run.sidecars();
    assert_eq!(sidecars.len(), 1);
    // The sidecar records the usage, and no dollars rather than an amount that is not one.
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sidecars[0]).unwrap()).unwrap();
    let usage = &side["episodes"][0]["tiers"]["dense"]["usage"];
    assert_eq!(usage["input_tokens"], u64::MAX, "{side}");
    assert!(usage["dollars"].is_null(), "{usage}");
}
