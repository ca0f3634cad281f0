//! Probes (MODEL §6 `*.probes.json`) as the replay uses them: which rendered pieces answer each
//! probe, precomputed once per replay, and the oracle's tier per episode.
//!
//! A probe is answered by a rendered context when one of its pieces answers it: a closed episode
//! at its applied tier, the active episode's chunks so far, or the compaction summary shown. A
//! needle split across two pieces is not counted, and recorded prunes are not applied to probe
//! texts (a needle inside a pruned tool output still counts); both are documented limits.

use super::prepare::Prep;
use super::types::SummaryPiece;
use crate::episode::sidecar::Probe;
use crate::episode::Tier;

/// What one probe needs of one episode.
#[derive(Debug, Clone)]
struct EpHits {
    episode: usize,
    /// Answered by the whole text of each tier (full, dense, compact, anchor).
    by_tier: [bool; 4],
    /// Included full-tier chunk positions that answer on their own.
    chunks: Vec<usize>,
    /// Full-tier chunk count (to tell a whole episode from a cut one).
    len: usize,
}

#[derive(Debug, Clone)]
struct ProbeEntry {
    id: String,
    due: usize,
    source_episode: Option<usize>,
    hits: Vec<EpHits>,
    /// Answered by each recorded compaction's summary (by compaction index).
    summaries: Vec<bool>,
}

/// Probes indexed for the replay.
#[derive(Debug, Clone, Default)]
pub struct ProbeIndex {
    probes: Vec<ProbeEntry>,
    /// The unconstrained oracle's tier per episode.
    oracle: Vec<Tier>,
    /// Probes by due request (for `relevance_source = probes`).
    by_due: Vec<(usize, usize)>,
}

impl ProbeIndex {
    pub(crate) fn new(p: &Prep<'_>, probes: &[Probe]) -> ProbeIndex {
        let trace = p.trace;
        let n = p.episodes.len();
        let mut texts: Vec<[Option<String>; 4]> = Vec::with_capacity(n);
        if !probes.is_empty() {
            for e in 0..n {
                texts.push(Tier::TIERS.map(|t| {
                    let td = p.eps[e].tiers[t.depth()].as_ref()?;
                    let rep = p.episodes[e].representation(t)?;
                    Some(
                        td.idx
                            .iter()
                            .map(|&i| rep.chunks[i as usize].text.as_str())
                            .collect::<Vec<_>>()
                            .join("\n"),
                    )
                }));
            }
        }
        let summary_texts: Vec<String> = trace
            .compactions
            .iter()
            .map(|c| {
                let ms = trace.compaction_message_indices(c);
                let mut s: Vec<String> = ms
                    .iter()
                    .flat_map(|&m| p.message_chunks(m).map(|c| c.text.clone()))
                    .collect();
                s.push(c.summary_text.clone());
                s.join("\n")
            })
            .collect();
        let mut entries = Vec::with_capacity(probes.len());
        for pr in probes {
            let source_episode = trace
                .message_index(&pr.source_message_id)
                .map(|mi| p.episodes.partition_point(|e| e.last_message < mi))
                .filter(|&e| e < n);
            let mut hits = Vec::new();
            for (e, tx) in texts.iter().enumerate() {
                let Some(full) = &tx[0] else { continue };
                if !pr.is_answered_by(full) {
                    continue;
                }
                let by_tier =
                    [0, 1, 2, 3].map(|d| tx[d].as_deref().is_some_and(|s| pr.is_answered_by(s)));
                let (mut chunks, mut len) = (Vec::new(), 0);
                if let (Some(td), Some(rep)) =
                    (&p.eps[e].tiers[0], p.episodes[e].representation(Tier::Full))
                {
                    len = td.len();
                    for (pos, &ci) in td.idx.iter().enumerate() {
                        if pr.is_answered_by(&rep.chunks[ci as usize].text) {
                            chunks.push(pos);
                        }
                    }
                }
                hits.push(EpHits {
                    episode: e,
                    by_tier,
                    chunks,
                    len,
                });
            }
            entries.push(ProbeEntry {
                id: pr.id.clone(),
                due: pr.due_from_request,
                source_episode,
                hits,
                summaries: summary_texts.iter().map(|s| pr.is_answered_by(s)).collect(),
            });
        }
        let mut oracle = vec![Tier::Dropped; n];
        for (e, slot) in oracle.iter_mut().enumerate() {
            let carried: Vec<&EpHits> = entries
                .iter()
                .filter_map(|pe| pe.hits.iter().find(|h| h.episode == e))
                .collect();
            if carried.is_empty() {
                continue;
            }
            // The deepest generated tier that still answers every probe the episode carries.
            *slot = p.eps[e]
                .avail
                .iter()
                .rev()
                .filter(|t| **t != Tier::Dropped)
                .find(|t| carried.iter().all(|h| h.by_tier[t.depth()]))
                .copied()
                .unwrap_or(Tier::Full);
        }
        let mut by_due: Vec<(usize, usize)> = entries
            .iter()
            .filter_map(|pe| pe.source_episode.map(|e| (pe.due, e)))
            .collect();
        by_due.sort_unstable();
        ProbeIndex {
            probes: entries,
            oracle,
            by_due,
        }
    }

