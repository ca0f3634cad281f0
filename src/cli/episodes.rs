//! `tierscope episodes [PATH] [loading flags]`: the episodes of a session with their kinds,
//! class, floor, pins and tokens per tier; `--explain`, `--show`, `--records`, `--json`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;
use serde_json::{json, Value};

use super::output_cache::OutputCache;
use super::report::{self, plural, Cell, Column, Format, Table, Text};
use super::sessions::format_time;
use super::LoadArgs;
use tierscope_engine::episode::{Episode, Representation, Strategy, Tier};
use tierscope_engine::output_guard::{AtomicFile, OutputGuard};
use tierscope_engine::session::LoadedSession;
use tierscope_engine::text::{clip_chars, sanitize_for_terminal, sanitize_line};

#[derive(Debug, Clone, Args)]
pub struct EpisodesArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print why an episode has its class and floor, its pins, keys and tier notes.
    #[arg(long, value_name = "EPISODE", conflicts_with = "show")]
    pub explain: Option<String>,
    /// Print one representation of an episode (see --tier).
    #[arg(long, value_name = "EPISODE")]
    pub show: Option<String>,
    /// The tier --show prints.
    #[arg(long, value_name = "TIER", default_value = "full", requires = "show")]
    pub tier: Tier,
    /// With --show --tier full: the variant with the recorded prunes applied.
    #[arg(long, requires = "show")]
    pub pruned: bool,
    /// Write every representation record (with its lineage and text) as JSONL to FILE.
    #[arg(long, value_name = "FILE")]
    pub records: Option<PathBuf>,
}

pub fn run(args: &EpisodesArgs) -> anyhow::Result<()> {
    // The canonical records are in `--json` and `--records`; the tier texts only in `--show`,
    // `--explain` and `--records` (the table and `--json` print their counts).
    let opts = tierscope_engine::session::LoadOptions {
        records: args.json || args.records.is_some(),
        drop_tier_texts: args.show.is_none() && args.explain.is_none() && args.records.is_none(),
        ..args.load.options()
    };
    let mut guard = super::outputs::guard(&args.load, &[]);
    if let Some(path) = &args.records {
        guard.check(path)?;
    }
    // `--json` alone is a pure function of the files: kept for an unchanged source.
    let cache =
        (args.json && args.records.is_none() && args.explain.is_none() && args.show.is_none())
            .then(|| OutputCache::for_command("episodes", args, &args.load))
            .flatten();
    if let Some(hit) = cache.as_ref().and_then(OutputCache::lookup) {
        for w in &hit.warnings {
            report::stderr::warn(w);
        }
        // Said, so that a reader of `token_stats` (the counting of the load that made it) knows.
        report::stderr::note(&format!(
            "the episodes of an unchanged source, as drafted at {} ({}=1 drafts them again)",
            hit.made_at,
            super::output_cache::OFF_ENV
        ));
        return report::json::write_kept(hit);
    }
    let loaded = tierscope_engine::session::load(&opts)?;
    for w in &loaded.warnings {
        report::stderr::warn(w);
    }
    if let Some(mut entry) = cache.and_then(|c| {
        c.entry(
            tierscope_engine::session::files_beside_source(&opts, &loaded),
            &loaded.warnings,
        )
    }) {
        let whole = report::json::write_document_teed(
            &report::Report::document(&EpisodesReport(&loaded)),
            &mut entry,
        )?;
        // Half a document (the reader went away) is not kept.
        if whole {
            entry.keep();
        }
        super::keep_until_exit(loaded);
        return Ok(());
    }
    if let Some(path) = &args.records {
        guard.loaded(&loaded);
        write_records(&loaded, path, &guard)?;
    }
    if let Some(id) = &args.explain {
        let e = find(&loaded, id)?;
        return write_text(&explain(&loaded, e));
    }
    if let Some(id) = &args.show {
        let e = find(&loaded, id)?;
        let Some(rep) = e.representation(args.tier) else {
            let why = e
                .tier_notes
                .iter()
                .find(|n| n.starts_with(args.tier.as_str()))
                .cloned()
                .unwrap_or_else(|| "no representation".to_owned());
            anyhow::bail!("{} has no {} tier: {why}", e.id, args.tier);
        };
        return write_text(&show(rep, args.pruned));
    }
    if args.records.is_some() && !args.json {
        let n: usize = all_sessions(&loaded)
            .map(|l| l.episodes.iter().map(|e| e.tiers.len()).sum::<usize>())
            .sum();
        let k: usize = all_sessions(&loaded).map(|l| l.records.len()).sum();
        report::stderr::line(&format!(
            "wrote {k} episode records and {n} representation records"
        ));
    }
    let out = report::emit(Format::json_if(args.json), &EpisodesReport(&loaded));
    super::keep_until_exit(loaded);
    out
}

