//! Every OpenCode era against the model's own log of every request (the recorder's mock logs
//! `run-events/*.mock-requests.jsonl`: `kind` turn/sub/summary/title, `prompt_tokens`): the
//! requests tierscope derives are the ones the model received (title calls aside), one to one and
//! of the same kind, and the replay sizes each within 2 % (median) and 10 % (max) of what the model
//! received: `opencode` on every session, compaction calls included, and `full` on sessions that
//! never compacted. Recordings (`tests/recordings/`): 0.1.174 (and its long sessions), 0.5.29, 1.0.61, 1.1.65, 1.2.1 after
//! the JSON→SQLite migration, 1.14.41, 1.18.33 and 1.18.33's v2 tables.
//!
//! The request each system chunk is estimated from (the first with usage of each (agent, model),
//! and of the compaction agent) fits by construction and is left out of the figures.
//!
//! `cargo test --test it eras_ground_truth -- --nocapture` prints the accuracy table of the README.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tierscope_engine::policy;
use tierscope_engine::replay;
use tierscope_engine::session::{self, LoadOptions, LoadedSession};
use tierscope_engine::trace::{CompactionStyle, DiagnosticKind, UserKind};

const RECORDINGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/recordings");

/// One recording: where its sessions are and where its mock logs are.
struct Rec {
    /// Era label for the table.
    era: &'static str,
    dir: PathBuf,
    /// Where the model's logs are (`run-events/`, `manifest.json`): the recording's own dir, or
    /// for sessions a later release rewrote, the recording they were made in.
    logs: PathBuf,
    /// Sessions come from `data/` (a data dir) or `exports/<scenario>.json`.
    exports: bool,
}

fn recs() -> Vec<Rec> {
    let local = |v: &str| PathBuf::from(RECORDINGS).join(v);
    vec![
        Rec {
            era: "0.1.x (v1 messages, per-project JSON)",
            dir: local("opencode-0.1.174"),
            logs: local("opencode-0.1.174"),
            exports: false,
        },
        Rec {
            era: "0.1.x, long sessions (refused requests, errors, many calls)",
            dir: local("opencode-0.1.174-long"),
            logs: local("opencode-0.1.174-long"),
            exports: false,
        },
        Rec {
            era: "0.1.x migrated by 0.5.29 (MessageV2 files)",
            dir: local("opencode-0.1.174-migrated"),
            logs: local("opencode-0.1.174"),
            exports: false,
        },
        Rec {
            era: "0.2-0.7 (multi-step, per-project JSON)",
            dir: local("opencode-0.5.29"),
            logs: local("opencode-0.5.29"),
            exports: false,
        },
        Rec {
            era: "0.8-1.0.68 (summary message)",
            dir: local("opencode-1.0.61"),
            logs: local("opencode-1.0.61"),
            exports: true,
        },
        Rec {
            era: "1.0.69-1.1.x (compaction part, JSON)",
            dir: local("opencode-1.1.65"),
            logs: local("opencode-1.1.65"),
            exports: false,
        },
        Rec {
            era: "1.2 (SQLite after the JSON migration)",
            dir: local("opencode-1.2.1"),
            logs: local("opencode-1.2.1"),
            exports: false,
        },
        Rec {
            era: "1.14 (kept tail, clipped head)",
            dir: local("opencode-1.14.41"),
            logs: local("opencode-1.14.41"),
            exports: true,
        },
        Rec {
            era: "1.18 (head as text)",
            dir: local("opencode-1.18.33"),
            logs: local("opencode-1.18.33"),
            exports: false,
        },
        Rec {
            era: "1.18 v2 loop (session_message)",
            dir: local("opencode-1.18.33-v2"),
            logs: local("opencode-1.18.33-v2"),
            exports: false,
        },
    ]
}

#[derive(Debug, Clone)]
struct MockRequest {
    summary: bool,
    /// A sub-agent's request (kind `sub`).
    sub: bool,
    t: f64,
    prompt: u64,
    /// The prefix the model found cached from the conversation's previous request.
    cached: u64,
}

