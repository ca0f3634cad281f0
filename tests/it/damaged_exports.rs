//! One damaged spot in an export loses only what it covers (issue 33, item 4): `sample-traces/
//! M1.json` damaged at many byte positions inside every message — a flipped quote, a syntax
//! error, a stray `}` — keeps every message that does not overlap the damage, with all its
//! parts, and every undamaged part of the message that does; the diagnostic is `damaged_span`,
//! never `truncated_export` for a complete file (`corrupt_json` where the
//! brackets still say where the one damaged value ends). A cut file still says `truncated_export`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use tierscope_engine::formats::opencode::export::parse_export;
use tierscope_engine::trace::{DiagnosticKind, Trace};

const BIN: &str = env!("CARGO_BIN_EXE_tierscope");

fn m1() -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/M1.json");
    std::fs::read(&p).unwrap_or_else(|e| panic!("missing fixture {}: {e}", p.display()))
}

/// An element of the pretty-printed export: its id and byte span (from its `{` line to its `}`).
#[derive(Debug, Clone)]
struct Span {
    id: String,
    start: usize,
    end: usize,
}

/// The elements whose `{` line is indented by `indent` (messages: 4, parts: 8) with the id found
/// on the first line indented by `id_indent` that holds `"id"`.
fn spans(raw: &[u8], indent: usize, id_indent: usize) -> Vec<Span> {
    let text = std::str::from_utf8(raw).expect("utf-8");
    let open = format!("{}{{", " ".repeat(indent));
    let close = format!("{}}}", " ".repeat(indent));
    let id_key = format!("{}\"id\": \"", " ".repeat(id_indent));
    let mut out = Vec::new();
    let mut at = 0;
    let mut cur: Option<Span> = None;
    for line in text.split_inclusive('\n') {
        let l = line.trim_end_matches('\n');
        if l == open {
            cur = Some(Span {
                id: String::new(),
                start: at,
                end: 0,
            });
        } else if let Some(s) = cur.as_mut() {
            if s.id.is_empty() {
                if let Some(rest) = l.strip_prefix(&id_key) {
                    s.id = rest.trim_end_matches([',', '"']).to_owned();
                }
            }
            if l == close || l == format!("{close},") {
                let mut s = cur.take().expect("open element");
                s.end = at + close.len();
                out.push(s);
            }
        }
        at += line.len();
    }
    out
}

/// Message id → its part ids, as loaded.
fn kept(t: &Trace) -> BTreeMap<String, Vec<String>> {
    t.messages
        .iter()
        .map(|m| (m.id.clone(), m.parts.iter().map(|p| p.id.clone()).collect()))
        .collect()
}

/// The three kinds of damage at byte `at` (moved to the nearest byte where each applies).
fn damaged(raw: &[u8], at: usize, kind: usize) -> (Vec<u8>, usize) {
    let mut d = raw.to_vec();
    match kind {
        // A flipped quote: the next `"` at or after `at` becomes `'`.
        0 => {
            let q = at + raw[at..].iter().position(|&c| c == b'"').expect("a quote");
            d[q] = b'\'';
            (d, q)
        }
        // A syntax error: the byte becomes `#` (outside a string, nothing parses it).
        1 => {
            d[at] = b'#';
            (d, at)
        }
        // A stray closing brace inserted.
        _ => {
            d.insert(at, b'}');
            (d, at)
        }
    }
}

