//! The rendered-context text diff between A and B at one request: a line diff (with `similar`)
//! with word emphasis inside changed lines, laid out side by side (a row pairs an A line with the
//! B line that replaced it), and hunk starts for jumping.
//!
//! Large contexts: the diff takes an optional deadline (passed in by the caller, so this module
//! never reads the clock itself); past it `similar` stops searching for the minimal diff and
//! returns a coarser but still correct one, so a front end stays responsive.

use std::time::Instant;

use serde::Serialize;
use similar::{ChangeTag, DiffOp, TextDiff};

use crate::policy::Policy;
use crate::replay::{render::RenderError, render_at, Input, RenderedContext};
use crate::text::sanitize_for_terminal;

/// One side of a diff row: its line number (from 1) and its text in segments, `true` where the
/// words differ from the other side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideLine {
    pub number: usize,
    pub segments: Vec<(bool, String)>,
}

impl SideLine {
    /// The line's text without emphasis.
    pub fn text(&self) -> String {
        self.segments.iter().map(|(_, s)| s.as_str()).collect()
    }
}

/// What a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    /// The same line on both sides.
    Equal,
    /// A line of A replaced by a line of B.
    Changed,
    /// Only in A.
    Removed,
    /// Only in B.
    Added,
}

/// One row of the side-by-side diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffRow {
    pub kind: RowKind,
    pub a: Option<SideLine>,
    pub b: Option<SideLine>,
}

/// The rendered-context diff at one request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextDiff {
    pub request: usize,
    pub a_tokens: u64,
    pub b_tokens: u64,
    pub a_lines: usize,
    pub b_lines: usize,
    pub rows: Vec<DiffRow>,
    /// Indices into `rows` where a run of non-equal rows starts.
    pub hunks: Vec<usize>,
}

impl ContextDiff {
    /// A and B render the same text.
    pub fn identical(&self) -> bool {
        self.hunks.is_empty()
    }
    /// Lines only in A, only in B (a changed row counts on both sides).
    pub fn counts(&self) -> (usize, usize) {
        let a = self
            .rows
            .iter()
            .filter(|r| r.kind != RowKind::Equal && r.a.is_some())
            .count();
        let b = self
            .rows
            .iter()
            .filter(|r| r.kind != RowKind::Equal && r.b.is_some())
            .count();
        (a, b)
    }
}

/// A rendered context as diffable text: a header line per chunk (what it is, tier, tokens),
/// then its text. Trace text goes through [`sanitize_for_terminal`], so the diff never carries a
/// raw control character.
pub fn context_text(ctx: &RenderedContext) -> String {
    let mut out = String::new();
    for c in &ctx.chunks {
        let what = match (&c.episode, c.tier) {
            (Some(e), Some(t)) if c.kind == "active" => format!("{e} {t} (active)"),
            (Some(e), Some(t)) => format!("{e} {t}"),
            _ => c.kind.clone(),
        };
        out.push_str(&format!(
            "── {what} · {} tokens{} ──\n",
            c.tokens,
            c.message_id
                .as_deref()
                .map(|m| format!(" · {m}"))
                .unwrap_or_default()
        ));
        for line in sanitize_for_terminal(&c.text).lines() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn line_of(number: usize, segments: Vec<(bool, String)>) -> SideLine {
    SideLine { number, segments }
}

fn strip_newline(mut segs: Vec<(bool, String)>) -> Vec<(bool, String)> {
    if let Some((_, last)) = segs.last_mut() {
        while last.ends_with('\n') || last.ends_with('\r') {
            last.pop();
        }
    }
    segs.retain(|(_, s)| !s.is_empty());
    segs
}

/// Diff two texts line by line (with word emphasis inside replaced lines) and lay them out side
/// by side. `deadline`: give up on minimality past this instant (None = no limit).
pub fn diff_texts(a: &str, b: &str, deadline: Option<Instant>) -> (Vec<DiffRow>, Vec<usize>) {
    let mut cfg = TextDiff::configure();
    if let Some(d) = deadline {
        cfg.deadline(d);
    }
    let diff = cfg.diff_lines(a, b);
    let mut rows: Vec<DiffRow> = Vec::new();
    let mut hunks = Vec::new();
    for op in diff.ops() {
        match *op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for k in 0..len {
                    let text = diff
                        .old_slice(old_index + k)
                        .unwrap_or_default()
                        .trim_end_matches(['\n', '\r']);
                    rows.push(DiffRow {
                        kind: RowKind::Equal,
                        a: Some(line_of(old_index + k + 1, vec![(false, text.to_owned())])),
                        b: Some(line_of(new_index + k + 1, vec![(false, text.to_owned())])),
                    });
                }
            }
            _ => {
                hunks.push(rows.len());
                // Inline changes of one op: deletes then inserts; pair them row by row.
                let mut dels: Vec<SideLine> = Vec::new();
                let mut ins: Vec<SideLine> = Vec::new();
                for ch in diff.iter_inline_changes_deadline(op, deadline) {
                    let segs: Vec<(bool, String)> = ch
                        .iter_strings_lossy()
                        .map(|(emph, s)| (emph, s.into_owned()))
                        .collect();
                    let segs = strip_newline(segs);
                    match ch.tag() {
                        ChangeTag::Delete => {
                            dels.push(line_of(ch.old_index().map_or(0, |x| x + 1), segs))
                        }
                        ChangeTag::Insert => {
                            ins.push(line_of(ch.new_index().map_or(0, |x| x + 1), segs))
                        }
                        ChangeTag::Equal => {}
                    }
                }
                let n = dels.len().max(ins.len());
                let mut dels = dels.into_iter();
                let mut ins = ins.into_iter();
                for _ in 0..n {
                    let (a, b) = (dels.next(), ins.next());
                    let kind = match (&a, &b) {
                        (Some(_), Some(_)) => RowKind::Changed,
                        (Some(_), None) => RowKind::Removed,
                        _ => RowKind::Added,
                    };
                    rows.push(DiffRow { kind, a, b });
                }
            }
        }
    }
    (rows, hunks)
}

