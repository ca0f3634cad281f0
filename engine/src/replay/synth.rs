//! Synthetic traces with episodes and tiers already built, for property tests and benchmarks.
//! Deterministic for a given [`SynthSpec`] (a small xorshift generator, no clock).
//!
//! Shape: each episode is one human message and its share of the requests (assistant messages
//! with one tool call on a file key). Tiers: full = one chunk per message; dense ≈ half; compact
//! = one chunk ≈ 15 % of full; anchor = one short line. Classes are mixed (pin, compressible
//! with floors at compact or anchor, discardable); pinned spans are verbatim in every tier.
//! Gaps between requests are seconds, with a long pause (past a 300 s cache TTL) now and then.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;
use xxhash_rust::xxh3::xxh3_64;

use crate::episode::sidecar::{Dimension, Needle, Probe, ProbeKind};
use crate::episode::{
    Chunk, Episode, EpisodeKind, Pin, Representation, RetentionClass, Strategy, Tier,
};
use crate::trace::{
    Diagnostics, Message, ModelRef, Part, PartKind, Request, RequestStatus, Role, SessionInfo,
    SourceKind, ToolPart, ToolStatus, Trace, Usage, UserKind,
};

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthSpec {
    pub requests: usize,
    pub episodes: usize,
    pub seed: u64,
    /// Tokens of a full-tier message chunk, inclusive range.
    pub chunk_tokens: (u32, u32),
    /// A pause longer than five minutes about every this many requests (0 = never).
    pub long_gap_every: usize,
    /// Add a probe for about every fourth episode.
    pub probes: bool,
    /// Recorded prompt usage: system tokens added to the full rendering (0 = no usage).
    pub recorded_system: u64,
}

impl Default for SynthSpec {
    fn default() -> Self {
        SynthSpec {
            requests: 200,
            episodes: 40,
            seed: 1,
            chunk_tokens: (40, 400),
            long_gap_every: 50,
            probes: true,
            recorded_system: 0,
        }
    }
}

/// Generated sessions hold no compaction.
static NO_COMPACTION: crate::trace::summary_call::CompactionSizes =
    crate::trace::summary_call::CompactionSizes::NONE;

/// A generated session.
#[derive(Debug, Clone)]
pub struct Synth {
    pub trace: Trace,
    pub episodes: Vec<Episode>,
    pub probes: Vec<Probe>,
    pub milestones: BTreeSet<usize>,
}

impl Synth {
    /// The replay input over this session.
    pub fn input(&self) -> super::Input<'_> {
        super::Input {
            trace: &self.trace,
            episodes: &self.episodes,
            probes: &self.probes,
            milestones: &self.milestones,
            magic_context: None,
            compaction: &NO_COMPACTION,
            cache: None,
            summaries: None,
        }
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1).max(1)
    }
}

fn chunk(msg_id: &str, mi: usize, text: String, tokens: u32) -> Chunk {
    Chunk {
        message_id: msg_id.to_owned(),
        message_index: mi,
        step: 0,
        hash: xxh3_64(text.as_bytes()),
        tokens,
        text,
        artefact: false,
        pruned: None,
    }
}

fn rep(episode: &str, tier: Tier, ids: &[String], chunks: Vec<Chunk>) -> Representation {
    Representation {
        episode_id: episode.to_owned(),
        tier,
        strategy: Strategy::Source,
        generator: "tierscope-synth/1".into(),
        source_message_ids: ids.into(),
        contract: "synthetic".into(),
        tokens: chunks.iter().map(|c| c.tokens).sum(),
        chunks,
    }
}

