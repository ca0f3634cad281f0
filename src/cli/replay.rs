//! `tierscope replay`: replay a session under a policy and print one line per request and a
//! summary (table), or `{trace, policy, frames, summary}` (json), one row per frame with the
//! scalar keys (csv), or one frame per line then the summary (jsonl). `--records FILE` writes the
//! selection-decision records as JSONL.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::{json, Value};

use super::report::{self, Cell, Column, Format, Table, Text};
use super::LoadArgs;
use tierscope_engine::episode::Tier;
use tierscope_engine::output_guard::{AtomicFile, OutputGuard};
use tierscope_engine::policy::{self, Policy};
use tierscope_engine::replay::{self, records, Frame, Replay};

/// Policy flags shared by `replay` and `render`.
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// A built-in policy name (see `tierscope policies`) or a policy TOML file.
    #[arg(long, short = 'p', default_value = "retention")]
    pub policy: String,
    /// Token budget (default: the usable input limit of the recorded model). Given, `opencode`
    /// (`trigger = auto`) simulates its compaction with it as the usable limit.
    #[arg(long, value_parser = super::report::budget_value)]
    pub budget: Option<u64>,
    /// Override a knob: KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl PolicyArgs {
    /// Resolve the policy with its overrides.
    pub fn resolve(&self) -> anyhow::Result<Policy> {
        let overrides = policy::parse_overrides(&self.set)?;
        Ok(policy::load(&self.policy, &overrides)?)
    }
}

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write selection-decision records (JSONL) to this file.
    #[arg(long, value_name = "FILE")]
    pub records: Option<PathBuf>,
    /// Keep watching the source and stream frames as requests arrive (with --format jsonl; a
    /// frame that changes is written again, the last line for a request wins; a request deleted
    /// from the source gets `{"request": N, "retracted": true}`).
    #[arg(long)]
    pub follow: bool,
    /// With --follow: stop after this many seconds without a change, counted from the first
    /// frames written (the summary line follows; stderr says why it stopped; exit status 0). When
    /// nothing could be loaded for that long, it stops with an error (exit status 1).
    #[arg(long, value_name = "SECS", requires = "follow")]
    pub follow_timeout: Option<f64>,
}

pub fn run(a: &ReplayArgs) -> anyhow::Result<()> {
    let policy = a.policy.resolve()?;
    if a.follow {
        return super::follow::replay_follow(a, &policy);
    }
    let mut guard = super::outputs::guard(&a.load, &[&a.policy.policy]);
    if let Some(path) = &a.records {
        guard.check(path)?;
    }
    let session =
        tierscope_engine::loaded::load(&a.load.options()).context("loading the session")?;
    let r = replay::replay_session(&session, &policy, a.policy.budget);
    if let Some(path) = &a.records {
        guard.loaded(&session);
        write_records(&r, path, &guard)?;
    }
    let out = report::emit(a.format, &ReplayReport(&r));
    super::keep_until_exit((r, session));
    out
}

/// `--records FILE`: the selection-decision records as JSON Lines (all or nothing).
fn write_records(r: &Replay, path: &std::path::Path, guard: &OutputGuard) -> anyhow::Result<()> {
    let mut f = AtomicFile::create(path, guard)?;
    for rec in records::selection_records(r) {
        report::json::to_writer(&mut f, &rec)?;
        f.write_all(b"\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    f.commit()?;
    Ok(())
}

/// The output of `replay`: the replay itself is the JSON document; JSON Lines are the frames
/// then `{summary}`; CSV one row per frame with its scalar keys; the table one line per request.
pub struct ReplayReport<'a>(pub &'a Replay);

impl report::Report for ReplayReport<'_> {
    fn name(&self) -> &'static str {
        "replay"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        self.0
    }
    fn records(&self, out: &mut report::JsonLines<'_>) -> anyhow::Result<()> {
        out.records(&self.0.frames)?;
        out.record(&json!({ "summary": self.0.summary }))
    }
    fn rows(&self) -> Option<Table> {
        Some(csv_rows(self.0))
    }
    fn text(&self) -> Text {
        text(self.0)
    }
}

/// Scalar keys of a frame, flattened (`tiers.full.count`, `recorded.prompt`, …), in order.
pub fn scalar_columns(f: &Frame) -> Vec<(String, Value)> {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, x, out);
                }
            }
            Value::Array(a) => out.push((prefix.to_owned(), Value::from(a.len()))),
            other => out.push((prefix.to_owned(), other.clone())),
        }
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::to_value(f) {
        walk("", &v, &mut out);
    }
    // Lists become counts; those that are already counted elsewhere are left out.
    out.retain(|(k, _)| !matches!(k.as_str(), "held" | "violations" | "probes" | "boundaries"));
    for (k, v) in &mut out {
        if k == "changes" {
            *v = Value::from(f.changes.len());
        }
    }
    out
}

/// One CSV row per frame with the scalar keys (named after the first frame's).
fn csv_rows(r: &Replay) -> Table {
    let Some(first) = r.frames.first() else {
        return Table::new(Vec::new());
    };
    let mut t = Table::new(
        scalar_columns(first)
            .into_iter()
            .map(|(k, _)| Column::left(k))
            .collect(),
    );
    for f in &r.frames {
        t.push(
            scalar_columns(f)
                .into_iter()
                .map(|(_, v)| match v {
                    Value::String(s) => Cell::Text(s),
                    other => Cell::Text(other.to_string()),
                })
                .collect(),
        );
    }
    t
}

