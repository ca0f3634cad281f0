//! `tierscope inspect [PATH] [--session ID] [--json]`: one session's summary.

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;

use super::report::{self, Cell, Column, Format, Table, Text};
use super::LoadArgs;
use tierscope_engine::trace::{Diagnostic, RequestStatus, ToolStatus, Trace, Usage, UserKind};

#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The `--json` document. Its keys are a stable interface.
#[derive(Debug, Clone, Serialize)]
pub struct InspectReport {
    pub session: SessionOut,
    pub counts: Counts,
    pub usage: UsageOut,
    /// Request index of each recorded compaction's summary call.
    pub compaction_requests: Vec<usize>,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionOut {
    pub id: String,
    pub title: String,
    pub parent_id: Option<String>,
    pub version: Option<String>,
    /// The release rules the session was read with, e.g. `0.5.29 (0.2-0.7)` (see
    /// docs/opencode-eras.md).
    pub rules: String,
    /// The agent's name for people (`OpenCode`, `Codex CLI`), for the text report.
    #[serde(skip)]
    pub agent_name: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct Counts {
    pub messages: usize,
    /// Every message with role user (compaction and synthetic ones included).
    pub user_messages: usize,
    pub human_turns: usize,
    pub assistant_messages: usize,
    pub parts: usize,
    pub parts_by_type: BTreeMap<String, usize>,
    pub requests: usize,
    pub requests_by_status: BTreeMap<String, usize>,
    pub tool_calls: usize,
    /// Tool parts with status error.
    pub tool_errors: usize,
    pub compactions: usize,
    pub pruned_outputs: usize,
    pub child_sessions: usize,
}

/// The session's summed token usage and its cost (the JSON keeps them in one flat object).
#[derive(Debug, Clone, Serialize)]
pub struct UsageOut {
    #[serde(flatten)]
    pub tokens: Usage,
    /// Null when the recorded costs do not add up to a finite amount (`cost_error` says so).
    pub cost: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_error: Option<String>,
}

/// What the output says instead of a cost that is not a finite amount (`inf` as text, a
/// silent `null` in JSON).
pub const COST_NOT_FINITE: &str =
    "the recorded costs do not add up to a finite amount (a message records an absurd cost)";

/// Build the report for `trace`; `child_sessions` comes from the source (it may know children
/// the trace does not link).
pub fn report(trace: &Trace, child_sessions: usize) -> InspectReport {
    let mut parts_by_type = BTreeMap::new();
    let mut tool_calls = 0;
    let mut tool_errors = 0;
    for m in &trace.messages {
        for p in &m.parts {
            *parts_by_type.entry(p.type_name().to_owned()).or_insert(0) += 1;
        }
        for (_, t) in m.tool_parts() {
            tool_calls += 1;
            if t.status == ToolStatus::Error {
                tool_errors += 1;
            }
        }
    }
    let mut requests_by_status: BTreeMap<String, usize> = [
        RequestStatus::Ok,
        RequestStatus::Error,
        RequestStatus::Aborted,
        RequestStatus::Empty,
        RequestStatus::Cut,
    ]
    .iter()
    .map(|s| (s.as_str().to_owned(), 0))
    .collect();
    for r in &trace.requests {
        *requests_by_status
            .entry(r.status.as_str().to_owned())
            .or_insert(0) += 1;
    }
    InspectReport {
        session: SessionOut {
            id: trace.session.id.clone(),
            title: trace.session.title.clone(),
            parent_id: trace.session.parent_id.clone(),
            version: trace.session.version.clone(),
            rules: trace.origin.describe_rules(),
            agent_name: tierscope_engine::trace::adapter::adapter(trace.origin.agent)
                .map_or("OpenCode", |a| a.name()),
        },
        counts: Counts {
            messages: trace.messages.len(),
            user_messages: trace.messages.iter().filter(|m| m.is_user()).count(),
            human_turns: trace
                .messages
                .iter()
                .filter(|m| m.user_kind == Some(UserKind::Human))
                .count(),
            assistant_messages: trace.messages.iter().filter(|m| m.is_assistant()).count(),
            parts: trace.messages.iter().map(|m| m.parts.len()).sum(),
            parts_by_type,
            requests: trace.requests.len(),
            requests_by_status,
            tool_calls,
            tool_errors,
            compactions: trace.compactions.len(),
            pruned_outputs: trace.pruned.len(),
            child_sessions,
        },
        usage: {
            let cost = trace.total_cost();
            UsageOut {
                tokens: trace.total_usage(),
                cost: cost.is_finite().then_some(cost),
                cost_error: (!cost.is_finite()).then(|| COST_NOT_FINITE.to_owned()),
            }
        },
        compaction_requests: trace
            .compactions
            .iter()
            .filter_map(|c| c.summary_request)
            .collect(),
        diagnostics: trace.diagnostics.items().to_vec(),
    }
}

pub fn run(args: &InspectArgs) -> anyhow::Result<()> {
    let (source, parts) = args.load.load()?;
    let r = report(&parts.trace, parts.child_ids.len());
    let out = report::emit(
        Format::json_if(args.json),
        &InspectOutput { report: &r, source },
    );
    super::keep_until_exit(parts);
    out
}

/// The output of `inspect`: the report is the JSON document; the text is one row per key.
pub struct InspectOutput<'a> {
    pub report: &'a InspectReport,
    /// What was opened (see [`tierscope_engine::trace::Source::describe`]).
    pub source: String,
}

impl super::report::Report for InspectOutput<'_> {
    fn name(&self) -> &'static str {
        "inspect"
    }
    fn document(&self) -> impl Serialize + '_ {
        self.report
    }
    fn text(&self) -> Text {
        table(self.report, &self.source).into()
    }
}

