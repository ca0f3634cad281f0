//! One Claude Code session file read whole: its records in file order (a record written again
//! with the same `uuid` kept once, its last version), what could not be read (each damaged line
//! reported and skipped), and which records make up the conversation: the active branch of the
//! `uuid` / `parentUuid` DAG.
//!
//! **The active branch.** Records link to the one before through `parentUuid`; a
//! `compact_boundary` has none and links through `logicalParentUuid`. A rewind or an edited
//! prompt starts a second child of an earlier record, leaving the old continuation as a dead
//! branch. The conversation is the path from the newest leaf (the last record written that no
//! record names as parent; sidechain records are not candidates in a main file) back to a root,
//! plus the records attached to that path that the chain leaves off: tool results of parallel
//! tool calls (each answers its own `tool_use` record), the other blocks of a response on the
//! path, and records that are no message (progress, attachments, system notes). The newest leaf
//! is the newest message that is a leaf. A prompt or a response that starts off the path is a
//! dead branch, reported as [`DiagnosticKind::RuleActiveBranch`].

use std::collections::{HashMap, HashSet};
use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::record::{KnownBlock, Record};
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::error::LoadError;
use crate::trace::jsonl::{for_each_line, Line, DEFAULT_MAX_LINE};
use crate::trace::lenient;

/// How a transcript is read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Lines longer than this are skipped ([`DiagnosticKind::OversizedLine`]).
    pub max_line: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_line: DEFAULT_MAX_LINE,
        }
    }
}

/// One record with the line it was read from (1-based).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub line: usize,
    pub record: Record,
}

/// A session file, read. See the module docs.
#[derive(Debug, Clone)]
pub struct Transcript {
    pub path: PathBuf,
    /// Every record read, in file order; of a rewritten `uuid` only the last version, where it
    /// was last written.
    pub entries: Vec<Entry>,
    /// Per entry: on the active branch (the conversation).
    pub on_branch: Vec<bool>,
    /// Dead branches: records off the active branch where the DAG forks.
    pub dead_branches: usize,
    pub diagnostics: Diagnostics,
}

/// The example a diagnostic keeps: the line and a short reason.
fn at(path: &Path, line: usize, what: impl std::fmt::Display) -> String {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    crate::text::clip_chars(&format!("{name}:{line}: {what}"), 200)
}

impl Transcript {
    /// Read the session file at `path`. Only a file that cannot be opened or read is an error;
    /// damaged lines are diagnostics.
    pub fn read(path: &Path) -> Result<Transcript, LoadError> {
        Transcript::read_with(path, ReadOptions::default())
    }

    pub fn read_with(path: &Path, opts: ReadOptions) -> Result<Transcript, LoadError> {
        crate::trace::input::check_regular(path)?;
        let io = |source| LoadError::Io {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let mut diagnostics = Diagnostics::new();
        let mut slots: Vec<Option<Entry>> = Vec::new();
        let mut by_uuid: HashMap<String, usize> = HashMap::new();
        for_each_line(BufReader::new(file), opts.max_line, |line| {
            let Some(entry) = read_line(path, line, &mut diagnostics) else {
                return;
            };
            if let Some(u) = links(&entry.record).0 {
                if let Some(old) = by_uuid.insert(u.to_owned(), slots.len()) {
                    diagnostics.push(
                        DiagnosticKind::RuleRewrittenRecord,
                        at(
                            path,
                            entry.line,
                            format!("record {u} written again (line {} too): the last kept", {
                                slots[old].as_ref().map_or(0, |e| e.line)
                            }),
                        ),
                    );
                    slots[old] = None;
                }
            }
            slots.push(Some(entry));
        })
        .map_err(io)?;
        let entries: Vec<Entry> = slots.into_iter().flatten().collect();
        let (on_branch, dead_branches) = active_branch(&entries);
        let off = on_branch.iter().filter(|b| !**b).count();
        if dead_branches > 0 {
            diagnostics.push_n(
                DiagnosticKind::RuleActiveBranch,
                dead_branches,
                crate::text::clip_chars(
                    &format!(
                        "{}: {dead_branches} dead branch(es), {off} record(s) off the active branch (the newest leaf's)",
                        path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
                    ),
                    200,
                ),
            );
        }
        Ok(Transcript {
            path: path.to_owned(),
            entries,
            on_branch,
            dead_branches,
            diagnostics,
        })
    }

    /// The entries of the conversation (the active branch), in file order.
    pub fn branch(&self) -> impl Iterator<Item = (usize, &Entry)> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, _)| self.on_branch[*i])
    }

    /// The session id the records carry (the first one written).
    pub fn session_id(&self) -> Option<&str> {
        self.entries
            .iter()
            .find_map(|e| e.record.common()?.session_id.as_deref())
    }

    /// The working directory of the session (the first `cwd` written).
    pub fn cwd(&self) -> Option<&str> {
        self.entries
            .iter()
            .find_map(|e| e.record.common()?.cwd.as_deref())
    }

    /// The Claude Code release that wrote the newest record.
    pub fn version(&self) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find_map(|e| e.record.common()?.version.as_deref())
    }
}

