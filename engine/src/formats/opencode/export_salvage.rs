//! Reading what is left of a damaged `opencode export` file: every message and part outside the
//! damaged spans.
//!
//! Finding where a value ends by counting brackets ([`lenient::value_end`]) is only as good as
//! the string state: one flipped quote turns every string after it inside out, and a stray
//! bracket shifts every depth, so a walk that trusts it loses everything after the damage. Here
//! the walk resynchronises on positions that damage elsewhere cannot move:
//!
//! - a **message** starts at an object whose first key is `"info"` (`{ "info":` can only be that
//!   in valid JSON: a quote inside a string is escaped); in a pretty-printed export (what
//!   `opencode export` writes) only such an object at the column of the first message counts;
//! - a **part** starts at a line holding only `{` at the column of the message's first part
//!   (pretty-printed JSON puts nothing else on an element's opening line; a newline in text is
//!   `\n`). A one-line export has no such lines: there a damaged part costs the rest of its
//!   message's parts.
//!
//! An element is taken when it parses (repaired by [`lenient::parse`] if need be) and is followed
//! by `,` or `]`; otherwise everything up to the next start is a damaged span, reported with its
//! byte offsets, lines and the message and part it held, and the walk resumes there.

use serde_json::Value;

use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::lenient;

/// What [`salvage`] kept.
pub(super) struct Salvaged {
    pub info: Option<Value>,
    pub messages: Vec<Value>,
    /// The text ended inside the messages (a cut file), not at its closing brackets.
    pub cut: bool,
}

/// Salvage `info` and every readable message of the damaged export `text`, whose top-level object
/// starts at byte `start`.
pub(super) fn salvage(text: &str, start: usize, diags: &mut Diagnostics) -> Salvaged {
    let (info, array) = top_level(text, start, diags);
    let from = array.map_or(start + 1, |a| a + 1);
    let starts = message_starts(text, from);
    let mut w = Walk {
        text,
        diags,
        messages: Vec::new(),
    };
    // Where damage hid the array's `[`, the walk begins at the first message.
    let cut = match (array, starts.at.first()) {
        (Some(_), _) => w.messages(from, &starts),
        (None, Some(&first)) => w.messages(first, &starts),
        (None, None) => ends_cut(text),
    };
    Salvaged {
        info,
        messages: w.messages,
        cut,
    }
}

/// The session `info` and where the `messages` array opens (its `[`), walking the top-level
/// object key by key; `None` for what damage hid.
fn top_level(text: &str, start: usize, diags: &mut Diagnostics) -> (Option<Value>, Option<usize>) {
    let mut info = None;
    let mut pos = start + 1;
    loop {
        pos = lenient::skip_ws(text, pos);
        let Some(key_end) = lenient::value_end(text, pos).filter(|_| at(text, pos) == Some(b'"'))
        else {
            return (info, None);
        };
        let key = serde_json::from_str::<String>(&text[pos..key_end]).unwrap_or_default();
        pos = lenient::skip_ws(text, key_end);
        if at(text, pos) != Some(b':') {
            return (info, None);
        }
        pos = lenient::skip_ws(text, pos + 1);
        if key == "messages" && at(text, pos) == Some(b'[') {
            return (info, Some(pos));
        }
        let Some(end) = lenient::value_end(text, pos) else {
            return (info, None);
        };
        if key == "info" {
            match lenient::parse(&text[pos..end]) {
                Ok((v, repairs)) => {
                    if !repairs.is_empty() {
                        diags.push(
                            DiagnosticKind::RepairedJson,
                            format!("session info: {}", lenient::describe(&repairs)),
                        );
                    }
                    info = Some(v);
                }
                Err(e) => {
                    diags.push(
                        DiagnosticKind::DamagedSpan,
                        format!(
                            "{}: the session info is damaged ({}); skipped",
                            span_words(text, pos, end),
                            error_at(text, pos, &e)
                        ),
                    );
                    return (None, None);
                }
            }
        }
        pos = lenient::skip_ws(text, end);
        if at(text, pos) != Some(b',') {
            return (info, None);
        }
        pos += 1;
    }
}

