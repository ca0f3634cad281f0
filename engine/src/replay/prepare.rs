//! Everything the replay needs that does not depend on the schedule, computed once per replay:
//! which chunks each tier renders (artefacts left out or not), token sums, prune events, the
//! episodes each request touches (relevance keys), boundaries, conversations and system chunks.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use super::output::SystemSegment;
use super::Input;
use crate::episode::{Episode, Tier};
use crate::trace::{Trace, UserKind};

/// Which recorded chunks a rendering includes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Filter {
    /// The counterfactual: every compaction artefact left out.
    NoArtefacts,
    /// What the agent sent: compaction messages and summaries are shown as the summary piece,
    /// so they are left out of the episodes; continue messages stay where they are.
    Recorded,
}

/// The chunks of one episode's tier that a rendering includes.
#[derive(Debug, Clone, Default)]
pub(crate) struct TierData {
    /// Indices into the representation's chunks.
    pub idx: Vec<u32>,
    /// Prefix sums of their tokens (`len = idx.len() + 1`).
    pub prefix: Vec<u64>,
    /// Position (message index, step) of each included chunk (full tier: to cut the active
    /// episode before the request's own position).
    pub pos: Vec<(usize, u32)>,
}

impl TierData {
    pub fn tokens(&self) -> u64 {
        self.prefix.last().copied().unwrap_or(0)
    }
    pub fn len(&self) -> usize {
        self.idx.len()
    }
}

/// One recorded prune of a full-tier chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PruneEvent {
    pub time: i64,
    pub episode: u32,
    /// Position among the included full-tier chunks.
    pub pos: u32,
    /// Tokens saved.
    pub delta: u64,
}

/// Per-episode data.
#[derive(Debug, Clone)]
pub(crate) struct EpData {
    /// By depth 0..4 (full..anchor); `None` where the tier was not generated.
    pub tiers: [Option<TierData>; 4],
    /// Tiers the episode may be shown at when floors are respected, most faithful first.
    pub legal: Vec<Tier>,
    /// Every tier it can be shown at (generated tiers, then dropped).
    pub avail: Vec<Tier>,
    /// Pins missing from each level's text (dropped: all of them).
    pub missing_pins: [u64; 5],
}

/// Per-request data.
#[derive(Debug, Clone)]
pub(crate) struct ReqData {
    pub msg: usize,
    /// Message and step: the context is everything before it.
    pub pos: (usize, u32),
    pub active: usize,
    /// 0 = the conversation, 1 = compaction summary calls.
    pub conv: usize,
    pub time: i64,
    pub user_turn: bool,
    pub milestone: bool,
    pub sys_key: u64,
    pub sys_tokens: u64,
    /// Where the stored system prompt changed from the previous request's of the same agent and
    /// model: that request's system key and the tokens the two still share from their start
    /// (what is not stored, e.g. the tools, then the unchanged texts). The cached prefix breaks
    /// there, not at the start of the system chunk.
    pub sys_changed_from: Option<(u64, u64)>,
    /// The first step of this request's message that requests after the message received
    /// otherwise than its own later steps did ([`crate::trace::CompletedAnswer`]).
    pub resent_from: Option<u32>,
    /// A recorded compaction call's own request, as the agent built it (tokens without the
    /// system chunk).
    pub call_tokens: Option<u64>,
    /// The recorded cache lifetime of the conversation's previous request, if any.
    pub prev_cache_ttl_s: Option<u64>,
}

/// The precomputed view of one input under one filter.
pub(crate) struct Prep<'a> {
    pub trace: &'a Trace,
    pub episodes: &'a [Episode],
    pub eps: Vec<EpData>,
    pub reqs: Vec<ReqData>,
    pub prunes: Vec<PruneEvent>,
    pub segments: Vec<SystemSegment>,
    /// Message indices of compaction messages and summaries (left out under `Recorded`).
    pub compaction_msgs: BTreeSet<usize>,
    /// The Magic Context compartments behind the episodes, if any.
    pub magic_context: Option<&'a crate::formats::magic_context::MagicContextSession>,
    /// How compaction calls are sized (recorded calls, the release's fixed prompt).
    pub compaction: &'a crate::trace::summary_call::CompactionSizes,
    /// Per episode, the share of its full-tier text a compaction call of this release shows
    /// (tool outputs clipped from 1.14.21; 1.0 before).
    pub compaction_keep: Vec<f64>,
    /// The first message of a loop with its own history (OpenCode's v2), if any: its requests
    /// see nothing before it.
    first_own_loop: Option<usize>,
    /// Model-written summaries of simulated compactions, if any.
    pub summaries: Option<&'a super::written::SummaryBook>,
    /// Recorded prunes are applied (what a simulated compaction call sends of a pruned output).
    pub apply_prunes: bool,
    /// Per request, the episodes its tool inputs touch ([`Prep::touched`]), worked out on first
    /// use: only a relevance schedule reads them, and at 100k requests they are tens of MB
    /// that every other replay (the load's own calibration among them) would hold for nothing.
    touches: Touches<'a>,
}