/// Parse one line into an entry, or report why not.
fn read_line(path: &Path, line: Line<'_>, diagnostics: &mut Diagnostics) -> Option<Entry> {
    let (number, bytes, terminated) = match line {
        Line::Oversized { number, len } => {
            diagnostics.push(
                DiagnosticKind::OversizedLine,
                at(
                    path,
                    number,
                    format!(
                        "a line of {} skipped unread",
                        crate::trace::input::human_size(len)
                    ),
                ),
            );
            return None;
        }
        Line::Text {
            number,
            bytes,
            terminated,
        } => (number, bytes, terminated),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => {
            diagnostics.push(
                DiagnosticKind::NonUtf8,
                at(path, number, "bytes that are not UTF-8 (read as U+FFFD)"),
            );
            String::from_utf8_lossy(bytes)
        }
    };
    let value = match lenient::parse(&text) {
        Ok((v, repairs)) => {
            if !repairs.is_empty() {
                diagnostics.push(
                    DiagnosticKind::RepairedJson,
                    at(path, number, lenient::describe(&repairs)),
                );
            }
            v
        }
        Err(e) if !terminated => {
            diagnostics.push(
                DiagnosticKind::PartialWrite,
                at(
                    path,
                    number,
                    format!("the last line is cut mid-record ({e}); skipped"),
                ),
            );
            return None;
        }
        Err(e) => {
            diagnostics.push(
                DiagnosticKind::CorruptJson,
                at(path, number, format!("not JSON ({e}); skipped")),
            );
            return None;
        }
    };
    if !value.is_object() {
        diagnostics.push(
            DiagnosticKind::CorruptJson,
            at(path, number, "not a JSON object; skipped"),
        );
        return None;
    }
    match Record::from_value(value) {
        Ok(record) => Some(Entry {
            line: number,
            record,
        }),
        Err((kind, e)) => {
            diagnostics.push(
                DiagnosticKind::MissingField,
                at(
                    path,
                    number,
                    format!("a {kind:?} record of another shape ({e}); skipped"),
                ),
            );
            None
        }
    }
}

/// A record's `uuid` and the record it follows (`parentUuid`, else a boundary's
/// `logicalParentUuid`); bookkeeping kinds that carry them count too.
pub fn links(r: &Record) -> (Option<&str>, Option<&str>) {
    fn nonempty(s: Option<&str>) -> Option<&str> {
        s.filter(|s| !s.is_empty())
    }
    match r {
        Record::Other { raw, .. } => (
            nonempty(raw.get("uuid").and_then(Value::as_str)),
            nonempty(raw.get("parentUuid").and_then(Value::as_str))
                .or_else(|| nonempty(raw.get("logicalParentUuid").and_then(Value::as_str))),
        ),
        _ => match r.common() {
            Some(c) => (
                nonempty(c.uuid.as_deref()),
                nonempty(c.parent_uuid.as_deref())
                    .or_else(|| nonempty(c.logical_parent_uuid.as_deref())),
            ),
            None => (None, None),
        },
    }
}

