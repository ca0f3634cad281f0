//! Small text helpers shared across the crate.

/// At most `max` chars of `s`, with "…" when cut. Never splits a char.
pub fn clip_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// First line of `s`, trimmed.
pub fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// Whether `c` must never reach a terminal raw: C0 controls (but `\n` and `\t`), DEL, C1
/// controls (U+0080–U+009F, e.g. CSI U+009B), and the invisible characters that reorder or
/// break what is shown: bidi marks (U+200E, U+200F), line and paragraph separators
/// (U+2028, U+2029), bidi embeddings and overrides (U+202A–U+202E) and isolates
/// (U+2066–U+2069) — the "Trojan Source" set (CVE-2021-42574).
pub fn is_unsafe_char(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// Make untrusted text safe to print on a terminal: every [`is_unsafe_char`] becomes visible,
/// inert text — C0, DEL and C1 controls as `\x1b`-style escapes, the bidi and separator
/// characters as `<U+202E>` — so a recorded tool output cannot move the cursor, retitle the
/// window, recolour the screen or reorder what is shown. Newlines and tabs stay. Borrowed when
/// nothing changed. The CLI (stdout and stderr) and the explorer both use it.
pub fn sanitize_for_terminal(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe_char(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`sanitize_for_terminal`] for text that must stay on one line (a table cell, a header): a
/// newline is shown as ` ⏎ ` and a tab as a space, so a title cannot forge a line of output.
pub fn sanitize_line(s: &str) -> std::borrow::Cow<'_, str> {
    let clean = sanitize_for_terminal(s);
    if !clean.contains(['\n', '\t']) {
        return clean;
    }
    std::borrow::Cow::Owned(clean.replace('\n', " ⏎ ").replace('\t', " "))
}

/// How much of a user's input an error message quotes.
pub const EXCERPT_CHARS: usize = 200;

/// An excerpt of untrusted input for an error message: at most [`EXCERPT_CHARS`] chars ("…"
/// when cut), on one line, control and bidi characters escaped. A message never echoes a
/// megabyte of what it refuses.
pub fn excerpt(s: &str) -> String {
    sanitize_line(&clip_chars(s, EXCERPT_CHARS)).into_owned()
}

/// [`excerpt`] for a message of several lines (a parser's, which quotes the offending line):
/// each line cut to [`EXCERPT_CHARS`] chars, at most 12 lines.
pub fn excerpt_lines(s: &str) -> String {
    const MAX_LINES: usize = 12;
    let mut out: Vec<String> = s
        .lines()
        .take(MAX_LINES)
        .map(|l| sanitize_for_terminal(&clip_chars(l, EXCERPT_CHARS)).replace('\t', " "))
        .collect();
    if s.lines().nth(MAX_LINES).is_some() {
        out.push("…".to_owned());
    }
    out.join("\n")
}

fn push_escape(out: &mut String, c: char) {
    use std::fmt::Write as _;
    let n = c as u32;
    let _ = if n <= 0xff {
        write!(out, "\\x{n:02x}")
    } else {
        write!(out, "<U+{n:04X}>")
    };
}

/// What `b` shares with `a` from their start, ending on a character boundary of both.
pub fn common_head<'b>(a: &str, b: &'b str) -> &'b str {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let n = (0..=n)
        .rev()
        .find(|&i| a.is_char_boundary(i) && b.is_char_boundary(i))
        .unwrap_or(0);
    &b[..n]
}

/// Fill `{{name}}` placeholders from `vars` in one pass; an unknown name is left as written.
pub fn fill_placeholders(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 1024);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = &after[..end];
                match vars.iter().find(|(k, _)| *k == name) {
                    Some((_, v)) => out.push_str(v),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod sanitize_tests {
    use super::{excerpt, excerpt_lines, sanitize_for_terminal, sanitize_line, EXCERPT_CHARS};

    #[test]
    fn excerpts_are_short_one_line_and_inert() {
        let big = format!("\u{1b}]0;x\u{7}{}", "y".repeat(1 << 20));
        let e = excerpt(&big);
        assert!(e.starts_with("\\x1b]0;x\\x07yyy"), "{e}");
        assert!(e.ends_with('…'));
        // The escapes lengthen it a little; the cut was at EXCERPT_CHARS chars of input.
        assert!(
            e.chars().count() <= EXCERPT_CHARS + 6,
            "{}",
            e.chars().count()
        );
        assert_eq!(excerpt("a\nb"), "a ⏎ b");
        let lines = (0..20)
            .map(|_| "z".repeat(300))
            .collect::<Vec<_>>()
            .join("\n");
        let l = excerpt_lines(&lines);
        assert_eq!(l.lines().count(), 13);
        assert!(l.lines().all(|x| x.chars().count() <= EXCERPT_CHARS));
    }

    #[test]
    fn escapes_become_visible_and_plain_text_is_borrowed() {
        assert!(matches!(
            sanitize_for_terminal("plain\ttext\nok ü"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            sanitize_for_terminal("a\x1b[31mred\x07\r\u{9b}x\u{7f}\0"),
            "a\\x1b[31mred\\x07\\x0d\\x9bx\\x7f\\x00"
        );
    }

    #[test]
    fn bidi_controls_and_separators_are_shown_not_applied() {
        for c in [
            '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}', '\u{200f}', '\u{2028}',
        ] {
            let s = format!("a{c}b");
            let shown = sanitize_for_terminal(&s);
            assert_eq!(shown, format!("a<U+{:04X}>b", c as u32));
        }
        // Right-to-left text itself is fine; only the invisible controls are escaped.
        assert!(matches!(
            sanitize_for_terminal("שלום مرحبا"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn sanitizing_twice_changes_nothing_more() {
        let once = sanitize_for_terminal("x\x1b]0;t\x07\u{202e}\u{85}y").into_owned();
        assert_eq!(sanitize_for_terminal(&once), once);
        assert!(!once.chars().any(super::is_unsafe_char));
    }

    #[test]
    fn one_line_text_cannot_forge_a_line() {
        assert_eq!(sanitize_line("a\nb\tc\x1b"), "a ⏎ b c\\x1b");
    }
}

#[cfg(test)]
mod common_head_tests {
    use super::common_head;

    #[test]
    fn a_common_beginning_ends_on_a_character_boundary() {
        assert_eq!(common_head("tree: a\nb", "tree: a\nc"), "tree: a\n");
        // "é" and "ê" share their first byte only.
        assert_eq!(common_head("café", "cafê"), "caf");
        assert_eq!(common_head("", "x"), "");
        assert_eq!(common_head("same", "same"), "same");
    }
}