/// Generate a session per `spec`.
pub fn generate(spec: &SynthSpec) -> Synth {
    let mut rng = Rng(spec.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let n_ep = spec.episodes.max(1);
    let model = ModelRef {
        provider_id: "synthetic".into(),
        model_id: "model".into(),
    };
    let session_id = format!("ses_synth_{}", spec.seed);
    let mut messages: Vec<Message> = Vec::new();
    let mut requests: Vec<Request> = Vec::new();
    let mut episodes: Vec<Episode> = Vec::new();
    let mut probes: Vec<Probe> = Vec::new();
    let mut time: i64 = 1_700_000_000_000;
    let (lo, hi) = (
        u64::from(spec.chunk_tokens.0),
        u64::from(spec.chunk_tokens.1.max(spec.chunk_tokens.0)),
    );
    let mut full_so_far = 0u64;
    for e in 0..n_ep {
        let share = spec.requests / n_ep + usize::from(e < spec.requests % n_ep);
        let eid = format!("E{e}");
        let roll = rng.range(0, 99);
        let (class, floor) = match roll {
            0..=9 => (RetentionClass::Pin, Tier::Full),
            10..=29 => (RetentionClass::Discardable, Tier::Dropped),
            30..=54 => (RetentionClass::Compressible, Tier::Compact),
            _ => (RetentionClass::Compressible, Tier::Anchor),
        };
        let pinned = class == RetentionClass::Pin || roll % 7 == 0;
        let key = format!("src/file{}.rs", rng.range(0, (n_ep as u64 / 3).max(1)));
        let first_message = messages.len();
        let mut full = Vec::new();
        let mut dense = Vec::new();
        let mut ids = Vec::new();
        let pin_text = format!("PIN-{e}: never break rule {e}");
        let needle = format!("NEEDLE-{e}");
        let first_request = requests.len();
        // The human message.
        let uid = format!("msg_{:06}", messages.len());
        let mut utext = format!("Task {e} on {key}.");
        if pinned {
            utext.push(' ');
            utext.push_str(&pin_text);
        }
        let with_probe = spec.probes && e % 4 == 1;
        if with_probe {
            utext.push_str(&format!(" The code is {needle}."));
        }
        time += rng.range(1_000, 20_000) as i64;
        messages.push(Message {
            id: uid.clone(),
            session_id: session_id.clone(),
            role: Role::User,
            time_created: time,
            time_completed: None,
            agent: Some("build".into()),
            model: Some(model.clone()),
            parent_id: None,
            finish: None,
            error: None,
            summary: false,
            own_history: false,
            tokens: None,
            cost: 0.0,
            parts: vec![Part {
                id: format!("prt_{uid}"),
                kind: PartKind::Text {
                    text: utext.clone(),
                    synthetic: false,
                    ignored: false,
                    compaction_continue: false,
                },
            }],
            user_kind: Some(UserKind::Human),
            cwd: None,
            dropped_after_own_requests: false,
            system: None,
        });
        let ut = rng.range(lo, hi) as u32;
        full.push(chunk(&uid, first_message, format!("user: {utext}"), ut));
        dense.push(chunk(
            &uid,
            first_message,
            format!("user (dense): {utext}"),
            ut.div_ceil(2).max(1),
        ));
        ids.push(uid.clone());
        for _ in 0..share {
            let mi = messages.len();
            let aid = format!("msg_{mi:06}");
            let t_key = if rng.range(0, 3) == 0 {
                format!("src/file{}.rs", rng.range(0, (n_ep as u64 / 3).max(1)))
            } else {
                key.clone()
            };
            let gap = if spec.long_gap_every > 0 && rng.range(0, spec.long_gap_every as u64) == 0 {
                rng.range(301_000, 900_000)
            } else {
                rng.range(500, 8_000)
            };
            time += gap as i64;
            let tok = rng.range(lo, hi) as u32;
            let text = format!("assistant {aid}: read {t_key} ({tok})");
            full.push(chunk(&aid, mi, text.clone(), tok));
            dense.push(chunk(
                &aid,
                mi,
                format!("{text} [dense]"),
                tok.div_ceil(2).max(1),
            ));
            ids.push(aid.clone());
            let recorded_prompt = if spec.recorded_system > 0 {
                spec.recorded_system
                    + full_so_far
                    + full.iter().map(|c| u64::from(c.tokens)).sum::<u64>()
                    - u64::from(tok)
            } else {
                0
            };
            requests.push(Request {
                index: requests.len(),
                message_id: aid.clone(),
                message_index: mi,
                status: RequestStatus::Ok,
                time_created: time,
                time_completed: Some(time + 500),
                agent: Some("build".into()),
                model: Some(model.clone()),
                usage: Usage {
                    input: recorded_prompt,
                    output: 50,
                    ..Usage::default()
                },
                cost: 0.0,
                finish: Some("tool-calls".into()),
                user_message_id: Some(uid.clone()),
                synthetic_call: false,
                step: None,
                prompt: recorded_prompt,
                cache_ttl_s: None,
            });
            messages.push(Message {
                id: aid.clone(),
                session_id: session_id.clone(),
                role: Role::Assistant,
                time_created: time,
                time_completed: Some(time + 500),
                agent: Some("build".into()),
                model: Some(model.clone()),
                parent_id: Some(uid.clone()),
                finish: Some("tool-calls".into()),
                error: None,
                summary: false,
                own_history: false,
                tokens: None,
                cost: 0.0,
                parts: vec![Part {
                    id: format!("prt_{aid}"),
                    kind: PartKind::Tool(Box::new(ToolPart {
                        call_id: format!("call_{aid}"),
                        alias: None,
                        tool: "read".into(),
                        status: ToolStatus::Completed,
                        input: json!({ "filePath": t_key }),
                        output: Some(format!("contents of {t_key}")),
                        error: None,
                        title: None,
                        metadata: Default::default(),
                        time_start: Some(time),
                        time_end: Some(time + 400),
                        time_compacted: None,
                    })),
                }],
                user_kind: None,
                cwd: None,
                dropped_after_own_requests: false,
                system: None,
            });
        }
        let last_message = messages.len() - 1;
        let full_tokens: u64 = full.iter().map(|c| u64::from(c.tokens)).sum();
        full_so_far += full_tokens;
        let keep = if pinned {
            format!(" {pin_text}")
        } else {
            String::new()
        };
        let needle_c = if with_probe && e % 8 == 1 {
            format!(" {needle}")
        } else {
            String::new()
        };
        let compact = vec![chunk(
            &ids[0],
            first_message,
            format!("[{eid} compact] task {e} on {key}{keep}{needle_c}"),
            (full_tokens * 15 / 100).max(3) as u32,
        )];
        let anchor = vec![chunk(
            &ids[0],
            first_message,
            format!("[{eid}] task {e}{keep}"),
            2,
        )];
        let mut tiers = BTreeMap::new();
        tiers.insert(Tier::Full, rep(&eid, Tier::Full, &ids, full));
        tiers.insert(Tier::Dense, rep(&eid, Tier::Dense, &ids, dense));
        tiers.insert(Tier::Compact, rep(&eid, Tier::Compact, &ids, compact));
        tiers.insert(Tier::Anchor, rep(&eid, Tier::Anchor, &ids, anchor));
        let (first_request, last_request) = if share > 0 {
            (Some(first_request), Some(requests.len() - 1))
        } else {
            (None, None)
        };
        if with_probe {
            probes.push(Probe {
                id: format!("P{e}"),
                needles: vec![Needle::Exact(needle.clone())],
                source_message_id: uid.clone(),
                due_from_request: requests.len() + 3,
                kind: ProbeKind::Exact,
                dimension: Dimension::Identifier,
                question: None,
            });
        }
        episodes.push(Episode {
            id: eid,
            index: e,
            first_message,
            last_message,
            first_request,
            last_request,
            time_start: messages[first_message].time_created,
            time_end: messages[last_message].time_created,
            title: format!("task {e}"),
            kinds: vec![EpisodeKind::Turn],
            class,
            floor,
            class_reasons: vec!["synthetic".into()],
            floor_reasons: vec!["synthetic".into()],
            pins: if pinned {
                vec![Pin {
                    message_id: uid,
                    text: pin_text,
                    reason: "synthetic".into(),
                }]
            } else {
                Vec::new()
            },
            keys: vec![key],
            continues: None,
            children: Vec::new(),
            tiers,
            tier_notes: Vec::new(),
            importance: None,
        });
    }
    let milestones: BTreeSet<usize> = (0..requests.len()).filter(|r| r % 17 == 16).collect();
    let default_rules = crate::formats::opencode::Dialect::default();
    let trace = Trace {
        session: SessionInfo {
            id: session_id,
            title: "synthetic".into(),
            time_created: messages.first().map_or(0, |m| m.time_created),
            time_updated: time,
            model: Some(model),
            ..SessionInfo::default()
        },
        messages,
        requests,
        compactions: Vec::new(),
        children: Vec::new(),
        pruned: Vec::new(),
        // Read by the newest rules (OpenCode's, as for a session without a version).
        origin: crate::trace::Origin {
            agent: "synthetic",
            version: None,
            format: "synthetic",
            rules: default_rules.era.as_str(),
            rules_version: None,
        },
        wire: default_rules.wire(),
        source: SourceKind::Export("synthetic".into()),
        diagnostics: Diagnostics::default(),
        id_index: Default::default(),
    };
    Synth {
        trace,
        episodes,
        probes,
        milestones,
    }
}
