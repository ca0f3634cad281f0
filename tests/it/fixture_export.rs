//! `tierscope fixture`: determinism, loading with zero diagnostics, and probes that are honest
//! (each needle is planted where the sidecar says, only there, and visible when due).

use std::collections::BTreeSet;
use std::path::Path;

use tierscope_engine::episode::sidecar::{parse_probes, Dimension, Needle, ProbeKind};
use tierscope_engine::fixture::{generate_in_memory, write_fixture, FixtureConfig};
use tierscope_engine::formats::opencode::export::load_export;
use tierscope_engine::trace::model::{Message, PartKind, Role, UserKind};

fn cfg(seed: u64, requests: usize) -> FixtureConfig {
    FixtureConfig {
        seed,
        requests,
        ..FixtureConfig::default()
    }
}

/// Everything of a message a rendered context could show: texts, reasoning, tool inputs, outputs
/// and errors.
fn message_text(m: &Message) -> String {
    let mut s = String::new();
    for p in &m.parts {
        match &p.kind {
            PartKind::Text { text, .. } | PartKind::Reasoning { text } => s.push_str(text),
            PartKind::Tool(t) => {
                s.push_str(&t.input.to_string());
                s.push_str(t.output.as_deref().unwrap_or(""));
                s.push_str(t.error.as_deref().unwrap_or(""));
            }
            _ => {}
        }
        s.push('\n');
    }
    s
}

#[test]
fn same_seed_gives_byte_identical_files_and_another_seed_does_not() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let c = cfg(42, 500);
    let ra = write_fixture(&c, a.path()).unwrap();
    let rb = write_fixture(&c, b.path()).unwrap();
    for name in ["fixture-42-500.json", "fixture-42-500.probes.json"] {
        let x = std::fs::read(a.path().join(name)).unwrap();
        let y = std::fs::read(b.path().join(name)).unwrap();
        assert!(!x.is_empty());
        assert!(x == y, "{name} differs between two runs with the same seed");
    }
    assert_eq!(ra.session_id, rb.session_id);
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(a.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    // The in-memory generator writes the same bytes as the file writer.
    let (mem, _, _) = generate_in_memory(&c).unwrap();
    assert!(mem == std::fs::read(a.path().join("fixture-42-500.json")).unwrap());
    let (other, _, _) = generate_in_memory(&cfg(43, 500)).unwrap();
    assert!(other != mem);
}

#[test]
fn fixture_loads_with_zero_diagnostics_and_has_every_dimension() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(7, 700);
    let report = write_fixture(&c, dir.path()).unwrap();
    let trace = load_export(&dir.path().join("fixture-7-700.json")).unwrap();
    assert!(trace.diagnostics.is_empty(), "{:?}", trace.diagnostics);
    assert_eq!(trace.requests.len(), 700);
    assert_eq!(report.requests, 700);
    assert_eq!(trace.messages.len(), report.messages);
    assert_eq!(trace.session.version.as_deref(), Some("1.18.33"));
    // Every assistant message answers a human turn, has usage and a step-start/step-finish pair.
    for m in &trace.messages {
        match m.role {
            Role::User => assert_eq!(m.user_kind, Some(UserKind::Human)),
            Role::Assistant => {
                let kinds: Vec<&str> = m.parts.iter().map(|p| p.kind.type_name()).collect();
                assert_eq!(kinds.first(), Some(&"step-start"), "{kinds:?}");
                assert_eq!(kinds.last(), Some(&"step-finish"), "{kinds:?}");
            }
        }
    }
    assert!(trace.requests.iter().all(|r| r.recorded_prompt() > 0));
    // Time order is the file order (the loader sorts by time then id).
    let ids: Vec<&str> = trace.messages.iter().map(|m| m.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "message ids ascend with time");

    let path = dir.path().join("fixture-7-700.probes.json");
    let probes = parse_probes(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    assert_eq!(probes.len(), report.probes);
    let dims: BTreeSet<Dimension> = probes.iter().map(|p| p.dimension).collect();
    assert_eq!(dims.len(), 10, "every dimension is probed: {dims:?}");
    assert!(probes.iter().any(|p| p.kind == ProbeKind::Semantic));
    assert!(probes
        .iter()
        .any(|p| p.needles.iter().any(|n| matches!(n, Needle::Regex(_)))));
    assert!(
        report.revisits > 0,
        "a 700-request fixture has relevance shifts"
    );
    // Every bash call records its exit code; some fail.
    let exits: Vec<i64> = trace
        .messages
        .iter()
        .flat_map(|m| {
            m.tool_parts()
                .filter(|(_, t)| t.tool == "bash")
                .map(|(_, t)| t.exit_code().unwrap_or(-1))
        })
        .collect();
    assert!(exits.iter().all(|e| *e >= 0));
    assert!(exits.iter().any(|e| *e != 0));
}