/// The output of `episodes`: [`to_json`] or the table of every session's episodes.
pub struct EpisodesReport<'a>(pub &'a LoadedSession);

impl report::Report for EpisodesReport<'_> {
    fn name(&self) -> &'static str {
        "episodes"
    }
    /// The pretty document (`--json`): the episodes are elements of `episodes`, two levels down.
    fn document(&self) -> impl serde::Serialize + '_ {
        document(self.0, Some(2))
    }
    /// One line: rendered in place, never pre-rendered pretty.
    fn records(&self, out: &mut report::JsonLines<'_>) -> anyhow::Result<()> {
        out.record(&to_json(self.0))
    }
    fn text(&self) -> Text {
        table(self.0)
    }
}

fn write_text(s: &str) -> anyhow::Result<()> {
    report::stdout::write_text(s)
}

fn find<'a>(l: &'a LoadedSession, id: &str) -> anyhow::Result<&'a Episode> {
    let want = if id.starts_with(['E', 'e']) {
        id.to_owned()
    } else {
        format!("E{id}")
    };
    l.episode(&want).with_context(|| {
        format!(
            "no episode {id} (this session has E0..E{})",
            l.episodes.len().saturating_sub(1)
        )
    })
}

fn all_sessions(l: &LoadedSession) -> impl Iterator<Item = &LoadedSession> {
    std::iter::once(l).chain(l.children.iter())
}

/// Whole kinds, comma-separated, as many as fit in `width`, then `+N` for the rest (a kind cut
/// in half reads as a different word).
fn kinds_cell(kinds: &[tierscope_engine::episode::EpisodeKind], width: usize) -> String {
    if kinds.is_empty() {
        return "-".to_owned();
    }
    let mut out = String::new();
    for (i, k) in kinds.iter().enumerate() {
        let rest = kinds.len() - i - 1;
        let sep = if out.is_empty() { "" } else { "," };
        let more = if rest > 0 {
            format!(",+{rest}")
        } else {
            String::new()
        };
        if out.len() + sep.len() + k.as_str().len() + more.len() > width && !out.is_empty() {
            out.push_str(&format!(",+{}", rest + 1));
            return out;
        }
        out.push_str(sep);
        out.push_str(k.as_str());
    }
    out
}

/// The table, for people.
pub fn table(l: &LoadedSession) -> Text {
    let mut out = Text::new();
    out.line(format!(
        "session {}  {}  ({}, {}; episodes {}, tiers {}, {}, rules {})",
        l.trace.session.id,
        // Sanitized before clipping: an escape shown as `\x1b` must not be cut in half.
        clip_chars(&sanitize_line(&l.trace.session.title), 50),
        plural(l.episodes.len(), "episode"),
        plural(l.trace.requests.len(), "request"),
        l.segmentation.as_str(),
        l.tier_source.as_str(),
        l.tokenizer,
        l.rules_origin
    ));
    let r = |name: &str, w: usize| Column::right(name).width(w);
    let left = |name: &str, w: usize| Column::left(name).width(w);
    let mut t = Table::new(vec![
        left("id", 4),
        r("reqs", 7),
        left("time", 5),
        left("title", 40).clip(40),
        left("kinds", 28),
        left("class", 12),
        left("floor", 7),
        r("full", 6),
        r("dense", 6),
        r("compact", 7),
        r("anchor", 6),
        r("pins", 4),
    ]);
    for e in &l.episodes {
        let reqs = match (e.first_request, e.last_request) {
            (Some(a), Some(b)) if a == b => a.to_string(),
            (Some(a), Some(b)) => format!("{a}-{b}"),
            _ => "-".to_owned(),
        };
        let tok = |t: Tier| {
            Cell::Text(
                e.representation(t)
                    .map_or("-".to_owned(), |r| r.tokens.to_string()),
            )
        };
        let time = format_time(e.time_start);
        t.push(vec![
            Cell::text(e.id.clone()),
            Cell::Text(reqs),
            Cell::text(time.get(11..).unwrap_or(&time)),
            // A title is one line here.
            Cell::Text(e.title.replace('\n', " ")),
            Cell::Text(kinds_cell(&e.kinds, 28)),
            Cell::text(e.class.as_str()),
            Cell::text(e.floor.as_str()),
            tok(Tier::Full),
            tok(Tier::Dense),
            tok(Tier::Compact),
            tok(Tier::Anchor),
            Cell::Int(e.pins.len() as u64),
        ]);
    }
    out.table(t);
    for c in &l.children {
        out.blank();
        out.line(format!(
            "sub-agent session (parent episode {}):",
            parent_episode(l, &c.trace.session.id)
        ));
        out.append(table(c));
    }
    out
}

