//! The evidence rule: which line of a tool's output is its verdict, what kind of failure a failed
//! call is, and which tool result killed a rejected approach. Chosen by rule, never by position
//! alone, so that a diff line that happens to contain "error" is not quoted as the error that
//! killed an approach (issue 20). The patterns are data (`rules.toml`, `[kinds.failure]`).
//!
//! **Decisive line** of an output: its lines, minus *echo* lines (the body of a unified or normal
//! diff: text the program printed back, not its verdict), minus *wrapper* lines (a runner's
//! summary of a failure reported above it, e.g. `error: test failed, to rerun pass …`) and
//! *passing* lines (`test result: ok. 85 passed; 0 failed`) unless nothing else is left; then the first line matching the first error pattern (priority order)
//! that matches any line; else the last line. An output that is nothing but diff has no verdict
//! line: its last line stands for it, unranked.
//!
//! **Failure kind**: a failed call whose command ran and failed is a `verdict`; exit 1 of a query
//! (`grep`, `rg`, `diff`, `cmp`, `test`, `git diff`, … as the last stage of the command) answered
//! "no match" / "they differ" and is `no-match`; an error of a file tool (`read`, `edit`, …) is the
//! harness refusing the call (`refused`): neither tested the approach.
//!
//! **Killing evidence** of a rejection (an assistant step that gives an approach up), among the
//! tool results since the previous rejection in the episode, before the rejecting step:
//! 1. `quoted`: a result one of whose lines the rejecting message quotes (one of its lines,
//!    backticked spans or double-quoted spans of at least 12 chars is in the output line, or the
//!    output line is in its words), failed results before passing ones, then the longest
//!    quote, then the latest; its decisive line is the best-ranked quoted line;
//! 2. `strongest`: else the unclaimed `verdict` failure with the best-ranked decisive line, the
//!    latest on a tie;
//! 3. else none: no failing command decided it, and the record says so.

pub use super::found::{quote_with_reasons, FailureKind, KillRule};
use super::found::{At, Evidence, Failure};
use super::reading::tool_command;
use super::rules::Rules;
use crate::trace::{Message, PartKind, ToolPart};

/// The minimum length of a quote: shorter spans (a crate name, `exit=2`) match by accident.
const MIN_QUOTE: usize = 12;

/// The tool result that killed a rejected approach, where classification found it.
pub type Killing = Evidence<At>;

/// The decisive line of a text and the rank of the pattern that chose it (lower = stronger;
/// `rules.error_line_count()` for the last-line fallback).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decisive {
    pub line: String,
    pub rank: usize,
    /// Lines after `line` that state why it failed (a resolver's conflicting requirements, an
    /// expected value), at most [`MAX_REASONS`]: a quote of the error alone can drop its reason.
    pub reasons: Vec<String>,
}

/// At most this many reason lines follow a quoted error.
pub const MAX_REASONS: usize = 3;
/// Reason lines are looked for this many lines after the quoted one.
const REASON_WINDOW: usize = 12;

/// The lines of `text` after its line `line` that match the rules' `reason_lines` (see
/// [`Decisive::reasons`]), in order, each once.
pub fn reason_lines(text: &str, line: &str, rules: &Rules) -> Vec<String> {
    let lines = output_lines(text);
    let Some(at) = lines.iter().position(|l| *l == line) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for l in lines.iter().skip(at + 1).take(REASON_WINDOW) {
        let l = l.trim();
        if l != line.trim() && rules.is_reason_line(l) && !out.iter().any(|o| o == l) {
            out.push(crate::text::clip_chars(l, 160));
            if out.len() == MAX_REASONS {
                break;
            }
        }
    }
    out
}

/// What a tool call printed or failed with: the error of a failed call, else its output.
pub fn result_text(t: &ToolPart) -> &str {
    t.error
        .as_deref()
        .filter(|e| !e.trim().is_empty())
        .or(t.output.as_deref())
        .unwrap_or("")
}

