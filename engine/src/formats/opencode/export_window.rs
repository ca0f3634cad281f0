//! An intact export read from its file window by window: each message is parsed from the
//! window (read further when the message goes past it), turned into a trace message, and the
//! window moves on. Read whole, the file's bytes and the trace built from them were alive
//! together (1.95× a 400 MB export); this way the read holds the trace and a window.
//!
//! Only the plain case is read here: one object after an optional preamble, valid UTF-8, every
//! value well formed. Anything else (a share feed, damage, invalid UTF-8, trailing bytes) gives
//! `None`, and the caller reads the file whole, where the salvaging reader takes over.

use std::io::Read;

use serde::de::IgnoredAny;
use serde_json::Value;

use super::export::read_entry;
use super::export_stream::Read as Intact;
use crate::trace::diagnostics::Diagnostics;

/// Bytes asked of the file at a time.
const STEP: usize = 1 << 20;

/// Read `file` as an intact export. `Ok(None)`: not one this reader takes (the caller reads it
/// whole); `Err`: the file could not be read.
pub(super) fn read(file: impl Read) -> std::io::Result<Option<Intact>> {
    let mut w = Window {
        src: file,
        buf: Vec::with_capacity(STEP),
        pos: 0,
        eof: false,
    };
    let mut out = Intact {
        info: None,
        messages: Vec::new(),
        diags: Diagnostics::new(),
    };
    Ok(read_object(&mut w, &mut out)?.map(|()| out))
}

/// The file from its start to its end: the preamble, the object, nothing but whitespace after.
fn read_object(w: &mut Window<impl Read>, out: &mut Intact) -> std::io::Result<Option<()>> {
    // The preamble: a `[` before the first `{` is a share feed; either way it must be UTF-8.
    loop {
        let rest = &w.buf[w.pos..];
        if let Some(i) = rest.iter().position(|&b| b == b'{' || b == b'[') {
            if rest[i] == b'[' || std::str::from_utf8(&rest[..i]).is_err() {
                return Ok(None);
            }
            w.pos += i + 1;
            break;
        }
        if std::str::from_utf8(rest).is_err() {
            return Ok(None);
        }
        w.pos = w.buf.len();
        if !w.more(STEP)? {
            return Ok(None);
        }
    }
    if w.skip_ws()? == Some(b'}') {
        w.pos += 1;
        return finish(w);
    }
    loop {
        if w.skip_ws()? != Some(b'"') {
            return Ok(None);
        }
        let Some(key) = parse_value::<String>(w)? else {
            return Ok(None);
        };
        if w.skip_ws()? != Some(b':') {
            return Ok(None);
        }
        w.pos += 1;
        let first = w.skip_ws()?;
        let read = match (key.as_str(), first) {
            // A later `messages` replaces an earlier one, as in a parsed document.
            ("messages", Some(b'[')) => {
                out.messages.clear();
                read_messages(w, out)?
            }
            ("messages", _) => {
                out.messages.clear();
                skip_value(w)?
            }
            ("info", _) => match parse_value::<Value>(w)? {
                Some(v) => {
                    out.info = Some(v);
                    Some(())
                }
                None => None,
            },
            _ => skip_value(w)?,
        };
        if read.is_none() {
            return Ok(None);
        }
        match w.skip_ws()? {
            Some(b',') => w.pos += 1,
            Some(b'}') => {
                w.pos += 1;
                return finish(w);
            }
            _ => return Ok(None),
        }
    }
}

/// After the object: whitespace only.
fn finish(w: &mut Window<impl Read>) -> std::io::Result<Option<()>> {
    Ok(w.skip_ws()?.is_none().then_some(()))
}

/// The `messages` array from its `[`, entry by entry.
fn read_messages(w: &mut Window<impl Read>, out: &mut Intact) -> std::io::Result<Option<()>> {
    w.pos += 1;
    if w.skip_ws()? == Some(b']') {
        w.pos += 1;
        return Ok(Some(()));
    }
    loop {
        w.skip_ws()?;
        let Some(entry) = parse_value::<Value>(w)? else {
            return Ok(None);
        };
        if let Some(m) = read_entry(entry, &mut out.diags) {
            out.messages.push(m);
        }
        match w.skip_ws()? {
            Some(b',') => w.pos += 1,
            Some(b']') => {
                w.pos += 1;
                return Ok(Some(()));
            }
            _ => return Ok(None),
        }
    }
}

/// Check and step over a value nothing reads.
fn skip_value(w: &mut Window<impl Read>) -> std::io::Result<Option<()>> {
    Ok(parse_value::<IgnoredAny>(w)?.map(|_| ()))
}

/// The value at the window's position, parsed from the window; `None` when it is damaged or
/// the file ends inside it. A value that runs past the window is parsed again once the window
/// holds more of it (as much again as it held, so a large one costs about twice its parse).
fn parse_value<T: serde::de::DeserializeOwned>(
    w: &mut Window<impl Read>,
) -> std::io::Result<Option<T>> {
    let mut looked_past_error = false;
    loop {
        let mut values = serde_json::Deserializer::from_slice(&w.buf[w.pos..]).into_iter::<T>();
        let read = values.next();
        let end = w.pos + values.byte_offset();
        match read {
            // A number or literal that reaches the window's end may go on past it.
            Some(Ok(v)) if end < w.buf.len() || w.eof => {
                w.pos = end;
                return Ok(Some(v));
            }
            // A syntax error may be a number the window's end cut ("-1." of "-1.5"): one more
            // step tells; an error still there is damage (not read on to the end of the file).
            Some(Err(e)) if !e.is_eof() => {
                if looked_past_error || w.eof {
                    return Ok(None);
                }
                looked_past_error = true;
                if !w.more(STEP)? {
                    return Ok(None);
                }
            }
            _ => {
                looked_past_error = false;
                let held = w.buf.len() - w.pos;
                if !w.more(held.max(STEP))? {
                    return Ok(None);
                }
            }
        }
    }
}

