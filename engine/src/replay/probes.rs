//! Probes (MODEL §6 `*.probes.json`) as the replay uses them: which rendered pieces answer each
//! probe, precomputed once per replay, and the oracle's tier per episode.
//!
//! A probe is answered by a rendered context when one of its pieces answers it: a closed episode
//! at its applied tier, the active episode's chunks so far, or the compaction summary shown. A
//! needle split across two pieces is not counted, and recorded prunes are not applied to probe
//! texts (a needle inside a pruned tool output still counts); both are documented limits.
//!
//! Whether a probe is answered depends only on its hit episodes (their applied tiers, cuts, and
//! the active one's chunks so far) and on the summary shown, so the tally re-checks a probe only
//! when one of those changes ([`ProbeIndex::by_episode`], [`ProbeIndex::summary_sensitive`]).

use aho_corasick::AhoCorasick;
use regex::RegexSet;

use super::output::SummaryPiece;
use super::prepare::Prep;
use crate::episode::sidecar::{Needle, Probe, ProbeKind};
use crate::episode::Tier;

/// What one probe needs of one episode.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Answered by each model-written summary of the replay's book (by entry).
    written: Vec<bool>,
}

/// Probes indexed for the replay.
#[derive(Debug, Clone, Default)]
pub struct ProbeIndex {
    probes: Vec<ProbeEntry>,
    /// The unconstrained oracle's tier per episode.
    oracle: Vec<Tier>,
    /// Probes by due request (for `relevance_source = probes`).
    by_due: Vec<(usize, usize)>,
    /// Probe indices in order of their due request (then index).
    due_order: Vec<usize>,
    /// Per episode, the probes with a hit in it.
    by_episode: Vec<Vec<usize>>,
    /// Probes a summary can answer (a recorded summary's text, or an episode's compact tier).
    summary_sensitive: Vec<usize>,
}