/// The decisive line of `text` (see the module docs).
pub fn decisive_line(text: &str, rules: &Rules) -> Decisive {
    let all = output_lines(text);
    let echo = echo_mask(&all);
    let lines: Vec<&str> = all
        .iter()
        .zip(&echo)
        .filter(|(_, e)| !**e)
        .map(|(l, _)| *l)
        .collect();
    // Nothing but echo (a bare diff): no line of it is a verdict; the last one stands for it.
    if lines.is_empty() {
        return Decisive {
            line: all
                .last()
                .map_or_else(|| "(no output)".to_owned(), |l| (*l).to_owned()),
            rank: rules.error_line_count(),
            reasons: Vec::new(),
        };
    }
    let kept: Vec<&str> = {
        let v: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| !rules.is_wrapper_line(l) && !rules.is_passing_line(l))
            .collect();
        if v.is_empty() {
            lines
        } else {
            v
        }
    };
    if let Some((rank, l)) = rules.first_error_line(&kept) {
        return Decisive {
            line: l.to_owned(),
            rank,
            reasons: reason_lines(text, l, rules),
        };
    }
    Decisive {
        line: kept
            .last()
            .map_or_else(|| "(no output)".to_owned(), |l| (*l).to_owned()),
        rank: rules.error_line_count(),
        reasons: Vec::new(),
    }
}

/// The non-empty lines of `text`, trailing whitespace trimmed.
pub fn output_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// Which lines belong to a diff: headers (`diff …`, `index …`, `--- `, `+++ `, `@@ … @@`) and
/// the hunk bodies after them (`+`, `-`, ` `, `\`), or a normal diff's `3c3` commands and their
/// `< `/`> `/`---` lines. Only where the text has a hunk header or a normal-diff command.
fn echo_mask(lines: &[&str]) -> Vec<bool> {
    let unified = |l: &str| l.starts_with("@@ -") && l[3..].contains(" @@");
    let normal = |l: &str| {
        let b = l.as_bytes();
        let mut i = 0;
        let digits = |i: &mut usize| {
            let s = *i;
            while *i < b.len() && (b[*i].is_ascii_digit() || b[*i] == b',') {
                *i += 1;
            }
            *i > s
        };
        digits(&mut i)
            && i < b.len()
            && matches!(b[i], b'a' | b'c' | b'd')
            && {
                i += 1;
                digits(&mut i)
            }
            && i == b.len()
    };
    let mut mask = vec![false; lines.len()];
    if !lines.iter().any(|l| unified(l) || normal(l)) {
        return mask;
    }
    let mut in_hunk = false;
    for (k, l) in lines.iter().enumerate() {
        let header = l.starts_with("diff ")
            || l.starts_with("index ")
            || l.starts_with("--- ")
            || l.starts_with("+++ ")
            || unified(l)
            || normal(l);
        if header {
            in_hunk = true;
            mask[k] = true;
        } else if in_hunk && (l.starts_with(['+', '-', ' ', '\\', '<', '>']) || l.trim() == "---") {
            mask[k] = true;
        } else {
            in_hunk = false;
        }
    }
    mask
}

/// The kind of a failed call (see the module docs).
pub fn failure_kind(t: &ToolPart, rules: &Rules) -> FailureKind {
    if t.behaves_as() == "bash" {
        let c = tool_command(t);
        if t.exit_code() == Some(1) && rules.is_query_command(last_stage(&c)) {
            return FailureKind::NoMatch;
        }
        return FailureKind::Verdict;
    }
    if rules.is_operational_tool(t.behaves_as()) {
        FailureKind::Refused
    } else {
        FailureKind::Verdict
    }
}

/// The last simple command of a shell command line: after the last `|`, `;`, `&&`, `||` or
/// newline (quotes are not parsed: a separator inside quotes only makes the test stricter).
pub fn last_stage(cmd: &str) -> &str {
    let cut = ["||", "&&", "|", ";", "\n"]
        .iter()
        .filter_map(|sep| cmd.rfind(sep).map(|i| i + sep.len()))
        .max()
        .unwrap_or(0);
    cmd[cut..].trim()
}

