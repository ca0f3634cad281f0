//! Damaged JSON, one value at a time. A recorder that crashed, a disk that flipped a byte or a
//! crafted file can leave a raw NUL or another control character inside a string, a lone UTF-16
//! surrogate escape, `NaN` or a number no `f64` holds (`1e999999`), or a value nested deeper
//! than any parser should follow. serde_json rejects each of these, and with it everything
//! around it. Here a value is first parsed as it is; only when that fails is it
//! [`repair`]ed — each fault rewritten into the nearest valid JSON and listed — and parsed
//! again. [`value_end`] finds where a value ends without parsing it (strings and brackets only,
//! no recursion), so a caller can walk an array element by element and lose only the element
//! that cannot be read.

use serde_json::Value;

/// Values nested deeper than this (from the value being parsed) are replaced by a placeholder
/// string; serde_json itself stops at 128.
pub const MAX_DEPTH: usize = 100;

/// What [`repair`] changed to make a value parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// A raw control character inside a string (JSON requires `\u00XX`): escaped.
    ControlCharacter(char),
    /// A `\uD800`–`\uDFFF` escape without its pair: replaced by U+FFFD.
    LoneSurrogate(String),
    /// `NaN`, `Infinity`, `-Infinity` or a number out of `f64` range: read as `null`.
    NonFiniteNumber(String),
    /// A value nested deeper than [`MAX_DEPTH`]: replaced by a placeholder string.
    TooDeep,
    /// An escape JSON does not have (`\x`): the backslash kept as a character.
    BadEscape(char),
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Repair::ControlCharacter(c) => {
                write!(
                    f,
                    "raw control character U+{:04X} in a string (escaped)",
                    *c as u32
                )
            }
            Repair::LoneSurrogate(s) => write!(f, "lone surrogate escape \\u{s} (read as U+FFFD)"),
            Repair::NonFiniteNumber(s) => write!(
                f,
                "number {} is not finite (read as null)",
                crate::text::clip_chars(s, 24)
            ),
            Repair::TooDeep => write!(
                f,
                "a value nested deeper than {MAX_DEPTH} levels (replaced by a placeholder)"
            ),
            Repair::BadEscape(c) => write!(f, "invalid escape \\{c} (kept as text)"),
        }
    }
}

/// The placeholder a too-deep value is replaced by.
pub const TOO_DEEP: &str = "[nested too deep; not loaded]";

