//! Reading what a session says: sentences, the assistant's prose, a tool call's command and
//! files, identifiers in text, paths relative to the project. Plain functions of the text, used
//! by classification, the record and the tier generators alike.

use regex::Regex;
use serde_json::Value;

use crate::trace::{Message, Part, PartKind, ToolPart};

/// The assistant's own prose in `msgs`: (offset in `msgs`, part, text) of every text part the
/// model was shown, leaving out compaction summaries (they only restate earlier turns).
pub fn assistant_prose(msgs: &[Message]) -> impl Iterator<Item = (usize, &Part, &str)> {
    msgs.iter()
        .enumerate()
        .filter(|(_, m)| m.is_assistant() && !m.summary)
        .flat_map(|(off, m)| {
            m.parts.iter().filter_map(move |p| match &p.kind {
                PartKind::Text {
                    text,
                    ignored: false,
                    ..
                } => Some((off, p, text.as_str())),
                _ => None,
            })
        })
}

/// Split text into sentences (at `.`, `!`, `?` followed by whitespace, and at line breaks),
/// trimmed, each an exact substring of `text`.
pub fn sentences(text: &str) -> Vec<&str> {
    sentence_spans(text)
        .into_iter()
        .map(|(a, b)| &text[a..b])
        .collect()
}

/// Byte ranges of [`sentences`] in `text`.
pub fn sentence_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut push = |a: usize, b: usize| {
        let s = &text[a..b];
        // Leading list and quote markers (a marker and a space) are not part of the sentence;
        // `**` opening bold text is, so emphasis stays paired for `prose::plain`.
        let mut t1 = s.trim_start();
        while let Some(rest) = ["- ", "* ", "• ", "> ", ">"]
            .iter()
            .find_map(|m| t1.strip_prefix(m))
        {
            t1 = rest.trim_start();
        }
        let lead = s.len() - t1.len();
        let t = t1.trim_end();
        if !t.is_empty() {
            out.push((a + lead, a + lead + t.len()));
        }
    };
    let b = text.as_bytes();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            push(start, i);
            start = i + 1;
        } else if matches!(c, b'.' | b'!' | b'?')
            && b.get(i + 1).is_none_or(|n| n.is_ascii_whitespace())
        {
            push(start, i + 1);
            start = i + 1;
        }
    }
    push(start, b.len());
    out
}

/// The main input of a tool call as one string (bash: the command; Codex's `exec_command` names
/// it `cmd`, its older `shell` gives it as an argv, `["bash", "-lc", script]`).
pub fn tool_command(t: &ToolPart) -> String {
    if let Some(argv) = t.input.get("command").and_then(Value::as_array) {
        let words: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
        return match words.as_slice() {
            [shell, flag, script] if is_shell(shell) && flag.starts_with('-') => {
                (*script).to_owned()
            }
            _ => words.join(" "),
        };
    }
    for k in [
        "command",
        "cmd",
        "filePath",
        "path",
        "pattern",
        "url",
        "query",
        "description",
    ] {
        if let Some(s) = t.input.get(k).and_then(Value::as_str) {
            return s.to_owned();
        }
    }
    String::new()
}

/// Files named by a tool's input.
pub fn tool_files(t: &ToolPart) -> Vec<String> {
    let mut v = Vec::new();
    for k in ["filePath", "file_path", "path", "include", "glob"] {
        if let Some(s) = t.input.get(k).and_then(Value::as_str) {
            if !s.is_empty() {
                v.push(s.to_owned());
            }
        }
    }
    if t.behaves_as() != "bash" {
        if let Some(s) = t.input.get("pattern").and_then(Value::as_str) {
            v.push(s.to_owned());
        }
    }
    if t.behaves_as() == "apply_patch" {
        for f in patch_files(patch_text(&t.input)) {
            if !v.contains(&f) {
                v.push(f);
            }
        }
    }
    v
}

/// A shell that runs its script argument (`bash -lc script`).
fn is_shell(word: &str) -> bool {
    let name = word.rsplit('/').next().unwrap_or(word);
    matches!(
        name,
        "bash" | "sh" | "zsh" | "dash" | "fish" | "pwsh" | "powershell"
    )
}