/// Where a view's touch sets are kept: the loaded session's cache, or the view itself.
enum Touches<'a> {
    Shared(&'a std::sync::OnceLock<Vec<TouchSet>>),
    Own(std::sync::OnceLock<Vec<TouchSet>>),
}

impl Prep<'_> {
    /// The episodes whose keys request `t` touches (sorted; empty past the last request).
    /// Requests that touch the same episodes share one list.
    pub fn touched(&self, t: usize) -> &[u32] {
        let cell = match &self.touches {
            Touches::Shared(c) => *c,
            Touches::Own(c) => c,
        };
        let sets = cell.get_or_init(|| {
            let user_turns: Vec<bool> = self.reqs.iter().map(|r| r.user_turn).collect();
            touches(self.trace, self.episodes, &user_turns)
        });
        sets.get(t).map_or(&[], |s| &s[..])
    }
}

fn tier_data(
    e: &Episode,
    tier: Tier,
    include: &dyn Fn(&crate::episode::Chunk) -> bool,
) -> Option<TierData> {
    let rep = e.representation(tier)?;
    let mut d = TierData {
        idx: Vec::new(),
        prefix: vec![0],
        pos: Vec::new(),
    };
    let mut sum = 0u64;
    for (i, c) in rep.chunks.iter().enumerate() {
        if !include(c) {
            continue;
        }
        sum += u64::from(c.tokens);
        d.idx.push(i as u32);
        d.prefix.push(sum);
        d.pos.push(c.position());
    }
    Some(d)
}

/// The agent whose system chunk a request carries. A compaction (summary) call has its own
/// system prompt where the agent gives it one, whatever agent name it was stored under (OpenCode ≤1.0.68
/// stored `build`).
/// Requests of a loop with its own history (OpenCode's v2) carry that loop's own system prompt
/// and tools.
pub(crate) fn system_agent(trace: &Trace, r: &crate::trace::Request) -> String {
    let agent = if r.synthetic_call && trace.wire.summary_call_own_system {
        COMPACTION_AGENT
    } else {
        r.agent.as_deref().unwrap_or("")
    };
    if trace
        .messages
        .get(r.message_index)
        .is_some_and(|m| m.own_history)
    {
        format!("{agent} {OWN_LOOP}")
    } else {
        agent.to_owned()
    }
}

/// The agent name of compaction calls' system chunks.
pub(crate) const COMPACTION_AGENT: &str = "compaction";
/// Suffix of the system chunks of the requests of a loop with its own history (the name
/// OpenCode's users know it by).
pub(crate) const OWN_LOOP: &str = "(v2 loop)";