fn parent_episode(l: &LoadedSession, child: &str) -> String {
    l.episodes
        .iter()
        .find(|e| e.children.iter().any(|c| c == child))
        .map_or_else(|| "?".to_owned(), |e| e.id.clone())
}

/// `--explain`: class and floor reasons, pins, keys, tier notes, tokens per tier.
pub fn explain(l: &LoadedSession, e: &Episode) -> String {
    let s = |x: &str| sanitize_for_terminal(x).into_owned();
    let mut out = String::new();
    let reqs = match (e.first_request, e.last_request) {
        (Some(a), Some(b)) => format!("requests {a}..{b}"),
        _ => "no requests".to_owned(),
    };
    let _ = writeln!(out, "{}  {}", e.id, s(&e.title));
    let _ = writeln!(
        out,
        "  {reqs}, messages {}..{} ({} .. {}), {} → {}",
        e.first_message,
        e.last_message,
        s(&l.trace.messages[e.first_message].id),
        s(&l.trace.messages[e.last_message].id),
        format_time(e.time_start),
        format_time(e.time_end)
    );
    let kinds = e
        .kinds
        .iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(out, "  kinds: {kinds}");
    if let Some(c) = &e.continues {
        let _ = writeln!(out, "  continues: {}", s(c));
    }
    if !e.children.is_empty() {
        let _ = writeln!(out, "  sub-agent sessions: {}", s(&e.children.join(", ")));
    }
    if let Some(i) = e.importance {
        let _ = writeln!(out, "  importance: {i:.2}");
    }
    let _ = writeln!(out, "class {}", e.class.as_str());
    for r in &e.class_reasons {
        let _ = writeln!(out, "  - {}", s(r));
    }
    let _ = writeln!(out, "floor {}", e.floor.as_str());
    for r in &e.floor_reasons {
        let _ = writeln!(out, "  - {}", s(r));
    }
    let _ = writeln!(out, "pins ({})", e.pins.len());
    for p in &e.pins {
        let _ = writeln!(
            out,
            "  - \"{}\"  [{}; {}]",
            s(&p.text),
            s(&p.message_id),
            s(&p.reason)
        );
    }
    if !e.keys.is_empty() {
        let _ = writeln!(out, "relevance keys: {}", s(&e.keys.join(", ")));
    }
    let _ = writeln!(out, "tiers");
    for t in Tier::TIERS {
        match e.representation(t) {
            Some(r) => {
                let pruned: u32 = r
                    .chunks
                    .iter()
                    .map(|c| c.pruned.as_ref().map_or(c.tokens, |p| p.tokens))
                    .sum();
                let pruned = if pruned != r.tokens {
                    format!(", {pruned} with recorded prunes")
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "  {:<8} {:>6} tokens{pruned}  {} chunk(s)  {} ({})",
                    t.as_str(),
                    r.tokens,
                    r.chunks.len(),
                    s(&r.generator),
                    r.strategy.as_str()
                );
            }
            None => {
                let _ = writeln!(out, "  {:<8}      - not generated", t.as_str());
            }
        }
    }
    for n in &e.tier_notes {
        let _ = writeln!(out, "  note: {}", s(n));
    }
    let legal: Vec<&str> = e.legal_tiers().iter().map(|t| t.as_str()).collect();
    let _ = writeln!(out, "legal range: {}", legal.join(" > "));
    out
}

/// `--show`: the text of one representation, sanitized, with a one-line header.
pub fn show(rep: &Representation, pruned: bool) -> String {
    let text = if pruned {
        rep.chunks
            .iter()
            .map(|c| {
                c.pruned
                    .as_ref()
                    .map_or(c.text.as_str(), |p| p.text.as_str())
            })
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        rep.text()
    };
    format!(
        "# {} {} — {} tokens, {}, {} chunk(s){}\n{}\n",
        rep.episode_id,
        rep.tier,
        rep.tokens,
        sanitize_for_terminal(&rep.generator),
        rep.chunks.len(),
        if pruned {
            ", recorded prunes applied"
        } else {
            ""
        },
        sanitize_for_terminal(&text)
    )
}