/// The patch of an `apply_patch` call: its freeform input (a string), or the string under
/// `input` / `patchText` / `patch`.
fn patch_text(input: &Value) -> &str {
    if let Some(s) = input.as_str() {
        return s;
    }
    ["input", "patchText", "patch"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .unwrap_or("")
}

/// The files a patch in the `*** Begin Patch` format names: added, updated, deleted, and the
/// target of a move.
fn patch_files(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in patch.lines() {
        let l = l.trim_end();
        let f = [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|p| l.strip_prefix(p))
        .map(str::trim);
        if let Some(f) = f.filter(|f| !f.is_empty()) {
            if !out.iter().any(|x| x == f) {
                out.push(f.to_owned());
            }
        }
    }
    out
}

/// `path` relative to `dir` when it lies under it, else unchanged.
pub(super) fn relative_to<'a>(path: &'a str, dir: &str) -> &'a str {
    let dir = dir.trim_end_matches('/');
    match path.strip_prefix(dir) {
        Some(rest) if !dir.is_empty() && rest.starts_with('/') && rest.len() > 1 => &rest[1..],
        _ => path,
    }
}

pub(super) fn push_unique(v: &mut Vec<String>, s: &str) {
    if !s.is_empty() && !v.iter().any(|x| x == s) {
        v.push(s.to_owned());
    }
}

static PATH_RE: once_cell::sync::Lazy<Regex> = once_cell::sync::Lazy::new(|| {
    // Tokens with a slash, or a file name with an extension of 1–5 letters.
    Regex::new(r"(?:[\w.~-]*/[\w./~-]+|\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b)")
        .unwrap_or_else(|_| unreachable_regex())
});

static ID_RE: once_cell::sync::Lazy<Regex> = once_cell::sync::Lazy::new(|| {
    Regex::new(concat!(
        r"`([^`\n]{1,60})`",                           // backticked spans
        r"|(--[a-z][a-z0-9-]+)",                       // long flags
        r"|\b(v?\d+\.\d+(?:\.\d+)+(?:-[\w.]+)?)\b",    // versions with at least two dots
        r"|\b([0-9a-f]{7,40})\b",                      // hashes (filtered below)
        r"|\b([A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+)\b", // snake_case
    ))
    .unwrap_or_else(|_| unreachable_regex())
});

/// The fixed patterns above are tested; this keeps a typo from panicking at run time.
fn unreachable_regex() -> Regex {
    Regex::new("$^").unwrap_or_else(|_| unreachable!("the empty regex compiles"))
}

/// File-path-like tokens of a shell command.
pub(super) fn path_like_tokens(cmd: &str) -> Vec<String> {
    PATH_RE
        .find_iter(cmd)
        .map(|m| m.as_str().trim_end_matches(['.', ',', ':', ';']).to_owned())
        .filter(|s| !s.starts_with('-') && !s.contains("://") && !s.is_empty())
        .collect()
}

/// Identifiers in text: backticked spans, long flags, versions, hashes, snake_case names, paths.
pub fn identifiers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in ID_RE.captures_iter(text) {
        let s = (1..=5).find_map(|i| c.get(i)).map(|m| m.as_str());
        if let Some(s) = s {
            let is_hash = c.get(4).is_some();
            if is_hash
                && !(s.chars().any(|ch| ch.is_ascii_digit())
                    && s.chars().any(|ch| ch.is_ascii_alphabetic()))
            {
                continue;
            }
            let is_backticked = c.get(1).is_some();
            let s = s.trim();
            if s.chars().count() < 2 {
                continue;
            }
            if is_backticked
                && s.contains(char::is_whitespace)
                && !s.contains(|ch: char| "-[](){}$=|<>".contains(ch))
            {
                continue;
            }
            push_unique(&mut out, s);
        }
    }
    for p in path_like_tokens(text) {
        if p.contains('/') {
            push_unique(&mut out, &p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_are_substrings() {
        let t =
            "Please split it. Hard constraint, never to be broken: it must run under /bin/sh.\nok";
        let s = sentences(t);
        assert_eq!(
            s[1],
            "Hard constraint, never to be broken: it must run under /bin/sh."
        );
        assert!(s.iter().all(|x| t.contains(x)));
    }

    #[test]
    fn patch_paths_relative_to_the_session_directory() {
        assert_eq!(relative_to("/home/d/p/src/a.rs", "/home/d/p"), "src/a.rs");
        assert_eq!(relative_to("/home/d/p/src/a.rs", "/home/d/p/"), "src/a.rs");
        assert_eq!(
            relative_to("/home/d/pq/a.rs", "/home/d/p"),
            "/home/d/pq/a.rs"
        );
        assert_eq!(relative_to("/home/d/p/a.rs", ""), "/home/d/p/a.rs");
    }

    #[test]
    fn identifiers_found() {
        let ids =
            identifiers("bump `tomlette` to 0.4.2 at aeb1821, see --keep-monthly and src/a.rs");
        for want in ["tomlette", "0.4.2", "aeb1821", "--keep-monthly", "src/a.rs"] {
            assert!(ids.iter().any(|i| i == want), "{want} in {ids:?}");
        }
    }
}
