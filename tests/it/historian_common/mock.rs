//! A mock OpenAI-compatible `/v1/chat/completions` server on 127.0.0.1, for the historian's
//! tests and demos (`cargo run --example mock_openai`). It is not a model: its "historian" cuts
//! the text it is given into deterministic tiers (dense: the lines, long ones and long runs
//! clipped; compact: title, error lines, identifiers; anchor: one line), copies the pinned spans it
//! is told about, and reports usage (a token per four bytes of what it read and wrote). It can be scripted
//! per episode to answer 429 (with `Retry-After`), 5xx, 401 echoing the `Authorization` header,
//! malformed JSON, no usage, a refusal of `response_format`, a redirect, an oversized answer (with
//! or without its length), absurd usage figures, or to stall past a client timeout.
//!
//! Plain std networking: one thread per connection, `Connection: close`.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// A scripted answer, used once, for the episode it is queued under (or `*` for any).
#[derive(Debug, Clone)]
pub enum Fault {
    /// This status with this body, and `Retry-After` when given.
    Status(u16, Option<String>, String),
    /// 401 whose body quotes the request's `Authorization` header (as careless servers do).
    EchoAuth,
    /// 200 whose message content is this text instead of the tiers.
    Content(String),
    /// The normal answer without `usage`.
    NoUsage,
    /// Wait this long, then answer normally (past a client's timeout: a timeout).
    Stall(Duration),
    /// This 3xx status with `Location` set to this URL.
    Redirect(u16, String),
    /// A 200 answer of this many bytes, with its `Content-Length` (true) or without (read to
    /// the end of the connection).
    Huge(usize, bool),
    /// The normal answer with these `prompt_tokens` and `completion_tokens`.
    Usage(u64, u64),
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    /// What follows `?` in the request target.
    pub query: Option<String>,
    pub authorization: Option<String>,
    pub body: Value,
}

impl Received {
    pub fn user(&self) -> &str {
        self.body["messages"][1]["content"].as_str().unwrap_or("")
    }
    pub fn episode(&self) -> String {
        episode_of(self.user())
    }
}

#[derive(Default)]
struct State {
    faults: Mutex<HashMap<String, VecDeque<Fault>>>,
    received: Mutex<Vec<Received>>,
    reject_response_format: AtomicBool,
    invent: AtomicBool,
    /// Milliseconds every answer takes (a slow model, for demos of the progress display).
    delay_ms: std::sync::atomic::AtomicU64,
    /// Requests being answered now, and the most there ever were at once.
    in_flight: std::sync::atomic::AtomicUsize,
    max_in_flight: std::sync::atomic::AtomicUsize,
}

pub struct MockServer {
    port: u16,
    state: Arc<State>,
}

impl MockServer {
    /// Listen on an ephemeral port of 127.0.0.1.
    pub fn start() -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(State::default());
        let s = Arc::clone(&state);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let s = Arc::clone(&s);
                std::thread::spawn(move || {
                    let _ = serve(conn, &s);
                });
            }
        });
        MockServer { port, state }
    }

    /// The base URL, as a user passes it to `--endpoint`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn fault(&self, episode: &str, f: Fault) -> &Self {
        self.state
            .faults
            .lock()
            .unwrap()
            .entry(episode.to_owned())
            .or_default()
            .push_back(f);
        self
    }

    /// Answer 400 to every request that carries `response_format` (as some servers do).
    pub fn reject_response_format(&self) -> &Self {
        self.state
            .reject_response_format
            .store(true, Ordering::Relaxed);
        self
    }

    /// Put a version the source does not hold into every compact tier (an unsupported addition,
    /// as a model might invent one).
    pub fn invent_a_version(&self) -> &Self {
        self.state.invent.store(true, Ordering::Relaxed);
        self
    }

    /// Make every answer take `d` (as a real model does).
    pub fn slow(&self, d: Duration) -> &Self {
        self.state
            .delay_ms
            .store(d.as_millis() as u64, Ordering::Relaxed);
        self
    }

    /// The most requests answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::Relaxed)
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }
}

