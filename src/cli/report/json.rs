//! The JSON reporter: pretty documents and compact lines through a formatter that escapes, on
//! top of what JSON requires (`"`, `\`, C0), DEL, the C1 controls and the bidi and separator
//! characters of [`tierscope_engine::text::is_unsafe_char`] as `\uXXXX`. The data is unchanged
//! (any JSON reader decodes the same string), but `cat`-ing the output, or a pager showing it,
//! cannot be steered by a recorded escape sequence.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};
use tierscope_engine::text::is_unsafe_char;

/// A [`Formatter`] that writes like `F` and escapes the characters above.
pub struct SafeFormatter<F>(F);

impl<F: Formatter> Formatter for SafeFormatter<F> {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Most text is printable ASCII, which holds nothing to escape: written as it is, so the
        // character-by-character scan below runs only on the rare text that needs it.
        if fragment.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return w.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            // C0 never gets here: serde_json escapes it before calling this.
            if is_unsafe_char(c) {
                w.write_all(&fragment.as_bytes()[start..i])?;
                write!(w, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        w.write_all(&fragment.as_bytes()[start..])
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// `v` as pretty JSON (two-space indent, as `serde_json::to_writer_pretty`) into `w`.
pub fn to_writer_pretty<W: Write, T: Serialize + ?Sized>(w: W, v: &T) -> serde_json::Result<()> {
    write_pretty_at(w, v, 0)
}

/// `v` as pretty JSON to be written as the value of an array or object at `depth` (the top level
/// is 0) of a pretty document: every line after the first indented by the levels above, so the
/// document reads byte for byte as if `v` had been written in place. Lets the parts of a large
/// document be rendered on several threads.
pub fn pretty_at_depth<T: Serialize + ?Sized>(
    v: &T,
    depth: usize,
) -> serde_json::Result<Box<serde_json::value::RawValue>> {
    let mut buf = Vec::with_capacity(4096);
    write_pretty_at(&mut buf, v, depth)?;
    // The serializer writes only valid UTF-8.
    serde_json::value::RawValue::from_string(String::from_utf8(buf).unwrap_or_default())
}

/// `v` as pretty JSON into `w`, its lines indented as at `depth` (see [`pretty_at_depth`]).
pub fn write_pretty_at<W: Write, T: Serialize + ?Sized>(
    w: W,
    v: &T,
    depth: usize,
) -> serde_json::Result<()> {
    // The formatter's indent level is private; opening `depth` arrays on a sink sets it, so the
    // lines come out indented as written, with no second pass over the text to pad them.
    let mut pretty = PrettyFormatter::new();
    for _ in 0..depth {
        pretty
            .begin_array(&mut io::sink())
            .map_err(serde_json::Error::io)?;
    }
    let mut ser = serde_json::Serializer::with_formatter(w, SafeFormatter(pretty));
    v.serialize(&mut ser)
}

/// `v` as compact JSON into `w` (one JSON Lines record, without its newline).
pub fn to_writer<W: Write, T: Serialize + ?Sized>(w: W, v: &T) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, SafeFormatter(CompactFormatter));
    v.serialize(&mut ser)
}

/// `v` as one compact, escaped line (no newline).
pub fn to_line<T: Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    let mut buf = Vec::with_capacity(256);
    to_writer(&mut buf, v)?;
    // The serializer writes only valid UTF-8.
    Ok(String::from_utf8(buf).unwrap_or_default())
}

/// [`write_document`], the bytes also going to `side` (the output cache's entry). True when the
/// whole document reached stdout (a reader that went away took part of it: not to be kept).
pub fn write_document_teed<T: Serialize + ?Sized>(
    v: &T,
    side: &mut crate::cli::output_cache::Entry,
) -> anyhow::Result<bool> {
    super::stdout::with_stdout(|out| {
        let mut tee = crate::cli::output_cache::Tee { out, entry: side };
        to_writer_pretty(&mut tee, v).map_err(io::Error::from)?;
        tee.write_all(b"\n")
    })?;
    Ok(!super::stdout::is_closed())
}

/// A document this binary wrote before (the output cache's), copied unchanged.
pub fn write_kept(hit: crate::cli::output_cache::Hit) -> anyhow::Result<()> {
    super::stdout::with_stdout(|out| hit.copy_to(out).map(drop))
}

/// `v` as pretty JSON to stdout, then a newline; streamed (a long replay's document is not
/// built in memory first). A closed pipe ends it quietly.
pub fn write_document<T: Serialize + ?Sized>(v: &T) -> anyhow::Result<()> {
    super::stdout::with_stdout(|out| {
        to_writer_pretty(&mut *out, v).map_err(io::Error::from)?;
        out.write_all(b"\n")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c1_and_bidi_are_escaped_and_decode_to_the_same_text() {
        let s = "a\u{1b}[2Jb\u{9b}c\u{202e}d\u{2066}e\u{7f}f\u{2028}g ü";
        let line = to_line(&serde_json::json!({ "t": s })).unwrap();
        assert_eq!(
            line,
            r#"{"t":"a\u001b[2Jb\u009bc\u202ed\u2066e\u007ff\u2028g ü"}"#
        );
        assert!(!line.chars().any(|c| c.is_control() || is_unsafe_char(c)));
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back["t"], s);
    }

    #[test]
    fn parts_rendered_apart_read_as_the_whole_document() {
        let doc = serde_json::json!({
            "a": [{"x": [1, {"y": "two\nlines ü \u{202e}"}], "z": {}}, {"w": []}],
            "b": {"c": [[3], {"d": null}, 4, [], "s"]}
        });
        let mut whole = Vec::new();
        to_writer_pretty(&mut whole, &doc).unwrap();
        // The same document with the elements of `a` (depth 2) and `b.c` (depth 3) pre-rendered.
        let a: Vec<_> = doc["a"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| pretty_at_depth(v, 2).unwrap())
            .collect();
        let c: Vec<_> = doc["b"]["c"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| pretty_at_depth(v, 3).unwrap())
            .collect();
        #[derive(Serialize)]
        struct B<'a> {
            c: &'a [Box<serde_json::value::RawValue>],
        }
        #[derive(Serialize)]
        struct Doc<'a> {
            a: &'a [Box<serde_json::value::RawValue>],
            b: B<'a>,
        }
        let mut parts = Vec::new();
        to_writer_pretty(
            &mut parts,
            &Doc {
                a: &a,
                b: B { c: &c },
            },
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(parts).unwrap(),
            String::from_utf8(whole).unwrap()
        );
    }

    #[test]
    fn plain_documents_are_byte_identical_to_serde_json() {
        let v = serde_json::json!({"a": [1, 2.5, {"b": null, "c": "x\ny"}], "d": {}, "e": []});
        let mut mine = Vec::new();
        to_writer_pretty(&mut mine, &v).unwrap();
        assert_eq!(mine, serde_json::to_vec_pretty(&v).unwrap());
        assert_eq!(to_line(&v).unwrap(), serde_json::to_string(&v).unwrap());
    }
}
