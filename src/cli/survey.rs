//! `tierscope survey`: the chapter's ecological questions over every main session of an OpenCode
//! data dir, in parallel with a progress bar; per-session failures are reported and skipped.

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use super::report::{self, plural, Cell, Format, JsonLines, Table, Text};
use super::LoadArgs;
use tierscope_engine::episode::sidecar::{SidecarLocator, Sidecars};
use tierscope_engine::policy;
use tierscope_engine::research::experiment::TierShare;
use tierscope_engine::research::report::{pct, thousands};
use tierscope_engine::research::survey::{combine, survey_session, Survey, Unsurveyed};
use tierscope_engine::tokens::Tokenizer;
use tierscope_engine::trace::SessionSummary;

/// [`mix_cells`] of a per-session policy row or of a policy's totals (two types, same fields).
macro_rules! mix_of {
    ($p:expr) => {
        mix_cells(
            &$p.tiers,
            $p.switches_per_100,
            [
                $p.saves_vs_full_tokens,
                $p.saves_vs_opencode_tokens,
                $p.saves_vs_full_cost,
                $p.saves_vs_opencode_cost,
            ],
        )
    };
}

#[derive(Debug, Clone, Args)]
pub struct SurveyArgs {
    /// The data dir (or database, storage dir, export file); loading flags apply to every session.
    #[command(flatten)]
    pub load: LoadArgs,
    /// Policies to evaluate (repeatable). Default: full, truncate, opencode, age, retention, decay.
    #[arg(long = "policy", short = 'p', value_name = "POLICY")]
    pub policies: Vec<String>,
    /// Output: table, json (one document), csv or jsonl (one line per session).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

fn bar(len: u64, what: &str) -> ProgressBar {
    let b = ProgressBar::new(len);
    let template =
        format!("{{spinner}} {what} {{pos}}/{{len}} sessions [{{bar:30}}] {{elapsed_precise}}");
    b.set_style(
        ProgressStyle::with_template(&template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    b
}

pub fn run(a: &SurveyArgs) -> anyhow::Result<()> {
    if let Some(id) = &a.load.session {
        // Silently surveying everything anyway would answer a different question.
        anyhow::bail!(
            "survey covers every main session of the source; --session {id} does not apply \
             (use `tierscope inspect --session {id}` or `experiment --session {id}`)"
        );
    }
    let names: Vec<String> = if a.policies.is_empty() {
        ["full", "truncate", "opencode", "age", "retention", "decay"]
            .iter()
            .map(|s| (*s).to_string())
            .collect()
    } else {
        a.policies.clone()
    };
    let policies = names
        .iter()
        .map(|n| policy::load(n, &[]))
        .collect::<Result<Vec<_>, _>>()?;
    let source =
        tierscope_engine::trace::open(a.load.path.as_deref()).context("opening the data dir")?;
    let list = source.list_sessions().context("listing sessions")?;
    let main = main_sessions(list);
    let base = tierscope_engine::session::options_from_args(&a.load.options())?;
    let locator = SidecarLocator {
        dir: a.load.sidecars.clone(),
        export_file: a
            .load
            .path
            .clone()
            .filter(|p| p.extension().is_some_and(|e| e == "json")),
        data_dir: SidecarLocator::default_data_dir(),
    };

    // Reading is sequential (one database handle); building episodes and replays is parallel.
    let loading = bar(main.len() as u64, "loading");
    let mut traces = Vec::new();
    let mut failures = Vec::new();
    for s in &main {
        match source.load_session(Some(&s.id)) {
            Ok(t) => traces.push(t),
            Err(e) => failures.push(Unsurveyed {
                session: s.id.clone(),
                error: e.to_string(),
            }),
        }
        loading.inc(1);
    }
    loading.finish_and_clear();
    let inputs: Vec<&std::path::Path> = a.load.path.as_deref().into_iter().collect();
    let tokenizer = Tokenizer::with_disk_cache_for(a.load.tokenizer, None, &inputs);
    if let Some(why) = tokenizer.disk_refused() {
        report::stderr::warn(why);
    }
    let surveying = bar(traces.len() as u64, "surveying");
    let results: Vec<Result<_, Unsurveyed>> = traces
        .into_par_iter()
        .map(|t| {
            let id = t.session.id.clone();
            let mut opts = base.clone();
            let r = Sidecars::find(&locator, &id)
                .map(|sc| {
                    opts.sidecars = sc;
                    let s = tierscope_engine::session::from_trace_with(t, &opts, &tokenizer);
                    survey_session(&s, &policies)
                })
                .map_err(|e| Unsurveyed {
                    session: id,
                    error: e.to_string(),
                });
            surveying.inc(1);
            r
        })
        .collect();
    surveying.finish_and_clear();
    if let Err(e) = tokenizer.save() {
        report::stderr::warn(&e.to_string());
    }
    let mut sessions = Vec::new();
    for r in results {
        match r {
            Ok(s) => sessions.push(s),
            Err(f) => failures.push(f),
        }
    }
    for f in &failures {
        report::stderr::line(&format!("skipped {}: {}", f.session, f.error));
    }
    let survey = combine(source.describe(), sessions, failures);
    report::emit(a.format, &SurveyReport(&survey))
}

/// The sessions a survey covers: those without a parent, and those whose parent is not in the
/// source or whose parent chain loops (no root reaches them, so no main session covers them).
/// Each of the latter is reported on stderr.
fn main_sessions(list: Vec<SessionSummary>) -> Vec<SessionSummary> {
    let by_id: std::collections::HashMap<&str, &SessionSummary> =
        list.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut keep = Vec::new();
    for s in &list {
        let Some(parent) = s.parent_id.as_deref() else {
            keep.push(true);
            continue;
        };
        if !by_id.contains_key(parent) {
            report::stderr::note(&format!(
                "session {}: its parent {parent} is not in the source; surveyed as a main session",
                s.id
            ));
            keep.push(true);
            continue;
        }
        // Walk up; a chain that comes back to a session already seen loops.
        let mut seen = std::collections::HashSet::from([s.id.as_str()]);
        let mut cur = parent;
        let looped = loop {
            if !seen.insert(cur) {
                break true;
            }
            match by_id.get(cur).and_then(|p| p.parent_id.as_deref()) {
                Some(next) if by_id.contains_key(next) => cur = next,
                _ => break false,
            }
        };
        if looped {
            report::stderr::note(&format!(
                "session {}: its parent chain loops back ({parent} …); surveyed as a main session",
                s.id
            ));
        }
        keep.push(looped);
    }
    list.into_iter()
        .zip(keep)
        .filter_map(|(s, k)| k.then_some(s))
        .collect()
}

/// The output of `survey`: the survey (JSON), one line per session (JSON Lines), one row per
/// session and policy (CSV), or the ecological summary, the policy table and the session table.
pub struct SurveyReport<'a>(pub &'a Survey);

impl report::Report for SurveyReport<'_> {
    fn name(&self) -> &'static str {
        "survey"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        self.0
    }
    fn records(&self, out: &mut JsonLines<'_>) -> anyhow::Result<()> {
        out.records(&self.0.sessions)
    }
    fn rows(&self) -> Option<Table> {
        Some(session_rows(self.0))
    }
    fn text(&self) -> Text {
        text(self.0)
    }
}

