//! Sentences of assistant text as tiers quote them: markdown emphasis removed (a stray `**` in a
//! tier is debris, issue 20), code blocks left out of prose. Nothing else is rewritten: a
//! sentence stays the model's words.

use once_cell::sync::Lazy;
use regex::Regex;

use super::reading::sentences;
use crate::text::clip_chars;

/// `**x**` / `__x__` (and `*x*` / `_x_`) as emphasis: the opening marker after the start, a
/// space or an opening bracket and before a non-space; the closing one after a non-space and
/// before the end, a space or punctuation. `2**10`, `src/**/*.rs` and `snake_case` are no
/// emphasis and stay. The regex crate has no backreferences: both markers are captured and kept
/// unless they agree.
static EMPHASIS: Lazy<Regex> = Lazy::new(|| {
    Regex::new(concat!(
        r#"(?:^|[\s(\[{"'])"#,
        r"(?P<open>\*\*|__|\*|_)",
        r"[^\s*_](?:[^*\n]*?[^\s*_])?",
        r"(?P<close>\*\*|__|\*|_)",
        r#"(?:$|[\s.,;:!?)\]}"'])"#,
    ))
    .expect("static emphasis pattern")
});

/// `s` without markdown emphasis markers, and without a leading heading or list marker.
pub fn plain(s: &str) -> String {
    let t = s.trim_start_matches('#').trim_start();
    let mut t = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .unwrap_or(t)
        .to_owned();
    // A match takes the space after it, so `**a** **b**` needs a second pass; bounded.
    for _ in 0..4 {
        let next = strip_once(&t);
        if next == t {
            break;
        }
        t = next;
    }
    t
}

fn strip_once(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut last = 0;
    for c in EMPHASIS.captures_iter(t) {
        let (Some(open), Some(close)) = (c.name("open"), c.name("close")) else {
            continue;
        };
        if open.as_str() != close.as_str() {
            continue;
        }
        out.push_str(&t[last..open.start()]);
        out.push_str(&t[open.end()..close.start()]);
        last = close.end();
    }
    out.push_str(&t[last..]);
    out
}

/// The prose of a message's text: its sentences outside code (fenced blocks and lines indented
/// by four spaces or a tab), emphasis removed, joined by a space, whole sentences up to `max`
/// chars (the first one clipped if it alone is longer).
pub fn prose(text: &str, max: usize) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut fenced = false;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || l.starts_with("    ") || l.starts_with('\t') {
            continue;
        }
        kept.push(l);
    }
    let joined = kept.join("\n");
    let mut out = String::new();
    for s in sentences(&joined) {
        let s = plain(s);
        if s.is_empty() {
            continue;
        }
        let n = out.chars().count() + usize::from(!out.is_empty()) + s.chars().count();
        if n > max {
            if out.is_empty() {
                out = clip_chars(&s, max);
            }
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emphasis_goes_code_and_globs_stay() {
        assert_eq!(
            plain("**Approach A (tomlette 2.1) rejected.**"),
            "Approach A (tomlette 2.1) rejected."
        );
        assert_eq!(
            plain("- **Rejected first approach**: bumping"),
            "Rejected first approach: bumping"
        );
        assert_eq!(plain("## Done"), "Done");
        assert_eq!(
            plain("use `src/**/*.rs` and 2**10"),
            "use `src/**/*.rs` and 2**10"
        );
        assert_eq!(plain("keep snake_case_names"), "keep snake_case_names");
        assert_eq!(plain("an _important_ point"), "an important point");
        assert_eq!(plain("**a** **b** c"), "a b c");
    }

    #[test]
    fn prose_leaves_code_out_and_stops_at_a_sentence() {
        let t = "That approach doesn't work. Cargo says:\n\n    error: failed to select\n\n```\nx\n```\n**It is out.** Reverting.";
        assert_eq!(
            prose(t, 200),
            "That approach doesn't work. Cargo says: It is out. Reverting."
        );
        assert_eq!(prose(t, 30), "That approach doesn't work.");
        assert_eq!(prose("abcdefghij klmnop", 8), "abcdefg…");
    }
}