/// Key of a system chunk: (agent, provider/model).
pub(crate) fn sys_key(agent: &str, model: &str) -> u64 {
    xxh3_64(format!("system\0{agent}\0{model}").as_bytes())
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

impl<'a> Prep<'a> {
    pub fn new(
        input: &Input<'a>,
        filter: Filter,
        apply_prunes: bool,
        system_tokens: Option<u64>,
    ) -> Prep<'a> {
        let trace = input.trace;
        let episodes = input.episodes;
        let compaction_msgs: BTreeSet<usize> = trace
            .compactions
            .iter()
            .flat_map(|c| {
                [
                    c.user_message_id.as_deref(),
                    c.summary_message_id.as_deref(),
                ]
                .into_iter()
                .flatten()
                .filter_map(|id| trace.message_index(id))
                .collect::<Vec<_>>()
            })
            .collect();
        let include = |c: &crate::episode::Chunk| match filter {
            Filter::NoArtefacts => !c.artefact,
            Filter::Recorded => !compaction_msgs.contains(&c.message_index),
        };
        let mut eps = Vec::with_capacity(episodes.len());
        let mut prunes = Vec::new();
        for (ei, e) in episodes.iter().enumerate() {
            let tiers = [Tier::Full, Tier::Dense, Tier::Compact, Tier::Anchor]
                .map(|t| tier_data(e, t, &include));
            let mut avail: Vec<Tier> = Tier::TIERS
                .into_iter()
                .filter(|t| tiers[t.depth()].is_some())
                .collect();
            avail.push(Tier::Dropped);
            let mut legal = e.legal_tiers();
            // Law 2: pinned spans stay in the context, so an episode with pins is never dropped
            // by a policy that respects floors, whatever its class says.
            if !e.pins.is_empty() {
                legal.retain(|t| *t != Tier::Dropped);
            }
            if legal.is_empty() {
                legal.push(*avail.first().unwrap_or(&Tier::Full));
            }
            let mut missing_pins = [0u64; 5];
            // Most episodes pin nothing: their texts need not be built to find that out.
            for t in Tier::ALL.into_iter().filter(|_| !e.pins.is_empty()) {
                let text = e.representation(t).map(|r| r.text()).unwrap_or_default();
                missing_pins[t.depth()] = e
                    .pins
                    .iter()
                    .filter(|p| !text.contains(p.text.as_str()))
                    .count() as u64;
            }
            if apply_prunes {
                if let (Some(rep), Some(td)) = (e.representation(Tier::Full), &tiers[0]) {
                    for (pos, &ci) in td.idx.iter().enumerate() {
                        if let Some(p) = &rep.chunks[ci as usize].pruned {
                            let full = u64::from(rep.chunks[ci as usize].tokens);
                            prunes.push(PruneEvent {
                                time: p.time_compacted,
                                episode: ei as u32,
                                pos: pos as u32,
                                delta: full.saturating_sub(u64::from(p.tokens)),
                            });
                        }
                    }
                }
            }
            eps.push(EpData {
                tiers,
                legal,
                avail,
                missing_pins,
            });
        }
        prunes.sort_by_key(|p| (p.time, p.episode, p.pos));

        let reqs = requests(input, trace, episodes);
        let mut prep = Prep {
            trace,
            episodes,

            eps,
            reqs,
            prunes,
            segments: Vec::new(),
            compaction_msgs,
            magic_context: input.magic_context,
            compaction: input.compaction,
            first_own_loop: trace.messages.iter().position(|m| m.own_history),
            compaction_keep: PrepCache::get(input.cache.map(|c| &c.keep_shares), &mut None, || {
                episodes
                    .iter()
                    .map(|e| super::compaction_call::keep_share(trace, e))
                    .collect()
            })
            .clone(),
            summaries: input.summaries,
            apply_prunes,
            touches: match input.cache {
                Some(c) => Touches::Shared(&c.touches),
                None => Touches::Own(Default::default()),
            },
        };
        // A summary call that is the conversation's own request with the instruction appended
        // (the agent built none of its own): the history as the conversation held it, then
        // the fixed instruction.
        if !trace.wire.summary_call_own_system {
            for t in 0..prep.reqs.len() {
                if let Some(until) = prep.continued_history_end(t) {
                    prep.reqs[t].call_tokens = Some(
                        prep.recorded_view_tokens_until(t, until) + prep.compaction.prompt_tokens,
                    );
                }
            }
        }
        prep.segments = prep.system_segments(system_tokens);
        let by_key: HashMap<u64, u64> = prep
            .segments
            .iter()
            .map(|s| (sys_key(&s.agent, &s.model), s.tokens))
            .collect();
        // Where the agent stored each turn's system prompt (OpenCode 0.1.x), a request's chunk
        // is the estimate plus how much its stored prompt differs from the one of the request
        // the estimate came from (the project tree and instruction files change with the project).
        let stored = |t: usize| {
            trace
                .requests
                .get(t)
                .and_then(|r| trace.messages.get(r.message_index))
                .and_then(|m| m.system.as_ref())
                .and_then(|s| s.tokens)
        };
        let base: HashMap<u64, u64> = prep
            .segments
            .iter()
            .filter_map(|s| Some((sys_key(&s.agent, &s.model), stored(s.from_request?)?)))
            .collect();
        // A stored prompt also names the chunk: a request whose prompt changed shares no system
        // chunk with the one before it (the cached prefix breaks there).
        let mut text_hash: HashMap<usize, u64> = HashMap::new();
        // The last system key of each (agent, model) chunk, to name what a changed prompt left.
        let mut last_key: HashMap<u64, u64> = HashMap::new();
        for (t, r) in prep.reqs.iter_mut().enumerate() {
            r.sys_tokens = by_key.get(&r.sys_key).copied().unwrap_or(0);
            if let (Some(&b), Some(own)) = (base.get(&r.sys_key), stored(t)) {
                r.sys_tokens = (r.sys_tokens + own).saturating_sub(b);
            }
            let mi = r.msg;
            if let Some(sys) = trace.messages.get(mi).and_then(|m| m.system.as_ref()) {
                let h = *text_hash
                    .entry(mi)
                    .or_insert_with(|| xxh3_64(sys.texts.join("\0").as_bytes()));
                let owner = r.sys_key;
                r.sys_key = xxh3_64(format!("{owner}\0{h}").as_bytes());
                let before = last_key.insert(owner, r.sys_key);
                if let (Some(before), Some(shared), Some(own)) =
                    (before, sys.shared_with_previous, sys.tokens)
                {
                    if before != r.sys_key {
                        let unstored = r.sys_tokens.saturating_sub(own);
                        r.sys_changed_from = Some((before, unstored + shared));
                    }
                }
            }
        }
        prep
    }

    /// Where the view of a request at message `mi` starts ([`Trace::context_start`], without a
    /// scan per request).
    pub fn context_start(&self, mi: usize) -> usize {
        match self.first_own_loop {
            Some(f) if self.trace.messages.get(mi).is_some_and(|m| m.own_history) => f,
            _ => 0,
        }
    }

    /// The compaction agent's system chunk for this trace's model (0 when no recorded compaction
    /// call gave one).
    pub fn compaction_system_tokens(&self) -> u64 {
        let own = self.trace.wire.summary_call_own_system;
        self.segments
            .iter()
            .find(|s| s.agent.starts_with(COMPACTION_AGENT) == own)
            .map_or(0, |s| s.tokens)
    }

    /// The tier data of an episode at a tier (falling back to denser tiers).
    pub fn tier_data_at(&self, e: usize, t: Tier) -> Option<&TierData> {
        let mut d = t.depth().min(3);
        loop {
            if let Some(x) = &self.eps[e].tiers[d] {
                return Some(x);
            }
            if d == 0 {
                return None;
            }
            d -= 1;
        }
    }

    /// The tier actually shown when `t` is asked for: the nearest generated tier at or above it.
    pub fn effective(&self, e: usize, t: Tier) -> Tier {
        if t == Tier::Dropped {
            return t;
        }
        let mut d = t.depth();
        loop {
            if self.eps[e].tiers[d].is_some() || d == 0 {
                return Tier::from_depth(d).unwrap_or(Tier::Full);
            }
            d -= 1;
        }
    }

    /// One system chunk per (agent, model): the first request of the pair with recorded usage,
    /// its recorded prompt minus what the agent sent of the conversation (the recorded view).
    fn system_segments(&self, knob: Option<u64>) -> Vec<SystemSegment> {
        let mut out: Vec<SystemSegment> = Vec::new();
        for r in &self.trace.requests {
            let agent = system_agent(self.trace, r);
            let model = r
                .model
                .as_ref()
                .map(|m| format!("{}/{}", m.provider_id, m.model_id))
                .unwrap_or_default();
            let pos = out
                .iter()
                .position(|s| s.agent == agent && s.model == model);
            let prompt = recorded_prompt(self.trace, r.index);
            match (pos, knob) {
                (None, Some(tokens)) => out.push(SystemSegment {
                    agent,
                    model,
                    tokens,
                    source: "knob".into(),
                    from_request: None,
                }),
                (None, None) if prompt == 0 => out.push(SystemSegment {
                    agent,
                    model,
                    tokens: 0,
                    source: "none".into(),
                    from_request: None,
                }),
                (None, None) => {
                    let conv = self.conversation_tokens(r.index);
                    out.push(SystemSegment {
                        agent,
                        model,
                        tokens: prompt.saturating_sub(conv),
                        source: "estimated".into(),
                        from_request: Some(r.index),
                    })
                }
                (Some(i), None) if out[i].source == "none" && prompt > 0 => {
                    let conv = self.conversation_tokens(r.index);
                    out[i].tokens = prompt.saturating_sub(conv);
                    out[i].source = "estimated".into();
                    out[i].from_request = Some(r.index);
                }
                _ => {}
            }
        }
        out
    }

    /// What request `t` sent besides its system chunk: a compaction call's own request as
    /// the agent built it, else the conversation ([`Prep::recorded_view_tokens`]).
    fn conversation_tokens(&self, t: usize) -> u64 {
        match self.reqs.get(t).and_then(|r| r.call_tokens) {
            Some(c) if self.trace.requests[t].synthetic_call => c,
            _ => self.recorded_view_tokens(t),
        }
    }

    /// Tokens of the conversation the agent sent at request `t`: the last compaction in effect
    /// (its message and summary, then the kept tail), recorded prunes applied.
    pub fn recorded_view_tokens(&self, t: usize) -> u64 {
        match self.trace.requests.get(t) {
            Some(req) => self.recorded_view_tokens_until(t, req.position()),
            None => 0,
        }
    }

    /// Where the history of summary call `t` ends, for a call that is the conversation's own
    /// request with the instruction appended (the agent built none of its own): before the
    /// records the compaction kept, else before the call. `None` for any other request.
    pub(crate) fn continued_history_end(&self, t: usize) -> Option<(usize, u32)> {
        let trace = self.trace;
        let req = trace.requests.get(t)?;
        if !req.synthetic_call
            || trace.wire.summary_call_own_system
            || self.compaction.call(t).is_some()
        {
            return None;
        }
        Some(
            trace
                .compactions
                .iter()
                .find(|c| c.summary_request == Some(t))
                .and_then(|c| c.tail_start_id.as_deref())
                .and_then(|id| trace.message_index(id))
                .filter(|&mi| mi < req.message_index)
                .map_or(req.position(), |mi| (mi, 0)),
        )
    }

    /// [`Prep::recorded_view_tokens`] of the conversation before position `pos` (message,
    /// step) rather than before the request's own.
    pub fn recorded_view_tokens_until(&self, t: usize, pos: (usize, u32)) -> u64 {
        self.recorded_view_until(t, pos).map(|c| c.tokens).sum()
    }

    /// The conversation the agent sent at request `t` before position `pos`, piece by piece:
    /// the summary piece of the last compaction in effect, then the full-tier chunks of the
    /// kept tail, recorded prunes applied. What [`Prep::recorded_view_tokens_until`] counts and
    /// `render` prints.
    pub(crate) fn recorded_view_until(
        &self,
        t: usize,
        pos: (usize, u32),
    ) -> impl Iterator<Item = RecordedPiece<'a>> + '_ {
        let trace = self.trace;
        let req = trace.requests.get(t);
        let mut start = 0usize;
        let mut summary = Vec::new();
        if let Some(ci) = req.and_then(|_| {
            trace
                .compactions
                .iter()
                .rposition(|c| c.summary_request.is_some_and(|s| s < t))
        }) {
            let (st, msgs) = self.recorded_summary(ci);
            start = st;
            summary = msgs;
        }
        let start = start.max(req.map_or(0, |r| self.context_start(r.message_index)));
        let summary = summary
            .into_iter()
            .flat_map(move |m| self.message_chunks(m))
            .map(|c| RecordedPiece {
                chunk: c,
                summary: true,
                pruned: false,
                tokens: u64::from(c.tokens),
            });
        let body = req.into_iter().flat_map(move |req| {
            self.episodes
                .iter()
                .filter_map(|e| e.representation(Tier::Full))
                .flat_map(|rep| rep.chunks.iter())
                .filter(move |c| {
                    c.message_index >= start
                        && c.position() < pos
                        && !self.compaction_msgs.contains(&c.message_index)
                })
                .map(move |c| match &c.pruned {
                    Some(p) if p.time_compacted <= req.time_created => RecordedPiece {
                        chunk: c,
                        summary: false,
                        pruned: true,
                        tokens: u64::from(p.tokens),
                    },
                    _ => RecordedPiece {
                        chunk: c,
                        summary: false,
                        pruned: false,
                        tokens: u64::from(c.tokens),
                    },
                })
        });
        summary.chain(body)
    }

    /// Where the kept tail of recorded compaction `ci` starts (message index), and the messages
    /// shown as its summary piece: its compaction message and summary, then those of earlier
    /// compactions that lie inside the kept tail. The agent (OpenCode) sends the earlier ones in place, in the
    /// middle of the tail; the piece puts them up front, which keeps every token count and only
    /// moves where a later change would diverge.
    pub fn recorded_summary(&self, ci: usize) -> (usize, Vec<usize>) {
        let trace = self.trace;
        let msgs_of = |c: &crate::trace::CompactionEvent| trace.compaction_message_indices(c);
        let Some(c) = trace.compactions.get(ci) else {
            return (0, Vec::new());
        };
        let summary = c
            .summary_message_id
            .as_deref()
            .and_then(|id| trace.message_index(id));
        if c.style == crate::trace::CompactionStyle::FromSummary {
            // OpenCode ≤1.0.68 sent the history from the summary on, the summary first.
            return match summary {
                Some(s) => (s + 1, vec![s]),
                None => (0, Vec::new()),
            };
        }
        let cm = c
            .user_message_id
            .as_deref()
            .and_then(|id| trace.message_index(id))
            .or(summary)
            .unwrap_or(0);
        let start = c
            .tail_start_id
            .as_deref()
            .filter(|_| trace.tail_as_messages(c))
            .and_then(|id| trace.message_index(id))
            .unwrap_or(cm + 1);
        let mut msgs = msgs_of(c);
        for older in &trace.compactions[..ci] {
            msgs.extend(msgs_of(older).into_iter().filter(|&m| m >= start && m < cm));
        }
        (start, msgs)
    }

    /// The messages a summary piece shows (a recorded compaction's, or the recorded text a
    /// simulated one reuses); `None` for a simulated summary made of compact tiers.
    pub(crate) fn summary_messages(
        &self,
        piece: &super::output::SummaryPiece,
    ) -> Option<Vec<usize>> {
        use super::output::SummaryPiece;
        match piece {
            SummaryPiece::Recorded { compaction } => Some(self.recorded_summary(*compaction).1),
            SummaryPiece::Simulated {
                text_from: Some(ci),
                kept_earlier,
                ..
            } => {
                let of = |ci: &usize| {
                    self.trace
                        .compactions
                        .get(*ci)
                        .map(|c| self.trace.compaction_message_indices(c))
                };
                let mut ms = of(ci)?;
                ms.extend(kept_earlier.iter().filter_map(of).flatten());
                Some(ms)
            }
            SummaryPiece::Simulated { .. } => None,
        }
    }

    /// A summary piece as (hash, tokens, index) chunks, for divergence: its messages' chunks,
    /// or one chunk standing for a summary made of compact tiers (unique to it).
    pub(crate) fn summary_chunk_list(
        &self,
        piece: &super::output::SummaryPiece,
        tokens: u64,
    ) -> Vec<(u64, u64, usize)> {
        match self.summary_messages(piece) {
            Some(ms) => ms
                .into_iter()
                .flat_map(|m| self.message_chunks(m))
                .enumerate()
                .map(|(i, c)| (c.hash, u64::from(c.tokens), i))
                .collect(),
            None => {
                let n = match piece {
                    super::output::SummaryPiece::Simulated { number, .. } => *number as u64,
                    super::output::SummaryPiece::Recorded { compaction } => *compaction as u64,
                };
                vec![(
                    xxh3_64(format!("simulated summary {n}").as_bytes()),
                    tokens,
                    0,
                )]
            }
        }
    }

    /// Full-tier tokens of one message (all its chunks).
    pub fn message_tokens(&self, mi: usize) -> u64 {
        self.message_chunks(mi).map(|c| u64::from(c.tokens)).sum()
    }

    /// The full-tier chunks of one message.
    pub fn message_chunks(
        &self,
        mi: usize,
    ) -> impl Iterator<Item = &'a crate::episode::Chunk> + '_ {
        let e = self.episodes.partition_point(|e| e.last_message < mi);
        self.episodes
            .get(e)
            .and_then(|e| e.representation(Tier::Full))
            .into_iter()
            .flat_map(move |r| r.chunks.iter().filter(move |c| c.message_index == mi))
    }
}