struct Walk<'t, 'd> {
    text: &'t str,
    diags: &'d mut Diagnostics,
    messages: Vec<Value>,
}

impl Walk<'_, '_> {
    /// Walk the elements of `messages` from `pos` (after its `[`); `true` when the text ends
    /// inside them.
    fn messages(&mut self, mut pos: usize, starts: &Starts) -> bool {
        let text = self.text;
        let mut n = 0;
        loop {
            pos = lenient::skip_ws(text, pos);
            let Some(c) = at(text, pos) else {
                return true;
            };
            let next = starts.after(pos);
            if c == b']' && next.is_none() {
                return false;
            }
            // Aligned starts are element boundaries: no value crosses one, so none is searched
            // past it (a damaged message costs its own length, not the rest of the file).
            let bound = next.filter(|_| starts.aligned).unwrap_or(text.len());
            if starts.is_start(pos) {
                if let Some((Ok((v, repairs)), end)) = located(&text[..bound], pos) {
                    if is_message(&v) {
                        if !repairs.is_empty() {
                            let id = message_id(&v, n);
                            self.diags.push(
                                DiagnosticKind::RepairedJson,
                                format!("message {id}: {}", lenient::describe(&repairs)),
                            );
                        }
                        self.messages.push(v);
                        n += 1;
                        pos = end;
                        continue;
                    }
                }
            }
            // Damaged: everything up to the next message start.
            let Some(stop) = next else {
                if ends_cut(text) {
                    // The last message was being written when the file was cut.
                    return true;
                }
                if starts.is_start(pos) {
                    self.message_parts(n, pos, text.len());
                }
                return false;
            };
            if starts.is_start(pos) {
                self.message_parts(n, pos, stop);
                n += 1;
            } else if let Some((v, p2, end)) = after_garbage(&text[..stop], pos, stop, is_message) {
                self.diags.push(
                    DiagnosticKind::DamagedSpan,
                    format!(
                        "{}: stray bytes before message #{n}; skipped, nothing lost",
                        span_words(text, pos, p2)
                    ),
                );
                self.messages.push(v);
                n += 1;
                pos = end;
                continue;
            } else {
                let place = match n {
                    0 => "before message #0".to_owned(),
                    _ => format!("between message #{} and #{n}", n - 1),
                };
                self.diags.push(
                    DiagnosticKind::DamagedSpan,
                    format!(
                        "{} {place}: not a message; skipped",
                        span_words(text, pos, stop)
                    ),
                );
            }
            pos = stop;
        }
    }