/// Which entries are on the active branch, and how many dead branches fork off it.
fn active_branch(entries: &[Entry]) -> (Vec<bool>, usize) {
    let n = entries.len();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut parent: Vec<Option<usize>> = vec![None; n];
    for (i, e) in entries.iter().enumerate() {
        if let Some(u) = links(&e.record).0 {
            index.insert(u, i);
        }
    }
    let mut has_child = vec![false; n];
    let mut previous_node = None;
    for (i, e) in entries.iter().enumerate() {
        match links(&e.record).1.and_then(|p| index.get(p)) {
            Some(&p) if p != i => parent[i] = Some(p),
            // A boundary that names no record before it (older releases) follows the record
            // written before it: the compacted history is not a dead branch.
            _ if is_boundary(&e.record) => parent[i] = previous_node,
            _ => {}
        }
        if let Some(p) = parent[i] {
            has_child[p] = true;
        }
        if links(&e.record).0.is_some() {
            previous_node = Some(i);
        }
    }
    let is_node = |i: usize| links(&entries[i].record).0.is_some();
    let sidechain = |i: usize| entries[i].record.common().is_some_and(|c| c.is_sidechain);
    let main_file = (0..n).any(|i| is_node(i) && !sidechain(i));
    let is_message = |i: usize| matches!(entries[i].record, Record::User(_) | Record::Assistant(_));
    let candidate = |i: usize| is_node(i) && !has_child[i] && (!main_file || !sidechain(i));
    // The newest message that is a leaf: a progress or bookkeeping record written last may hang
    // off an older record.
    let leaf = (0..n)
        .rev()
        .find(|&i| candidate(i) && is_message(i))
        .or_else(|| (0..n).rev().find(|&i| candidate(i)));
    let mut on = vec![false; n];
    // Records without a uuid (titles, bookkeeping) belong to no branch and to every one.
    for (i, b) in on.iter_mut().enumerate() {
        *b = !is_node(i);
    }
    let mut path_ids: HashSet<&str> = HashSet::new();
    let mut cur = leaf;
    while let Some(i) = cur {
        if on[i] {
            break; // a cycle
        }
        on[i] = true;
        if let Record::Assistant(a) = &entries[i].record {
            path_ids.extend(a.message.id.as_deref());
        }
        cur = parent[i];
    }
    // Attached records, in file order (parents are written before their children).
    let mut dead = 0;
    for i in 0..n {
        if on[i] {
            continue;
        }
        let parent_on = parent[i].is_some_and(|p| on[p]);
        if parent_on && attached(&entries[i].record, &path_ids) {
            on[i] = true;
        } else if parent_on || parent[i].is_none() {
            dead += 1;
        }
    }
    (on, dead)
}

fn is_boundary(r: &Record) -> bool {
    matches!(r, Record::System(s) if s.subtype.as_deref() == Some("compact_boundary"))
}

