//! Compactions as the transcript records them: a `system` record `subtype: "compact_boundary"`
//! (its `compactMetadata`: trigger `auto` / `manual`, `preTokens`, `postTokens`, the preserved
//! segment kept verbatim), then a `user` record `isCompactSummary: true` holding the summary. The
//! records before the boundary stay in the file. The compaction call itself (what the model was
//! sent to write the summary) is not in the transcript.

use super::record::{Count, PreservedSegment, Record};
use super::transcript::Transcript;

/// What started a compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// The CLI's threshold was crossed.
    Auto,
    /// `/compact`.
    Manual,
    /// Another word, as written (or empty when none was).
    Other(String),
}

/// One compaction point.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// The boundary entry (index into [`Transcript::entries`]).
    pub entry: usize,
    pub uuid: Option<String>,
    pub trigger: Trigger,
    /// The CLI's estimate of the context before.
    pub pre_tokens: Option<u64>,
    /// Its estimate after (absent in older releases).
    pub post_tokens: Option<u64>,
    pub preserved: Option<PreservedSegment>,
    /// The uuids of the records kept verbatim after the summary.
    pub preserved_uuids: Vec<String>,
    /// The summary entry, when written.
    pub summary: Option<usize>,
    pub timestamp: Option<String>,
}

impl Compaction {
    /// The summary's text (untrusted).
    pub fn summary_text(&self, t: &Transcript) -> Option<String> {
        match &t.entries.get(self.summary?)?.record {
            Record::User(u) => Some(u.message.content.text()),
            _ => None,
        }
    }
}

/// Every compaction of `t`, in file order. A boundary's summary is the first `isCompactSummary`
/// record after it (before the next boundary) that names it as parent, else the first one.
pub fn compactions(t: &Transcript) -> Vec<Compaction> {
    let count = |c: &Option<Count>| c.map(|c| c.value);
    let mut out: Vec<Compaction> = Vec::new();
    for (i, e) in t.entries.iter().enumerate() {
        let Record::System(s) = &e.record else {
            continue;
        };
        if s.subtype.as_deref() != Some("compact_boundary") {
            continue;
        }
        let meta = s.compact_metadata.clone().unwrap_or_default();
        let trigger = match meta.trigger.as_deref() {
            Some("auto") => Trigger::Auto,
            Some("manual") => Trigger::Manual,
            other => Trigger::Other(other.unwrap_or_default().to_owned()),
        };
        let uuid = s.common.uuid.clone();
        let mut first = None;
        let mut named = None;
        for (j, f) in t.entries.iter().enumerate().skip(i + 1) {
            match &f.record {
                Record::System(n) if n.subtype.as_deref() == Some("compact_boundary") => break,
                Record::User(u) if u.is_compact_summary => {
                    first.get_or_insert(j);
                    if uuid.is_some() && u.common.parent_uuid == uuid {
                        named = Some(j);
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push(Compaction {
            entry: i,
            uuid,
            trigger,
            pre_tokens: count(&meta.pre_tokens),
            post_tokens: count(&meta.post_tokens),
            preserved: meta.preserved_segment.clone(),
            preserved_uuids: meta.preserved_messages.map(|m| m.uuids).unwrap_or_default(),
            summary: named.or(first),
            timestamp: s.common.timestamp.clone(),
        });
    }
    out
}