#[test]
fn one_damaged_spot_loses_only_the_message_or_part_it_is_in() {
    let raw = m1();
    let path = Path::new("M1.json");
    let whole = parse_export(&raw, path).expect("clean load");
    let all = kept(&whole);
    let messages = spans(&raw, 4, 8);
    let parts = spans(&raw, 8, 10);
    assert_eq!(messages.len(), whole.messages.len(), "fixture shape");
    assert!(messages.len() >= 20 && parts.len() >= 80, "fixture shape");
    let mut checked = 0;
    for m in &messages {
        // Seven positions spread over each message, each with every kind of damage.
        let len = m.end - m.start;
        for step in 0..7 {
            let at = m.start + len * step / 7 + (step * 37) % 11;
            for kind in 0..3 {
                let (bad, pos) = damaged(&raw, at.min(m.end - 2), kind);
                let Ok(t) = parse_export(&bad, path) else {
                    panic!("damage kind {kind} at byte {pos} lost the whole export");
                };
                let got = kept(&t);
                assert_eq!(
                    t.diagnostics.count(DiagnosticKind::TruncatedExport),
                    0,
                    "a complete file called truncated (kind {kind} at {pos})"
                );
                let hit = |s: &Span| s.start <= pos && pos < s.end;
                for other in messages.iter().filter(|s| !hit(s)) {
                    assert_eq!(
                        got.get(&other.id),
                        all.get(&other.id),
                        "message {} lost by damage kind {kind} at byte {pos} (in {})",
                        other.id,
                        m.id
                    );
                }
                // In the damaged message, every part outside the damage (when its info holds).
                if let Some(kept_parts) = got.get(&m.id) {
                    let lost: Vec<&Span> = parts
                        .iter()
                        .filter(|p| p.start > m.start && p.end < m.end && !hit(p))
                        .filter(|p| !kept_parts.contains(&p.id))
                        .collect();
                    assert!(
                        lost.is_empty(),
                        "parts {lost:?} of {} lost by damage kind {kind} at byte {pos}",
                        m.id
                    );
                }
                // (Damage inside a string only changes text: nothing is lost, nothing to say.)
                let count = |m: &BTreeMap<String, Vec<String>>| {
                    (m.len(), m.values().map(Vec::len).sum::<usize>())
                };
                let (lost_m, lost_p) =
                    (count(&got).0 < count(&all).0, count(&got).1 < count(&all).1);
                if lost_m || lost_p {
                    // A span that was skipped, or one value whose brackets hold but whose
                    // text is not JSON.
                    let said = t.diagnostics.count(DiagnosticKind::DamagedSpan)
                        + t.diagnostics.count(DiagnosticKind::CorruptJson);
                    assert!(said > 0, "loss without a diagnostic (kind {kind} at {pos})");
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 500, "{checked}");
}

#[test]
fn the_issue_cases_keep_every_other_message_and_name_the_span() {
    let raw = m1();
    let messages = spans(&raw, 4, 8);
    let whole = parse_export(&raw, Path::new("M1.json")).expect("clean");
    let n = whole.messages.len();
    let text = String::from_utf8(raw.clone()).expect("utf-8");
    // A quote flipped in a text part mid-file (the case that kept 7 of 28).
    let (m, q) = messages[7..]
        .iter()
        .find_map(|m| {
            let at = text[m.start..m.end].find("\"type\": \"text\"")?;
            Some((m, m.start + at + 8))
        })
        .expect("a message with a text part");
    assert_eq!(raw[q], b'"');
    let mut bad = raw.clone();
    bad[q] = b'\'';
    let t = parse_export(&bad, Path::new("M1.json")).expect("loads");
    assert_eq!(t.messages.len(), n, "only a part is lost");
    assert_eq!(t.diagnostics.count(DiagnosticKind::TruncatedExport), 0);
    let d = t
        .diagnostics
        .items()
        .iter()
        .find(|d| {
            matches!(
                d.kind,
                DiagnosticKind::DamagedSpan | DiagnosticKind::CorruptJson
            )
        })
        .expect("damaged_span or corrupt_json");
    assert!(d.example.contains("bytes ") && d.example.contains("lines "));
    assert!(
        d.example.contains(&m.id) && d.example.contains("part #"),
        "{} / {m:?}",
        d.example
    );

    // Through the CLI: the span is reported and every other message counted.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("M1.json");
    std::fs::write(&file, &bad).expect("write");
    let out = Command::new(BIN)
        .args(["inspect", file.to_str().expect("utf-8"), "--json"])
        .env("TIERSCOPE_CACHE_DIR", dir.path().join("cache"))
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains(&m.id) && !stdout.contains("truncated_export"));
}

#[test]
fn a_cut_export_is_truncated_and_keeps_every_message_before_the_cut() {
    let raw = m1();
    let messages = spans(&raw, 4, 8);
    for m in messages.iter().step_by(3) {
        let cut = m.start + (m.end - m.start) / 2;
        let t = parse_export(&raw[..cut], Path::new("cut.json")).expect("loads");
        assert_eq!(t.diagnostics.count(DiagnosticKind::TruncatedExport), 1);
        let got = kept(&t);
        for before in messages.iter().filter(|s| s.end <= cut) {
            assert!(got.contains_key(&before.id), "{} lost by a cut", before.id);
        }
    }
}

#[test]
fn a_one_line_export_loses_only_the_damaged_message_tail() {
    let raw = m1();
    let v: serde_json::Value = serde_json::from_slice(&raw).expect("json");
    let line = serde_json::to_vec(&v).expect("one line");
    let text = String::from_utf8(line.clone()).expect("utf-8");
    let whole = kept(&parse_export(&line, Path::new("M1.json")).expect("clean"));
    let starts: Vec<usize> = text.match_indices("{\"info\":").map(|(i, _)| i).collect();
    assert_eq!(
        starts.len(),
        whole.len() + 1,
        "the session's info and each message"
    );
    for (k, &start) in starts.iter().enumerate().skip(1) {
        let end = starts.get(k + 1).copied().unwrap_or(text.len());
        for frac in [3, 2] {
            let (bad, pos) = damaged(&line, start + (end - start) / frac, 0);
            let t = parse_export(&bad, Path::new("M1.json")).expect("loads");
            assert_eq!(t.diagnostics.count(DiagnosticKind::TruncatedExport), 0);
            let got = kept(&t);
            let hit = text[start..end.min(text.len())]
                .find("\"id\":\"msg_")
                .map(|i| &text[start + i + 6..start + i + 6 + 30]);
            for (id, parts) in &whole {
                if hit.is_some_and(|h| h.starts_with(id.as_str())) {
                    continue;
                }
                assert_eq!(got.get(id), Some(parts), "{id} lost by a quote at {pos}");
            }
        }
    }
}

#[test]
fn several_damaged_spots_at_once_never_panic_and_keep_every_untouched_message() {
    let raw = m1();
    let messages = spans(&raw, 4, 8);
    let whole = kept(&parse_export(&raw, Path::new("M1.json")).expect("clean"));
    let first = messages.first().expect("messages").start;
    // A fixed linear congruential sequence: the same damage on every run.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    };
    let bytes = b"\"'{}[],:#\n";
    for _ in 0..150 {
        let mut bad = raw.clone();
        let spots: Vec<usize> = (0..3)
            .map(|_| first + next(raw.len() - first - 4))
            .collect();
        for &s in &spots {
            bad[s] = bytes[next(bytes.len())];
        }
        let t = parse_export(&bad, Path::new("M1.json")).expect("the session info is intact");
        let got = kept(&t);
        for m in messages
            .iter()
            .filter(|m| spots.iter().all(|&s| s < m.start || s >= m.end))
        {
            assert_eq!(
                got.get(&m.id),
                whole.get(&m.id),
                "{} lost by {spots:?}",
                m.id
            );
        }
    }
}