/// Spans of `said` that may quote an output: its lines, backticked and double-quoted spans, each
/// trimmed and at least [`MIN_QUOTE`] chars.
fn quote_fragments(said: &str) -> Vec<&str> {
    fn push<'a>(out: &mut Vec<&'a str>, s: &'a str) {
        let s = s.trim();
        if s.chars().count() >= MIN_QUOTE && !out.contains(&s) {
            out.push(s);
        }
    }
    let mut out: Vec<&str> = Vec::new();
    for l in said.lines() {
        push(&mut out, l);
    }
    for delim in ['`', '"'] {
        let mut rest = said;
        while let Some(a) = rest.find(delim) {
            let after = &rest[a + 1..];
            let Some(b) = after.find(delim) else { break };
            let span = &after[..b];
            if !span.contains('\n') {
                push(&mut out, span);
            }
            rest = &after[b + 1..];
        }
    }
    out
}

/// How much of `line` the rejecting message quotes (0: none).
fn quoted_len(line: &str, said: &str, fragments: &[&str]) -> usize {
    let t = line.trim();
    if t.chars().count() >= MIN_QUOTE && said.contains(t) {
        return t.len();
    }
    fragments
        .iter()
        .filter(|f| line.contains(**f))
        .map(|f| f.len())
        .max()
        .unwrap_or(0)
}

/// One step of an assistant message: its parts from one `step-start` to the next (the whole
/// message when it has none). OpenCode ≥ 0.8 writes one step per message; 0.5 writes a whole
/// turn's steps into one message, so evidence is looked for step by step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepSpan {
    /// Offset of the message in the episode's messages.
    pub off: usize,
    /// Range of part indices.
    pub parts: std::ops::Range<usize>,
}

/// The steps of the assistant messages of `msgs`, in order.
pub fn steps_of(msgs: &[Message]) -> Vec<StepSpan> {
    let mut out = Vec::new();
    for (off, m) in msgs.iter().enumerate().filter(|(_, m)| m.is_assistant()) {
        let mut start = 0;
        for (k, p) in m.parts.iter().enumerate() {
            if matches!(p.kind, PartKind::StepStart { .. }) && k > start {
                out.push(StepSpan {
                    off,
                    parts: start..k,
                });
                start = k;
            }
        }
        out.push(StepSpan {
            off,
            parts: start..m.parts.len(),
        });
    }
    out
}

/// The step of `steps` holding part `part` of message offset `off`.
pub fn step_of(steps: &[StepSpan], off: usize, part: usize) -> Option<usize> {
    steps
        .iter()
        .position(|s| s.off == off && s.parts.contains(&part))
}

