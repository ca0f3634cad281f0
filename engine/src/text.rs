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

/// Make untrusted text safe to print on a terminal: ESC and every other C0/C1 control character
/// (except `\n` and `\t`) and DEL become a visible `\x1b`-style escape, so a recorded tool output
/// cannot move the cursor, retitle the window or recolour the screen. Borrowed when nothing changed.
pub fn sanitize_for_terminal(s: &str) -> std::borrow::Cow<'_, str> {
    let needs = |c: char| c != '\n' && c != '\t' && (c.is_control() || c == '\u{7f}');
    if !s.chars().any(needs) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if needs(c) {
            let n = c as u32;
            if n <= 0xff {
                out.push_str(&format!("\\x{n:02x}"));
            } else {
                out.push_str(&format!("\\u{{{n:x}}}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod sanitize_tests {
    use super::sanitize_for_terminal;

    #[test]
    fn escapes_become_visible_and_plain_text_is_borrowed() {
        assert!(matches!(
            sanitize_for_terminal("plain\ttext\nok ü"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            sanitize_for_terminal("a\x1b[31mred\x07\r\u{9b}x\u{7f}"),
            "a\\x1b[31mred\\x07\\x0d\\x9bx\\x7f"
        );
    }
}
