//! `tierscope sessions [PATH] [--json]`: every session found, children indented under their
//! parent.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use clap::Args;

use super::report::{self, Cell, Column, Format, Table, Text};
use tierscope_engine::trace::load::AgentSession;
use tierscope_engine::trace::SessionSummary;

#[derive(Debug, Clone, Args)]
pub struct SessionsArgs {
    /// An opencode.db file, an OpenCode data dir, a storage dir or an export file
    /// (default: the OpenCode data dir, else the bundled sample session).
    pub path: Option<PathBuf>,
    /// Print JSON (an array of sessions) instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &SessionsArgs) -> anyhow::Result<()> {
    let source = tierscope_engine::trace::open(args.path.as_deref())?;
    let tagged = source.list_sessions_by_agent()?;
    let sessions: Vec<SessionSummary> = tagged.iter().map(|a| a.summary.clone()).collect();
    report::emit(
        Format::json_if(args.json),
        &SessionsReport {
            source: source.describe(),
            sessions: &sessions,
            agents: &tagged,
        },
    )?;
    if !args.json {
        for d in source.diagnostics().items() {
            report::stderr::warn(&format!("{} ×{}: {}", d.kind.as_str(), d.count, d.example));
        }
    }
    // JSON has no number for it (serde writes null): said on stderr in both formats.
    for s in sessions.iter().filter(|s| !s.cost.is_finite()) {
        report::stderr::warn(&format!(
            "session {}: {} (cost shown as {})",
            s.id,
            super::inspect::COST_NOT_FINITE,
            if args.json { "null" } else { "overflow" }
        ));
    }
    // A database of thousands of sessions: freeing them one by one would cost more than the
    // warm listing itself does to print them.
    super::keep_until_exit((source, sessions, tagged));
    Ok(())
}

/// The output of `sessions`: the JSON document is the list; the table says what was opened,
/// then one line per session, children indented under their parent.
pub struct SessionsReport<'a> {
    pub source: String,
    pub sessions: &'a [SessionSummary],
    /// The same lines with their agent: the JSON document (each line's fields, then `agent`).
    pub agents: &'a [AgentSession],
}

impl report::Report for SessionsReport<'_> {
    fn name(&self) -> &'static str {
        "sessions"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        self.agents
    }
    fn text(&self) -> Text {
        let mut t = Text::new();
        t.line(self.source.clone());
        t.append(table(self.sessions));
        t
    }
}

/// Unix ms as `YYYY-MM-DD HH:MM` UTC.
pub fn format_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| "-".into())
}

/// The sessions table: parents first (most recently updated first), each child indented under its
/// parent. Sessions on a parent cycle are listed at the top level and marked.
pub fn table(sessions: &[SessionSummary]) -> Text {
    let by_id: HashMap<&str, &SessionSummary> =
        sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    // Children by parent: from parent ids and from task links.
    let mut kids: HashMap<&str, Vec<&str>> = HashMap::new();
    for s in sessions {
        for c in &s.children {
            if by_id.contains_key(c.as_str()) {
                kids.entry(s.id.as_str()).or_default().push(c.as_str());
            }
        }
        if let Some(p) = s.parent_id.as_deref() {
            if by_id.contains_key(p) {
                let v = kids.entry(p).or_default();
                if !v.contains(&s.id.as_str()) {
                    v.push(s.id.as_str());
                }
            }
        }
    }
    let is_child: HashSet<&str> = kids.values().flatten().copied().collect();
    let mut rows: Vec<(usize, &SessionSummary, bool)> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    fn walk<'a>(
        id: &'a str,
        depth: usize,
        by_id: &HashMap<&str, &'a SessionSummary>,
        kids: &HashMap<&str, Vec<&'a str>>,
        seen: &mut HashSet<&'a str>,
        rows: &mut Vec<(usize, &'a SessionSummary, bool)>,
    ) {
        if !seen.insert(id) {
            return;
        }
        if let Some(s) = by_id.get(id) {
            rows.push((depth, s, false));
        }
        for c in kids.get(id).into_iter().flatten() {
            walk(c, depth + 1, by_id, kids, seen, rows);
        }
    }
    for s in sessions
        .iter()
        .filter(|s| !is_child.contains(s.id.as_str()))
    {
        walk(&s.id, 0, &by_id, &kids, &mut seen, &mut rows);
    }
    // Whatever is left sits on a parent cycle: no root reaches it.
    for s in sessions {
        if !seen.contains(s.id.as_str()) {
            let start = rows.len();
            walk(&s.id, 0, &by_id, &kids, &mut seen, &mut rows);
            rows[start].2 = true;
        }
    }

    let columns = vec![
        Column::left("ID").width(2),
        Column::left("TITLE").width(40).clip(40),
        Column::left("DIRECTORY").width(28).clip(28),
        Column::left("PARENT").width(6),
        Column::left("CREATED").width(16),
        Column::left("UPDATED").width(16),
        Column::right("MSGS").width(5),
        Column::right("REQS").width(5),
        Column::right("INPUT").width(9),
        Column::right("OUTPUT").width(8),
        Column::right("REASON").width(7),
        Column::right("CACHE_RD").width(10),
        Column::right("CACHE_WR").width(9),
        Column::right("COST").width(8),
    ];
    // The id and parent columns are as wide as their widest (indented) id.
    let mut columns = columns;
    columns[0].width = None;
    columns[3].width = None;
    let mut t = Table::new(columns);
    for (depth, s, cyclic) in &rows {
        let indent = if *depth > 0 {
            format!("{}└ ", "  ".repeat(depth - 1))
        } else {
            String::new()
        };
        let mut title = s.title.clone();
        if *cyclic {
            title = format!(
                "{title} (cyclic parent {})",
                s.parent_id.as_deref().unwrap_or("?")
            );
        }
        t.push(vec![
            Cell::text(format!("{indent}{}", s.id)),
            Cell::text(title),
            Cell::text(s.directory.clone()),
            Cell::text(s.parent_id.as_deref().unwrap_or("-")),
            Cell::text(format_time(s.created)),
            Cell::text(format_time(s.updated)),
            Cell::Int(s.messages as u64),
            Cell::Int(s.requests as u64),
            Cell::Int(s.tokens.input),
            Cell::Int(s.tokens.output),
            Cell::Int(s.tokens.reasoning),
            Cell::Int(s.tokens.cache_read),
            Cell::Int(s.tokens.cache_write),
            Cell::text(if s.cost.is_finite() {
                format!("{:.4}", s.cost)
            } else {
                // Not `inf`: the costs recorded do not add up (see `tierscope inspect`).
                "overflow".to_owned()
            }),
        ]);
    }
    let mut out = Text::from(t);
    if sessions.is_empty() {
        out.line("(no sessions)");
    }
    out
}