    /// Message number `n`, damaged somewhere in `text[pos..stop]`: its `info` and every part
    /// outside the damage. Skipped (and said so) when its `info` is damaged.
    fn message_parts(&mut self, n: usize, pos: usize, stop: usize) {
        let text = self.text;
        let skip = |diags: &mut Diagnostics, why: &str| {
            diags.push(
                DiagnosticKind::DamagedSpan,
                format!(
                    "{}: message #{n} {why}; skipped",
                    span_words(text, pos, stop)
                ),
            );
        };
        // `{ "info": <value>, "parts": [` — a start is `{ "info":` by construction.
        let mut i = lenient::skip_ws(text, pos + 1);
        i = lenient::value_end(&text[..stop], i).unwrap_or(stop);
        i = lenient::skip_ws(text, i);
        i = lenient::skip_ws(text, i + 1);
        let info = lenient::value_end(&text[..stop], i)
            .filter(|&end| end <= stop)
            .and_then(|end| Some((lenient::parse(&text[i..end]).ok()?.0, end)));
        let Some((info, info_end)) = info.filter(|(v, _)| v.is_object()) else {
            skip(self.diags, "(its info is damaged)");
            return;
        };
        let id = message_id(&serde_json::json!({ "info": &info }), n);
        let Some(array) = parts_array(&text[..stop], info_end) else {
            self.diags.push(
                DiagnosticKind::DamagedSpan,
                format!(
                    "{}: message {id}: its parts are damaged; loaded without parts",
                    span_words(text, info_end, stop)
                ),
            );
            self.messages
                .push(serde_json::json!({"info": info, "parts": []}));
            return;
        };
        let starts = part_starts(&text[..stop], array + 1);
        let mut parts = Vec::new();
        let mut pos = array + 1;
        let mut k: usize = 0;
        loop {
            pos = lenient::skip_ws(text, pos);
            if pos >= stop {
                break;
            }
            let next = starts.after(pos);
            if at(text, pos) == Some(b']') && next.is_none() {
                break;
            }
            // Brackets that say where it ends are trusted only when the next start agrees.
            let bounded = |&(_, end): &(Parsed, usize)| next.is_none_or(|n| end <= n);
            match located(&text[..stop], pos).filter(bounded) {
                Some((Ok((v, repairs)), end)) if is_part(&v) => {
                    if !repairs.is_empty() {
                        self.diags.push(
                            DiagnosticKind::RepairedJson,
                            format!("message {id} part #{k}: {}", lenient::describe(&repairs)),
                        );
                    }
                    parts.push(v);
                    k += 1;
                    pos = end;
                    continue;
                }
                Some((Err(e), end)) => {
                    self.diags.push(
                        DiagnosticKind::CorruptJson,
                        format!(
                            "{}: message {id} part #{k} is not JSON ({}); skipped",
                            span_words(text, pos, end),
                            error_at(text, pos, &e)
                        ),
                    );
                    k += 1;
                    pos = end;
                    continue;
                }
                _ => {}
            }
            if let Some((v, p2, end)) = after_garbage(&text[..stop], pos, stop, is_part) {
                self.diags.push(
                    DiagnosticKind::DamagedSpan,
                    format!(
                        "{}: stray bytes before message {id} part #{k}; skipped, nothing lost",
                        span_words(text, pos, p2)
                    ),
                );
                parts.push(v);
                k += 1;
                pos = end;
                continue;
            }
            let end = next.unwrap_or(stop);
            let resumed = if next.is_some() {
                "resumed at the next part"
            } else {
                "the rest of its parts lost"
            };
            // Not at a `{`: what is left of the part before it (or bytes between parts).
            let what = if at(text, pos) == Some(b'{') {
                k += 1;
                format!("part #{}", k - 1)
            } else {
                format!("bytes after part #{}", k.saturating_sub(1))
            };
            self.diags.push(
                DiagnosticKind::DamagedSpan,
                format!(
                    "{}: message {id} {what} damaged; skipped, {resumed}",
                    span_words(text, pos, end)
                ),
            );
            match next {
                Some(next) => pos = next,
                None => break,
            }
        }
        self.messages
            .push(serde_json::json!({"info": info, "parts": parts}));
    }
}

/// The value at `pos` when it parses and a `,` or `]` (or the end of the text) follows it, with
/// the position after that separator (and what repairing it took).
fn element(text: &str, pos: usize) -> Option<(Value, usize)> {
    match located(text, pos)? {
        (Ok((v, _)), next) => Some((v, next)),
        (Err(_), _) => None,
    }
}

/// The value at `pos` that brackets say ends before a `,` or `]` (or the end of the text): it
/// parsed (with its repairs) or not, and the position after the separator.
type Parsed = Result<(Value, Vec<lenient::Repair>), serde_json::Error>;
fn located(text: &str, pos: usize) -> Option<(Parsed, usize)> {
    let end = lenient::value_end(text, pos)?;
    let after = lenient::skip_ws(text, end);
    let next = match at(text, after) {
        Some(b',') => after + 1,
        Some(b']') | None => after,
        Some(_) => return None,
    };
    Some((lenient::parse(&text[pos..end]), next))
}

/// Damage between two elements (`},#  {`, `}},`): past the run of bytes at `pos` and the blanks
/// after it, an element that parses and passes `shape` (before `stop`), with where it starts and
/// where the walk goes on. Inside a damaged element this finds nothing: the run from its `{`
/// ends at a blank, and what follows is a key, not another element.
fn after_garbage(
    text: &str,
    pos: usize,
    stop: usize,
    shape: fn(&Value) -> bool,
) -> Option<(Value, usize, usize)> {
    let b = text.as_bytes();
    let mut run = pos;
    while run < stop && !b[run].is_ascii_whitespace() && (run == pos || b[run] != b'{') {
        run += 1;
    }
    let p2 = lenient::skip_ws(text, run);
    if p2 >= stop || b[p2] != b'{' {
        return None;
    }
    let (v, end) = element(text, p2).filter(|(v, _)| shape(v))?;
    (end <= stop).then_some((v, p2, end))
}