/// A record that belongs with its parent rather than starting a branch: a tool result, a block
/// of a response on the path, or a record that is no message (an attachment, a system note, a
/// progress record).
fn attached(r: &Record, path_ids: &HashSet<&str>) -> bool {
    match r {
        Record::User(u) => {
            !u.message.content.blocks().is_empty()
                && u.message.content.blocks().iter().all(|b| {
                    matches!(
                        b,
                        super::record::Block::Known(KnownBlock::ToolResult { .. })
                    )
                })
        }
        Record::Assistant(a) => a
            .message
            .id
            .as_deref()
            .is_some_and(|id| path_ids.contains(id)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    fn user(uuid: &str, parent: Option<&str>, text: &str) -> String {
        serde_json::json!({"type": "user", "uuid": uuid, "parentUuid": parent,
            "sessionId": "s", "message": {"role": "user", "content": text}})
        .to_string()
    }

    fn assistant(uuid: &str, parent: &str, id: &str) -> String {
        serde_json::json!({"type": "assistant", "uuid": uuid, "parentUuid": parent,
            "requestId": "r", "message": {"id": id, "model": "claude-x",
            "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 1, "output_tokens": 2}}})
        .to_string()
    }

    #[test]
    fn a_rewind_leaves_a_dead_branch_and_the_newest_leaf_wins() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lines = [
            user("u1", None, "first"),
            assistant("a1", "u1", "m1"),
            user("u2", Some("a1"), "abandoned"),
            assistant("a2", "u2", "m2"),
            // Rewound to a1 and asked again.
            user("u3", Some("a1"), "again"),
            assistant("a3", "u3", "m3"),
        ];
        let p = write(dir.path(), "s.jsonl", &(lines.join("\n") + "\n"));
        let t = Transcript::read(&p).expect("read");
        let on: Vec<usize> = t.branch().map(|(_, e)| e.line).collect();
        assert_eq!(on, [1, 2, 5, 6]);
        assert_eq!(t.dead_branches, 1);
        assert_eq!(t.diagnostics.count(DiagnosticKind::RuleActiveBranch), 1);
    }

    #[test]
    fn a_boundary_without_a_logical_parent_keeps_the_history_on_the_branch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let boundary = serde_json::json!({"type": "system", "subtype": "compact_boundary",
            "uuid": "b1", "parentUuid": null, "compactMetadata": {"trigger": "auto"}})
        .to_string();
        let summary = serde_json::json!({"type": "user", "uuid": "s1", "parentUuid": "b1",
            "isCompactSummary": true, "message": {"content": "This session is being continued"}})
        .to_string();
        let lines = [
            user("u1", None, "first"),
            assistant("a1", "u1", "m1"),
            boundary,
            summary,
            assistant("a2", "s1", "m2"),
        ];
        let p = write(dir.path(), "s.jsonl", &(lines.join("\n") + "\n"));
        let t = Transcript::read(&p).expect("read");
        assert!(t.on_branch.iter().all(|b| *b));
        assert_eq!(t.dead_branches, 0);
    }

    #[test]
    fn progress_records_off_the_chain_are_no_branch_and_never_the_leaf() {
        let dir = tempfile::tempdir().expect("tempdir");
        let progress = |uuid: &str, parent: &str| {
            serde_json::json!({"type": "progress", "uuid": uuid, "parentUuid": parent,
                "data": {"type": "bash_progress"}})
            .to_string()
        };
        let lines = [
            user("u1", None, "first"),
            assistant("a1", "u1", "m1"),
            progress("p1", "a1"),
            user("u2", Some("a1"), "next"),
            assistant("a2", "u2", "m2"),
            // Written last, hanging off an older record.
            progress("p2", "a1"),
        ];
        let p = write(dir.path(), "s.jsonl", &(lines.join("\n") + "\n"));
        let t = Transcript::read(&p).expect("read");
        assert!(t.on_branch.iter().all(|b| *b), "{:?}", t.on_branch);
        assert_eq!(t.dead_branches, 0);
    }

    #[test]
    fn a_rewritten_record_is_kept_once_in_its_last_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lines = [
            user("u1", None, "first"),
            assistant("a1", "u1", "m1"),
            user("u1", None, "first, rewritten"),
        ];
        let p = write(dir.path(), "s.jsonl", &(lines.join("\n") + "\n"));
        let t = Transcript::read(&p).expect("read");
        assert_eq!(t.entries.len(), 2);
        let Record::User(u) = &t.entries[1].record else {
            panic!("user last");
        };
        assert_eq!(u.message.content.text(), "first, rewritten");
        assert_eq!(t.diagnostics.count(DiagnosticKind::RuleRewrittenRecord), 1);
        assert_eq!(t.dead_branches, 0);
    }

    #[test]
    fn damaged_lines_are_reported_and_skipped_and_the_rest_loads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = format!(
            "{{\"type\":\"user\",\"message\":{{\"content\":\"{}\"}}}}",
            "x".repeat(2000)
        );
        let text = [
            user("u1", None, "first"),
            "garbage {".to_owned(),
            big,
            "[1,2]".to_owned(),
            r#"{"type":"assistant","message":{"content":7}}"#.to_owned(),
            r#"{"type":"queue-operation","operation":"enqueue"}"#.to_owned(),
            assistant("a1", "u1", "m1"),
        ]
        .join("\n")
            + "\n"
            + &user("u2", Some("a1"), "cut")[..20];
        let p = write(dir.path(), "s.jsonl", &text);
        let t = Transcript::read_with(&p, ReadOptions { max_line: 1000 }).expect("read");
        let d = &t.diagnostics;
        assert_eq!(d.count(DiagnosticKind::CorruptJson), 2, "{d:?}");
        assert_eq!(d.count(DiagnosticKind::OversizedLine), 1);
        assert_eq!(d.count(DiagnosticKind::MissingField), 1);
        assert_eq!(d.count(DiagnosticKind::PartialWrite), 1);
        let kinds: Vec<&str> = t.entries.iter().map(|e| e.record.kind()).collect();
        assert_eq!(kinds, ["user", "queue-operation", "assistant"]);
    }

    #[test]
    fn a_missing_file_or_a_directory_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(Transcript::read(&dir.path().join("none.jsonl")).is_err());
        assert!(Transcript::read(dir.path()).is_err());
    }
}
