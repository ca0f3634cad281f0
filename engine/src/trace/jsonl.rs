//! A JSON-lines file, line by line, with a bound on a line's length: a line longer than the
//! bound is skipped unread (its bytes are read and dropped, never held), so one huge or
//! runaway line cannot take the memory of a load or a listing, and the lines after it still
//! load.

use std::io::{BufRead, ErrorKind};
use std::ops::ControlFlow;

/// The longest line read by default. A record holding a pasted image or a big file (Claude Code, Codex)
/// can reach a few MB; a line beyond this is damage.
pub const DEFAULT_MAX_LINE: usize = 64 << 20;

/// One line of the file.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A line (without its `\n`, a `\r` before it kept). `terminated` is false for a last line
    /// the file ends in without a newline: the writer may have been cut off mid-record.
    Text {
        number: usize,
        bytes: &'a [u8],
        terminated: bool,
    },
    /// A line longer than the bound, skipped: its length in bytes.
    Oversized { number: usize, len: u64 },
}

/// Call `f` with every line of `r` (1-based numbers). Stops at the first read error.
pub fn for_each_line<R: BufRead>(
    r: R,
    max_line: usize,
    mut f: impl FnMut(Line<'_>),
) -> std::io::Result<()> {
    lines_until(r, max_line, |l| {
        f(l);
        ControlFlow::Continue(())
    })
}

/// [`for_each_line`] until `f` breaks: nothing after that line is read.
pub fn lines_until<R: BufRead>(
    mut r: R,
    max_line: usize,
    mut f: impl FnMut(Line<'_>) -> ControlFlow<()>,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let mut number = 0usize;
    // Bytes of the current line beyond the bound; `None` while the line fits.
    let mut skipped: Option<u64> = None;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            number += 1;
            let _ = match skipped {
                Some(len) => f(Line::Oversized { number, len }),
                None if !buf.is_empty() => f(Line::Text {
                    number,
                    bytes: &buf,
                    terminated: false,
                }),
                None => ControlFlow::Continue(()),
            };
            return Ok(());
        }
        let (take, end_of_line) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        match &mut skipped {
            Some(len) => *len += take as u64,
            None if buf.len() + take > max_line => {
                skipped = Some((buf.len() + take) as u64);
                buf = Vec::new();
            }
            None => buf.extend_from_slice(&chunk[..take]),
        }
        r.consume(if end_of_line { take + 1 } else { take });
        if end_of_line {
            number += 1;
            let flow = match skipped.take() {
                Some(len) => f(Line::Oversized { number, len }),
                None => f(Line::Text {
                    number,
                    bytes: &buf,
                    terminated: true,
                }),
            };
            if flow.is_break() {
                return Ok(());
            }
            buf.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut out = Vec::new();
        // A tiny buffer, so lines cross chunk boundaries.
        let r = std::io::BufReader::with_capacity(3, input);
        for_each_line(r, max, |l| {
            out.push(match l {
                Line::Text {
                    number,
                    bytes,
                    terminated,
                } => format!("{number}:{}:{terminated}", String::from_utf8_lossy(bytes)),
                Line::Oversized { number, len } => format!("{number}:oversized {len}"),
            })
        })
        .expect("read");
        out
    }

    #[test]
    fn lines_are_numbered_and_a_cut_last_line_is_marked() {
        assert_eq!(
            lines(b"ab\n\ncdef\ngh", 100),
            ["1:ab:true", "2::true", "3:cdef:true", "4:gh:false"]
        );
        assert_eq!(lines(b"ab\n", 100), ["1:ab:true"]);
        assert!(lines(b"", 100).is_empty());
    }

    #[test]
    fn reading_stops_where_the_caller_breaks() {
        let mut seen = Vec::new();
        lines_until(&b"a\nb\nc\n"[..], 10, |l| {
            if let Line::Text { number, .. } = l {
                seen.push(number);
            }
            if seen.len() == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .expect("read");
        assert_eq!(seen, [1, 2]);
    }

    #[test]
    fn a_line_over_the_bound_is_skipped_and_the_next_one_read() {
        assert_eq!(
            lines(b"abc\n0123456789\nxy\n0123456789", 5),
            [
                "1:abc:true",
                "2:oversized 10",
                "3:xy:true",
                "4:oversized 10"
            ]
        );
        // Exactly at the bound fits.
        assert_eq!(lines(b"12345\n", 5), ["1:12345:true"]);
    }
}