#[test]
fn every_needle_is_planted_in_its_source_only_within_its_episode_and_visible_when_due() {
    let (bytes, probes, _) = generate_in_memory(&cfg(11, 900)).unwrap();
    let trace =
        tierscope_engine::formats::opencode::export::parse_export(&bytes, Path::new("mem.json"))
            .unwrap();
    assert!(trace.diagnostics.is_empty());
    // Episode of each message: the index of the human turn it follows.
    let mut turn = 0usize;
    let episode_of: Vec<usize> = trace
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if m.role == Role::User && i > 0 {
                turn += 1;
            }
            turn
        })
        .collect();
    let texts: Vec<String> = trace.messages.iter().map(message_text).collect();
    for p in &probes.probes {
        let src = trace
            .message_index(&p.source_message_id)
            .unwrap_or_else(|| panic!("{}: source {} missing", p.id, p.source_message_id));
        assert!(
            p.is_answered_by(&texts[src]),
            "{}: needle not in its source message",
            p.id
        );
        for (i, t) in texts.iter().enumerate() {
            if episode_of[i] != episode_of[src] {
                let hit = match p.kind {
                    ProbeKind::Exact => p.needles.iter().any(|n| n.is_found_in(t)),
                    ProbeKind::Semantic => p.is_answered_by(t),
                };
                assert!(
                    !hit,
                    "{} ({:?}) leaks into message {i} outside its episode",
                    p.id, p.needles
                );
            }
        }
        let due = &trace.requests[p.due_from_request];
        assert!(
            due.message_index > src,
            "{}: due before its source is visible",
            p.id
        );
    }
}

#[test]
fn knobs_shape_the_session() {
    let (small, _, rs) = generate_in_memory(&FixtureConfig {
        output_size: 200,
        ..cfg(5, 300)
    })
    .unwrap();
    let (large, _, rl) = generate_in_memory(&FixtureConfig {
        output_size: 4000,
        ..cfg(5, 300)
    })
    .unwrap();
    let mean_output = |b: &[u8]| {
        let t = tierscope_engine::formats::opencode::export::parse_export(b, Path::new("k.json"))
            .unwrap();
        let outs: Vec<usize> = t
            .messages
            .iter()
            .flat_map(|m| {
                m.tool_parts()
                    .filter_map(|(_, t)| t.output.as_ref().map(String::len))
            })
            .collect();
        outs.iter().sum::<usize>() as f64 / outs.len() as f64
    };
    let (ms, ml) = (mean_output(&small), mean_output(&large));
    assert!(ml > 5.0 * ms, "mean tool output {ms:.0} vs {ml:.0} chars");
    assert!(large.len() > small.len());
    assert_eq!((rs.requests, rl.requests), (300, 300));
    let (_, _, r) = generate_in_memory(&FixtureConfig {
        episodes: Some(10),
        ..cfg(5, 300)
    })
    .unwrap();
    assert_eq!(r.episodes, 10);
    let (_, dense, _) = generate_in_memory(&FixtureConfig {
        probe_density: 1.0,
        ..cfg(5, 600)
    })
    .unwrap();
    let (_, sparse, _) = generate_in_memory(&FixtureConfig {
        probe_density: 0.1,
        ..cfg(5, 600)
    })
    .unwrap();
    assert!(dense.probes.len() > sparse.probes.len());
    // Tiny sessions still load.
    for n in [1, 2, 3, 5] {
        let (b, _, r) = generate_in_memory(&cfg(9, n)).unwrap();
        assert_eq!(r.requests, n);
        let t =
            tierscope_engine::formats::opencode::export::parse_export(&b, Path::new("tiny.json"))
                .unwrap();
        assert_eq!(t.requests.len(), n);
        assert!(t.diagnostics.is_empty());
    }
    assert!(generate_in_memory(&cfg(1, 0)).is_err());
    assert!(generate_in_memory(&FixtureConfig {
        probe_density: 1.5,
        ..cfg(1, 10)
    })
    .is_err());
}
