//! `tierscope sessions [PATH] [--json]`: every session found, children indented under their
//! parent.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;

use tierscope_engine::text::{clip_chars, sanitize_for_terminal};
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
    let sessions = source.list_sessions()?;
    if args.json {
        return write_stdout(&(serde_json::to_string_pretty(&sessions)? + "\n"));
    }
    write_stdout(&format!(
        "{}\n{}",
        sanitize_for_terminal(&source.describe()),
        table(&sessions)
    ))?;
    for d in source.diagnostics().items() {
        eprintln!(
            "warning: {} ×{}: {}",
            d.kind.as_str(),
            d.count,
            sanitize_for_terminal(&d.example)
        );
    }
    Ok(())
}

/// Write to stdout; a closed pipe (`| head`) ends the output quietly instead of panicking.
pub(crate) fn write_stdout(s: &str) -> anyhow::Result<()> {
    super::output::write_stdout(s)
}

/// Unix ms as `YYYY-MM-DD HH:MM` UTC.
pub fn format_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| "-".into())
}

/// The sessions table: parents first (most recently updated first), each child indented under its
/// parent. Sessions on a parent cycle are listed at the top level and marked.
pub fn table(sessions: &[SessionSummary]) -> String {
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

    // Cells first, so the id and parent columns fit the longest (indented) id.
    let cells: Vec<(String, String, String)> = rows
        .iter()
        .map(|(depth, s, cyclic)| {
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
            (
                sanitize_for_terminal(&format!("{indent}{}", s.id)).into_owned(),
                sanitize_for_terminal(&clip_chars(&title, 40)).into_owned(),
                sanitize_for_terminal(s.parent_id.as_deref().unwrap_or("-")).into_owned(),
            )
        })
        .collect();
    let width = |f: fn(&(String, String, String)) -> &String, min: usize| {
        cells
            .iter()
            .map(|c| f(c).chars().count())
            .max()
            .unwrap_or(0)
            .max(min)
    };
    let id_w = width(|c| &c.0, 2);
    let parent_w = width(|c| &c.2, 6);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<id_w$} {:<40} {:<28} {:<parent_w$} {:<16} {:<16} {:>5} {:>5} {:>9} {:>8} {:>7} {:>10} {:>9} {:>8}",
        "ID", "TITLE", "DIRECTORY", "PARENT", "CREATED", "UPDATED", "MSGS", "REQS", "INPUT", "OUTPUT",
        "REASON", "CACHE_RD", "CACHE_WR", "COST"
    );
    for ((_, s, _), (id, title, parent)) in rows.iter().zip(&cells) {
        let _ = writeln!(
            out,
            "{:<id_w$} {:<40} {:<28} {:<parent_w$} {:<16} {:<16} {:>5} {:>5} {:>9} {:>8} {:>7} {:>10} {:>9} {:>8}",
            id,
            title,
            sanitize_for_terminal(&clip_chars(&s.directory, 28)),
            parent,
            format_time(s.created),
            format_time(s.updated),
            s.messages,
            s.requests,
            s.tokens.input,
            s.tokens.output,
            s.tokens.reasoning,
            s.tokens.cache_read,
            s.tokens.cache_write,
            format!("{:.4}", s.cost),
        );
    }
    if sessions.is_empty() {
        out.push_str("(no sessions)\n");
    }
    out
}