impl ProbeIndex {
    pub(crate) fn new(p: &Prep<'_>, probes: &[Probe]) -> ProbeIndex {
        let trace = p.trace;
        let n = p.episodes.len();
        // One episode's text at a tier (its included chunks), as the probes read it.
        let text = |e: usize, t: Tier| -> Option<String> {
            let td = p.eps[e].tiers[t.depth()].as_ref()?;
            let rep = p.episodes[e].representation(t)?;
            Some(
                td.idx
                    .iter()
                    .map(|&i| rep.chunks[i as usize].text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        };
        let matcher = Matcher::new(probes);
        let mut hits: Vec<Vec<EpHits>> = vec![Vec::new(); probes.len()];
        if !probes.is_empty() {
            for e in 0..n {
                let Some(full) = text(e, Tier::Full) else {
                    continue;
                };
                let answered = matcher.answered(&full);
                if answered.is_empty() {
                    continue;
                }
                let tiers = Tier::TIERS.map(|t| if t == Tier::Full { None } else { text(e, t) });
                for pi in answered {
                    let pr = &probes[pi];
                    let by_tier = [0, 1, 2, 3].map(|d| {
                        d == 0 || tiers[d].as_deref().is_some_and(|s| pr.is_answered_by(s))
                    });
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
                    hits[pi].push(EpHits {
                        episode: e,
                        by_tier,
                        chunks,
                        len,
                    });
                }
            }
        }
        let mut summaries = vec![vec![false; trace.compactions.len()]; probes.len()];
        if !probes.is_empty() {
            for (ci, c) in trace.compactions.iter().enumerate() {
                let ms = trace.compaction_message_indices(c);
                let mut s: Vec<String> = ms
                    .iter()
                    .flat_map(|&m| p.message_chunks(m).map(|c| c.text.clone()))
                    .collect();
                s.push(c.summary_text.clone());
                for pi in matcher.answered(&s.join("\n")) {
                    summaries[pi][ci] = true;
                }
            }
        }
        let book = p.summaries.map_or(&[][..], |b| b.entries());
        let mut written = vec![vec![false; book.len()]; probes.len()];
        if !probes.is_empty() {
            for (w, s) in book.iter().enumerate() {
                for pi in matcher.answered(&s.text) {
                    written[pi][w] = true;
                }
            }
        }
        let mut entries = Vec::with_capacity(probes.len());
        for (((pr, hits), summaries), written) in
            probes.iter().zip(hits).zip(summaries).zip(written)
        {
            let source_episode = trace
                .message_index(&pr.source_message_id)
                .map(|mi| p.episodes.partition_point(|e| e.last_message < mi))
                .filter(|&e| e < n);
            entries.push(ProbeEntry {
                id: pr.id.clone(),
                due: pr.due_from_request,
                source_episode,
                hits,
                summaries,
                written,
            });
        }
        let mut by_episode = vec![Vec::new(); n];
        for (i, pe) in entries.iter().enumerate() {
            for h in &pe.hits {
                by_episode[h.episode].push(i);
            }
        }
        let mut oracle = vec![Tier::Dropped; n];
        for (e, slot) in oracle.iter_mut().enumerate() {
            let carried: Vec<&EpHits> = by_episode[e]
                .iter()
                .filter_map(|&pi: &usize| entries[pi].hits.iter().find(|h| h.episode == e))
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
        let mut due_order: Vec<usize> = (0..entries.len()).collect();
        due_order.sort_by_key(|&i| (entries[i].due, i));
        let summary_sensitive = entries
            .iter()
            .enumerate()
            .filter(|(_, pe)| {
                pe.summaries.iter().any(|&b| b)
                    || pe.written.iter().any(|&b| b)
                    || pe.hits.iter().any(|h| h.by_tier[Tier::Compact.depth()])
            })
            .map(|(i, _)| i)
            .collect();
        ProbeIndex {
            probes: entries,
            oracle,
            by_due,
            due_order,
            by_episode,
            summary_sensitive,
        }
    }

    /// Probes in the index.
    pub(crate) fn len(&self) -> usize {
        self.probes.len()
    }

    /// The id and due request of probe `pi`.
    pub(crate) fn probe(&self, pi: usize) -> (&str, usize) {
        let pe = &self.probes[pi];
        (pe.id.as_str(), pe.due)
    }

    /// Probe indices in order of their due request.
    pub(crate) fn due_order(&self) -> &[usize] {
        &self.due_order
    }

    /// The probes with a hit in episode `e` (whose answer may change when `e`'s rendering does).
    pub(crate) fn by_episode(&self, e: usize) -> &[usize] {
        self.by_episode.get(e).map_or(&[], Vec::as_slice)
    }

    /// The probes whose answer may change when the summary shown does.
    pub(crate) fn summary_sensitive(&self) -> &[usize] {
        &self.summary_sensitive
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

    /// (index, id) of the probes due at request `t` (the brute-force reference of the tests).
    #[cfg(test)]
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
                written: Some(w),
                kept_written,
                kept_earlier,
                ..
            }) => {
                std::iter::once(w)
                    .chain(kept_written)
                    .any(|w| pe.written.get(*w).copied().unwrap_or(false))
                    || kept_earlier
                        .iter()
                        .any(|c| pe.summaries.get(*c).copied().unwrap_or(false))
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

/// One needle of a probe, as the [`Matcher`] finds it.
#[derive(Debug, Clone, Copy)]
enum NeedleRef {
    /// Pattern `id` of the exact needles' automaton.
    Exact(usize),
    /// Pattern `id` of the regular expressions' set.
    Regex(usize),
    /// Found in every text (the empty string; a regular expression when the set could not be
    /// built, asked of the text itself).
    Always,
}

/// Which probes a text answers, found in one pass over the text (the exact needles by one
/// Aho-Corasick automaton, the regular expressions by one set) rather than one search per
/// probe: the same answers as [`Probe::is_answered_by`].
struct Matcher<'p> {
    probes: &'p [Probe],
    refs: Vec<Vec<NeedleRef>>,
    exact: Option<AhoCorasick>,
    regex: Option<RegexSet>,
    /// Per exact pattern and per regular expression, the probes that have it.
    by_exact: Vec<Vec<usize>>,
    by_regex: Vec<Vec<usize>>,
    /// Probes that are candidates for every text (a needle found in every text, or asked of
    /// the text itself).
    always: Vec<usize>,
}

impl<'p> Matcher<'p> {
    fn new(probes: &'p [Probe]) -> Matcher<'p> {
        let mut exact: Vec<&str> = Vec::new();
        let mut exact_ids = std::collections::HashMap::new();
        let mut regex: Vec<&str> = Vec::new();
        let mut refs = Vec::with_capacity(probes.len());
        for pr in probes {
            refs.push(
                pr.needles
                    .iter()
                    .map(|nd| match nd {
                        Needle::Exact(s) if s.is_empty() => NeedleRef::Always,
                        Needle::Exact(s) => {
                            NeedleRef::Exact(*exact_ids.entry(s.as_str()).or_insert_with(|| {
                                exact.push(s.as_str());
                                exact.len() - 1
                            }))
                        }
                        Needle::Regex(r) => {
                            regex.push(r.as_str());
                            NeedleRef::Regex(regex.len() - 1)
                        }
                    })
                    .collect::<Vec<_>>(),
            );
        }
        let exact_ac = if exact.is_empty() {
            None
        } else {
            AhoCorasick::new(&exact).ok()
        };
        let regex_set = if regex.is_empty() {
            None
        } else {
            RegexSet::new(&regex).ok()
        };
        let (mut by_exact, mut by_regex) =
            (vec![Vec::new(); exact.len()], vec![Vec::new(); regex.len()]);
        let mut always = Vec::new();
        for (pi, rs) in refs.iter_mut().enumerate() {
            let mut is_always = false;
            for r in rs.iter_mut() {
                // Without its automaton or set, a needle is asked of each text itself.
                match *r {
                    NeedleRef::Exact(_) if exact_ac.is_none() => *r = NeedleRef::Always,
                    NeedleRef::Regex(_) if regex_set.is_none() => *r = NeedleRef::Always,
                    _ => {}
                }
                match *r {
                    NeedleRef::Exact(id) => by_exact[id].push(pi),
                    NeedleRef::Regex(id) => by_regex[id].push(pi),
                    NeedleRef::Always => is_always = true,
                }
            }
            if is_always {
                always.push(pi);
            }
        }
        for list in by_exact.iter_mut().chain(by_regex.iter_mut()) {
            list.dedup();
        }
        Matcher {
            probes,
            refs,
            exact: exact_ac,
            regex: regex_set,
            by_exact,
            by_regex,
            always,
        }
    }

    /// The probes `text` answers, in order.
    fn answered(&self, text: &str) -> Vec<usize> {
        let mut found_exact = vec![false; self.by_exact.len()];
        if let Some(ac) = &self.exact {
            for m in ac.find_overlapping_iter(text) {
                found_exact[m.pattern().as_usize()] = true;
            }
        }
        let found_regex = self.regex.as_ref().map(|set| set.matches(text));
        let mut candidates: Vec<usize> = self.always.clone();
        for (id, found) in found_exact.iter().enumerate() {
            if *found {
                candidates.extend(&self.by_exact[id]);
            }
        }
        if let Some(m) = &found_regex {
            for id in m.iter() {
                candidates.extend(&self.by_regex[id]);
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        candidates.retain(|&pi| {
            let pr = &self.probes[pi];
            let mut found = self.refs[pi]
                .iter()
                .zip(&pr.needles)
                .map(|(r, nd)| match r {
                    NeedleRef::Exact(id) => found_exact[*id],
                    NeedleRef::Regex(id) => found_regex.as_ref().is_some_and(|m| m.matched(*id)),
                    NeedleRef::Always => nd.is_found_in(text),
                });
            match pr.kind {
                ProbeKind::Exact => !pr.needles.is_empty() && found.all(|f| f),
                ProbeKind::Semantic => found.any(|f| f),
            }
        });
        candidates
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::sidecar::{Dimension, NeedleRegex};

    fn probe(id: &str, kind: ProbeKind, needles: Vec<Needle>) -> Probe {
        Probe {
            id: id.into(),
            needles,
            source_message_id: "m".into(),
            due_from_request: 0,
            kind,
            dimension: Dimension::Trap,
            question: None,
        }
    }

    /// The index as it was built before the matcher: every probe asked of every text.
    fn brute_force(p: &Prep<'_>, probes: &[Probe]) -> Vec<(Vec<EpHits>, Vec<bool>)> {
        let trace = p.trace;
        let texts: Vec<[Option<String>; 4]> = (0..p.episodes.len())
            .map(|e| {
                Tier::TIERS.map(|t| {
                    let td = p.eps[e].tiers[t.depth()].as_ref()?;
                    let rep = p.episodes[e].representation(t)?;
                    let parts: Vec<&str> = td
                        .idx
                        .iter()
                        .map(|&i| rep.chunks[i as usize].text.as_str())
                        .collect();
                    Some(parts.join("\n"))
                })
            })
            .collect();
        let summary_texts: Vec<String> = trace
            .compactions
            .iter()
            .map(|c| {
                let mut s: Vec<String> = trace
                    .compaction_message_indices(c)
                    .iter()
                    .flat_map(|&m| p.message_chunks(m).map(|c| c.text.clone()))
                    .collect();
                s.push(c.summary_text.clone());
                s.join("\n")
            })
            .collect();
        probes
            .iter()
            .map(|pr| {
                let mut hits = Vec::new();
                for (e, tx) in texts.iter().enumerate() {
                    let Some(full) = &tx[0] else { continue };
                    if !pr.is_answered_by(full) {
                        continue;
                    }
                    let by_tier = [0, 1, 2, 3]
                        .map(|d| tx[d].as_deref().is_some_and(|s| pr.is_answered_by(s)));
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
                let summaries = summary_texts.iter().map(|s| pr.is_answered_by(s)).collect();
                (hits, summaries)
            })
            .collect()
    }

    #[test]
    fn the_index_is_the_brute_force_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = crate::fixture::FixtureConfig {
            seed: 3,
            requests: 400,
            episodes: Some(80),
            probe_density: 1.0,
            name: Some("fx".into()),
            ..crate::fixture::FixtureConfig::default()
        };
        crate::fixture::write_fixture(&cfg, dir.path()).expect("fixture");
        let m1 = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample-traces/M1.json");
        for path in [m1, dir.path().join("fx.json")] {
            let s = crate::session::load(&crate::session::LoadOptions {
                path: Some(path.clone()),
                token_cache_dir: Some(dir.path().to_owned()),
                ..crate::session::LoadOptions::default()
            })
            .expect("load");
            assert!(!s.probes.is_empty());
            for name in ["retention", "opencode"] {
                let policy = crate::policy::load(name, &[]).expect("policy");
                let input = crate::replay::Input::from(&s);
                let prepared = crate::replay::Prepared::new(&input, &policy, false);
                let want = brute_force(&prepared.prep, &s.probes);
                let got: Vec<(Vec<EpHits>, Vec<bool>)> = prepared
                    .probes
                    .probes
                    .iter()
                    .map(|pe| (pe.hits.clone(), pe.summaries.clone()))
                    .collect();
                assert_eq!(got, want, "{}: {name}", path.display());
                assert!(
                    got.iter().any(|(h, _)| !h.is_empty()),
                    "some probe is answered"
                );
            }
        }
    }

    #[test]
    fn the_matcher_answers_as_each_probe_does() {
        let ex = |s: &str| Needle::Exact(s.into());
        let re = |s: &str| Needle::Regex(NeedleRegex::new(s).expect("regex"));
        let probes = vec![
            probe("a", ProbeKind::Exact, vec![ex("abc")]),
            probe("b", ProbeKind::Exact, vec![ex("bcd"), ex("abc")]),
            probe("c", ProbeKind::Semantic, vec![ex("zzz"), re(r"x\d+y")]),
            probe("d", ProbeKind::Exact, vec![ex("")]),
            probe("e", ProbeKind::Exact, vec![re(r"^start"), ex("cd")]),
            probe("f", ProbeKind::Semantic, vec![]),
            probe("g", ProbeKind::Exact, vec![ex("abc"), re("q")]),
        ];
        let m = Matcher::new(&probes);
        for text in [
            "",
            "abcd",
            "start abc x12y",
            "ab cd",
            "zzz",
            "xay bcd abc start",
            "q",
        ] {
            let want: Vec<usize> = (0..probes.len())
                .filter(|&i| probes[i].is_answered_by(text))
                .collect();
            assert_eq!(m.answered(text), want, "{text:?}");
        }
    }
}
