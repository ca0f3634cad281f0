//! `tierscope diff`: replay one session under two policies (or one policy with two knob sets)
//! and print what differs: per request the episodes shown at different tiers and the metric
//! deltas (B − A), then the summary of both and its deltas. `--at N` narrows to one request;
//! `--context --at N` prints the unified diff of the two rendered contexts there.

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use serde_json::json;

use super::report::{self, Cell, Column, Format, Table, Text};
use super::LoadArgs;
use tierscope_engine::compare::delta::{signed, signed_f};
use tierscope_engine::compare::{self, Comparison, FrameDiff, Metrics, SummaryDelta};
use tierscope_engine::policy::{self, Policy};
use tierscope_engine::replay::{render_at, tier_shown, Input, Summary, TAIL_MARK};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum DiffFormat {
    #[default]
    Table,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Policy A, then policy B: built-in names or TOML files. Give one to compare a policy with
    /// itself under two knob sets (--set-a / --set-b).
    #[arg(long, short = 'p', value_name = "POLICY", required = true)]
    pub policy: Vec<String>,
    /// Token budget for both (default: the usable input limit of the recorded model). Given,
    /// `opencode` (`trigger = auto`) simulates its compaction with it as the usable limit.
    #[arg(long, value_parser = super::report::budget_value)]
    pub budget: Option<u64>,
    /// Override a knob of A: KEY=VALUE (repeatable).
    #[arg(long = "set-a", value_name = "KEY=VALUE")]
    pub set_a: Vec<String>,
    /// Override a knob of B: KEY=VALUE (repeatable).
    #[arg(long = "set-b", value_name = "KEY=VALUE")]
    pub set_b: Vec<String>,
    /// Only this request (numbered from 0).
    #[arg(long, value_name = "REQUEST")]
    pub at: Option<usize>,
    /// With --at: the unified diff of the two rendered contexts at that request.
    #[arg(long, requires = "at")]
    pub context: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: DiffFormat,
}

impl DiffArgs {
    /// Policies A and B with their overrides.
    pub fn resolve(&self) -> anyhow::Result<(Policy, Policy)> {
        let (a, b) = match self.policy.as_slice() {
            [a] => (a, a),
            [a, b] => (a, b),
            _ => bail!(
                "give --policy once (one policy, two knob sets) or twice (A then B), not {} times",
                self.policy.len()
            ),
        };
        let pa = policy::load(a, &policy::parse_overrides(&self.set_a)?).context("policy A")?;
        let pb = policy::load(b, &policy::parse_overrides(&self.set_b)?).context("policy B")?;
        Ok((pa, pb))
    }
}

pub fn run(a: &DiffArgs) -> anyhow::Result<()> {
    let (pa, pb) = a.resolve()?;
    let session =
        tierscope_engine::session::load(&a.load.options()).context("loading the session")?;
    let input = Input::from(&session);
    let (_, _, mut cmp) = compare::compare_policies(&input, &pa, &pb, a.budget)?;
    let labels = (compare::side_label(&pa, &pb), compare::side_label(&pb, &pa));
    if let Some(at) = a.at {
        if at >= cmp.requests {
            bail!(
                "request {at} is out of range: the session has {} requests (numbered from 0)",
                cmp.requests
            );
        }
    }
    if a.context {
        let Some(at) = a.at else {
            bail!("--context needs --at REQUEST");
        };
        let ca = render_at(&input, &pa, a.budget, at)?;
        let cb = render_at(&input, &pb, a.budget, at)?;
        let (ta, tb) = (compare::context_text(&ca), compare::context_text(&cb));
        let unified = compare::unified_diff(
            &ta,
            &tb,
            &format!("A: {}", labels.0),
            &format!("B: {}", labels.1),
        );
        let out = ContextDiffReport {
            comparison: &cmp,
            labels: &labels,
            at,
            tokens: (ca.tokens, cb.tokens),
            chunks: (ca.chunks.len(), cb.chunks.len()),
            unified: &unified,
        };
        return report::emit(a.format.into(), &out);
    }
    if let Some(at) = a.at {
        cmp.frames.retain(|f| f.request == at);
    }
    report::emit(
        a.format.into(),
        &DiffReport {
            comparison: &cmp,
            labels: &labels,
            only_at: a.at.is_some(),
        },
    )
}