fn join_counts(m: &BTreeMap<String, usize>) -> String {
    let v: Vec<String> = m
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(", ")
    }
}

/// The readable form of a report: one key and its value per row.
pub fn table(r: &InspectReport, source: &str) -> Table {
    let c = &r.counts;
    let u = &r.usage;
    let mut t =
        Table::new(vec![Column::left("key").width(16), Column::left("value")]).without_header();
    let mut row = |k: &str, v: String| t.push(vec![Cell::text(k), Cell::Text(v)]);
    row("source", source.to_owned());
    row("session", r.session.id.clone());
    row("title", r.session.title.clone());
    row(
        "parent",
        r.session.parent_id.clone().unwrap_or_else(|| "-".into()),
    );
    row(
        "version",
        r.session.version.clone().unwrap_or_else(|| "-".into()),
    );
    row(
        "rules",
        format!("{} {}", r.session.agent_name, r.session.rules),
    );
    row(
        "messages",
        format!(
            "{} (user {}: human turns {}; assistant {})",
            c.messages, c.user_messages, c.human_turns, c.assistant_messages
        ),
    );
    row(
        "parts",
        format!("{} ({})", c.parts, join_counts(&c.parts_by_type)),
    );
    row(
        "requests",
        format!("{} ({})", c.requests, join_counts(&c.requests_by_status)),
    );
    row(
        "tool calls",
        format!("{} ({} with status error)", c.tool_calls, c.tool_errors),
    );
    let creq: Vec<String> = r
        .compaction_requests
        .iter()
        .map(|i| format!("#{i}"))
        .collect();
    row(
        "compactions",
        format!(
            "{}{}",
            c.compactions,
            if creq.is_empty() {
                String::new()
            } else {
                format!(" (summary requests {})", creq.join(", "))
            }
        ),
    );
    row("pruned outputs", c.pruned_outputs.to_string());
    row("child sessions", c.child_sessions.to_string());
    row(
        "usage",
        format!(
            "input {}, output {}, reasoning {}, cache read {}, cache write {}, {}",
            u.tokens.input,
            u.tokens.output,
            u.tokens.reasoning,
            u.tokens.cache_read,
            u.tokens.cache_write,
            match (u.cost, &u.cost_error) {
                (Some(c), _) => format!("cost ${c:.4}"),
                (None, why) => format!("cost: {}", why.as_deref().unwrap_or(COST_NOT_FINITE)),
            }
        ),
    );
    if r.diagnostics.is_empty() {
        row("diagnostics", "none".into());
    } else {
        for (i, d) in r.diagnostics.iter().enumerate() {
            row(
                if i == 0 { "diagnostics" } else { "" },
                format!("{} ×{}: {}", d.kind.as_str(), d.count, d.example),
            );
        }
    }
    t
}
