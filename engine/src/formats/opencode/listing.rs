//! The session listing (`tierscope sessions`, the explorer's picker) from message rows alone.
//!
//! A listing line shows counts, recorded tokens and cost. Loading every message and part of every
//! session for that (what [`crate::trace::load::Source::list_sessions`] did) costs the whole store; here
//! each store gives its messages *without their parts* — a database one pass over `message`, each
//! `data` read for the few fields a line needs ([`super::json::listed_from_text`]), a JSON tree its
//! message files and not its part files — and the line is derived by the loader's rules (one
//! request per assistant message, message order, directory from `path.cwd`), so it equals the
//! line of a full load.
//!
//! That holds where the parts cannot change a line, which the era decides: from OpenCode 0.8 every
//! assistant message is one request, and a message's `tokens`/`cost` are its step's (OpenCode
//! copies the step's usage into the message: one `step-finish`, the same numbers). Sessions of
//! 0.1–0.7 (one request per `step-start`, usage in the parts), without a readable version, with
//! rows of the experimental v2 loop or parts stored inline, or with a row the quick read cannot
//! take exactly (damaged JSON the lenient parser repairs, a field of an odd type) are loaded in
//! full as before. `tests/it/listing.rs` checks the equality on every recording.
//!
//! A database's rows are read by [`super::listing_scan`] through the listing cache
//! ([`super::listing_cache`]), which keeps each session's [`Digest`] between listings.

use std::collections::{HashMap, HashSet};

use super::dialect::{parse_version, Era};
use crate::trace::model::{Message, SessionInfo, SourceKind, Usage};

/// What the listing reads of one message ([`super::json::listed_from_text`] from a row).
#[derive(Debug, Clone, PartialEq)]
pub struct ListedMessage {
    pub id: String,
    pub assistant: bool,
    /// `time.created`, else the row's `time_created` column (as the loader fills it in).
    pub time_created: i64,
    /// `tokens` (an assistant's usage; zero when it has none).
    pub tokens: Usage,
    pub cost: f64,
    /// `path.cwd` when it is a non-empty string.
    pub cwd: Option<String>,
}

/// What one line of the listing counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub messages: usize,
    pub requests: usize,
    pub tokens: Usage,
    pub cost: f64,
    /// The session's directory, or (when it stored none) the first message's `path.cwd`, as the
    /// loader fills it in.
    pub directory: String,
}

/// What a line counts of one session's messages from one database, in the database's order
/// (`time.created`, then id): what the listing cache ([`super::listing_cache`]) keeps instead of
/// the messages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Digest {
    pub messages: usize,
    pub requests: usize,
    pub tokens: Usage,
    /// Summed in message order (a float sum depends on it).
    pub cost: f64,
    /// The first message's `path.cwd` that has one (the directory when the session stored none).
    pub first_cwd: Option<String>,
}

/// Messages of many sessions read for the listing: by session id, and the sessions that must be
/// loaded in full (see the module docs). A session served by the listing cache has a
/// [`Digest`] instead of messages.
#[derive(Debug, Default)]
pub struct Rows {
    pub messages: HashMap<String, Vec<ListedMessage>>,
    pub digests: HashMap<String, Digest>,
    pub full_load: HashSet<String>,
}

impl Rows {
    /// Whether this database has rows (read or digested) of session `id`.
    pub fn has(&self, id: &str) -> bool {
        self.messages.contains_key(id) || self.digests.contains_key(id)
    }
}

/// Whether a session's line can come from its message rows: its release writes one request per
/// assistant message (OpenCode ≥ 0.8), read from the recorded version.
pub fn from_rows_possible(info: &SessionInfo) -> bool {
    info.version
        .as_deref()
        .and_then(parse_version)
        .is_some_and(|v| Era::of(v) > Era::MultiStep)
}

/// A message a JSON tree gave (parsed by the loader's rules) as the listing reads it; `None`
/// when it carries parts inline (the listing of its session is then a full load).
pub fn listed(m: &Message) -> Option<ListedMessage> {
    m.parts.is_empty().then(|| ListedMessage {
        id: m.id.clone(),
        assistant: m.is_assistant(),
        time_created: m.time_created,
        tokens: m.tokens.unwrap_or_default(),
        cost: m.cost,
        cwd: m.cwd().map(str::to_owned),
    })
}

/// The line of `info` from its messages (merged from every store, earlier store first), read
/// from `source`. A message without parts is one request whose usage is its `tokens` and `cost`
/// ([`crate::formats::opencode::steps::requests_of`]); costs are summed in request order, that is message
/// order, which [`crate::formats::opencode::derive::order_messages`] decides the same way here.
pub fn tally(info: &SessionInfo, mut messages: Vec<ListedMessage>, source: &SourceKind) -> Tally {
    let by_id = super::dialect::Dialect::detect(info.version.as_deref(), &Default::default())
        .orders_by_id()
        && !matches!(source, SourceKind::Database(_));
    if by_id {
        messages.sort_by(|a, b| a.id.cmp(&b.id));
    } else {
        sort_as_database(&mut messages);
    }
    tally_of_digest(info, sum(messages.iter()))
}

/// The line of `info` from the digest of its messages in one database (no other store has any).
pub fn tally_of_digest(info: &SessionInfo, d: Digest) -> Tally {
    let directory = if info.directory.is_empty() {
        d.first_cwd.unwrap_or_default()
    } else {
        info.directory.clone()
    };
    Tally {
        messages: d.messages,
        requests: d.requests,
        tokens: d.tokens,
        cost: d.cost,
        directory,
    }
}

/// The digest of one session's messages as [`tally`] counts them when they all come from one
/// database (its order: `time.created`, then id).
pub fn digest(messages: &[ListedMessage]) -> Digest {
    let mut refs: Vec<&ListedMessage> = messages.iter().collect();
    refs.sort_by(|a, b| database_order(a, b));
    sum(refs)
}

fn sort_as_database(messages: &mut [ListedMessage]) {
    messages.sort_by(database_order);
}

/// A database's message order: `time.created`, then id.
fn database_order(a: &ListedMessage, b: &ListedMessage) -> std::cmp::Ordering {
    (a.time_created, &a.id).cmp(&(b.time_created, &b.id))
}

/// Counts over messages already in order.
fn sum<'a>(messages: impl IntoIterator<Item = &'a ListedMessage>) -> Digest {
    let mut d = Digest::default();
    for m in messages {
        d.messages += 1;
        if d.first_cwd.is_none() {
            d.first_cwd.clone_from(&m.cwd);
        }
        if !m.assistant {
            continue;
        }
        d.requests += 1;
        d.tokens.add(&m.tokens);
        d.cost += m.cost;
    }
    d
}