/// A status, its `Retry-After`, and its JSON body.
struct Reply(u16, Option<String>, String);

/// An answer the JSON replies above cannot express.
enum Raw {
    Redirect(u16, String),
    Huge(usize, bool),
}

/// Read one request, answer it, and write the answer. The request counts as in flight from when
/// it has been read until its answer is ready; the count drops before the answer is written, so
/// a client that waits for an answer before its next request is never seen with two.
fn serve(conn: TcpStream, state: &State) -> std::io::Result<()> {
    let (rec, mut out) = read_request(conn)?;
    state.received.lock().unwrap().push(rec.clone());
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let reply = reply_to(&rec, state);
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    match reply {
        Ok(r) => respond(&mut out, r),
        Err(raw) => respond_raw(&mut out, raw),
    }
}

fn respond_raw(out: &mut TcpStream, raw: Raw) -> std::io::Result<()> {
    match raw {
        Raw::Redirect(code, to) => {
            let body = r#"{"error":{"message":"moved"}}"#;
            write!(
                out,
                "HTTP/1.1 {code} Moved\r\nLocation: {to}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )?;
        }
        Raw::Huge(bytes, with_length) => {
            let mut head =
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                    .to_owned();
            if with_length {
                head.push_str(&format!("Content-Length: {bytes}\r\n"));
            }
            head.push_str("\r\n");
            out.write_all(head.as_bytes())?;
            // A client that stops reading at its limit closes the connection: a write error.
            let chunk = vec![b' '; 64 * 1024];
            let mut left = bytes;
            while left > 0 {
                let n = left.min(chunk.len());
                out.write_all(&chunk[..n])?;
                left -= n;
            }
        }
    }
    out.flush()
}

fn read_request(conn: TcpStream) -> std::io::Result<(Received, TcpStream)> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let target = line.split_whitespace().nth(1).unwrap_or("");
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (target.to_owned(), None),
    };
    let mut length = 0usize;
    let mut authorization = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(v.trim().to_owned()),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let rec = Received {
        path,
        query,
        authorization,
        body,
    };
    Ok((rec, conn))
}

fn reply_to(rec: &Received, state: &State) -> Result<Reply, Raw> {
    let body = &rec.body;
    if rec.path != "/v1/chat/completions" {
        return Ok(Reply(
            404,
            None,
            r#"{"error":{"message":"no such route"}}"#.into(),
        ));
    }
    let episode = rec.episode();
    let fault = {
        let mut f = state.faults.lock().unwrap();
        let mut take = |k: &str| f.get_mut(k).and_then(VecDeque::pop_front);
        take(&episode).or_else(|| take("*"))
    };
    if state.reject_response_format.load(Ordering::Relaxed) && body.get("response_format").is_some()
    {
        return Ok(Reply(
            400,
            None,
            r#"{"error":{"message":"Invalid parameter: 'response_format' of type 'json_object' is not supported with this model.","type":"invalid_request_error","param":"response_format"}}"#.into(),
        ));
    }
    let invent = state.invent.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(
        state.delay_ms.load(Ordering::Relaxed),
    ));
    let mut figures = None;
    let (content, usage) = match fault {
        Some(Fault::Status(code, after, text)) => return Ok(Reply(code, after, text)),
        Some(Fault::EchoAuth) => {
            let key = rec.authorization.clone().unwrap_or_default();
            let text = json!({"error": {"message": format!("Incorrect API key provided: {key}")}});
            return Ok(Reply(401, None, text.to_string()));
        }
        Some(Fault::Redirect(code, to)) => return Err(Raw::Redirect(code, to)),
        Some(Fault::Huge(bytes, with_length)) => return Err(Raw::Huge(bytes, with_length)),
        Some(Fault::Usage(i, o)) => {
            figures = Some((i, o));
            (answer(body, invent), true)
        }
        Some(Fault::Content(c)) => (c, true),
        Some(Fault::NoUsage) => (answer(body, invent), false),
        Some(Fault::Stall(d)) => {
            std::thread::sleep(d);
            (answer(body, invent), true)
        }
        None => (answer(body, invent), true),
    };
    let prompt: String = body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|x| x["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let mut reply = json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "model": "mock-historian",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    });
    if let Some((i, o)) = figures {
        reply["usage"] = json!({"prompt_tokens": i, "completion_tokens": o});
    } else if usage {
        reply["usage"] = json!({
            "prompt_tokens": tokens(&prompt),
            "completion_tokens": tokens(&content),
            "total_tokens": tokens(&prompt) + tokens(&content),
        });
    }
    Ok(Reply(200, None, reply.to_string()))
}

