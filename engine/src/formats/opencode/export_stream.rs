//! An intact export read in one pass: `info` kept as a document, each message turned into a
//! trace message as soon as its document is read and that document dropped. Read whole first
//! (a `Value` of the file, then the trace), a 400 MB export peaked at five times its size;
//! this way the session is held once, as the trace it becomes.
//!
//! Any error (damage, trailing garbage) gives up and leaves the file to the salvaging reader.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::export::read_entry;
use crate::trace::diagnostics::Diagnostics;
use crate::trace::model::Message;

/// What an intact export holds, read.
pub(super) struct Read {
    pub info: Option<Value>,
    pub messages: Vec<Message>,
    /// `diags` as given, then what reading the messages reported, in their order.
    pub diags: Diagnostics,
}

/// Read `body` (the export from its first `{`). The diagnostics start as `diags` and are only
/// returned with a whole read: a failed one reports nothing.
pub(super) fn read(body: &str, diags: &Diagnostics) -> Result<Read, serde_json::Error> {
    let mut out = Read {
        info: None,
        messages: Vec::new(),
        diags: diags.clone(),
    };
    let mut de = serde_json::Deserializer::from_str(body);
    de.deserialize_map(Export(&mut out))?;
    de.end()?;
    Ok(out)
}

/// The top-level object: `info` and `messages`; anything else is skipped.
struct Export<'r>(&'r mut Read);

impl<'de> Visitor<'de> for Export<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an opencode export object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "info" => self.0.info = Some(map.next_value()?),
                "messages" => {
                    // A later `messages` replaces an earlier one, as in a parsed document.
                    self.0.messages.clear();
                    map.next_value_seed(Messages(self.0))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `messages` value: an array read entry by entry (anything else is no messages).
struct Messages<'r>(&'r mut Read);

impl<'de> DeserializeSeed<'de> for Messages<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Messages<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the export's messages")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(entry) = seq.next_element::<Value>()? {
            if let Some(m) = read_entry(entry, &mut self.0.diags) {
                self.0.messages.push(m);
            }
        }
        Ok(())
    }

    // Not an array: no messages (a parsed document's `as_array` would give none either).
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On intact exports the one-pass reader reads what the element-by-element reader (the
    /// salvaging one, which parses each message on its own) reads, with the same reports.
    #[test]
    fn reads_what_the_element_by_element_reader_reads() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../sample-traces");
        for name in ["M1.json", "B1.json", "C1.json"] {
            let path = std::path::Path::new(dir).join(name);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let start = text
                .find('{')
                .unwrap_or_else(|| panic!("{name}: no object"));
            let read =
                read(&text[start..], &Diagnostics::new()).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut diags = Diagnostics::new();
            let walked = super::super::export_salvage::salvage(&text, start, &mut diags);
            assert!(!walked.cut, "{name}");
            let messages: Vec<Message> = walked
                .messages
                .into_iter()
                .filter_map(|m| read_entry(m, &mut diags))
                .collect();
            assert!(messages.len() > 10, "{name}: {}", messages.len());
            assert_eq!(read.info, walked.info, "{name}");
            assert!(read.messages == messages, "{name}: the messages differ");
            assert_eq!(read.diags, diags, "{name}");
        }
    }

    #[test]
    fn keys_besides_info_and_messages_are_skipped_and_a_non_array_is_no_messages() {
        let body = r#"{"version": [1, {"a": null}], "info": {"id": "ses_x"}, "messages": {"not": "a list"}, "extra": 3.5}"#;
        let r = read(body, &Diagnostics::new()).expect("reads");
        assert_eq!(r.info, Some(serde_json::json!({"id": "ses_x"})));
        assert!(r.messages.is_empty());
        assert!(read(
            r#"{"info": {"id": "ses_x"}, "messages": []} trailing"#,
            &Diagnostics::new()
        )
        .is_err());
    }
}
