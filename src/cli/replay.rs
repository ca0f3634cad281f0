//! `tierscope replay`: replay a session under a policy and print one line per request and a
//! summary (table), or `{trace, policy, frames, summary}` (json), one row per frame with the
//! scalar keys (csv), or one frame per line then the summary (jsonl). `--records FILE` writes the
//! selection-decision records as JSONL.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::{json, Value};

use super::report::{self, Cell, Column, Format, Stream, Table, Text};
use super::LoadArgs;
use tierscope_engine::episode::Tier;
use tierscope_engine::output_guard::AtomicFile;
use tierscope_engine::policy::{self, Policy};
use tierscope_engine::replay::{self, decision_log, Frame, PolicyInfo, Replay, Summary, TraceInfo};

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
    #[command(flatten)]
    pub summaries: super::flat_summaries::SummaryArgs,
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
        if a.summaries.summary_endpoint.is_some() {
            anyhow::bail!("--follow does not take --summary-endpoint");
        }
        return super::follow::replay_follow(a, &policy);
    }
    let mut guard = super::outputs::guard(&a.load, &[&a.policy.policy]);
    if let Some(path) = &a.records {
        guard.check(path)?;
    }
    let summaries = a.summaries.open(&guard)?;
    let session =
        tierscope_engine::session::load(&a.load.options()).context("loading the session")?;
    let book = summaries
        .as_ref()
        .map(|sm| super::flat_summaries::book_for(sm, &session, &policy, a.policy.budget))
        .transpose()?
        .flatten();
    let records = match &a.records {
        Some(path) => {
            guard.loaded(&session);
            Some((AtomicFile::create(path, &guard)?, path.clone()))
        }
        None => None,
    };
    // The frames are written as the pass produces them, and only the summary is kept.
    let mut w = ReplayWriter::new(a.format, records);
    let input = replay::Input {
        summaries: book.as_ref(),
        ..replay::Input::from(&session)
    };
    let r = replay::replay_into(
        &input,
        &policy,
        a.policy.budget,
        session.calibration.clone(),
        replay::Keep { views: false },
        &mut w,
    );
    let out = w.finish(r.as_ref().map(|r| &r.summary));
    super::keep_until_exit((r, book, session));
    out
}

/// `--records FILE`: the selection-decision records as JSON Lines (all or nothing).
struct Records {
    file: AtomicFile,
    path: PathBuf,
    session: String,
    policy: String,
    version: u32,
}

impl Records {
    fn frame(&mut self, f: &Frame) -> anyhow::Result<()> {
        for rec in decision_log::frame_records(&self.session, &self.policy, self.version, f) {
            report::json::to_writer(&mut self.file, &rec)?;
            self.file
                .write_all(b"\n")
                .with_context(|| format!("writing {}", self.path.display()))?;
        }
        Ok(())
    }
}

/// Writes a replay in the chosen format as it is produced: the head (trace and policy), each
/// frame, then the summary; byte for byte what the whole replay would read as. The document
/// is `{trace, policy, frames, summary}` (json); the frames then `{summary}` (jsonl); one row
/// per frame with its scalar keys (csv); one line per request then the summary (table).
pub struct ReplayWriter {
    format: Format,
    out: Stream,
    /// The frames written so far.
    frames: u64,
    table: Table,
    widths: Vec<usize>,
    records: Option<Records>,
    records_pending: Option<(AtomicFile, PathBuf)>,
    /// The first error met (the replay stops there).
    error: Option<anyhow::Error>,
}

impl ReplayWriter {
    pub fn new(format: Format, records: Option<(AtomicFile, PathBuf)>) -> ReplayWriter {
        let table = Table::new(frame_columns());
        // The frame table's columns all have their width (but the last, free text).
        let widths = table.fixed_widths().unwrap_or_default();
        ReplayWriter {
            format,
            out: Stream::stdout(),
            frames: 0,
            table,
            widths,
            records: None,
            records_pending: records,
            error: None,
        }
    }

    fn json_part<T: serde::Serialize>(
        &mut self,
        lead: &str,
        v: &T,
        depth: usize,
    ) -> anyhow::Result<()> {
        let b = self.out.bytes();
        b.extend_from_slice(lead.as_bytes());
        report::json::write_pretty_at(&mut *b, v, depth)?;
        self.out.wrote()
    }

    fn head(&mut self, trace: &TraceInfo, policy: &PolicyInfo) -> anyhow::Result<()> {
        if let Some((file, path)) = self.records_pending.take() {
            self.records = Some(Records {
                file,
                path,
                session: trace.session.clone(),
                policy: policy.name.clone(),
                version: policy.version,
            });
        }
        match self.format {
            Format::Json => {
                self.json_part("{\n  \"trace\": ", trace, 1)?;
                self.json_part(",\n  \"policy\": ", policy, 1)?;
                self.out.text(",\n  \"frames\": [")
            }
            Format::Table => {
                let mut head = Text::new();
                header(&mut head, trace, policy);
                self.out.text(&head.render())?;
                let line = self.table.header_line(&self.widths);
                self.out.text(&line)
            }
            Format::Jsonl | Format::Csv => Ok(()),
        }
    }