/// One row per session and policy.
fn session_rows(s: &Survey) -> Table {
    let mut h = vec![
        "session",
        "policy",
        "requests",
        "episodes",
        "old_share",
        "mean_full",
        "mean_tokens",
    ];
    h.extend(MIX_COLUMNS);
    h.extend(["cost_saves_vs_full", "cost_saves_vs_opencode"]);
    let mut t = Table::aligned(&h);
    for ss in &s.sessions {
        for p in &ss.policies {
            let mut row = vec![
                Cell::text(ss.session.clone()),
                Cell::text(p.policy.clone()),
                Cell::Int(ss.requests as u64),
                Cell::Int(ss.episodes as u64),
                Cell::Share(Some(ss.old_context_share)),
                Cell::Fixed(ss.mean_full_tokens, 0),
                Cell::Fixed(p.mean_tokens, 0),
            ];
            row.extend(mix_of!(p));
            t.push(row);
        }
    }
    t
}

/// The columns of [`mix_cells`] but its last two (the cost savings).
const MIX_COLUMNS: [&str; 8] = [
    "full",
    "dense",
    "compact",
    "anchor",
    "dropped",
    "switch/100",
    "saves_vs_full",
    "saves_vs_opencode",
];

/// The cells both tables share: the tier mix, switches per 100 requests, then the savings
/// (`saves`: tokens vs full, tokens vs OpenCode, cost vs full, cost vs OpenCode).
fn mix_cells(tiers: &TierShare, switches_per_100: f64, saves: [f64; 4]) -> Vec<Cell> {
    let share = |v: f64| Cell::Share(Some(v));
    let mut cells: Vec<Cell> = [
        tiers.full,
        tiers.dense,
        tiers.compact,
        tiers.anchor,
        tiers.dropped,
    ]
    .into_iter()
    .map(share)
    .collect();
    cells.push(Cell::Fixed(switches_per_100, 1));
    cells.extend(saves.into_iter().map(share));
    cells
}

fn text(s: &Survey) -> Text {
    let mut out = Text::new();
    let reqs: usize = s.sessions.iter().map(|x| x.requests).sum();
    out.line(format!(
        "{}: {} surveyed ({} requests), {} skipped",
        s.source,
        plural(s.sessions.len(), "session"),
        reqs,
        s.failures.len()
    ));
    out.line(format!(
        "old context: {} of the context under `full`, requests-weighted",
        pct(Some(s.old_context_share))
    ));
    let total: u64 = s.aged_by_class.values().sum();
    let mix = |m: &std::collections::BTreeMap<String, u64>| {
        let mut v: Vec<(&String, &u64)> = m.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.iter()
            .map(|(k, n)| {
                format!(
                    "{k} {} ({})",
                    thousands(**n as i64),
                    pct(Some(**n as f64 / total.max(1) as f64))
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mix = |m: &std::collections::BTreeMap<String, u64>| match mix(m) {
        s if s.is_empty() => "none (no episode closed before the last request)".to_string(),
        s => s,
    };
    out.line(format!("aged history by class: {}", mix(&s.aged_by_class)));
    out.line(format!("aged history by kind:  {}", mix(&s.aged_by_kind)));
    out.blank();
    let mut h = vec!["policy", "sessions"];
    h.extend(MIX_COLUMNS);
    // The same names as the session table: these are savings (positive = cheaper), not costs.
    h.extend(["cost_saves_vs_full", "cost_saves_vs_opencode"]);
    let mut t = Table::aligned(&h);
    for p in &s.policies {
        let mut row = vec![Cell::text(p.policy.clone()), Cell::Int(p.sessions as u64)];
        row.extend(mix_of!(p));
        t.push(row);
    }
    out.table(t);
    out.blank();
    out.table(session_rows(s));
    out
}