/// The file's unread bytes: `buf[pos..]`, refilled as the reading needs.
struct Window<R> {
    src: R,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
}

impl<R: Read> Window<R> {
    /// Read up to `n` more bytes, first dropping the bytes before `pos`. False at the end of
    /// the file.
    fn more(&mut self, n: usize) -> std::io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let len = self.buf.len();
        self.buf.resize(len + n, 0);
        let got = loop {
            match self.src.read(&mut self.buf[len..]) {
                Ok(got) => break got,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(len + got);
        self.eof = got == 0;
        Ok(got > 0)
    }

    /// Step over whitespace; the byte after it, `None` at the end of the file.
    fn skip_ws(&mut self) -> std::io::Result<Option<u8>> {
        loop {
            while let Some(&b) = self.buf.get(self.pos) {
                if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if !self.more(STEP)? {
                return Ok(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out a few bytes at a time, so every boundary falls inside a window.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(self.0.len()).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn windowed(text: &str, step: usize) -> Option<Intact> {
        read(Trickle(text.as_bytes(), step)).expect("reads")
    }

    /// On the intact recordings it reads what the one-pass reader reads from the whole text,
    /// with the same reports, whatever the size of the reads.
    #[test]
    fn reads_what_the_whole_text_reader_reads() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../sample-traces");
        for name in ["M1.json", "B1.json", "C1.json"] {
            let path = std::path::Path::new(dir).join(name);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let start = text
                .find('{')
                .unwrap_or_else(|| panic!("{name}: no object"));
            let whole = super::super::export_stream::read(&text[start..], &Diagnostics::new())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(whole.messages.len() > 10, "{name}");
            for step in [61, 4096, STEP] {
                let w = windowed(&text, step).unwrap_or_else(|| panic!("{name}: not read"));
                assert_eq!(w.info, whole.info, "{name} {step}");
                assert!(
                    w.messages == whole.messages,
                    "{name} {step}: messages differ"
                );
                assert_eq!(w.diags, whole.diags, "{name} {step}");
            }
        }
    }

    #[test]
    fn the_plain_shapes_are_read_and_every_other_is_left_to_the_whole_reader() {
        let r = windowed(
            "Exporting session: x\n{\"version\": [1, {\"a\": \"}]\\\\\"}], \"n\": -1.5e3, \"t\": true, \"info\": {\"id\": \"ses_x\"}, \"messages\": {\"not\": \"a list\"}}\n",
            3,
        )
        .expect("read");
        assert_eq!(r.info, Some(serde_json::json!({"id": "ses_x"})));
        assert!(r.messages.is_empty());
        assert!(windowed("{}", 1).is_some_and(|r| r.info.is_none()));
        assert!(windowed(r#"{"info": 5}"#, 1).is_some_and(|r| r.info == Some(5.into())));
        for left in [
            // a share feed
            r#"[{"type": "session", "data": {"id": "ses_x"}}]"#,
            // trailing bytes, a trailing comma, a cut, a flipped quote, no object
            r#"{"info": {"id": "ses_x"}, "messages": []} trailing"#,
            r#"{"info": {"id": "ses_x"},}"#,
            r#"{"info": {"id": "ses_x"}, "messages": [{"info": {"#,
            r#"{"info": {"id": "ses_x}, "messages": []}"#,
            r#"{"info": {"id": "ses_x"}, "messages": [1 2]}"#,
            "no object here",
            "",
        ] {
            assert!(windowed(left, 2).is_none(), "{left}");
        }
        // invalid UTF-8, in a value and in the preamble
        let mut bad = br#"{"info": {"id": "ses_"#.to_vec();
        bad.extend([0xff, b'"', b'}', b'}']);
        assert!(read(Trickle(&bad, 4)).expect("reads").is_none());
        assert!(read(Trickle(&[0xff, b'{', b'}'], 1))
            .expect("reads")
            .is_none());
    }

    /// Damage near the start of a large export is given up a step past it, not after reading
    /// the rest of the file into the window (the whole reader reads it next).
    #[test]
    fn damage_is_given_up_without_reading_on_to_the_end() {
        let filler = format!(r#"{{"info": {{"note": "{}"}}}}"#, "x".repeat(1000));
        let mut text = String::from(r#"{"info": {"id": "ses_x"}, "messages": [{"info": nope}"#);
        while text.len() < 8 * STEP {
            text.push_str(", ");
            text.push_str(&filler);
        }
        text.push_str("]}");
        let mut src = text.as_bytes();
        let before = src.len();
        assert!(read(&mut src).expect("reads").is_none());
        let taken = before - src.len();
        assert!(taken <= 2 * STEP, "read {taken} of {before} bytes");
    }
}