/// A part has its `id` and `type`.
fn is_part(v: &Value) -> bool {
    v.get("id").is_some_and(Value::is_string) && v.get("type").is_some_and(Value::is_string)
}

/// A message's id for messages, else its number.
fn message_id(v: &Value, n: usize) -> String {
    v.get("info")
        .and_then(|i| i.get("id"))
        .and_then(Value::as_str)
        .map_or_else(|| format!("#{n}"), str::to_owned)
}

fn is_message(v: &Value) -> bool {
    v.get("info").is_some_and(Value::is_object)
}

/// Whether the text stops short of the export's closing brace (a cut file).
fn ends_cut(text: &str) -> bool {
    !text.trim_end().ends_with('}')
}

/// Where `"parts": [` opens after the info ending at `from` (its `[`).
fn parts_array(text: &str, from: usize) -> Option<usize> {
    let mut i = lenient::skip_ws(text, from);
    if at(text, i) == Some(b',') {
        i = lenient::skip_ws(text, i + 1);
    }
    let rest = text.get(i..)?.strip_prefix("\"parts\"")?;
    let j = lenient::skip_ws(text, text.len() - rest.len());
    if at(text, j) != Some(b':') {
        return None;
    }
    let j = lenient::skip_ws(text, j + 1);
    (at(text, j) == Some(b'[')).then_some(j)
}

/// Element starts of one array, sorted.
struct Starts {
    at: Vec<usize>,
    /// Kept to one column of a pretty-printed array (each one an element's start).
    aligned: bool,
}

impl Starts {
    fn after(&self, pos: usize) -> Option<usize> {
        let i = self.at.partition_point(|&s| s <= pos);
        self.at.get(i).copied()
    }
    fn is_start(&self, pos: usize) -> bool {
        self.at.binary_search(&pos).is_ok()
    }
}

/// Every `{ "info":` from `from` on; when the first stands alone at the start of its line (a
/// pretty-printed export), only those at its column.
fn message_starts(text: &str, from: usize) -> Starts {
    let b = text.as_bytes();
    let mut all = Vec::new();
    for (i, _) in text[from..].match_indices("\"info\"") {
        let q = from + i;
        let mut j = q;
        while j > from && b[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        if j == from || b[j - 1] != b'{' {
            continue;
        }
        let k = lenient::skip_ws(text, q + 6);
        if at(text, k) == Some(b':') {
            all.push(j - 1);
        }
    }
    let aligned = all.first().is_some_and(|&s| column(text, s).is_some());
    Starts {
        at: same_column(text, all),
        aligned,
    }
}

/// Lines holding only `{` at the column of the array's first element (from `from`, after its
/// `[`) when that element begins its own line (pretty-printed); none in a one-line array.
fn part_starts(text: &str, from: usize) -> Starts {
    // The column of the first element, even when its own `{` is the damaged byte.
    let Some(col) = column(text, lenient::skip_ws(text, from)) else {
        return Starts {
            at: Vec::new(),
            aligned: false,
        };
    };
    let b = text.as_bytes();
    let all = line_starts(text, from)
        .filter(|&p| b.get(p) == Some(&b'{') && matches!(b.get(p + 1), Some(b'\n' | b'\r')))
        .filter(|&p| column(text, p) == Some(col))
        .collect();
    Starts {
        at: all,
        aligned: true,
    }
}

/// The first non-blank byte of every line starting after `from`.
fn line_starts(text: &str, from: usize) -> impl Iterator<Item = usize> + '_ {
    let b = text.as_bytes();
    text[from..].match_indices('\n').map(move |(i, _)| {
        let mut p = from + i + 1;
        while p < b.len() && matches!(b[p], b' ' | b'\t') {
            p += 1;
        }
        p
    })
}