/// How a representation was made, in the chapter's words.
fn method(rep: &Representation) -> (&'static str, Value) {
    match (rep.strategy, rep.tier) {
        (Strategy::External, _) => ("external", Value::Null),
        (_, Tier::Full) => ("verbatim", json!("raw")),
        (Strategy::Cascade, t) => (
            "cascaded",
            json!(format!("tier:{}", t.higher().map_or("raw", |h| h.as_str()))),
        ),
        (Strategy::Record, _) => ("canonical-record", json!("record")),
        (_, _) => ("source-grounded", json!("raw")),
    }
}

/// One JSONL record per representation (the chapter's "representation object").
pub fn record(l: &LoadedSession, rep: &Representation) -> Value {
    let (method, derived_from) = method(rep);
    json!({
        "kind": "representation",
        "session_id": l.trace.session.id,
        "episode_id": rep.episode_id,
        "tier": rep.tier,
        "strategy": rep.strategy,
        "method": method,
        "derived_from": derived_from,
        "generator": rep.generator,
        "tokenizer": l.tokenizer,
        "tokens": rep.tokens,
        "contract": rep.contract,
        "source_message_ids": rep.source_message_ids,
        "chunks": rep.chunks.iter().map(|c| json!({
            "message_id": c.message_id,
            "hash": format!("{:016x}", c.hash),
            "tokens": c.tokens,
            "artefact": c.artefact,
            "pruned_tokens": c.pruned.as_ref().map(|p| p.tokens),
        })).collect::<Vec<_>>(),
        "text": rep.text(),
    })
}

/// `--records FILE`: every episode's record and representations as JSON Lines (all or nothing).
fn write_records(
    l: &LoadedSession,
    path: &std::path::Path,
    guard: &OutputGuard,
) -> anyhow::Result<()> {
    let mut w = AtomicFile::create(path, guard)?;
    for s in all_sessions(l) {
        for e in &s.episodes {
            // The episode's canonical record first, then its representations.
            if let Some(r) = s.record(e) {
                let line = json!({
                    "kind": "episode-record",
                    "session_id": s.trace.session.id,
                    "episode_id": e.id,
                    "record": r,
                });
                report::json::to_writer(&mut w, &line)?;
                w.write_all(b"\n")?;
            }
            for rep in e.tiers.values() {
                report::json::to_writer(&mut w, &record(s, rep))?;
                w.write_all(b"\n")?;
            }
        }
    }
    w.commit()?;
    Ok(())
}

/// The `--json` document, serialized as it is written (a large session's document is never
/// built in memory). Keys in this order are a stable interface.
pub fn to_json(l: &LoadedSession) -> EpisodesDoc<'_> {
    document(l, None)
}

/// [`to_json`] for a pretty document whose episodes are at `pretty_at` (see [`EpisodesOut`]).
fn document(l: &LoadedSession, pretty_at: Option<usize>) -> EpisodesDoc<'_> {
    EpisodesDoc {
        session_id: &l.trace.session.id,
        title: &l.trace.session.title,
        segmentation: l.segmentation.as_str(),
        tiers_source: l.tier_source.as_str(),
        tokenizer: &l.tokenizer,
        rules: &l.rules_origin,
        sidecars: l
            .sidecar_paths
            .iter()
            .map(|(kind, p)| SidecarOut {
                kind,
                path: p.display().to_string(),
            })
            .collect(),
        requests: l.trace.requests.len(),
        milestones: &l.milestones,
        probes: l.probes.len(),
        token_stats: &l.token_stats,
        episodes: EpisodesOut {
            session: l,
            pretty_at,
        },
        // A child document is an element of `children` (two levels down), so are its episodes.
        children: l
            .children
            .iter()
            .map(|c| EpisodesDoc {
                parent_episode: Some(parent_episode(l, &c.trace.session.id)),
                ..document(c, pretty_at.map(|d| d + 2))
            })
            .collect(),
        warnings: &l.warnings,
        parent_episode: None,
    }
}

/// See [`to_json`].
#[derive(Serialize)]
pub struct EpisodesDoc<'a> {
    session_id: &'a str,
    title: &'a str,
    segmentation: &'a str,
    tiers_source: &'a str,
    tokenizer: &'a str,
    rules: &'a str,
    sidecars: Vec<SidecarOut<'a>>,
    requests: usize,
    milestones: &'a std::collections::BTreeSet<usize>,
    probes: usize,
    token_stats: &'a tierscope_engine::tokens::TokenStats,
    episodes: EpisodesOut<'a>,
    children: Vec<EpisodesDoc<'a>>,
    warnings: &'a [String],
    /// Children only: the episode whose `task` call spawned the sub-agent session.
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_episode: Option<String>,
}

