//! `tierscope replay`: replay a session under a policy and print one line per request and a
//! summary (table), or `{trace, policy, frames, summary}` (json), one row per frame with the
//! scalar keys (csv), or one frame per line then the summary (jsonl). `--records FILE` writes the
//! selection-decision records as JSONL.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::{json, Value};

use super::output::Format;
use super::LoadArgs;
use tierscope_engine::episode::Tier;
use tierscope_engine::policy::{self, Policy};
use tierscope_engine::replay::{self, records, Frame, Replay};

/// Policy flags shared by `replay` and `render`.
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// A built-in policy name (see `tierscope policies`) or a policy TOML file.
    #[arg(long, short = 'p', default_value = "retention")]
    pub policy: String,
    /// Token budget (default: the usable input limit of the recorded model).
    #[arg(long)]
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
    /// frame that changes is written again, the last line for a request wins).
    #[arg(long)]
    pub follow: bool,
    /// With --follow: stop after this many seconds without a change.
    #[arg(long, value_name = "SECS", requires = "follow")]
    pub follow_timeout: Option<f64>,
}

pub fn run(a: &ReplayArgs) -> anyhow::Result<()> {
    let policy = a.policy.resolve()?;
    if a.follow {
        return super::follow::replay_follow(a, &policy);
    }
    let session =
        tierscope_engine::loaded::load(&a.load.options()).context("loading the session")?;
    let r = replay::replay_session(&session, &policy, a.policy.budget);
    if let Some(path) = &a.records {
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        );
        for rec in records::selection_records(&r) {
            serde_json::to_writer(&mut f, &rec)?;
            f.write_all(b"\n")?;
        }
        f.flush()?;
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match a.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &r)?;
            writeln!(out)?;
        }
        Format::Jsonl => {
            for f in &r.frames {
                serde_json::to_writer(&mut out, f)?;
                writeln!(out)?;
            }
            serde_json::to_writer(&mut out, &json!({ "summary": r.summary }))?;
            writeln!(out)?;
        }
        Format::Csv => out.write_all(csv(&r).as_bytes())?,
        Format::Table => out.write_all(table(&r).as_bytes())?,
    }
    Ok(())
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

fn csv_cell(v: &Value) -> String {
    match v {
        Value::String(s) if s.contains([',', '"', '\n']) => {
            format!("\"{}\"", s.replace('"', "\"\""))
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One row per frame with the scalar keys.
pub fn csv(r: &Replay) -> String {
    let mut out = String::new();
    let Some(first) = r.frames.first() else {
        return out;
    };
    let header: Vec<String> = scalar_columns(first).into_iter().map(|(k, _)| k).collect();
    out.push_str(&header.join(","));
    out.push('\n');
    for f in &r.frames {
        let row: Vec<String> = scalar_columns(f).iter().map(|(_, v)| csv_cell(v)).collect();
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// One line per request, then the summary.
pub fn table(r: &Replay) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "session {} · {} requests · {} episodes · policy {} ({}) · budget {} ({})\n",
        r.trace.session,
        r.trace.requests,
        r.trace.episodes,
        r.policy.name,
        r.policy.kind,
        r.policy.budget,
        r.policy.budget_source
    ));
    for s in &r.trace.system_segments {
        out.push_str(&format!(
            "system chunk {}/{}: {} tokens ({}{})\n",
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
        out.push_str(&format!("pricing: {n}\n"));
    }
    out.push_str(&format!(
        "{:>4} {:<7} {:>7} {:>7} {:>5} {:>6} {:>7} {:>7} {:>7} {:>9} {:>4}/{:>3}/{:>3}/{:>3}/{:>3} {:>3} {:>3} {:>3} {:>3} {:>3}  changes\n",
        "req", "status", "tokens", "record", "press", "over", "diverge", "radius", "c.read", "cost$",
        "F", "D", "C", "A", "X", "def", "hld", "flv", "pnv", "thr"
    ));
    for f in &r.frames {
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
        if f.compaction {
            changes.insert(0, "compaction".into());
        }
        let tc = |t: Tier| f.tiers.get(t).count;
        out.push_str(&format!(
            "{:>4} {:<7} {:>7} {:>7} {:>5.2} {:>6} {:>7} {:>7} {:>7} {:>9.5} {:>4}/{:>3}/{:>3}/{:>3}/{:>3} {:>3} {:>3} {:>3} {:>3} {:>3}  {}\n",
            format!("{}{}", f.request, if f.synthetic_call { "*" } else { "" }),
            f.status,
            f.tokens,
            f.recorded.prompt,
            f.pressure,
            f.overflow,
            f.divergence,
            f.radius,
            f.cache_read,
            f.cost,
            tc(Tier::Full),
            tc(Tier::Dense),
            tc(Tier::Compact),
            tc(Tier::Anchor),
            tc(Tier::Dropped),
            f.deferred,
            f.holds,
            f.floor_violations,
            f.pin_violations,
            f.thrash,
            changes.join("; ")
        ));
    }
    let s = &r.summary;
    out.push_str("* = summary call (its own conversation)\n");
    out.push_str(&format!(
        "summary: mean tokens {:.0} · max overflow {} · cost ${:.4} · cache hit {:.1}% · divergence cost {} tokens (${:.4}) vs full\n",
        s.mean_tokens,
        s.max_overflow,
        s.cost,
        s.cache_hit_ratio * 100.0,
        s.divergence_cost.tokens,
        s.divergence_cost.dollars
    ));
    out.push_str(&format!(
        "         changes {} ({:.1} per 100 requests) · thrash {} · holds {} · deferred {} · emergencies {} · floor violations {} · pin violations {} · prunes {} · synthetic calls {}\n",
        s.changes, s.switches_per_100, s.thrash, s.holds, s.deferred, s.emergencies, s.floor_violations, s.pin_violations, s.prunes, s.synthetic_calls
    ));
    match s.probe_survival {
        Some(p) => out.push_str(&format!(
            "         probe survival {:.1}% · excess fidelity {} tokens · under-fidelity misses {}\n",
            p * 100.0,
            s.excess_fidelity_tokens.unwrap_or(0),
            s.under_fidelity_misses.unwrap_or(0)
        )),
        None => out.push_str("         no probes sidecar: probe survival and oracle yardsticks not measured\n"),
    }
    out.push_str(&format!(
        "         vs recorded prompt: mean |error| {:.2}% · max {:.2}% over {} requests (Σ delta {} tokens)\n",
        s.recorded_error.mean_abs_pct, s.recorded_error.max_abs_pct, s.recorded_error.requests, s.recorded_error.total_delta
    ));
    out
}