/// Scenario → session, from `run-events/*.result.json`; the 1.18.33 recording keeps it in
/// `manifest.json`.
fn scenarios(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let re = dir.join("run-events");
    for e in std::fs::read_dir(&re).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(scen) = name.strip_suffix(".result.json") {
            let v: Value = serde_json::from_slice(&std::fs::read(e.path()).expect("read"))
                .expect("result json");
            if let Some(s) = v.get("session").and_then(Value::as_str) {
                out.push((scen.to_owned(), s.to_owned()));
            }
        }
    }
    let manifest = dir.join("manifest.json");
    if out.is_empty() && manifest.is_file() {
        let v: Value =
            serde_json::from_slice(&std::fs::read(manifest).expect("read")).expect("json");
        for s in v["scenarios"].as_array().into_iter().flatten() {
            out.push((
                s["scenario"].as_str().unwrap_or_default().to_owned(),
                s["main_session"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    out.sort();
    out
}

/// The model's log of one scenario, title calls left out (OpenCode never stores them).
fn mock_log(dir: &Path, scen: &str) -> Vec<MockRequest> {
    let mock = dir
        .join("run-events")
        .join(format!("{scen}.mock-requests.jsonl"));
    let dump = dir.join("requests").join(format!("{scen}.requests.jsonl"));
    // The 1.18.33 recording logged the requests themselves (`requests/`), the others the mock's
    // summary of each (`run-events/`).
    let dumped = !mock.exists();
    let log = if dumped { &dump } else { &mock };
    let text = std::fs::read_to_string(log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).expect("mock line"))
        .filter(|v| v["kind"] != "title")
        .map(|v| MockRequest {
            summary: v["kind"] == "summary",
            sub: v["kind"] == "sub",
            t: v["t"].as_f64().unwrap_or(0.0),
            prompt: if dumped {
                v["usage_basis"]["prompt_tokens"].as_u64()
            } else {
                v["prompt_tokens"].as_u64()
            }
            .unwrap_or(0),
            cached: if dumped {
                v["usage_basis"]["cached_tokens"].as_u64()
            } else {
                v["cached_tokens"].as_u64()
            }
            .unwrap_or(0),
        })
        .collect()
}

fn load(rec: &Rec, scen: &str, session: &str) -> LoadedSession {
    let (path, session) = if rec.exports {
        (rec.dir.join("exports").join(format!("{scen}.json")), None)
    } else {
        (rec.dir.join("data"), Some(session.to_owned()))
    };
    session::load(&LoadOptions {
        path: Some(path.clone()),
        session,
        ..LoadOptions::default()
    })
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One of our requests, before it is paired.
struct Ours {
    time: i64,
    /// 0 the main session, then its children.
    session: usize,
    request: usize,
    /// A compaction call.
    call: bool,
    tokens: u64,
    /// The recorded prompt (0 without usage).
    recorded: u64,
    /// Left out of the figures (`only_uncompacted`).
    skip: bool,
    calibration: bool,
    cache_read: u64,
}

/// One of our requests beside the model's.
#[derive(Debug, Clone)]
struct Pair {
    summary: bool,
    ours: u64,
    theirs: u64,
    /// The recorded prompt (0 where the recording has no usage).
    recorded: u64,
    /// The request a system chunk was estimated from: it fits by construction, so its size is
    /// no prediction (its cache read still is).
    calibration: bool,
    /// Cache read, ours and the model's.
    cache_ours: u64,
    cache_theirs: u64,
    /// Session (0 the main one, then its children) and request.
    at: (usize, usize),
}

/// Size errors of the predicted requests.
fn size_errors(pairs: &[Pair]) -> Vec<f64> {
    pairs
        .iter()
        .filter(|p| !p.calibration)
        .map(err_pct)
        .collect()
}

fn err_pct(p: &Pair) -> f64 {
    (p.ours as f64 - p.theirs as f64).abs() / p.theirs as f64 * 100.0
}

/// Our requests of `s` and its children (in time order) replayed under `policy`, paired with the
/// model's log. `only_uncompacted` keeps the sessions that never compacted.
fn pairs(
    s: &LoadedSession,
    mock: &[MockRequest],
    policy: &str,
    only_uncompacted: bool,
    what: &str,
) -> Vec<Pair> {
    let p = policy::load(policy, &[]).expect("policy");
    let mut ours: Vec<Ours> = Vec::new();
    for (si, l) in std::iter::once(s).chain(s.children.iter()).enumerate() {
        let r = replay::replay_session(l, &p, None);
        let skip = only_uncompacted && !l.trace.compactions.is_empty();
        // The request each system chunk was estimated from fits by construction: only the others
        // are predictions, and only they are measured.
        let calibration: Vec<usize> = r
            .trace
            .system_segments
            .iter()
            .filter_map(|seg| seg.from_request)
            .collect();
        for f in &r.frames {
            ours.push(Ours {
                time: f.time,
                session: si,
                request: f.request,
                call: f.synthetic_call,
                tokens: f.tokens,
                recorded: f.recorded.prompt,
                skip,
                calibration: calibration.contains(&f.request),
                cache_read: f.cache_read,
            });
        }
    }
    ours.sort_by_key(|o| (o.time, o.session, o.request));
    assert_eq!(
        ours.len(),
        mock.len(),
        "{what}: {} requests derived, the model received {}",
        ours.len(),
        mock.len()
    );
    // Pair in time order with the model's requests of the same session kind (main or sub-agent):
    // the nearest in time, or among those close by the one whose recorded usage is the model's
    // own figure (sub-agents run in parallel; the stored data decides, not the replay).
    let mut used = vec![false; mock.len()];
    let mut out = Vec::new();
    for o in &ours {
        let t = o.time as f64 / 1000.0;
        let child = o.session > 0;
        let near = |m: &MockRequest| (m.t - t).abs();
        let candidates: Vec<usize> = (0..mock.len())
            .filter(|&i| !used[i] && mock[i].sub == child)
            .collect();
        let nearest = candidates
            .iter()
            .copied()
            .min_by(|&a, &b| near(&mock[a]).total_cmp(&near(&mock[b])));
        let exact = candidates
            .iter()
            .copied()
            .filter(|&i| o.recorded > 0 && mock[i].prompt == o.recorded && near(&mock[i]) < 10.0)
            .min_by(|&a, &b| near(&mock[a]).total_cmp(&near(&mock[b])));
        let Some(i) = exact.or(nearest) else {
            panic!(
                "{what}: no request of the model left for request {} of session #{}",
                o.request, o.session
            );
        };
        used[i] = true;
        let m = &mock[i];
        // OpenCode creates a message a few seconds before it sends the request at most.
        assert!(
            near(m) < 60.0,
            "{what}: request {} of session #{} has no model request near its time",
            o.request,
            o.session
        );
        assert_eq!(
            o.call,
            m.summary,
            "{what}: request {} of session #{} is {} but the model received a {} call",
            o.request,
            o.session,
            if o.call {
                "a compaction call"
            } else {
                "a turn"
            },
            if m.summary { "compaction" } else { "turn" }
        );
        if !o.skip && m.prompt > 0 {
            out.push(Pair {
                summary: m.summary,
                ours: o.tokens,
                theirs: m.prompt,
                recorded: o.recorded,
                calibration: o.calibration,
                cache_ours: o.cache_read,
                cache_theirs: m.cached,
                at: (o.session, o.request),
            });
        }
    }
    out
}

fn stats(v: &[f64]) -> Option<(f64, f64)> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    Some((median, s[n - 1]))
}

fn cell(v: &[f64]) -> String {
    match stats(v) {
        Some((m, x)) => format!("{m:.2} / {x:.2} ({})", v.len()),
        None => "–".to_owned(),
    }
}

fn check(what: &str, v: &[f64]) {
    if let Some((median, max)) = stats(v) {
        assert!(median <= 2.0, "{what}: median error {median:.2}%");
        assert!(max <= 10.0, "{what}: max error {max:.2}%");
    }
}

/// Cache reads tierscope is known to understate, by recording and request. 0.1.x rebuilds a
/// stored answer in the AI SDK's blocks ([`tierscope_engine::trace::CompletedAnswer`]): a step
/// whose text and calls were one message in flight becomes its text, then its calls, so the
/// model still shares that step's text. The replay caps the shared prefix at the start of the
/// step (a step is one chunk, the finest grain it counts): here the model read 11,008 cached
/// tokens and tierscope says 9,728, the step's text in between.
const KNOWN_CACHE_GAPS: &[(&str, usize)] = &[("opencode-0.1.174-long L3", 9)];

#[test]
fn every_era_sizes_every_request_as_the_model_received_it() {
    println!(
        "| era | recording | requests | `opencode` turns: median / max % (n) | `opencode` compaction calls | `full`, sessions without compaction | `opencode` cache reads within a block + 1 % of the model's (sessions without sub-agents) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for rec in recs() {
        if !rec.dir.is_dir() {
            panic!("recording missing: {}", rec.dir.display());
        }
        let name = rec.dir.file_name().unwrap().to_string_lossy().into_owned();
        // Scenarios that continue one session (a later turn recorded separately) share a log.
        let mut by_session: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (scen, ses) in scenarios(&rec.logs) {
            by_session.entry(ses).or_default().push(scen);
        }
        assert!(!by_session.is_empty(), "{name}: no scenarios");
        let (mut turns, mut calls, mut full) = (Vec::new(), Vec::new(), Vec::new());
        let (mut cache_agree, mut cache_n) = (0usize, 0usize);
        let mut known_gaps: Vec<(String, usize)> = Vec::new();
        let mut n = 0usize;
        for (ses, scens) in &by_session {
            let mock: Vec<MockRequest> =
                scens.iter().flat_map(|s| mock_log(&rec.logs, s)).collect();
            let s = load(&rec, &scens[0], ses);
            let what = format!("{name} {}", scens.join("+"));
            n += mock.len();
            for p in pairs(&s, &mock, "opencode", false, &what) {
                if p.recorded > 0 {
                    // The recorded prompt follows the release's token semantics exactly.
                    assert_eq!(p.recorded, p.theirs, "{what}: recorded prompt");
                }
                // The mock chained the requests of one server process when the release sent
                // no session header, so a parent and its sub-agents read each other's prefixes
                // there: only sessions without children are compared. Sizes are estimates, so a
                // divergence off by the size error (up to 1 %) may cross a 128-token cache block
                // or two: within a block plus 1 % of the request agrees.
                if s.children.is_empty() {
                    cache_n += 1;
                    if p.cache_ours.abs_diff(p.cache_theirs) <= 128 + p.theirs / 100 {
                        cache_agree += 1;
                    } else if KNOWN_CACHE_GAPS.contains(&(what.as_str(), p.at.1)) {
                        known_gaps.push((what.clone(), p.at.1));
                    } else {
                        eprintln!(
                            "{what}: cache read {} where the model read {} (request {} of {} tokens{})",
                            p.cache_ours,
                            p.cache_theirs,
                            p.at.1,
                            p.theirs,
                            if p.summary { ", a summary call" } else { "" }
                        );
                    }
                }
                if p.calibration {
                    continue;
                }
                if p.summary {
                    calls.push(err_pct(&p));
                } else {
                    turns.push(err_pct(&p));
                }
            }
            full.extend(size_errors(&pairs(&s, &mock, "full", true, &what)));
        }
        println!(
            "| {} | {name} | {n} | {} | {} | {} | {cache_agree} / {cache_n} |",
            rec.era,
            cell(&turns),
            cell(&calls),
            cell(&full)
        );
        // Every one: the first request of a turn after a multi-step answer (rebuilt from
        // storage), after a changed stored system prompt, and after a new summary (which
        // begins as the previous one did) included.
        let expected: Vec<(String, usize)> = KNOWN_CACHE_GAPS
            .iter()
            .filter(|(w, _)| w.starts_with(&format!("{name} ")))
            .map(|&(w, r)| (w.to_owned(), r))
            .collect();
        assert_eq!(
            known_gaps, expected,
            "{name}: the known cache gaps are still there"
        );
        assert_eq!(
            cache_agree + known_gaps.len(),
            cache_n,
            "{name}: {cache_agree} of {cache_n} cache reads agree with the model's"
        );
        check(&format!("{name} opencode turns"), &turns);
        check(&format!("{name} opencode compaction calls"), &calls);
        check(&format!("{name} full"), &full);
    }
}

fn load_path(path: &str, session: Option<&str>) -> LoadedSession {
    session::load(&LoadOptions {
        path: Some(PathBuf::from(path)),
        session: session.map(str::to_owned),
        ..LoadOptions::default()
    })
    .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn load_data(dir: &str, session: &str) -> LoadedSession {
    load_path(dir, Some(session))
}

#[test]
fn v01_inline_parts_are_read_with_their_steps_and_directory() {
    let l = load_data(
        &format!("{RECORDINGS}/opencode-0.1.174/data"),
        "ses_dcf192ca4ffeRjMcSdmmvRXUcJ",
    );
    let t = &l.trace;
    assert_eq!(t.session.directory, "/home/dana/src/ingest");
    assert_eq!(t.messages.len(), 17);
    assert_eq!(t.messages.iter().map(|m| m.parts.len()).sum::<usize>(), 71);
    assert_eq!(t.human_turns().count(), 7);
    assert_eq!(t.requests.len(), 25);
    assert_eq!(t.requests.iter().filter(|r| r.synthetic_call).count(), 3);
    assert!(t
        .compactions
        .iter()
        .all(|c| c.style == CompactionStyle::FromSummary && c.user_message_id.is_none()));
    // Two failed edits (ruff missing), read from `metadata.tool[callID].error`.
    let errors = t
        .messages
        .iter()
        .flat_map(|m| m.tool_parts())
        .filter(|(_, tp)| tp.status == tierscope_engine::trace::ToolStatus::Error)
        .count();
    assert_eq!(errors, 2);
    // Nothing dropped; the rules applied are said with their counts.
    assert_eq!(t.diagnostics.problems().count(), 0, "{:?}", t.diagnostics);
    assert_eq!(t.diagnostics.count(DiagnosticKind::RuleInlinePartIds), 71);
    assert_eq!(t.diagnostics.count(DiagnosticKind::RuleStepUsage), 15);
}

/// 0.1.x built the system prompt anew for every user turn and stored it with the turn's assistant
/// message (`metadata.assistant.system`): the environment with the project's file tree (up to 200
/// entries) and the instruction files (AGENTS.md, CLAUDE.md, CONTEXT.md). A session that changes
/// the project changes it: in M1 turn 2 adds 90 migration files and an AGENTS.md, and from turn 3
/// on every request carries a system prompt about 850 tokens longer than the one the system chunk
/// was estimated from (turn 1's). Each request is sized with the prompt stored with its turn, as
/// 0.1.174 left the session and after 0.5.29 migrated it (MessageV2 files, the prompt as `system`).
#[test]
fn v01_each_turn_is_sized_with_the_system_prompt_stored_with_it() {
    let logs = PathBuf::from(RECORDINGS).join("opencode-0.1.174");
    for (era, dir) in [
        ("0.1.174", logs.clone()),
        (
            "0.1.174 migrated by 0.5.29",
            PathBuf::from(RECORDINGS).join("opencode-0.1.174-migrated"),
        ),
    ] {
        let rec = Rec {
            era,
            dir,
            logs: logs.clone(),
            exports: false,
        };
        let s = load(&rec, "M1", "ses_dc88c0c25ffeJ9UFGBaxfyfuXe");
        let stored: Vec<u64> = s
            .trace
            .messages
            .iter()
            .filter_map(|m| m.system.as_ref()?.tokens)
            .collect();
        assert_eq!(stored.len(), 4, "{}: one system prompt per turn", rec.era);
        assert!(stored[2] > stored[0] + 500, "{}: {stored:?}", rec.era);
        assert_eq!(
            s.trace.diagnostics.count(DiagnosticKind::RuleSystemPrompt),
            0,
            "{}",
            rec.era
        );
        let mock = mock_log(&rec.logs, "M1");
        let errs = size_errors(&pairs(&s, &mock, "opencode", false, "M1"));
        // 12 turn requests, the one the system chunk was estimated from left out.
        assert_eq!(errs.len(), 11, "{}", rec.era);
        let (median, max) = stats(&errs).expect("pairs");
        println!(
            "M1 ({}): median {median:.2} %, max {max:.2} %: {errs:.2?}",
            rec.era
        );
        assert!(
            median < 0.5 && max < 1.0,
            "M1 ({}): median {median:.2} %, max {max:.2} %: {errs:.2?}",
            rec.era
        );
    }
}

/// Some releases' migration of the 0.1.x storage left the system prompt out of the rewritten
/// message. The load says so (the requests then keep the estimating request's prompt, and a
/// project that changed is sized short), rather than passing silently.
#[test]
fn v01_a_migration_that_dropped_the_system_prompt_is_reported() {
    let from = PathBuf::from(RECORDINGS).join("opencode-0.1.174-migrated/data");
    let tmp = tempfile::tempdir().expect("tempdir");
    let to = tmp.path().join("data");
    copy_dir(&from, &to);
    let msgs = to.join(
        "project/home-dana-src-ledger/storage/session/message/ses_dc88c0c25ffeJ9UFGBaxfyfuXe",
    );
    let mut without = 0;
    for e in std::fs::read_dir(&msgs).expect("messages").flatten() {
        let mut v: Value =
            serde_json::from_slice(&std::fs::read(e.path()).expect("read")).expect("json");
        if v.as_object_mut().and_then(|o| o.remove("system")).is_some() {
            without += 1;
            std::fs::write(e.path(), serde_json::to_vec(&v).expect("json")).expect("write");
        }
    }
    assert_eq!(without, 4);
    let s = load_data(
        to.to_str().expect("utf-8"),
        "ses_dc88c0c25ffeJ9UFGBaxfyfuXe",
    );
    assert_eq!(
        s.trace.diagnostics.count(DiagnosticKind::RuleSystemPrompt),
        4
    );
    assert!(s.trace.messages.iter().all(|m| m.system.is_none()));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// 0.2–0.5 stored each answer's system prompt too (`system`). In S4 the project tree gains
/// `test_legacy.py` after the sub-agents ran: the model's cached prefix broke inside the system
/// prompt, where the tree changed (the tools and the unchanged first text still cached: 9,344
/// tokens), not at its start and not after it.
#[test]
fn v05_a_changed_system_prompt_breaks_the_cached_prefix_where_it_changed() {
    let dir = PathBuf::from(RECORDINGS).join("opencode-0.5.29");
    let s = load_data(
        dir.join("data").to_str().expect("utf-8"),
        "ses_dcf721616ffePz2mFKyJTRPI4L",
    );
    let changed: Vec<usize> = s
        .trace
        .requests
        .iter()
        .filter(|r| {
            s.trace.messages[r.message_index]
                .system
                .as_ref()
                .is_some_and(|sys| sys.shared_with_previous.is_some())
        })
        .map(|r| r.index)
        .collect();
    // The first request of the message whose prompt changed (its later steps share it whole).
    let first = *changed
        .first()
        .expect("a request whose system prompt changed");
    // The model's log: the 23rd line (a title call first) is that request.
    let log = std::fs::read_to_string(dir.join("run-events/S4.mock-requests.jsonl")).expect("log");
    let theirs: Value = serde_json::from_str(log.lines().nth(22).expect("line")).expect("json");
    assert_eq!(theirs["kind"], "turn");
    let p = policy::load("opencode", &[]).expect("policy");
    let r = replay::replay_session(&s, &p, None);
    let f = &r.frames[first];
    assert!(
        f.tokens
            .abs_diff(theirs["prompt_tokens"].as_u64().expect("n"))
            < 50
    );
    assert_eq!(Some(f.cache_read), theirs["cached_tokens"].as_u64());
    assert!(f.divergence < f.tokens - 1000, "{}", f.divergence);
}

/// The cache read of request `request` (counting the model's requests of the scenario without
/// title calls) and the model's own figure for it.
fn cache_reads_at(rec: &str, scen: &str, session: &str, request: usize) -> (u64, u64) {
    let dir = PathBuf::from(RECORDINGS).join(rec);
    let logs = PathBuf::from(RECORDINGS).join(rec.trim_end_matches("-migrated"));
    // Releases without a kept data dir were recorded as exports, one per scenario.
    let data = match dir.join("data") {
        d if d.is_dir() => d,
        _ => dir.join("exports").join(format!("{scen}.json")),
    };
    let s = load_data(data.to_str().expect("utf-8"), session);
    let mock = mock_log(&logs, scen);
    let p = policy::load("opencode", &[]).expect("policy");
    let r = replay::replay_session(&s, &p, None);
    assert_eq!(r.frames.len(), mock.len(), "{rec} {scen}");
    (r.frames[request].cache_read, mock[request].cached)
}

/// In a multi-step answer each step was sent the earlier ones as the model made them; once the
/// answer is stored, later requests rebuild it, and 0.1.x rebuilt it with every step's tool calls
/// in one assistant message (R1: the 4 calls of turn 1's answer, sent one per step while it ran;
/// `run-events/R1.assistant-layout.jsonl`). The first request of turn 2 shares only what came
/// before that answer: 9,216 tokens cached, not the whole previous request. 0.2–0.7 rebuilt an
/// errored tool's result with `Error: ` before it (0.5.29 S3: the first request of a turn after
/// an answer whose `write` failed mid-answer).
#[test]
fn an_answer_rebuilt_from_storage_breaks_the_prefix_where_it_changed() {
    for rec in ["opencode-0.1.174", "opencode-0.1.174-migrated"] {
        let (ours, theirs) = cache_reads_at(rec, "R1", "ses_dc4b34755ffe6nWazoPBWeBpYd", 5);
        assert_eq!(theirs, 9216, "{rec}: the model's log");
        assert_eq!(ours, theirs, "{rec}: R1 request 5");
    }
    let (ours, theirs) = cache_reads_at(
        "opencode-0.5.29",
        "S3",
        "ses_dcf7253b5ffe5pSuStCKf2oJoR",
        30,
    );
    assert_eq!(theirs, 29440, "the model's log");
    assert!(
        ours.abs_diff(theirs) <= 128,
        "S3 request 30: {ours} where the model read {theirs}"
    );
}

/// An agent's summaries follow one template and restate the goal and findings so far, so a new
/// summary begins as the previous one did (0.1.174 S2's second and third: 1,003 and 1,561
/// characters alike), and the model's cache served that head to the first request after it:
/// ~250 and ~380 tokens beyond the system prompt that a chunk-by-chunk comparison missed.
#[test]
fn a_new_summary_shares_the_head_it_has_in_common_with_the_previous_one() {
    for (rec, session, requests) in [
        (
            "opencode-0.1.174",
            "ses_dcf192ca4ffeRjMcSdmmvRXUcJ",
            [15, 20],
        ),
        (
            "opencode-1.0.61",
            "ses_dcf1795dbffeK0xwXOyRvhHj5t",
            [14, 21],
        ),
    ] {
        for r in requests {
            let (ours, theirs) = cache_reads_at(rec, "S2", session, r);
            assert!(
                ours.abs_diff(theirs) <= 128,
                "{rec} S2 request {r}: {ours} where the model read {theirs}"
            );
            assert!(theirs > 9216 + 128, "{rec} S2 request {r}: the model's log");
        }
    }
}

#[test]
fn v05_multi_step_messages_are_one_request_per_step() {
    let data = format!("{RECORDINGS}/opencode-0.5.29/data");
    let l = load_data(&data, "ses_dcf72a7beffelLM5kKMJqsXhKX");
    let t = &l.trace;
    assert_eq!(t.session.directory, "/tmp/rec/home-0.5.29/src/confkit");
    assert_eq!(t.requests.len(), 40);
    assert_eq!(t.messages.iter().filter(|m| m.is_assistant()).count(), 7);
    // 3 multi-step messages (36 steps), 2 one-step turns, 2 summary calls.
    assert_eq!(t.requests.iter().filter(|r| r.step.is_some()).count(), 36);
    assert_eq!(t.requests.iter().filter(|r| r.synthetic_call).count(), 2);
    // `<data>/project` (the ≤0.5 project dir) is a source of its own.
    let src = tierscope_engine::trace::load::open(Some(Path::new(&format!("{data}/project"))))
        .expect("project dir opens");
    assert_eq!(src.list_sessions().expect("list").len(), 7);
}

#[test]
fn v10_resume_messages_are_not_human_turns_and_summaries_cut() {
    let l = load_path(
        &format!("{RECORDINGS}/opencode-1.0.61/exports/S2.json"),
        None,
    );
    let t = &l.trace;
    assert_eq!(t.human_turns().count(), 7);
    let resumes = t
        .messages
        .iter()
        .filter(|m| m.user_kind == Some(UserKind::ContinueAfterCompaction))
        .count();
    assert_eq!(resumes, 3);
    assert_eq!(t.compactions.len(), 3);
    for c in &t.compactions {
        assert_eq!(c.style, CompactionStyle::FromSummary);
        assert!(c.continuation_message_id.is_some());
    }
}

#[test]
fn v12_migrated_sessions_merge_json_and_database() {
    let data = format!("{RECORDINGS}/opencode-1.2.1/data");
    let l = load_data(&data, "ses_dcf22ede7ffeN1fcmvKmo643su");
    assert_eq!(
        l.trace.messages.len(),
        22,
        "the 1.2.1 turn exists only in the database"
    );
    assert_eq!(l.children.len(), 2);
    assert_eq!(l.trace.session.version.as_deref(), Some("1.1.65"));
}

#[test]
fn exports_count_a_resumed_subagent_once() {
    let path = PathBuf::from(format!("{RECORDINGS}/opencode-1.1.65/exports/S4.json"));
    let src = tierscope_engine::trace::load::open(Some(&path)).expect("opens");
    let t = src.load_session(None).expect("loads");
    assert_eq!(t.children.len(), 4, "four task calls (one resumes)");
    assert_eq!(src.child_ids(&t).len(), 3);
    let listed = src.list_sessions().expect("list");
    let main = listed.iter().find(|s| s.id == t.session.id).expect("main");
    assert_eq!(main.children.len(), 3);
}

#[test]
fn v2_loop_requests_see_only_v2_messages() {
    let data = format!("{RECORDINGS}/opencode-1.18.33-v2/data");
    let l = load_data(&data, "ses_dcf0eccc3ffe11n3XlDUwnWuOP");
    let t = &l.trace;
    assert_eq!(t.messages.iter().filter(|m| m.own_history).count(), 3);
    let first_v2 = t
        .messages
        .iter()
        .position(|m| m.own_history)
        .expect("v2 rows");
    assert_eq!(t.context_start(t.messages.len() - 1), first_v2);
    let e2v = load_data(&data, "ses_dcf0d6106ffe50152m4wE4FXeP");
    assert_eq!(e2v.trace.compactions.len(), 3);
    assert!(e2v
        .trace
        .compactions
        .iter()
        .all(|c| c.tail_start_id.is_some()));
    assert_eq!(e2v.compaction.calls.len(), 3);
}

/// The v1 episodes before the v2 loop's first message are not in a v2 request's view: the
/// frame of the first v2 request says so for each (all chunks hidden, `by: view`), and none of
/// their chunks is rendered.
#[test]
fn the_v1_history_is_said_to_be_out_of_the_v2_loops_view() {
    use tierscope_engine::replay::{render_at, CutBy, Input};
    let data = format!("{RECORDINGS}/opencode-1.18.33-v2/data");
    let l = load_data(&data, "ses_dcf0eccc3ffe11n3XlDUwnWuOP");
    let t = &l.trace;
    let first_v2 = t
        .messages
        .iter()
        .position(|m| m.own_history)
        .expect("v2 rows");
    let p = policy::load("full", &[]).expect("policy");
    let r = replay::replay_session(&l, &p, None);
    let f = r
        .frames
        .iter()
        .find(|f| !f.tail_only.is_empty())
        .expect("a frame says the v1 history is out of view");
    let out: Vec<&str> = f.tail_only.iter().map(|c| c.episode.as_str()).collect();
    let v1: Vec<&str> = l
        .episodes
        .iter()
        .filter(|e| e.last_message < first_v2)
        .map(|e| e.id.as_str())
        .collect();
    assert!(!v1.is_empty());
    assert_eq!(out, v1);
    for c in &f.tail_only {
        assert_eq!((c.by, c.hidden), (CutBy::View, c.chunks), "{c:?}");
    }
    let ctx = render_at(&Input::from(&l), &p, None, f.request).expect("renders");
    assert!(ctx
        .chunks
        .iter()
        .all(|c| c.episode.as_deref().is_none_or(|e| !out.contains(&e))));
}

#[test]
fn v114_overflow_replay_and_kept_tails() {
    let l = load_path(
        &format!("{RECORDINGS}/opencode-1.14.41/exports/C1S.json"),
        None,
    );
    let t = &l.trace;
    let kind = |k: UserKind| t.messages.iter().filter(|m| m.user_kind == Some(k)).count();
    // 7 typed + 7 compaction + 6 synthetic continue + 1 replayed prompt.
    assert_eq!(kind(UserKind::Human), 7);
    assert_eq!(kind(UserKind::Compaction), 7);
    assert_eq!(kind(UserKind::ContinueAfterCompaction), 6);
    assert_eq!(kind(UserKind::PromptReplayed), 1);
    assert_eq!(t.compactions.len(), 7);
    assert!(t.compactions.iter().all(|c| c.tail_start_id.is_some()));
    assert_eq!(t.compactions.iter().filter(|c| c.overflow).count(), 1);
    // Each compaction call was built: head only, earlier summaries quoted from the second on.
    assert_eq!(l.compaction.calls.len(), 7);
    assert!(l.compaction.calls[1..].iter().any(|c| c.previous_summary));
}

/// The 1.18.33 compaction calls rebuilt from the stored session are, character for character,
/// the user message OpenCode sent (the request bodies the recording kept for its summary calls).
#[test]
fn v118_compaction_requests_are_rebuilt_exactly() {
    use tierscope_engine::formats::opencode::compaction_request;
    let trace = tierscope_engine::formats::opencode::export::load_export(Path::new(&format!(
        "{RECORDINGS}/opencode-1.18.33/exports/E2.json"
    )))
    .expect("export");
    let sent: Vec<String> = std::fs::read_to_string(format!(
        "{RECORDINGS}/opencode-1.18.33/requests/E2.requests.jsonl"
    ))
    .expect("request bodies")
    .lines()
    .map(|l| serde_json::from_str::<Value>(l).expect("json"))
    .filter(|v| v["kind"] == "summary")
    .map(|v| {
        let msgs = v["messages"].as_array().expect("messages");
        msgs.last().expect("user")["content"]
            .as_str()
            .expect("text")
            .to_owned()
    })
    .collect();
    let built = compaction_request::build_all(&trace);
    assert_eq!(built.len(), sent.len());
    for (b, s) in built.iter().zip(&sent) {
        let user = b.text.split_once("\nuser:\n").expect("a user message").1;
        assert_eq!(user.strip_suffix('\n').unwrap_or(user), s.as_str());
    }
    assert!(!built[0].previous_summary && built[1].previous_summary);
}

/// A compaction the policy simulates is a billed call of its own, sized like the release's.
#[test]
fn simulated_compaction_calls_are_sized_and_priced() {
    let l = load_path(
        &format!("{RECORDINGS}/opencode-1.18.33/exports/E2.json"),
        None,
    );
    let p =
        policy::load("opencode", &[("trigger".to_owned(), "simulate".to_owned())]).expect("policy");
    let r = replay::replay_session(&l, &p, None);
    let calls: Vec<_> = r
        .frames
        .iter()
        .filter_map(|f| f.compaction_call.clone())
        .collect();
    assert!(!calls.is_empty(), "E2 overflows its 11k window");
    assert_eq!(
        calls.len(),
        r.frames.iter().filter(|f| f.compaction).count()
    );
    for c in &calls {
        // The fixed prompt and at least some history; far below a full context.
        assert!(
            c.tokens > l.compaction.prompt_tokens && c.tokens < 11_000,
            "{c:?}"
        );
        assert!(c.cost > 0.0 && c.output > 0);
        assert_eq!(c.tokens, c.cache_read + c.cache_write + c.uncached);
        // E2 has recorded summaries: their text stands in.
        assert!(c.summary_text.starts_with("recorded:"), "{c:?}");
    }
    // Each call is billed in the frame it precedes, so the session's cost is the frames'.
    for f in r.frames.iter().filter(|f| f.compaction) {
        let c = f.compaction_call.as_ref().expect("a call");
        assert!(f.cost > c.cost, "the request's own price plus the call's");
    }
    let frames: f64 = r.frames.iter().map(|f| f.cost).sum();
    assert!((r.summary.cost - frames).abs() < 1e-9);
    // The recording's own summary calls are not made by the simulation.
    for f in r.frames.iter().filter(|f| f.synthetic_call) {
        assert_eq!((f.tokens, f.cost), (0, 0.0));
    }
    let run = r
        .policy
        .compaction
        .as_ref()
        .expect("opencode says how it ran");
    assert_eq!(run.trigger, "simulate");
    assert_eq!(run.compactions.len(), calls.len());
}

/// A session OpenCode migrated from a ≤0.5 per-project tree has no directory: its project's
/// worktree stands in, and the loader says so.
#[test]
fn a_migrated_session_takes_its_projects_worktree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let st = dir.path().join("storage");
    let write = |rel: &str, v: Value| {
        let p = st.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, v.to_string()).expect("write");
    };
    write(
        "project/abc.json",
        serde_json::json!({"id": "abc", "worktree": "/home/u/src/app"}),
    );
    write(
        "session/abc/ses_1.json",
        serde_json::json!({"id": "ses_1", "projectID": "abc", "version": "0.5.29", "title": "t",
            "time": {"created": 1, "updated": 2}}),
    );
    write(
        "message/ses_1/msg_1.json",
        serde_json::json!({"id": "msg_1", "sessionID": "ses_1", "role": "user", "time": {"created": 1}}),
    );
    let src = tierscope_engine::trace::load::open(Some(dir.path())).expect("opens");
    let listed = src.list_sessions().expect("list");
    assert_eq!(listed[0].directory, "/home/u/src/app");
    assert_eq!(src.diagnostics().count(DiagnosticKind::RuleDirectory), 1);
}

/// 0.1.174 L5: a `write` whose arguments the SDK rejected. OpenCode stored a 2,419-token
/// `AI_InvalidToolArgumentsError` with the message and sent the model only the message's parts,
/// so no tier carries the error (the era table sizes its requests within 0.2 % of the model's),
/// and the failed request says what failed in its note.
#[test]
fn v01_a_stored_error_is_not_sent_and_its_request_says_so() {
    use tierscope_engine::replay::{render_at, Input};
    let l = load_data(
        &format!("{RECORDINGS}/opencode-0.1.174-long/data"),
        "ses_dc3327589ffeFzIL2yppdtVnFB",
    );
    let failed = l
        .trace
        .messages
        .iter()
        .position(|m| m.error.is_some())
        .expect("an errored message");
    let error = l.trace.messages[failed].error.as_ref().expect("error");
    assert!(error
        .message
        .as_deref()
        .is_some_and(|m| m.starts_with("AI_InvalidToolArgumentsError") && m.len() > 8_000));
    for e in &l.episodes {
        for rep in e.tiers.values() {
            for c in &rep.chunks {
                assert!(!c.text.contains("AI_InvalidToolArgumentsError"), "{}", e.id);
            }
        }
    }
    let p = policy::load("opencode", &[]).expect("policy");
    let r = l
        .trace
        .requests
        .iter()
        .position(|r| r.message_index == failed)
        .expect("its request");
    let ctx = render_at(&Input::from(&l), &p, None, r).expect("renders");
    let note = ctx.note.expect("a note");
    assert!(
        note.starts_with("this request failed (UnknownError: AI_InvalidToolArgumentsError"),
        "{note}"
    );
    assert!(note.chars().count() < 400, "{note}");
}