/// One piece of a conversation as the agent sent it ([`Prep::recorded_view_until`]): a
/// full-tier chunk, shown as its pruned stand-in where a recorded prune had replaced it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordedPiece<'a> {
    pub chunk: &'a crate::episode::Chunk,
    /// Part of the compaction's summary piece.
    pub summary: bool,
    pub pruned: bool,
    pub tokens: u64,
}

/// Recorded prompt of a request (MODEL §3.5), read by its release's token semantics (see
/// [`crate::trace::Request::recorded_prompt`]).
pub(crate) fn recorded_prompt(trace: &Trace, t: usize) -> u64 {
    trace.requests.get(t).map_or(0, |r| r.recorded_prompt())
}

/// What every replay of a loaded session would otherwise work out again from its content
/// (preparing a view for each replay, every knob step in the explorer, read every tool input
/// again): derived from the messages' text and the episodes, which a loaded session does not
/// change in place. Whoever edits a session's messages or episodes in place resets it.
#[derive(Debug, Clone, Default)]
pub struct PrepCache {
    /// Per request, whether it starts a human turn.
    user_turns: std::sync::OnceLock<Vec<bool>>,
    /// Per request, the episodes it touches (see [`Prep::touched`]).
    touches: std::sync::OnceLock<Vec<TouchSet>>,
    /// Per episode, [`super::compaction_call::keep_share`].
    keep_shares: std::sync::OnceLock<Vec<f64>>,
}