/// The per-request table's columns (`F/D/C/A/X`: episodes per tier).
fn frame_columns() -> Vec<Column> {
    let r = |name: &str, w: usize| Column::right(name).width(w);
    vec![
        r("req", 4),
        Column::left("status").width(7),
        r("tokens", 7),
        r("record", 7),
        r("press", 5),
        r("over", 6),
        r("diverge", 7),
        r("radius", 7),
        r("c.read", 7),
        r("cost$", 9),
        r("F", 4),
        r("D", 3).sep("/"),
        r("C", 3).sep("/"),
        r("A", 3).sep("/"),
        r("X", 3).sep("/"),
        r("def", 3),
        r("hld", 3),
        r("flv", 3),
        r("pnv", 3),
        r("thr", 3),
        Column::left("changes").sep("  "),
    ]
}

fn frame_row(f: &Frame) -> Vec<Cell> {
    let mut changes: Vec<String> = f
        .changes
        .iter()
        .map(|c| {
            format!(
                "{} {}→{} ({}, {})",
                c.episode,
                c.from,
                c.to,
                c.reason.as_str(),
                c.applied
            )
        })
        .collect();
    if let Some(c) = &f.compaction_call {
        changes.insert(
            0,
            format!(
                "compaction (call {} in + {} out, ${:.5}, summary {})",
                c.tokens, c.output, c.cost, c.summary_text
            ),
        );
    } else if f.compaction {
        changes.insert(0, "compaction".into());
    }
    changes.extend(f.tail_only.iter().map(|c| {
        format!(
            "{} tail only: {}",
            c.episode,
            c.by.describe(c.hidden, c.chunks, c.hidden_tokens)
        )
    }));
    let tc = |t: Tier| Cell::Int(f.tiers.get(t).count);
    vec![
        Cell::text(format!(
            "{}{}",
            f.request,
            if f.synthetic_call { "*" } else { "" }
        )),
        Cell::text(f.status.to_string()),
        Cell::Int(f.tokens),
        Cell::Int(f.recorded.prompt),
        Cell::Fixed(f.pressure, 2),
        Cell::Int(f.overflow),
        Cell::Int(f.divergence),
        Cell::Int(f.radius),
        Cell::Int(f.cache_read),
        Cell::Fixed(f.cost, 5),
        tc(Tier::Full),
        tc(Tier::Dense),
        tc(Tier::Compact),
        tc(Tier::Anchor),
        tc(Tier::Dropped),
        Cell::Int(f.deferred),
        Cell::Int(f.holds),
        Cell::Int(f.floor_violations),
        Cell::Int(f.pin_violations),
        Cell::Int(f.thrash),
        Cell::text(changes.join("; ")),
    ]
}

/// One line per request, then the summary.
pub fn text(r: &Replay) -> Text {
    let mut out = Text::new();
    out.line(format!(
        "session {} · {} requests · {} episodes · policy {} ({}) · budget {} ({})",
        r.trace.session,
        r.trace.requests,
        r.trace.episodes,
        r.policy.name,
        r.policy.kind,
        r.policy.budget,
        r.policy.budget_source
    ));
    for s in &r.trace.system_segments {
        out.line(format!(
            "system chunk {}/{}: {} tokens ({}{})",
            s.agent,
            s.model,
            s.tokens,
            s.source,
            s.from_request
                .map(|r| format!(" at request {r}"))
                .unwrap_or_default()
        ));
    }
    if let Some(n) = &r.trace.pricing.note {
        out.line(format!("pricing: {n}"));
    }
    if let Some(c) = &r.trace.calibration {
        out.line(format!("tokens: {}", c.describe()));
    }
    if let Some(c) = &r.policy.compaction {
        out.line(format!("compaction: {}", c.describe()));
    }
    let mut t = Table::new(frame_columns());
    for f in &r.frames {
        t.push(frame_row(f));
    }
    out.table(t);
    let s = &r.summary;
    out.line("* = summary call (its own conversation)");
    out.line(format!(
        "summary: mean tokens {:.0} · max overflow {} · cost ${:.4} · cache hit {:.1}% · divergence cost {} tokens (${:.4}) vs full",
        s.mean_tokens,
        s.max_overflow,
        s.cost,
        s.cache_hit_ratio * 100.0,
        s.divergence_cost.tokens,
        s.divergence_cost.dollars
    ));
    out.line(format!(
        "         changes {} ({:.1} per 100 requests) · thrash {} · holds {} · deferred {} · emergencies {} · floor violations {} · pin violations {} · prunes {} · synthetic calls {}",
        s.changes, s.switches_per_100, s.thrash, s.holds, s.deferred, s.emergencies, s.floor_violations, s.pin_violations, s.prunes, s.synthetic_calls
    ));
    match s.probe_survival {
        Some(p) => out.line(format!(
            "         probe survival {:.1}% · excess fidelity {} tokens · under-fidelity misses {}",
            p * 100.0,
            s.excess_fidelity_tokens.unwrap_or(0),
            s.under_fidelity_misses.unwrap_or(0)
        )),
        None => out
            .line("         no probes sidecar: probe survival and oracle yardsticks not measured"),
    };
    let e = &s.recorded_error;
    out.line(if e.follows_recording {
        format!(
            "         replay accuracy (this policy sends what the agent sent): vs the recorded prompt mean |error| {:.2}% · max {:.2}% over {} requests (Σ delta {} tokens)",
            e.mean_abs_pct, e.max_abs_pct, e.requests, e.total_delta
        )
    } else {
        format!(
            "         vs what the agent sent (a counterfactual: this policy changes the context, so this is no error): mean |difference| {:.2}% · max {:.2}% over {} requests (Σ {:+} tokens)",
            e.mean_abs_pct, e.max_abs_pct, e.requests, e.total_delta
        )
    });
    out
}