/// The unified diff of two rendered contexts with labelled headers.
pub fn unified_diff(a: &str, b: &str, a_label: &str, b_label: &str) -> String {
    TextDiff::from_lines(a, b)
        .unified_diff()
        .context_radius(3)
        .header(a_label, b_label)
        .to_string()
}

/// Render request `at` under A and B and diff the two contexts.
pub fn context_diff(
    input: &Input<'_>,
    a: &Policy,
    b: &Policy,
    budget: Option<u64>,
    at: usize,
    deadline: Option<Instant>,
) -> Result<ContextDiff, RenderError> {
    let ca = render_at(input, a, budget, at)?;
    let cb = render_at(input, b, budget, at)?;
    Ok(diff_contexts(&ca, &cb, deadline))
}

/// Diff two rendered contexts of the same request.
pub fn diff_contexts(
    a: &RenderedContext,
    b: &RenderedContext,
    deadline: Option<Instant>,
) -> ContextDiff {
    let (ta, tb) = (context_text(a), context_text(b));
    let (rows, hunks) = diff_texts(&ta, &tb, deadline);
    ContextDiff {
        request: a.request,
        a_tokens: a.tokens,
        b_tokens: b.tokens,
        a_lines: ta.lines().count(),
        b_lines: tb.lines().count(),
        rows,
        hunks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaced_lines_pair_up_with_word_emphasis() {
        let (rows, hunks) = diff_texts("a\nkeep this line\nc\n", "a\nkeep that line\nc\nd\n", None);
        let unified = unified_diff(
            "a\nkeep this line\nc\n",
            "a\nkeep that line\nc\nd\n",
            "A",
            "B",
        );
        assert_eq!(hunks, vec![1, 3]);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[1].kind, RowKind::Changed);
        let a = rows[1].a.as_ref().map(SideLine::text);
        assert_eq!(a.as_deref(), Some("keep this line"));
        let emph: Vec<&str> = rows[1]
            .b
            .iter()
            .flat_map(|l| l.segments.iter())
            .filter(|(e, _)| *e)
            .map(|(_, s)| s.as_str())
            .collect();
        assert_eq!(emph, vec!["that"]);
        assert_eq!(rows[3].kind, RowKind::Added);
        assert_eq!(rows[3].b.as_ref().map(|l| l.number), Some(4));
        assert!(unified.contains("-keep this line"));
        assert!(unified.contains("+keep that line"));
    }

    #[test]
    fn identical_texts_have_no_hunks() {
        let (rows, hunks) = diff_texts("x\ny\n", "x\ny\n", None);
        assert!(hunks.is_empty());
        assert!(rows.iter().all(|r| r.kind == RowKind::Equal));
        assert!(unified_diff("x\ny\n", "x\ny\n", "A", "B").is_empty());
    }

    #[test]
    fn a_passed_deadline_still_gives_a_correct_diff() {
        let a: String = (0..3000).map(|i| format!("line {i}\n")).collect();
        let b: String = (0..3000)
            .map(|i| format!("line {}\n", i * 7 % 3001))
            .collect();
        let (rows, _) = diff_texts(&a, &b, Some(Instant::now()));
        let left: String = rows
            .iter()
            .filter_map(|r| r.a.as_ref())
            .map(|l| l.text() + "\n")
            .collect();
        let right: String = rows
            .iter()
            .filter_map(|r| r.b.as_ref())
            .map(|l| l.text() + "\n")
            .collect();
        assert_eq!(left, a);
        assert_eq!(right, b);
    }
}