/// A request's touched episodes, one allocation per distinct set.
pub type TouchSet = std::sync::Arc<[u32]>;

impl PrepCache {
    /// `make` once per session when there is a cache, else every time.
    fn get<'c, T>(
        cache: Option<&'c std::sync::OnceLock<T>>,
        slot: &'c mut Option<T>,
        make: impl FnOnce() -> T,
    ) -> &'c T {
        match cache {
            Some(c) => c.get_or_init(make),
            None => slot.insert(make()),
        }
    }
}

/// Per request: whether it starts a human turn (the first request of each human message).
fn user_turns(trace: &Trace) -> Vec<bool> {
    let human: BTreeSet<&str> = trace
        .messages
        .iter()
        .filter(|m| m.user_kind == Some(UserKind::Human))
        .map(|m| m.id.as_str())
        .collect();
    let mut seen_user: BTreeSet<&str> = BTreeSet::new();
    trace
        .requests
        .iter()
        .map(|r| match r.user_message_id.as_deref() {
            Some(u) if human.contains(u) => seen_user.insert(u),
            _ => false,
        })
        .collect()
}

/// Per request: the episodes whose keys it touches (sorted), from its tool inputs and, at a
/// human turn, the human's message.
fn touches(trace: &Trace, episodes: &[Episode], user_turns: &[bool]) -> Vec<TouchSet> {
    // Relevance keys: exact lookups (never iterated, so no order leaks into the output).
    let mut key_eps: HashMap<&str, Vec<u32>> = HashMap::new();
    for (ei, e) in episodes.iter().enumerate() {
        for k in &e.keys {
            let v = key_eps.entry(k.as_str()).or_default();
            if v.last() != Some(&(ei as u32)) {
                v.push(ei as u32);
            }
        }
    }
    // Message lookups by id (a linear `Trace::message` per request would be quadratic).
    let by_id: HashMap<&str, usize> = trace
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| (m.id.as_str(), i))
        .collect();
    let mut out = Vec::with_capacity(trace.requests.len());
    // Looked up by slice, so a set is held once (not once more as the map's key).
    let mut sets: HashSet<TouchSet> = HashSet::new();
    for (r, &user_turn) in trace.requests.iter().zip(user_turns) {
        let mut strings = Vec::new();
        if let Some(m) = trace.messages.get(r.message_index) {
            for (_, t) in m.tool_parts() {
                collect_strings(&t.input, &mut strings);
            }
        }
        if user_turn {
            if let Some(m) = r
                .user_message_id
                .as_deref()
                .and_then(|u| by_id.get(u))
                .and_then(|&i| trace.messages.get(i))
            {
                strings.push(m.text());
            }
        }
        let mut touched: Vec<u32> = Vec::new();
        for s in &strings {
            let trimmed = s.trim();
            if let Some(v) = key_eps.get(trimmed) {
                touched.extend(v);
            }
            for w in trimmed.split(|c: char| c.is_whitespace() || "\"'`(),;<>[]{}".contains(c)) {
                let w = w.trim_end_matches(['.', ':']);
                if w.is_empty() {
                    continue;
                }
                if let Some(v) = key_eps.get(w) {
                    touched.extend(v);
                }
            }
        }
        touched.sort_unstable();
        touched.dedup();
        let set = match sets.get(touched.as_slice()) {
            Some(set) => set.clone(),
            None => {
                let set = TouchSet::from(touched);
                sets.insert(set.clone());
                set
            }
        };
        out.push(set);
    }
    out
}