    fn frame(&mut self, f: &Frame) -> anyhow::Result<()> {
        if let Some(r) = &mut self.records {
            r.frame(f)?;
        }
        let first = self.frames == 0;
        self.frames += 1;
        match self.format {
            Format::Json => self.json_part(if first { "\n    " } else { ",\n    " }, f, 2),
            Format::Jsonl => {
                report::json::to_writer(&mut *self.out.bytes(), f)?;
                self.out.bytes().push(b'\n');
                self.out.wrote()
            }
            Format::Csv => {
                let cols = scalar_columns(f);
                let mut line = String::new();
                if first {
                    let names: Vec<String> =
                        cols.iter().map(|(k, _)| report::csv::field(k)).collect();
                    line.push_str(&names.join(","));
                    line.push('\n');
                }
                let cells: Vec<String> = cols
                    .into_iter()
                    .map(|(_, v)| {
                        let cell = match v {
                            Value::String(s) => Cell::Text(s),
                            other => Cell::Text(other.to_string()),
                        };
                        report::csv::field(&cell.machine())
                    })
                    .collect();
                line.push_str(&cells.join(","));
                line.push('\n');
                self.out.text(&line)
            }
            Format::Table => {
                let line = self.table.row_line(&self.widths, &frame_row(f));
                self.out.text(&line)
            }
        }
    }

    /// The summary (None: the replay stopped before it), the records committed.
    pub fn finish(mut self, summary: Option<&Summary>) -> anyhow::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let Some(s) = summary else {
            // The reader went away: what was written is what it wanted.
            return self.out.finish();
        };
        match self.format {
            Format::Json => {
                self.out
                    .text(if self.frames == 0 { "]" } else { "\n  ]" })?;
                self.json_part(",\n  \"summary\": ", s, 1)?;
                self.out.text("\n}\n")?;
            }
            Format::Jsonl => {
                report::json::to_writer(&mut *self.out.bytes(), &json!({ "summary": s }))?;
                self.out.bytes().push(b'\n');
                self.out.wrote()?;
            }
            Format::Csv => {
                if self.frames == 0 {
                    // A table without columns: an empty header line.
                    self.out.text("\n")?;
                }
            }
            Format::Table => {
                let mut t = Text::new();
                summary_lines(&mut t, s);
                self.out.text(&t.render())?;
            }
        }
        self.out.finish()?;
        if let Some(r) = self.records.take() {
            r.file.commit()?;
        }
        Ok(())
    }

    fn keep_going(&mut self, r: anyhow::Result<()>) -> ControlFlow<()> {
        match r {
            Err(e) => {
                self.error = Some(e);
                ControlFlow::Break(())
            }
            Ok(()) if self.out.closed() && self.records.is_none() => ControlFlow::Break(()),
            Ok(()) => ControlFlow::Continue(()),
        }
    }
}

impl replay::FrameSink for ReplayWriter {
    fn head(&mut self, trace: &TraceInfo, policy: &PolicyInfo) -> ControlFlow<()> {
        let r = ReplayWriter::head(self, trace, policy);
        self.keep_going(r)
    }
    fn frame(&mut self, frame: Frame) -> ControlFlow<()> {
        let r = ReplayWriter::frame(self, &frame);
        self.keep_going(r)
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
    out.retain(|(k, _)| {
        !matches!(
            k.as_str(),
            "held" | "violations" | "probe_changes" | "boundaries"
        )
    });
    for (k, v) in &mut out {
        if k == "changes" {
            *v = Value::from(f.changes.len());
        }
    }
    out
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
            // A thrash is marked on the change it is, so the `thr` column can be read.
            format!(
                "{} {}→{} ({}, {}{})",
                c.episode,
                c.from,
                c.to,
                c.reason.as_str(),
                c.applied,
                if c.thrash { ", thrash" } else { "" }
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
    header(&mut out, &r.trace, &r.policy);
    let mut t = Table::new(frame_columns());
    for f in &r.frames {
        t.push(frame_row(f));
    }
    out.table(t);
    summary_lines(&mut out, &r.summary);
    out
}

/// The lines above the per-request table: session, system chunks, pricing, compaction.
fn header(out: &mut Text, trace: &TraceInfo, policy: &PolicyInfo) {
    out.line(format!(
        "session {} · {} requests · {} episodes · policy {} ({}) · budget {} ({})",
        trace.session,
        trace.requests,
        trace.episodes,
        policy.name,
        policy.kind,
        policy.budget,
        policy.budget_source
    ));
    for s in &trace.system_segments {
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
    if let Some(n) = &trace.pricing.note {
        out.line(format!("pricing: {n}"));
    }
    if let Some(c) = &trace.calibration {
        out.line(format!("tokens: {}", c.describe()));
    }
    if let Some(c) = &policy.compaction {
        out.line(format!("compaction: {}", c.describe()));
    }
}

/// The lines below the per-request table: the session summary.
fn summary_lines(out: &mut Text, s: &Summary) {
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
}