impl From<DiffFormat> for Format {
    fn from(f: DiffFormat) -> Format {
        match f {
            DiffFormat::Table => Format::Table,
            DiffFormat::Json => Format::Json,
        }
    }
}

/// The output of `diff`: the comparison (JSON) or the per-request table and the summaries.
pub struct DiffReport<'a> {
    pub comparison: &'a Comparison,
    /// Name and the knobs that set each side apart (see [`compare::side_label`]).
    pub labels: &'a (String, String),
    /// `--at N`: one request, with its tier differences spelled out instead of the summary.
    pub only_at: bool,
}

impl report::Report for DiffReport<'_> {
    fn name(&self) -> &'static str {
        "diff"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        self.comparison
    }
    fn text(&self) -> Text {
        table(self.comparison, self.labels, self.only_at)
    }
}

/// The output of `diff --context --at N`: the unified diff of the two rendered contexts.
pub struct ContextDiffReport<'a> {
    pub comparison: &'a Comparison,
    pub labels: &'a (String, String),
    pub at: usize,
    /// Tokens of A's and B's rendered context.
    pub tokens: (u64, u64),
    /// Chunks of A's and B's rendered context.
    pub chunks: (usize, usize),
    pub unified: &'a str,
}

impl report::Report for ContextDiffReport<'_> {
    fn name(&self) -> &'static str {
        "diff --context"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        let c = self.comparison;
        json!({
            "request": self.at,
            "a": { "policy": c.a.name, "tokens": self.tokens.0, "chunks": self.chunks.0 },
            "b": { "policy": c.b.name, "tokens": self.tokens.1, "chunks": self.chunks.1 },
            "identical": self.unified.is_empty(),
            "unified": self.unified,
        })
    }
    fn text(&self) -> Text {
        context_report(self)
    }
}

/// The header: session, budget, both policies (`labels`: name and the knobs that set each
/// apart, see [`compare::side_label`]).
fn header(c: &Comparison, labels: &(String, String)) -> Text {
    let mut out = Text::new();
    out.line(format!(
        "session {} \"{}\" · {} requests · {} episodes · budget {} ({})",
        c.session,
        c.title,
        c.requests,
        c.episodes.len(),
        c.a.budget,
        c.a.budget_source
    ));
    for (side, p, label) in [("A", &c.a, &labels.0), ("B", &c.b, &labels.1)] {
        let floors = if p.respect_floors {
            "respects floors"
        } else {
            "may go below floors"
        };
        out.line(format!("{side}: {label} ({}, {floors})", p.kind));
        if let Some(cr) = &p.compaction {
            out.line(format!("{side} compaction: {}", cr.describe()));
        }
    }
    let s = &c.summary;
    let tails = if s.tail_only_cells > 0 {
        format!(
            "; {} with a side showing only the tail of full",
            s.tail_only_cells
        )
    } else {
        String::new()
    };
    out.line(format!(
        "requests differing: {} of {} · tier cells differing: {} (A higher {}, B higher {}{tails})",
        s.requests_differing,
        c.requests,
        s.tier_cells_differing,
        s.a_higher_cells,
        s.b_higher_cells
    ));
    out
}