fn requests(input: &Input<'_>, trace: &Trace, episodes: &[Episode]) -> Vec<ReqData> {
    let mut slot = None;
    let user_turns = PrepCache::get(input.cache.map(|c| &c.user_turns), &mut slot, || {
        user_turns(trace)
    });
    // System keys by what names them (a handful per session; one string each would be built
    // per request otherwise).
    type KeyName<'t> = (Option<&'t str>, bool, bool, Option<(&'t str, &'t str)>);
    let mut keys: HashMap<KeyName<'_>, u64> = HashMap::new();
    let mut out = Vec::with_capacity(trace.requests.len());
    // The recorded cache lifetime of each conversation's last request so far.
    let mut last_ttl: [Option<u64>; 2] = [None, None];
    for (i, r) in trace.requests.iter().enumerate() {
        let active = episodes
            .partition_point(|e| e.last_message < r.message_index)
            .min(episodes.len().saturating_sub(1));
        let user_turn = user_turns.get(i).copied().unwrap_or(false);
        // The todo change or compaction happened in the previous step: this request is the
        // first one after it.
        let milestone = r.index > 0 && input.milestones.contains(&(r.index - 1));
        let own_loop = trace
            .messages
            .get(r.message_index)
            .is_some_and(|m| m.own_history);
        let name = (
            r.agent.as_deref(),
            r.synthetic_call,
            own_loop,
            r.model
                .as_ref()
                .map(|m| (m.provider_id.as_str(), m.model_id.as_str())),
        );
        let key = *keys.entry(name).or_insert_with(|| {
            let model = r
                .model
                .as_ref()
                .map(|m| format!("{}/{}", m.provider_id, m.model_id))
                .unwrap_or_default();
            sys_key(&system_agent(trace, r), &model)
        });
        out.push(ReqData {
            msg: r.message_index,
            pos: r.position(),
            active,
            conv: usize::from(r.synthetic_call),
            time: r.time_created,
            user_turn,
            milestone,
            sys_key: key,
            sys_tokens: 0,
            sys_changed_from: None,
            resent_from: trace
                .wire
                .completed_answer
                .resent_from(&trace.messages[r.message_index]),
            call_tokens: input.compaction.call(r.index).map(|c| c.tokens),
            prev_cache_ttl_s: last_ttl[usize::from(r.synthetic_call)],
        });
        last_ttl[usize::from(r.synthetic_call)] = r.cache_ttl_s;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{self, LoadOptions};

    /// Requests that touch the same episodes share one list: a key many episodes carry must not
    /// be copied into every request naming it (on a 10k-response session that was requests ×
    /// episodes, a third of the load's memory). Checked on M1, where requests repeat their sets.
    #[test]
    fn equal_touch_sets_are_one_allocation() {
        let cache = tempfile::tempdir().expect("tempdir");
        let s = session::load(&LoadOptions {
            path: Some(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample-traces/M1.json"),
            ),
            token_cache_dir: Some(cache.path().to_owned()),
            ..LoadOptions::default()
        })
        .expect("M1 loads");
        let sets = touches(&s.trace, &s.episodes, &user_turns(&s.trace));
        assert_eq!(sets.len(), s.trace.requests.len());
        let distinct: BTreeSet<&[u32]> = sets.iter().map(|t| &t[..]).collect();
        assert!(
            distinct.len() < sets.iter().filter(|t| !t.is_empty()).count(),
            "M1 repeats touch sets: {} distinct of {}",
            distinct.len(),
            sets.len()
        );
        for a in &sets {
            for b in &sets {
                if a[..] == b[..] {
                    assert!(TouchSet::ptr_eq(a, b), "{a:?} held twice");
                }
            }
        }
    }

    /// Touch sets are worked out only for a schedule that reads them: the load's calibration
    /// and a flat replay leave them unbuilt; a relevance replay builds them once, into the
    /// session's cache, and its view reads the same sets as the direct computation.
    #[test]
    fn touches_are_built_only_for_a_schedule_that_reads_them() {
        let cache = tempfile::tempdir().expect("tempdir");
        let s = session::load(&LoadOptions {
            path: Some(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample-traces/M1.json"),
            ),
            token_cache_dir: Some(cache.path().to_owned()),
            ..LoadOptions::default()
        })
        .expect("M1 loads");
        let policy = |name: &str| crate::policy::load(name, &[]).expect("built-in");
        assert!(s.prep_cache.touches.get().is_none(), "the load built them");
        crate::replay::replay_session(&s, &policy("opencode"), Some(30_000));
        assert!(
            s.prep_cache.touches.get().is_none(),
            "a flat replay built them"
        );
        crate::replay::replay_session(&s, &policy("retention"), Some(30_000));
        let kept = s
            .prep_cache
            .touches
            .get()
            .expect("a relevance replay builds them");
        let direct = touches(&s.trace, &s.episodes, &user_turns(&s.trace));
        assert_eq!(kept.len(), direct.len());
        assert!(kept.iter().zip(&direct).all(|(a, b)| a[..] == b[..]));
        assert!(
            kept.iter().any(|t| !t.is_empty()),
            "M1's requests touch episodes"
        );
    }
}