    /// No probes were given.
    pub fn is_empty(&self) -> bool {
        self.probes.is_empty()
    }

    /// The unconstrained oracle's tier for episode `e` (dropped when it carries no probe).
    pub fn oracle_tier(&self, e: usize) -> Tier {
        self.oracle.get(e).copied().unwrap_or(Tier::Full)
    }

    /// Source episodes of the probes that become due at request `t`.
    pub(crate) fn needed_from(&self, t: usize) -> impl Iterator<Item = usize> + '_ {
        let lo = self.by_due.partition_point(|(d, _)| *d < t);
        let hi = self.by_due.partition_point(|(d, _)| *d <= t);
        self.by_due[lo..hi].iter().map(|(_, e)| *e)
    }

    /// (index, id) of the probes due at request `t`.
    pub(crate) fn due_at(&self, t: usize) -> impl Iterator<Item = (usize, &str)> + '_ {
        self.probes
            .iter()
            .enumerate()
            .filter(move |(_, p)| p.due <= t)
            .map(|(i, p)| (i, p.id.as_str()))
    }

    /// Whether probe `pi` is answered by the rendered context described by the arguments.
    pub(crate) fn present(
        &self,
        pi: usize,
        closed: &[Tier],
        cuts: &[usize],
        active: Option<(usize, usize)>,
        summary: &Option<SummaryPiece>,
        p: &Prep<'_>,
    ) -> bool {
        let pe = &self.probes[pi];
        let in_range = |h: &EpHits, from: usize, to: usize| {
            h.chunks.iter().any(|&c| c >= from && c < to)
                || (from == 0 && to >= h.len && h.by_tier[0])
        };
        for h in &pe.hits {
            let e = h.episode;
            if e < closed.len() {
                let t = p.effective(e, closed[e]);
                if t == Tier::Dropped {
                    continue;
                }
                if t == Tier::Full {
                    if in_range(h, cuts.get(e).copied().unwrap_or(0), h.len) {
                        return true;
                    }
                } else if h.by_tier[t.depth()] {
                    return true;
                }
            } else if let Some((ae, n)) = active {
                if ae == e && in_range(h, cuts.get(e).copied().unwrap_or(0), n) {
                    return true;
                }
            }
        }
        match summary {
            Some(SummaryPiece::Recorded { compaction }) => {
                pe.summaries.get(*compaction).copied().unwrap_or(false)
            }
            Some(SummaryPiece::Simulated {
                text_from: Some(c),
                kept_earlier,
                ..
            }) => std::iter::once(c)
                .chain(kept_earlier)
                .any(|c| pe.summaries.get(*c).copied().unwrap_or(false)),
            Some(SummaryPiece::Simulated { shown, .. }) => pe
                .hits
                .iter()
                .any(|h| shown.contains(&h.episode) && h.by_tier[Tier::Compact.depth()]),
            None => false,
        }
    }
}