/// Repairs in words, the same kind once with its count: `raw control character U+0000 in a
/// string (escaped) ×2; …`.
pub fn describe(repairs: &[Repair]) -> String {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for r in repairs {
        let s = r.to_string();
        match seen.iter_mut().find(|(x, _)| *x == s) {
            Some((_, n)) => *n += 1,
            None => seen.push((s, 1)),
        }
    }
    seen.into_iter()
        .map(|(s, n)| if n == 1 { s } else { format!("{s} ×{n}") })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Parse `s` as one JSON value; when that fails, [`repair`] it and parse again. `Err` holds the
/// first parser error when even the repaired text is not JSON.
pub fn parse(s: &str) -> Result<(Value, Vec<Repair>), serde_json::Error> {
    match serde_json::from_str::<Value>(s) {
        Ok(v) => Ok((v, Vec::new())),
        Err(first) => {
            let (fixed, repairs) = repair(s);
            if repairs.is_empty() {
                return Err(first);
            }
            match serde_json::from_str::<Value>(&fixed) {
                Ok(v) => Ok((v, repairs)),
                Err(_) => Err(first),
            }
        }
    }
}

/// Where the JSON value starting at byte `pos` (after whitespace) ends, by strings and brackets
/// alone: the byte after it, or `None` when the text ends first (a cut file). A scalar ends at
/// the next `,` `}` `]` or whitespace.
pub fn value_end(s: &str, pos: usize) -> Option<usize> {
    let b = s.as_bytes();
    let first = *b.get(pos)?;
    match first {
        b'"' => string_end(b, pos),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = pos;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        b'}' | b']' | b',' | b':' => None,
        _ => {
            let mut i = pos;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
            {
                i += 1;
            }
            (i < b.len()).then_some(i)
        }
    }
}

/// The byte after the closing quote of the string starting at `pos`.
fn string_end(b: &[u8], pos: usize) -> Option<usize> {
    let mut i = pos + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The first index at or after `pos` that is not JSON whitespace.
pub fn skip_ws(s: &str, mut pos: usize) -> usize {
    let b = s.as_bytes();
    while pos < b.len() && b[pos].is_ascii_whitespace() {
        pos += 1;
    }
    pos
}

/// Rewrite `s` into valid JSON where it is damaged in one of the ways [`Repair`] lists; text
/// that is not damaged that way is copied as it is (other errors remain for the parser).
pub fn repair(s: &str) -> (String, Vec<Repair>) {
    let mut out = String::with_capacity(s.len() + 16);
    let mut repairs = Vec::new();
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => i = repair_string(s, i, &mut out, &mut repairs),
            b'{' | b'[' if depth >= MAX_DEPTH => {
                // Skip the whole value; a cut one takes the rest of the text with it.
                let end = value_end(s, i).unwrap_or(b.len());
                out.push('"');
                out.push_str(TOO_DEEP);
                out.push('"');
                repairs.push(Repair::TooDeep);
                i = end;
            }
            b'{' | b'[' => {
                depth += 1;
                out.push(c as char);
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                out.push(c as char);
                i += 1;
            }
            b'-' | b'0'..=b'9' | b'N' | b'I' | b'+' | b'.' => {
                let mut j = i;
                while j < b.len()
                    && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'-' | b'+' | b'.'))
                {
                    j += 1;
                }
                let token = &s[i..j];
                match number_token(token) {
                    NumberToken::Valid => out.push_str(token),
                    NumberToken::NonFinite => {
                        repairs.push(Repair::NonFiniteNumber(token.to_owned()));
                        out.push_str("null");
                    }
                    NumberToken::Other => out.push_str(token),
                }
                i = j;
            }
            _ => {
                // Copy one whole char (multi-byte text outside strings is an error the parser
                // reports; it is copied, not repaired).
                let ch = s[i..].chars().next().unwrap_or('\u{fffd}');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    (out, repairs)
}

enum NumberToken {
    Valid,
    NonFinite,
    Other,
}

fn number_token(t: &str) -> NumberToken {
    match t {
        "NaN" | "Infinity" | "-Infinity" | "+Infinity" | "-NaN" | "inf" | "-inf" => {
            NumberToken::NonFinite
        }
        _ if t.starts_with(|c: char| c == '-' || c.is_ascii_digit()) => match t.parse::<f64>() {
            Ok(x) if x.is_finite() => NumberToken::Valid,
            Ok(_) => NumberToken::NonFinite,
            Err(_) => NumberToken::Other,
        },
        _ => NumberToken::Other,
    }
}

/// Copy the string starting at `pos` into `out`, repaired; returns the index after it.
fn repair_string(s: &str, pos: usize, out: &mut String, repairs: &mut Vec<Repair>) -> usize {
    let b = s.as_bytes();
    out.push('"');
    let mut i = pos + 1;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => {
                out.push('"');
                return i + 1;
            }
            b'\\' => {
                let Some(&e) = b.get(i + 1) else {
                    return b.len();
                };
                match e {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        out.push('\\');
                        out.push(e as char);
                        i += 2;
                    }
                    b'u' => i = repair_unicode_escape(s, i, out, repairs),
                    _ => {
                        let ch = s[i + 1..].chars().next().unwrap_or('?');
                        repairs.push(Repair::BadEscape(ch));
                        out.push_str("\\\\");
                        i += 1;
                    }
                }
            }
            0x00..=0x1f => {
                repairs.push(Repair::ControlCharacter(c as char));
                out.push_str(&format!("\\u{c:04x}"));
                i += 1;
            }
            _ => {
                let ch = s[i..].chars().next().unwrap_or('\u{fffd}');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    // A cut string: left open, the parser reports it.
    i
}

/// `\uXXXX` at `i` (the backslash): a surrogate pair or a plain escape is copied, a lone
/// surrogate becomes `\ufffd`, a malformed one is kept as text.
fn repair_unicode_escape(s: &str, i: usize, out: &mut String, repairs: &mut Vec<Repair>) -> usize {
    let hex = |at: usize| {
        s.get(at..at + 4)
            .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
            .and_then(|h| u16::from_str_radix(h, 16).ok())
    };
    let Some(u) = hex(i + 2) else {
        repairs.push(Repair::BadEscape('u'));
        out.push_str("\\\\");
        return i + 1;
    };
    match u {
        0xd800..=0xdbff => {
            let low = (s.as_bytes().get(i + 6) == Some(&b'\\')
                && s.as_bytes().get(i + 7) == Some(&b'u'))
            .then(|| hex(i + 8))
            .flatten()
            .filter(|l| (0xdc00..=0xdfff).contains(l));
            match low {
                Some(_) => {
                    out.push_str(&s[i..i + 12]);
                    i + 12
                }
                None => {
                    repairs.push(Repair::LoneSurrogate(s[i + 2..i + 6].to_owned()));
                    out.push_str("\\ufffd");
                    i + 6
                }
            }
        }
        0xdc00..=0xdfff => {
            repairs.push(Repair::LoneSurrogate(s[i + 2..i + 6].to_owned()));
            out.push_str("\\ufffd");
            i + 6
        }
        _ => {
            out.push_str(&s[i..i + 6]);
            i + 6
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_json_is_parsed_without_repairs() {
        let (v, r) = parse(r#"{"a": [1, -2.5e3, "x\u00e9\ud83d\ude00"], "b": null}"#).unwrap();
        assert!(r.is_empty());
        assert_eq!(v["a"][2], "xé😀");
    }

    #[test]
    fn each_fault_is_repaired_and_named() {
        let (v, r) = parse("{\"t\": \"a\u{0}b\", \"n\": NaN, \"m\": 1e999999}").unwrap();
        assert_eq!(v["t"], "a\u{0}b");
        assert!(v["n"].is_null() && v["m"].is_null());
        assert_eq!(
            r,
            vec![
                Repair::ControlCharacter('\u{0}'),
                Repair::NonFiniteNumber("NaN".into()),
                Repair::NonFiniteNumber("1e999999".into())
            ]
        );
        let (v, r) = parse(r#"{"t": "x\ud800y", "u": "\udc00", "ok": "\ud83d\ude00"}"#).unwrap();
        assert_eq!(v["t"], "x\u{fffd}y");
        assert_eq!(v["u"], "\u{fffd}");
        assert_eq!(v["ok"], "😀");
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn deep_nesting_becomes_a_placeholder_and_the_rest_stays() {
        let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
        let text = format!(r#"{{"input": {deep}, "output": "kept"}}"#);
        let (v, r) = parse(&text).unwrap();
        assert_eq!(v["output"], "kept");
        assert_eq!(r, vec![Repair::TooDeep]);
        let mut x = &v["input"];
        let mut levels = 0;
        while let Some(a) = x.as_array() {
            x = &a[0];
            levels += 1;
        }
        assert_eq!(x, TOO_DEEP);
        assert_eq!(levels, MAX_DEPTH - 1);
    }

    #[test]
    fn value_end_walks_strings_and_brackets_and_reports_a_cut() {
        let s = r#"[{"a": "}]\"x"}, [1, [2]], 3, "s"]"#;
        assert_eq!(value_end(s, 0), Some(s.len()));
        assert_eq!(value_end(s, 1), Some(s.find(", [1").unwrap()));
        assert_eq!(value_end(r#"{"a": "cut"#, 0), None);
        assert_eq!(value_end("12", 0), None);
        assert_eq!(value_end("12,", 0), Some(2));
    }

    #[test]
    fn structural_garbage_is_left_to_the_parser() {
        assert!(parse(r#"{"a" 1}"#).is_err());
        assert!(parse("").is_err());
    }
}