#[derive(Serialize)]
struct SidecarOut<'a> {
    kind: &'a str,
    path: String,
}

/// The episodes of a session, each serialized when it is written; or, for the pretty document
/// (`pretty_at`: the depth of the array's elements in it), rendered a few hundred at a time on
/// every core and written as they are, the same bytes (a large session's episodes are never
/// all rendered at once).
struct EpisodesOut<'a> {
    session: &'a LoadedSession,
    pretty_at: Option<usize>,
}

impl Serialize for EpisodesOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let l = self.session;
        let Some(depth) = self.pretty_at else {
            return s.collect_seq(l.episodes.iter().map(|e| episode_json(l, e)));
        };
        use rayon::prelude::*;
        use serde::ser::{Error, SerializeSeq};
        let mut seq = s.serialize_seq(Some(l.episodes.len()))?;
        for chunk in l.episodes.chunks(256) {
            let rendered: Vec<_> = chunk
                .par_iter()
                .map(|e| report::json::pretty_at_depth(&episode_json(l, e), depth))
                .collect::<Result<_, _>>()
                .map_err(S::Error::custom)?;
            for r in &rendered {
                seq.serialize_element(r)?;
            }
        }
        seq.end()
    }
}

fn episode_json<'a>(l: &'a LoadedSession, e: &'a Episode) -> EpisodeOut<'a> {
    EpisodeOut {
        id: &e.id,
        first_request: e.first_request,
        last_request: e.last_request,
        first_message_id: &l.trace.messages[e.first_message].id,
        last_message_id: &l.trace.messages[e.last_message].id,
        time_start: e.time_start,
        time_end: e.time_end,
        title: &e.title,
        kinds: &e.kinds,
        class: &e.class,
        floor: &e.floor,
        reasons: e.class_reasons.iter().chain(&e.floor_reasons).collect(),
        class_reasons: &e.class_reasons,
        floor_reasons: &e.floor_reasons,
        pins: &e.pins,
        keys: &e.keys,
        tier_notes: &e.tier_notes,
        continues: &e.continues,
        children: &e.children,
        importance: e.importance,
        legal_tiers: e.legal_tiers(),
        tiers: TiersOut(e),
        record: l.record(e),
    }
}

#[derive(Serialize)]
struct EpisodeOut<'a> {
    id: &'a str,
    first_request: Option<usize>,
    last_request: Option<usize>,
    first_message_id: &'a str,
    last_message_id: &'a str,
    time_start: i64,
    time_end: i64,
    title: &'a str,
    kinds: &'a [tierscope_engine::episode::EpisodeKind],
    class: &'a tierscope_engine::episode::RetentionClass,
    floor: &'a Tier,
    reasons: Vec<&'a String>,
    class_reasons: &'a [String],
    floor_reasons: &'a [String],
    pins: &'a [tierscope_engine::episode::Pin],
    keys: &'a [String],
    tier_notes: &'a [String],
    continues: &'a Option<String>,
    children: &'a [String],
    importance: Option<f64>,
    legal_tiers: Vec<Tier>,
    tiers: TiersOut<'a>,
    /// The canonical record, when kept (`--json` keeps it; `null` otherwise).
    record: Option<&'a tierscope_engine::episode::record::EpisodeRecord>,
}

/// An episode's tiers as `{tier: {tokens, strategy, generator, chunks, pruned_tokens}}`.
struct TiersOut<'a>(&'a Episode);

#[derive(Serialize)]
struct TierOut<'a> {
    tokens: u32,
    strategy: &'a Strategy,
    generator: &'a str,
    chunks: usize,
    /// The full tier's tokens with the recorded prunes applied; `null` for the other tiers.
    pruned_tokens: Option<u32>,
}

impl Serialize for TiersOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.tiers.iter().map(|(t, r)| {
            let pruned = (*t == Tier::Full).then(|| {
                r.chunks
                    .iter()
                    .map(|c| c.pruned.as_ref().map_or(c.tokens, |p| p.tokens))
                    .sum()
            });
            (
                t.as_str(),
                TierOut {
                    tokens: r.tokens,
                    strategy: &r.strategy,
                    generator: &r.generator,
                    chunks: r.chunks.len(),
                    pruned_tokens: pruned,
                },
            )
        }))
    }
}