fn change_list(cs: &[tierscope_engine::replay::Change]) -> String {
    if cs.is_empty() {
        return "none".into();
    }
    cs.iter()
        .map(|c| format!("{} {}→{}", c.episode, c.from, c.to))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What differs at one request in words: tiers first, else the changes applied.
fn differs_cell(f: &FrameDiff) -> String {
    if f.same {
        return "=".into();
    }
    let mut parts = Vec::new();
    if !f.tier_diffs.is_empty() {
        parts.push(tiers_cell(f));
    }
    if !f.changes_a.is_empty() || !f.changes_b.is_empty() {
        parts.push(format!(
            "(changes A: {}; B: {})",
            change_list(&f.changes_a),
            change_list(&f.changes_b)
        ));
    }
    if parts.is_empty() {
        parts.push("(holds, violations or probes differ)".into());
    }
    parts.join(" ")
}

fn tiers_cell(f: &FrameDiff) -> String {
    f.tier_diffs
        .iter()
        .map(|d| {
            let mark = |below: bool| if below { "!" } else { "" };
            format!(
                "{} {}{}|{}{}",
                d.episode,
                tier_shown(d.a, d.a_tail_only),
                mark(d.a_below_floor),
                tier_shown(d.b, d.b_tail_only),
                mark(d.b_below_floor)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn frame_columns() -> Vec<Column> {
    let r = |name: &str, w: usize| Column::right(name).width(w);
    vec![
        r("req", 4),
        r("tok A", 7),
        r("tok B", 7),
        r("Δtok", 6),
        r("Δdiverg", 7),
        r("Δradius", 7),
        r("Δc.read", 7),
        r("Δc.writ", 7),
        r("Δcost$", 9),
        r("Δchg", 4),
        r("Δhld", 4),
        r("Δthr", 4),
        r("Δflv", 4),
        r("Δpnv", 4),
        r("Δprb", 4),
        Column::left("tiers A|B where they differ").sep("  "),
    ]
}

fn frame_row(f: &FrameDiff) -> Vec<Cell> {
    let d: &Metrics = &f.delta;
    let delta = |v: i64| Cell::Text(signed(v));
    vec![
        Cell::text(format!(
            "{}{}",
            f.request,
            if f.synthetic_call { "*" } else { "" }
        )),
        Cell::Text(f.a.tokens.to_string()),
        Cell::Text(f.b.tokens.to_string()),
        delta(d.tokens),
        delta(d.divergence),
        delta(d.radius),
        delta(d.cache_read),
        delta(d.cache_write),
        Cell::Text(signed_f(d.cost, 5)),
        delta(d.changes),
        delta(d.holds),
        delta(d.thrash),
        delta(d.floor_violations),
        delta(d.pin_violations),
        delta(d.probes_ok),
        Cell::Text(differs_cell(f)),
    ]
}

/// Per-request rows, then the summary of A, B and B − A.
pub fn table(c: &Comparison, labels: &(String, String), only_at: bool) -> Text {
    let mut out = header(c, labels);
    let mut t = Table::new(frame_columns());
    for f in &c.frames {
        t.push(frame_row(f));
    }
    out.table(t);
    let tails = c
        .frames
        .iter()
        .flat_map(|f| &f.tier_diffs)
        .any(|d| d.a_tail_only || d.b_tail_only);
    let tails = if tails {
        format!(" · {TAIL_MARK} only the tail of full (the head in a summary or before the view)")
    } else {
        String::new()
    };
    out.line(format!(
        "= no difference · ! below the episode's floor{tails} · * summary call · Δ = B − A"
    ));
    if only_at {
        for f in &c.frames {
            for d in &f.tier_diffs {
                out.line(format!(
                    "request {}: {} floor {} · A {}{} · B {}{} · {} is higher",
                    f.request,
                    d.episode,
                    d.floor,
                    tier_shown(d.a, d.a_tail_only),
                    if d.a_below_floor {
                        " (below floor)"
                    } else {
                        ""
                    },
                    tier_shown(d.b, d.b_tail_only),
                    if d.b_below_floor {
                        " (below floor)"
                    } else {
                        ""
                    },
                    match d.higher {
                        compare::Higher::A => "A",
                        compare::Higher::B => "B",
                    }
                ));
            }
        }
        return out;
    }
    out.append(summary_table(&c.summary.a, &c.summary.b, &c.summary.delta));
    out
}

/// The summaries of A and B side by side with B − A.
pub fn summary_table(a: &Summary, b: &Summary, d: &SummaryDelta) -> Text {
    fn count(
        name: &'static str,
        a: impl ToString,
        b: impl ToString,
        d: i64,
    ) -> (&'static str, String, String, String) {
        (name, a.to_string(), b.to_string(), signed(d))
    }
    let opt_u = |v: Option<u64>| v.map_or("–".to_owned(), |x| x.to_string());
    let opt_i = |v: Option<i64>| v.map_or("–".to_owned(), signed);
    let pct = |v: Option<f64>| v.map_or("–".to_owned(), |x| format!("{:.1}", x * 100.0));
    let rows = [
        (
            "mean tokens",
            format!("{:.0}", a.mean_tokens),
            format!("{:.0}", b.mean_tokens),
            signed_f(d.mean_tokens, 0),
        ),
        count(
            "max overflow",
            a.max_overflow,
            b.max_overflow,
            d.max_overflow,
        ),
        (
            "cost $",
            format!("{:.4}", a.cost),
            format!("{:.4}", b.cost),
            signed_f(d.cost, 4),
        ),
        (
            "cache hit %",
            format!("{:.1}", a.cache_hit_ratio * 100.0),
            format!("{:.1}", b.cache_hit_ratio * 100.0),
            signed_f(d.cache_hit_ratio * 100.0, 1),
        ),
        count(
            "divergence cost (tokens)",
            a.divergence_cost.tokens,
            b.divergence_cost.tokens,
            d.divergence_cost_tokens,
        ),
        (
            "divergence cost $",
            format!("{:.4}", a.divergence_cost.dollars),
            format!("{:.4}", b.divergence_cost.dollars),
            signed_f(d.divergence_cost_dollars, 4),
        ),
        count("changes", a.changes, b.changes, d.changes),
        (
            "switches per 100",
            format!("{:.1}", a.switches_per_100),
            format!("{:.1}", b.switches_per_100),
            signed_f(d.switches_per_100, 1),
        ),
        count("thrash", a.thrash, b.thrash, d.thrash),
        count("holds", a.holds, b.holds, d.holds),
        count("deferred", a.deferred, b.deferred, d.deferred),
        count("emergencies", a.emergencies, b.emergencies, d.emergencies),
        count(
            "floor violations",
            a.floor_violations,
            b.floor_violations,
            d.floor_violations,
        ),
        count(
            "pin violations",
            a.pin_violations,
            b.pin_violations,
            d.pin_violations,
        ),
        count("prunes", a.prunes, b.prunes, d.prunes),
        count(
            "synthetic calls",
            a.synthetic_calls,
            b.synthetic_calls,
            d.synthetic_calls,
        ),
        (
            "probe survival %",
            pct(a.probe_survival),
            pct(b.probe_survival),
            d.probe_survival
                .map_or("–".to_owned(), |x| signed_f(x * 100.0, 1)),
        ),
        (
            "excess fidelity (tokens)",
            opt_u(a.excess_fidelity_tokens),
            opt_u(b.excess_fidelity_tokens),
            opt_i(d.excess_fidelity_tokens),
        ),
        (
            "under-fidelity misses",
            opt_u(a.under_fidelity_misses),
            opt_u(b.under_fidelity_misses),
            opt_i(d.under_fidelity_misses),
        ),
    ];
    let mut t = Table::new(vec![
        Column::left("summary").width(26),
        Column::right("A").width(12),
        Column::right("B").width(12),
        Column::right("B − A").width(12),
    ]);
    for (name, a, b, d) in rows {
        t.push(vec![
            Cell::text(name),
            Cell::Text(a),
            Cell::Text(b),
            Cell::Text(d),
        ]);
    }
    let mut out = Text::from(t);
    if a.probe_survival.is_none() && b.probe_survival.is_none() {
        out.line("(no probes sidecar: probe survival and the oracle yardsticks are not measured)");
    }
    out
}

fn context_report(r: &ContextDiffReport<'_>) -> Text {
    let (c, at) = (r.comparison, r.at);
    let (a_tokens, b_tokens) = r.tokens;
    let mut out = header(c, r.labels);
    if let Some(f) = c.frames.iter().find(|f| f.request == at) {
        let mut line = format!(
            "request {at}: A {a_tokens} tokens · B {b_tokens} tokens (Δ {})",
            signed(b_tokens as i64 - a_tokens as i64)
        );
        if !f.tier_diffs.is_empty() {
            line.push_str(&format!(" · tiers A|B: {}", tiers_cell(f)));
        }
        out.line(line);
    }
    if r.unified.is_empty() {
        out.line(format!(
            "the rendered contexts at request {at} are identical"
        ));
    } else {
        out.verbatim(r.unified);
    }
    out
}