fn respond(out: &mut TcpStream, Reply(code, retry_after, body): Reply) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        match code {
            200 => "OK",
            400 => "Bad Request",
            401 => "Unauthorized",
            404 => "Not Found",
            429 => "Too Many Requests",
            500 => "Internal Server Error",
            503 => "Service Unavailable",
            _ => "Status",
        },
        body.len()
    );
    if let Some(a) = retry_after {
        head.push_str(&format!("Retry-After: {a}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.write_all(body.as_bytes())?;
    out.flush()
}

/// Usage as a server would report it, roughly: a token per four bytes. (Not a tokenizer: the
/// mock runs inside the test process, where a tokenizer's tables would cost the CPU time that
/// `follow_idle` measures.)
fn tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// `E3` from `Episode E3: …`.
fn episode_of(user: &str) -> String {
    user.strip_prefix("Episode ")
        .and_then(|r| r.split(':').next())
        .unwrap_or("")
        .to_owned()
}

/// The tiers the request asks for, as the JSON content of the answer; or, for a compaction
/// summary request (no JSON mode, not an episode), a summary.
fn answer(body: &Value, invent: bool) -> String {
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    if let Some(last) = summary_request(body) {
        return mock_summary(last);
    }
    json!({ "tiers": mock_tiers(user, invent) }).to_string()
}

/// The user message of a compaction summary request: one that asks for no JSON and is not an
/// episode's.
pub fn summary_request(body: &Value) -> Option<&str> {
    let last = body["messages"].as_array()?.last()?["content"].as_str()?;
    (body.get("response_format").is_none() && !last.starts_with("Episode ")).then_some(last)
}

/// The deterministic "summariser": what the user asked (each `user:` chunk's text, clipped to
/// 400 characters) and what an earlier summary quoted said, nothing of the tools' outputs or the
/// assistant's reasoning, so a reason found in a tool's output is lost, as a summary that keeps
/// the request and drops the why loses it.
pub fn mock_summary(user: &str) -> String {
    let mut out = vec!["## Objective".to_owned()];
    let mut lines = user.lines().peekable();
    let mut prior = false;
    while let Some(l) = lines.next() {
        match l {
            "<prior-summary>" => prior = true,
            "</prior-summary>" => prior = false,
            _ if prior && !l.trim().is_empty() && !out.iter().any(|o| o == l) => {
                out.push(l.to_owned())
            }
            "user:" => {
                if let Some(next) = lines.peek().filter(|n| !n.trim().is_empty()) {
                    let said = format!("- {}", clip(next, 400));
                    if !out.contains(&said) {
                        out.push(said);
                    }
                }
            }
            _ => {}
        }
    }
    out.join("\n")
}

/// The deterministic "historian": what the prompt asks for, cut from the text it gives.
pub fn mock_tiers(user: &str, invent: bool) -> serde_json::Map<String, Value> {
    let episode = episode_of(user);
    let title = user
        .lines()
        .next()
        .and_then(|l| l.split_once(": "))
        .map(|(_, t)| t.to_owned())
        .unwrap_or_default();
    let shape = user
        .lines()
        .find_map(|l| l.strip_prefix("Answer exactly: "))
        .unwrap_or("");
    let pins: Vec<&str> = {
        let mut lines = user.lines().skip_while(|l| !l.starts_with("Pinned spans"));
        lines.next();
        lines
            .take_while(|l| l.starts_with("- "))
            .map(|l| &l[2..])
            .collect()
    };
    let source = user
        .find("<source tier=\"")
        .and_then(|i| user[i..].find('\n').map(|j| i + j + 1))
        .and_then(|start| {
            user.rfind("\n</source>")
                .map(|end| &user[start..end.max(start)])
        })
        .unwrap_or("");
    let mut out = serde_json::Map::new();
    for tier in ["dense", "compact", "anchor"] {
        if !shape.contains(&format!("\"{tier}\"")) {
            continue;
        }
        let mut text = match tier {
            "dense" => dense(source),
            "compact" => compact(&episode, &title, source, invent),
            _ => anchor(&episode, &title, source),
        };
        for p in &pins {
            if !text.contains(p) {
                text.push_str(&format!("\nconstraint: {p}"));
            }
        }
        out.insert(tier.to_owned(), Value::String(text));
    }
    out
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

fn dense(source: &str) -> String {
    let mut lines = Vec::new();
    let mut reasoning = false;
    for l in source.lines() {
        if l.starts_with("[reasoning]") {
            reasoning = true;
        }
        if !reasoning && !l.trim().is_empty() {
            lines.push(clip(l, 160));
        }
        if l.starts_with("[/reasoning]") {
            reasoning = false;
        }
    }
    if lines.len() > 50 {
        let n = lines.len();
        let mut kept: Vec<String> = lines[..32].to_vec();
        kept.push(format!("…[{} lines clipped]…", n - 44));
        kept.extend(lines[n - 12..].iter().cloned());
        lines = kept;
    }
    lines.join("\n")
}

fn is_error(l: &str) -> bool {
    let low = l.to_ascii_lowercase();
    low.contains("error") || low.contains("failed") || low.contains("panicked")
}

/// Paths, versions, hashes: tokens a reader must get exactly.
fn identifiers(source: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in source.split(|c: char| c.is_whitespace() || "\"'`,;()[]{}<>".contains(c)) {
        let w = w.trim_end_matches(['.', ':']);
        let path = w.contains('/') && w.len() > 3 && !w.starts_with("http");
        let version = w.split('.').count() >= 2
            && w.chars().any(|c| c.is_ascii_digit())
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-_".contains(c))
            && w.chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit() || c == 'v');
        if (path || version) && w.len() <= 80 && !out.iter().any(|o| o == w) {
            out.push(w.to_owned());
        }
        if out.len() >= 16 {
            break;
        }
    }
    out
}

fn compact(episode: &str, title: &str, source: &str, invent: bool) -> String {
    let mut out = vec![format!("[{episode} compact] {title}")];
    let errors: Vec<&str> = source.lines().filter(|l| is_error(l)).take(6).collect();
    if !errors.is_empty() {
        out.push("errors:".to_owned());
        out.extend(errors.iter().map(|e| format!("- {}", clip(e.trim(), 200))));
    }
    let ids = identifiers(source);
    if !ids.is_empty() {
        out.push(format!("identifiers: {}", ids.join(", ")));
    }
    if invent {
        out.push("verified against tomlette 9.9.9".to_owned());
    }
    out.join("\n")
}

fn anchor(episode: &str, title: &str, source: &str) -> String {
    let mut s = format!("[{episode}] {}", clip(title, 60));
    if let Some(e) = source.lines().find(|l| is_error(l)) {
        s.push_str(&format!(" — {}", clip(e.trim(), 80)));
    }
    let ids = identifiers(source);
    if !ids.is_empty() {
        s.push_str(&format!(
            " [{}]",
            ids.iter().take(4).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    s.push_str(" (details in the full episode)");
    s
}