/// `starts` kept to the column of the first when it begins its line; all of them otherwise.
fn same_column(text: &str, starts: Vec<usize>) -> Vec<usize> {
    let Some(col) = starts.first().and_then(|&s| column(text, s)) else {
        return starts;
    };
    starts
        .into_iter()
        .filter(|&s| column(text, s) == Some(col))
        .collect()
}

/// The column of `pos` when only blanks precede it on its line.
fn column(text: &str, pos: usize) -> Option<usize> {
    let line = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    text[line..pos]
        .bytes()
        .all(|c| c == b' ' || c == b'\t')
        .then_some(pos - line)
}

fn at(text: &str, pos: usize) -> Option<u8> {
    text.as_bytes().get(pos).copied()
}

/// The line of byte `p`, from 1.
fn line_of(text: &str, p: usize) -> usize {
    text.as_bytes()[..p.min(text.len())]
        .iter()
        .filter(|&&c| c == b'\n')
        .count()
        + 1
}

/// A parser error in a value starting at `pos`, its line counted in the whole file.
fn error_at(text: &str, pos: usize, e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rsplit_once(" at line ") {
        Some((what, _)) => format!("{what} at line {}", line_of(text, pos) + e.line() - 1),
        None => s,
    }
}

/// `bytes 120–480 (lines 7–19)`.
fn span_words(text: &str, from: usize, to: usize) -> String {
    let line = |p: usize| line_of(text, p);
    let to = to.max(from);
    format!(
        "bytes {from}–{to} (lines {}–{})",
        line(from),
        line(to.saturating_sub(1).max(from))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pretty-printed export of `n` messages of two parts each, as `opencode export` writes.
    fn export(n: usize) -> String {
        let messages: Vec<Value> = (0..n)
            .map(|i| {
                serde_json::json!({
                    "info": {"id": format!("msg_{i}"), "role": "user", "sessionID": "ses_1"},
                    "parts": [
                        {"id": format!("prt_{i}a"), "type": "text", "text": "a {b} [c]"},
                        {"id": format!("prt_{i}b"), "type": "text", "text": "d"}
                    ]
                })
            })
            .collect();
        let v = serde_json::json!({"info": {"id": "ses_1"}, "messages": messages});
        serde_json::to_string_pretty(&v).unwrap()
    }

    fn ids(s: &Salvaged) -> Vec<String> {
        s.messages
            .iter()
            .map(|m| {
                let parts = m["parts"].as_array().map_or(0, Vec::len);
                format!("{}:{parts}", m["info"]["id"].as_str().unwrap_or("?"))
            })
            .collect()
    }

    #[test]
    fn stray_closing_brackets_between_messages_do_not_end_the_array() {
        let text = export(3).replacen("\n    {\n      \"info\"", "\n  ]\n    {\n      \"info\"", 2);
        let mut d = Diagnostics::new();
        let s = salvage(&text, 0, &mut d);
        assert_eq!(ids(&s), ["msg_0:2", "msg_1:2", "msg_2:2"]);
        assert!(!s.cut);
        // One before message #0, one before message #1.
        assert_eq!(d.count(DiagnosticKind::DamagedSpan), 2, "{d:?}");
    }

    #[test]
    fn a_flipped_quote_costs_one_part_and_says_where() {
        let text = export(3).replacen("\"prt_1a\"", "'prt_1a\"", 1);
        let mut d = Diagnostics::new();
        let s = salvage(&text, 0, &mut d);
        assert_eq!(ids(&s), ["msg_0:2", "msg_1:1", "msg_2:2"]);
        let said = &d.items()[0].example;
        assert!(
            said.contains("msg_1 part #0") && said.contains("lines "),
            "{said}"
        );
    }

    #[test]
    fn a_cut_inside_the_last_message_is_a_cut() {
        let text = export(3);
        let cut = &text[..text.find("prt_2b").unwrap()];
        let mut d = Diagnostics::new();
        let s = salvage(cut, 0, &mut d);
        assert!(s.cut);
        assert_eq!(ids(&s), ["msg_0:2", "msg_1:2"]);
    }
}