/// The text and reasoning of a step, the words a rejection can quote from.
pub fn said(msgs: &[Message], st: &StepSpan) -> String {
    msgs[st.off].parts[st.parts.clone()]
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text {
                text,
                ignored: false,
                ..
            }
            | PartKind::Reasoning { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of a step (not its reasoning), and its first text part's id.
pub fn step_text<'a>(msgs: &'a [Message], st: &StepSpan) -> (String, Option<&'a str>) {
    let mut id = None;
    let mut texts = Vec::new();
    for p in &msgs[st.off].parts[st.parts.clone()] {
        if let PartKind::Text {
            text,
            ignored: false,
            ..
        } = &p.kind
        {
            if !text.trim().is_empty() {
                id.get_or_insert(p.id.as_str());
                texts.push(text.as_str());
            }
        }
    }
    (texts.join("\n"), id)
}

/// The killing evidence of the rejection in step `at` of `steps`, among the results of steps
/// `from..at` and the `unclaimed` failures (see the module docs). `first`: the trace index of
/// `msgs[0]`.
pub fn killing_evidence(
    msgs: &[Message],
    first: usize,
    steps: &[StepSpan],
    from: usize,
    at: usize,
    unclaimed: &[&FailedCall],
    rules: &Rules,
) -> Option<Killing> {
    let said = said(msgs, &steps[at]);
    let fragments = quote_fragments(&said);
    // (failed, quoted chars, step, part) of the best quoted result.
    let mut best: Option<((bool, usize, usize, usize), Killing)> = None;
    if !fragments.is_empty() {
        for (si, st) in steps.iter().enumerate().take(at).skip(from) {
            let m = &msgs[st.off];
            for k in st.parts.clone() {
                let p = &m.parts[k];
                let PartKind::Tool(t) = &p.kind else { continue };
                // A quoted diff line is evidence as well: every line counts here.
                let lines = output_lines(result_text(t));
                let quoted: Vec<(&str, usize)> = lines
                    .iter()
                    .map(|l| (*l, quoted_len(l, &said, &fragments)))
                    .filter(|(_, n)| *n > 0)
                    .collect();
                let Some(longest) = quoted.iter().map(|(_, n)| *n).max() else {
                    continue;
                };
                let qlines: Vec<&str> = quoted.iter().map(|(l, _)| *l).collect();
                let line = match rules.first_error_line(&qlines) {
                    Some((_, l)) => l,
                    None => quoted
                        .iter()
                        .max_by_key(|(_, n)| *n)
                        .map_or("", |(l, _)| *l),
                };
                let key = (t.failed(), longest, si, k);
                if best.as_ref().is_none_or(|(b, _)| key > *b) {
                    best = Some((
                        key,
                        killing(
                            first + st.off,
                            p.id.as_str(),
                            t,
                            (line, reason_lines(result_text(t), line, rules)),
                            KillRule::Quoted,
                        ),
                    ));
                }
            }
        }
    }
    if let Some((_, k)) = best {
        return Some(k);
    }
    // The strongest conclusive failure: the best rank, the latest on a tie.
    let f = unclaimed
        .iter()
        .filter(|f| f.failure.kind == FailureKind::Verdict)
        .min_by_key(|f| (f.rank, std::cmp::Reverse((f.message_index(), f.part_index))))?;
    let x = &f.failure;
    Some(Killing {
        cite: x.cite.clone(),
        tool: x.tool.clone(),
        command: x.command.clone(),
        exit: x.exit,
        failed: true,
        line: x.line.clone(),
        reasons: f.reasons.clone(),
        rule: KillRule::Strongest,
    })
}

fn killing(
    mi: usize,
    part_id: &str,
    t: &ToolPart,
    (line, reasons): (&str, Vec<String>),
    rule: KillRule,
) -> Killing {
    Killing {
        cite: At {
            message_index: mi,
            part_id: part_id.to_owned(),
            call_id: t.call_id.clone(),
        },
        tool: t.tool.clone(),
        command: crate::text::clip_chars(crate::text::first_line(&tool_command(t)), 160),
        exit: t.exit_code(),
        failed: t.failed(),
        line: line.to_owned(),
        reasons,
        rule,
    }
}

/// A failed tool call as classification found it: the finding, and what detection reads beside
/// it (where in its message it is, its request, how strong its decisive line is, the reasons
/// after that line).
#[derive(Debug, Clone, PartialEq)]
pub struct FailedCall {
    pub failure: Failure<At>,
    /// Index of the tool part in its message's parts.
    pub part_index: usize,
    pub request: Option<usize>,
    /// The rank of the error pattern that chose the decisive line (lower = stronger).
    pub rank: usize,
    /// Lines after the decisive line that state its reason ([`Decisive::reasons`]).
    pub reasons: Vec<String>,
}

impl FailedCall {
    /// e.g. `bash exit 1 in request 3: "…"` (for reasons).
    pub fn describe(&self) -> String {
        let at = self
            .request
            .map_or_else(String::new, |r| format!(" in request {r}"));
        format!("{}{at}: \"{}\"", self.failure.what(), self.failure.line)
    }

    /// What the model saw, without our request numbering (for tiers).
    pub fn quote(&self) -> String {
        self.failure.quote()
    }

    pub fn message_index(&self) -> usize {
        self.failure.cite.message_index
    }
}

/// The line that quotes a failure: the decisive line of the tool's error, else its output
/// ([`decisive_line`]). Exact, trailing whitespace trimmed.
pub fn error_line(t: &ToolPart, rules: &Rules) -> String {
    decisive_line(result_text(t), rules).line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Rules {
        Rules::embedded().unwrap()
    }

    #[test]
    fn a_diff_line_is_not_the_verdict() {
        let out = "--- a/lib.rs\n+++ b/lib.rs\n@@ -29,8 +29,11 @@\n }\n-/// unknown variables are left untouched.\n+/// Expand `${VAR}`; unknown variables are an error (changed in 0.4).\n+pub struct UnknownVar(pub String);\n";
        let d = decisive_line(out, &rules());
        assert!(!d.line.contains("are an error"), "{d:?}");
        // Nothing but diff: the last line, as a verdict of last resort.
        assert_eq!(d.line, "+pub struct UnknownVar(pub String);");
        let mixed = format!("{out}error[E0432]: unresolved import `tomlette::Table`\n");
        assert_eq!(
            decisive_line(&mixed, &rules()).line,
            "error[E0432]: unresolved import `tomlette::Table`"
        );
    }

    #[test]
    fn a_wrapper_line_yields_to_the_panic() {
        let out = "test a ... ok\n\nthread 'x::tests::y' panicked at crates/x/src/y.rs:12:5:\nassertion `left == right` failed\ntest result: FAILED. 1 passed; 1 failed\n\nerror: test failed, to rerun pass `-p x-core --lib`\n";
        assert_eq!(
            decisive_line(out, &rules()).line,
            "thread 'x::tests::y' panicked at crates/x/src/y.rs:12:5:"
        );
        // Only a wrapper: it is still the line.
        assert_eq!(
            decisive_line("error: test failed, to rerun pass `--lib`", &rules()).line,
            "error: test failed, to rerun pass `--lib`"
        );
    }

    #[test]
    fn a_passing_summary_is_no_verdict() {
        let out = "test result: ok. 85 passed; 0 failed; 3 ignored\n\nthread 'a::b' panicked at crates/n/src/i.rs:208:23:\nassertion `left == right` failed\nerror: test failed, to rerun pass `-p n-core --lib`\n";
        assert_eq!(
            decisive_line(out, &rules()).line,
            "thread 'a::b' panicked at crates/n/src/i.rs:208:23:"
        );
    }

    #[test]
    fn a_resolver_error_keeps_the_requirements_that_conflict() {
        let out = "error: failed to select a version for `tomlette`.\n    ... required by package `cfgkit v0.3.0`\n    ... which satisfies dependency `cfgkit = \"^0.3\"` of package `confmerge v0.6.2`\nversions that meet the requirements `~1.2` are: 1.2.5\n\nall possible versions conflict with previously selected packages.\n\n  previously selected package `tomlette v1.4.0`\n    ... which satisfies dependency `tomlette = \"^1.4\"` of package `confmerge v0.6.2`\n\nfailed to select a version for `tomlette` which could resolve this conflict\n";
        let d = decisive_line(out, &rules());
        assert_eq!(d.line, "error: failed to select a version for `tomlette`.");
        assert_eq!(
            d.reasons,
            [
                "... required by package `cfgkit v0.3.0`",
                "versions that meet the requirements `~1.2` are: 1.2.5",
                "previously selected package `tomlette v1.4.0`",
            ]
        );
        // A one-line error has no reasons to keep.
        assert!(decisive_line("error: no such file", &rules())
            .reasons
            .is_empty());
    }

    #[test]
    fn compiler_errors_before_generic_words() {
        let out = "   Compiling x v0.1.0\nwarning: unused failure\nerror: failed to select a version for `tomlette`.\n    ... required by package `cfgkit v0.3.0`\n";
        let d = decisive_line(out, &rules());
        assert_eq!(d.line, "error: failed to select a version for `tomlette`.");
        assert!(d.rank < rules().error_line_count());
    }

    #[test]
    fn last_stage_of_a_command() {
        assert_eq!(last_stage("cargo build 2>&1 | grep -B2 x"), "grep -B2 x");
        assert_eq!(last_stage("diff -u a b"), "diff -u a b");
        assert_eq!(last_stage("a && b || grep -q c"), "grep -q c");
        assert_eq!(last_stage("make; test -f out"), "test -f out");
    }

    #[test]
    fn quotes_are_lines_and_spans() {
        let said = "That approach doesn't work. Cargo says:\n\n    error: failed to select a version for `tomlette`.\n\nIt declares `rust-version = \"1.80\"` and \"x\".";
        let f = quote_fragments(said);
        assert!(f.contains(&"error: failed to select a version for `tomlette`."));
        assert!(f.contains(&"rust-version = \"1.80\""));
        assert!(!f.contains(&"tomlette"), "short spans are not quotes");
        assert!(
            quoted_len(
                "vendor/t-2.1.0/Cargo.toml:rust-version = \"1.80\"",
                said,
                &f
            ) > 0
        );
        assert_eq!(
            quoted_len("vendor/t-2.1.0/Cargo.toml:edition = 2021", said, &f),
            0
        );
    }
}
