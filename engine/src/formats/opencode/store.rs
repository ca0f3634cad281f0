//! OpenCode's sessions as a [`SessionStore`]: a database, a data dir (its databases and JSON
//! storage trees, merged by id, the database winning), a storage tree, or an export file (which
//! brings its `<name>.childN.json` siblings as children).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::db::Database;
use super::derive::build_trace;
use super::discover::Input;
use super::export::{load_export, parse_export};
use super::listing;
use super::listing_cache;
use super::listing_scan;
use super::storage::Storage;
use crate::trace::adapter::{ListingCache, SessionParts, SessionStore};
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::error::LoadError;
use crate::trace::load::{resolve, SessionSummary};
use crate::trace::model::{Message, SessionInfo, SourceKind, Trace};

/// The export embedded as the sample session when no agent data exists.
pub const BUNDLED_SAMPLE_NAME: &str = "sample-traces/M1.json";
const BUNDLED_SAMPLE: &[u8] = include_bytes!("../../../../sample-traces/M1.json");

/// An opened OpenCode source. See the module docs.
#[derive(Debug)]
pub struct OpenCodeStore {
    inner: Inner,
    describe: String,
    diagnostics: Diagnostics,
}

#[derive(Debug)]
enum Inner {
    Store(Store),
    Export(Box<Exports>),
}

/// Databases and JSON trees, merged by id (earlier wins: databases before trees).
#[derive(Debug)]
struct Store {
    dbs: Vec<Database>,
    trees: Vec<Storage>,
    /// Merged session infos, db first.
    sessions: Vec<SessionInfo>,
    /// Index into `sessions` by id.
    by_id: HashMap<String, usize>,
    /// Session ids found in a database.
    in_db: HashSet<String>,
    /// What was read of each database at open: its orphan messages, and its session rows for
    /// the listing cache (see [`listing_cache::open`]).
    opened: Vec<listing_cache::Opened>,
}

/// A listing line's numbers before the line: a cached digest, or messages from the stores.
enum Quick {
    Digest(listing::Digest),
    Messages(Vec<listing::ListedMessage>, SourceKind),
}

#[derive(Debug)]
struct Exports {
    main: Trace,
    /// `<name>.childN.json` siblings (none for the bundled sample).
    child_files: Vec<PathBuf>,
}

/// The sample session compiled into the binary.
pub fn open_bundled() -> Result<OpenCodeStore, LoadError> {
    let main = parse_export(BUNDLED_SAMPLE, Path::new(BUNDLED_SAMPLE_NAME))?;
    Ok(OpenCodeStore {
        inner: Inner::Export(Box::new(Exports {
            main,
            child_files: Vec::new(),
        })),
        describe: format!("bundled sample session ({BUNDLED_SAMPLE_NAME}; no OpenCode data found)"),
        diagnostics: Diagnostics::new(),
    })
}

/// Open what [`super::discover::classify`] recognised.
pub fn open_input(input: Input) -> Result<OpenCodeStore, LoadError> {
    match input {
        Input::Export(path) => {
            let main = load_export(&path)?;
            let child_files = export_children(&path);
            Ok(OpenCodeStore {
                describe: format!("export {}", path.display()),
                inner: Inner::Export(Box::new(Exports { main, child_files })),
                diagnostics: Diagnostics::new(),
            })
        }
        Input::Database(path) => {
            let db = Database::open(&path)?;
            let describe = format!(
                "database {}{}",
                path.display(),
                if db.is_copy() {
                    " (read through a temporary copy)"
                } else {
                    ""
                }
            );
            Store::into_source(vec![db], Vec::new(), describe, &path)
        }
        Input::Storage(tree) => {
            let describe = format!("JSON storage {}", tree.root().display());
            let root = tree.root().to_owned();
            Store::into_source(Vec::new(), vec![tree], describe, &root)
        }
        Input::DataDir { root, dbs, trees } => {
            let mut opened = Vec::new();
            for p in &dbs {
                opened.push(Database::open(p)?);
            }
            let mut parts: Vec<String> = dbs
                .iter()
                .map(|p| {
                    p.file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
                })
                .collect();
            parts.extend(trees.iter().map(|t| {
                t.root()
                    .strip_prefix(&root)
                    .unwrap_or(t.root())
                    .display()
                    .to_string()
            }));
            let copied = if opened.iter().any(Database::is_copy) {
                "; read through a temporary copy"
            } else {
                ""
            };
            let describe = format!(
                "OpenCode data dir {} ({}{copied})",
                root.display(),
                parts.join(", ")
            );
            Store::into_source(opened, trees, describe, &root)
        }
    }
}

/// `<stem>.child<N>.json` files beside an export, by N.
pub(crate) fn export_children(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(stem)) = (path.parent(), path.file_stem().and_then(|s| s.to_str())) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{stem}.child");
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_str()?.to_owned();
                    let n = name.strip_prefix(&prefix)?.strip_suffix(".json")?;
                    Some((n.parse().ok()?, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

impl Store {
    fn into_source(
        dbs: Vec<Database>,
        trees: Vec<Storage>,
        describe: String,
        root: &Path,
    ) -> Result<OpenCodeStore, LoadError> {
        let mut diagnostics = Diagnostics::new();
        let mut sessions = Vec::new();
        let mut seen = HashSet::new();
        let mut in_db = HashSet::new();
        let mut opened = Vec::new();
        for db in &dbs {
            db.report_session_columns(&mut diagnostics);
            let mut o = listing_cache::open(db, &ListingCache::Default, &mut diagnostics)?;
            db.report_orphans(&o.orphans, &mut diagnostics);
            for s in std::mem::take(&mut o.sessions) {
                in_db.insert(s.id.clone());
                if seen.insert(s.id.clone()) {
                    sessions.push(s);
                }
            }
            opened.push(o);
        }
        for t in &trees {
            for s in t.sessions(&mut diagnostics) {
                if seen.insert(s.id.clone()) {
                    sessions.push(s);
                }
            }
        }
        if sessions.is_empty() && dbs.iter().all(|d| !d.has_sessions()) && trees.is_empty() {
            return Err(LoadError::NoData(root.to_owned()));
        }
        Ok(OpenCodeStore {
            inner: Inner::Store(Store {
                dbs,
                trees,
                by_id: sessions
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (s.id.clone(), i))
                    .collect(),
                sessions,
                in_db,
                opened,
            }),
            describe,
            diagnostics,
        })
    }

    /// The most recently updated main session, else the most recently updated session.
    fn newest(&self) -> Option<&SessionInfo> {
        let newest = |main_only: bool| {
            self.sessions
                .iter()
                .filter(|s| !main_only || s.parent_id.is_none())
                .max_by(|a, b| {
                    a.time_updated
                        .cmp(&b.time_updated)
                        .then_with(|| b.id.cmp(&a.id))
                })
        };
        newest(true).or_else(|| newest(false))
    }

    fn info(&self, id: &str) -> Option<&SessionInfo> {
        self.by_id.get(id).map(|&i| &self.sessions[i])
    }

    fn load(&self, info: &SessionInfo, check_cycles: bool) -> Result<Trace, LoadError> {
        let mut diags = Diagnostics::new();
        let mut messages: Vec<Message> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut from_db = false;
        let mut from_tree = false;
        // One source: its messages are distinct (a database's are by id), nothing to merge.
        let one_source = self.dbs.len() == 1 && self.trees.is_empty();
        for db in &self.dbs {
            db.report_session_columns(&mut diags);
            let ms = db.messages(&info.id, &mut diags)?;
            from_db |= !ms.is_empty();
            if one_source {
                messages = ms;
            } else {
                for m in ms {
                    merge_message(&mut messages, &mut index, m, None);
                }
            }
        }
        let have_db = !self.dbs.is_empty();
        for t in &self.trees {
            for m in t.messages(&info.id, &mut diags) {
                from_tree = true;
                let merged = if have_db { Some(&mut diags) } else { None };
                merge_message(&mut messages, &mut index, m, merged);
            }
        }
        if !self.in_db.contains(&info.id) && have_db {
            diags.push(
                DiagnosticKind::MergedFromStorage,
                format!("session {} is only in the JSON storage", info.id),
            );
        }
        if check_cycles {
            self.check_cycle(&info.id, &mut diags);
        }
        let source = self.source_kind(from_db, from_tree);
        // The vectors grew by doubling; a large session holds them until exit, so the slack
        // would stay allocated for the whole command.
        messages.shrink_to_fit();
        for m in &mut messages {
            m.parts.shrink_to_fit();
        }
        Ok(build_trace(info.clone(), messages, source, diags))
    }

    /// Where a session's messages came from (it decides their order, see `derive`).
    fn source_kind(&self, from_db: bool, from_tree: bool) -> SourceKind {
        if from_db && from_tree {
            SourceKind::DatabaseAndFileTree(self.describe_paths())
        } else if let (Some(db), false) = (self.dbs.first(), from_tree) {
            SourceKind::Database(db.path().display().to_string())
        } else {
            SourceKind::FileTree(
                self.trees
                    .first()
                    .map_or_else(String::new, |t| t.root().display().to_string()),
            )
        }
    }

    /// The listing (see [`listing`]): each line from the sessions' message rows where the era
    /// allows it (through the listing cache `cache`), else from a full load; `None` loads every
    /// session (the reference the quick listing is checked against).
    fn list(&self, cache: Option<&ListingCache>) -> Result<Vec<SessionSummary>, LoadError> {
        // One pass per database; a database the pass cannot read sends everything to full loads.
        let mut rows: Option<Vec<listing::Rows>> = match cache {
            None => None,
            Some(cache) => self
                .dbs
                .iter()
                .zip(&self.opened)
                .map(|(db, opened)| listing_cache::rows(db, cache, opened))
                .collect::<Result<Option<Vec<_>>, _>>()?,
        };
        let kids = self.children_by_parent();
        let mut out = Vec::with_capacity(self.sessions.len());
        for info in &self.sessions {
            let quick = rows
                .as_mut()
                .and_then(|rows| self.listing_messages(info, rows));
            let t = match quick {
                Some(Quick::Digest(d)) => listing::tally_of_digest(info, d),
                Some(Quick::Messages(messages, source)) => listing::tally(info, messages, &source),
                None => {
                    let t = self.load(info, false)?;
                    let children = self.child_ids(&t);
                    out.push(SessionSummary::of(&t, children));
                    continue;
                }
            };
            out.push(SessionSummary {
                agent: "opencode",
                id: info.id.clone(),
                title: info.title.clone(),
                directory: t.directory,
                parent_id: info.parent_id.clone(),
                created: info.time_created,
                updated: info.time_updated,
                messages: t.messages,
                requests: t.requests,
                tokens: t.tokens,
                cost: t.cost,
                children: self.listed_children(info, &kids),
            });
        }
        Ok(out)
    }

    /// The messages (without parts) of `info` from every store, merged by id as [`Store::load`]
    /// merges them (an earlier store wins), and their source; or the cached digest when one
    /// database alone has the session; `None` when the session must be loaded in full.
    fn listing_messages(&self, info: &SessionInfo, rows: &mut [listing::Rows]) -> Option<Quick> {
        if !listing::from_rows_possible(info) || rows.iter().any(|r| r.full_load.contains(&info.id))
        {
            return None;
        }
        let mut scratch = Diagnostics::new();
        let mut tree_messages = Vec::new();
        for t in &self.trees {
            for m in t.listing_messages(&info.id, &mut scratch) {
                tree_messages.push(listing::listed(&m)?);
            }
        }
        let holders = rows.iter().filter(|r| r.has(&info.id)).count();
        if tree_messages.is_empty() && holders <= 1 {
            if let Some(d) = rows.iter_mut().find_map(|r| r.digests.remove(&info.id)) {
                return Some(Quick::Digest(d));
            }
        }
        let mut messages = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        let (mut from_db, mut from_tree) = (false, false);
        for (db, r) in self.dbs.iter().zip(rows.iter_mut()) {
            let mine = match r.digests.remove(&info.id) {
                // The digest cannot be merged with another store's messages: read them again.
                Some(_) => {
                    let mut fresh = listing_scan::read_sessions(db, &[&info.id], &[])
                        .ok()??
                        .rows;
                    if fresh.full_load.contains(&info.id) {
                        return None;
                    }
                    fresh.messages.remove(&info.id).unwrap_or_default()
                }
                None => r.messages.remove(&info.id).unwrap_or_default(),
            };
            for m in mine {
                from_db = true;
                if seen.insert(m.id.clone()) {
                    messages.push(m);
                }
            }
        }
        for m in tree_messages {
            from_tree = true;
            if seen.insert(m.id.clone()) {
                messages.push(m);
            }
        }
        Some(Quick::Messages(
            messages,
            self.source_kind(from_db, from_tree),
        ))
    }

    /// Sessions by the parent they name, for [`Store::listed_children`].
    fn children_by_parent(&self) -> HashMap<&str, Vec<&SessionInfo>> {
        let mut kids: HashMap<&str, Vec<&SessionInfo>> = HashMap::new();
        for s in &self.sessions {
            if let Some(p) = s.parent_id.as_deref() {
                kids.entry(p).or_default().push(s);
            }
        }
        kids
    }

    /// The children of a session listed from its rows: the sessions naming it as parent, oldest
    /// first (the order its `task` calls created them in), never itself or one of its ancestors.
    /// The `task` links themselves are in the parts, which that listing does not read; a loaded
    /// session has them ([`Source::child_ids`]).
    fn listed_children(
        &self,
        info: &SessionInfo,
        by_parent: &HashMap<&str, Vec<&SessionInfo>>,
    ) -> Vec<String> {
        let Some(named) = by_parent.get(info.id.as_str()) else {
            return Vec::new();
        };
        let exclude = self.ancestors(&info.id);
        let mut kids: Vec<&SessionInfo> = named
            .iter()
            .copied()
            .filter(|s| !exclude.contains(&s.id))
            .collect();
        kids.sort_by(|a, b| (a.time_created, &a.id).cmp(&(b.time_created, &b.id)));
        kids.into_iter().map(|s| s.id.clone()).collect()
    }

    fn describe_paths(&self) -> String {
        let mut v: Vec<String> = self
            .dbs
            .iter()
            .map(|d| d.path().display().to_string())
            .collect();
        v.extend(self.trees.iter().map(|t| t.root().display().to_string()));
        v.join(" + ")
    }

    /// Walk the parent chain; a chain that comes back on itself is reported, never followed twice.
    fn check_cycle(&self, id: &str, diags: &mut Diagnostics) {
        let mut seen = HashSet::new();
        let mut cur = Some(id.to_owned());
        while let Some(c) = cur {
            if !seen.insert(c.clone()) {
                diags.push(
                    DiagnosticKind::CyclicParent,
                    format!("session {id}: parent chain loops back to {c}; not followed"),
                );
                return;
            }
            cur = self.info(&c).and_then(|s| s.parent_id.clone());
        }
    }

    /// Ids on the parent chain of `id` (itself included), stopping at a loop.
    fn ancestors(&self, id: &str) -> HashSet<String> {
        let mut seen = HashSet::new();
        let mut cur = Some(id.to_owned());
        while let Some(c) = cur {
            if !seen.insert(c.clone()) {
                break;
            }
            cur = self.info(&c).and_then(|s| s.parent_id.clone());
        }
        seen
    }

    /// Children of a session: the sessions its `task` calls spawned, then any other session that
    /// names it as parent; never itself or one of its ancestors (a cyclic parent chain).
    fn child_ids(&self, trace: &Trace) -> Vec<String> {
        let exclude = self.ancestors(&trace.session.id);
        let mut out: Vec<String> = Vec::new();
        let linked = trace.children.iter().map(|c| c.session_id.clone());
        let by_parent = self
            .sessions
            .iter()
            .filter(|s| s.parent_id.as_deref() == Some(trace.session.id.as_str()))
            .map(|s| s.id.clone());
        for id in linked.chain(by_parent) {
            if !exclude.contains(&id) && !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }
}

/// Add `m` unless a message with its id is already there: an earlier source (the database) wins
/// with its parts. Only when the earlier copy has no parts at all (a JSON→SQLite migration that
/// stopped between messages and parts) are the later source's parts taken. `merged` counts what
/// only the later (storage) source had.
fn merge_message(
    messages: &mut Vec<Message>,
    index: &mut HashMap<String, usize>,
    m: Message,
    merged: Option<&mut Diagnostics>,
) {
    match index.get(&m.id) {
        None => {
            if let Some(d) = merged {
                d.push(
                    DiagnosticKind::MergedFromStorage,
                    format!("message {} only in the JSON storage; added", m.id),
                );
            }
            index.insert(m.id.clone(), messages.len());
            messages.push(m);
        }
        Some(&i) => {
            if messages[i].parts.is_empty() && !m.parts.is_empty() {
                if let Some(d) = merged {
                    d.push(
                        DiagnosticKind::MergedFromStorage,
                        format!("parts of message {} only in the JSON storage; added", m.id),
                    );
                }
                messages[i].parts = m.parts;
            }
        }
    }
}

impl SessionStore for OpenCodeStore {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    fn is_bundled(&self) -> bool {
        matches!(&self.inner, Inner::Export(e) if e.main.source == SourceKind::Export(BUNDLED_SAMPLE_NAME.into()))
    }

    /// A database or JSON tree is listed from its message rows (one pass; no part is read) where
    /// that gives the numbers a full load gives, see [`listing`]; a database through the listing
    /// cache.
    fn list(&self, cache: Option<&ListingCache>) -> Result<Vec<SessionSummary>, LoadError> {
        let out = match &self.inner {
            Inner::Store(store) => store.list(cache)?,
            Inner::Export(e) => {
                let kids: Vec<Trace> = e
                    .child_files
                    .iter()
                    .filter_map(|p| load_export(p).ok())
                    .collect();
                // A resumed sub-agent is one session behind several `task` calls.
                let mut ids: Vec<String> = Vec::new();
                for c in &e.main.children {
                    if !ids.contains(&c.session_id) {
                        ids.push(c.session_id.clone());
                    }
                }
                for k in &kids {
                    if !ids.contains(&k.session.id) && k.session.id != e.main.session.id {
                        ids.push(k.session.id.clone());
                    }
                }
                let mut out = vec![SessionSummary::of(&e.main, ids)];
                out.extend(kids.iter().map(|k| SessionSummary::of(k, Vec::new())));
                out
            }
        };
        Ok(out)
    }

    /// The most recently updated main session (one without a parent), else the most recently
    /// updated session; an export: its main session.
    fn default_session(&self) -> Option<(i64, bool, String)> {
        match &self.inner {
            Inner::Store(store) => store
                .newest()
                .map(|s| (s.time_updated, s.parent_id.is_none(), s.id.clone())),
            Inner::Export(e) => {
                Some((e.main.session.time_updated, true, e.main.session.id.clone()))
            }
        }
    }

    fn has_session(&self, id: &str) -> bool {
        match &self.inner {
            Inner::Store(store) => store.by_id.contains_key(id),
            Inner::Export(e) => {
                e.main.session.id == id
                    || e.child_files
                        .iter()
                        .filter_map(|p| load_export(p).ok())
                        .any(|k| k.session.id == id)
            }
        }
    }

    fn load_session(&self, id: Option<&str>) -> Result<Trace, LoadError> {
        match &self.inner {
            Inner::Store(store) => {
                let info = match id {
                    Some(want) => {
                        let id = resolve(
                            store.sessions.iter().map(|s| s.id.as_str()),
                            want,
                            &self.describe,
                        )?;
                        store.info(&id)
                    }
                    None => store.newest(),
                };
                let Some(info) = info else {
                    return Err(LoadError::NoSessions {
                        path: PathBuf::from(&self.describe),
                    });
                };
                store.load(info, true)
            }
            Inner::Export(e) => {
                let Some(want) = id else {
                    return Ok(e.main.clone());
                };
                if e.main.session.id == want {
                    return Ok(e.main.clone());
                }
                let kids: Vec<Trace> = e
                    .child_files
                    .iter()
                    .filter_map(|p| load_export(p).ok())
                    .collect();
                let ids = std::iter::once(e.main.session.id.as_str())
                    .chain(kids.iter().map(|k| k.session.id.as_str()));
                let id = resolve(ids, want, &self.describe)?;
                if id == e.main.session.id {
                    return Ok(e.main.clone());
                }
                kids.into_iter()
                    .find(|k| k.session.id == id)
                    .ok_or(LoadError::SessionNotFound {
                        id,
                        path: PathBuf::from(&self.describe),
                    })
            }
        }
    }

    /// Ids of the sub-agent sessions of `trace` (its `task` calls' sessions, then sessions naming
    /// it as parent). Never `trace` itself or one of its ancestors.
    fn child_ids(&self, trace: &Trace) -> Vec<String> {
        match &self.inner {
            Inner::Store(store) => store.child_ids(trace),
            Inner::Export(e) => {
                let mut ids: Vec<String> = Vec::new();
                for c in &trace.children {
                    if !ids.contains(&c.session_id) {
                        ids.push(c.session_id.clone());
                    }
                }
                if trace.session.id == e.main.session.id {
                    for p in &e.child_files {
                        if let Ok(k) = load_export(p) {
                            if !ids.contains(&k.session.id) {
                                ids.push(k.session.id);
                            }
                        }
                    }
                }
                ids.retain(|i| *i != trace.session.id);
                ids
            }
        }
    }

    /// The sub-agent sessions of `trace`, one result each (a child that cannot be loaded is an
    /// error in its slot, the others still load).
    fn load_children(&self, trace: &Trace) -> Vec<Result<Trace, LoadError>> {
        match &self.inner {
            Inner::Store(_) => self
                .child_ids(trace)
                .iter()
                .map(|id| self.load_session(Some(id)))
                .collect(),
            Inner::Export(e) => {
                if trace.session.id != e.main.session.id {
                    return Vec::new();
                }
                e.child_files
                    .iter()
                    .map(|p| load_export(p))
                    .filter(|r| !matches!(r, Ok(k) if k.session.id == trace.session.id))
                    .collect()
            }
        }
    }

    /// An export's main session is moved out, not cloned (it is the whole file).
    fn into_session(
        self: Box<Self>,
        id: Option<&str>,
        children: bool,
    ) -> Result<SessionParts, LoadError> {
        let main = match &self.inner {
            Inner::Export(e) if id.is_none_or(|want| e.main.session.id == want) => &e.main,
            _ => {
                let trace = self.load_session(id)?;
                return Ok(SessionParts::of(self.as_ref(), trace, children));
            }
        };
        let child_ids = self.child_ids(main);
        let kids = if children {
            self.load_children(main)
        } else {
            Vec::new()
        };
        let this = *self;
        match this.inner {
            Inner::Export(e) => Ok(SessionParts {
                trace: e.main,
                child_ids,
                children: kids,
            }),
            // Only an export's main session reaches here.
            Inner::Store(_) => Err(LoadError::NoSessions {
                path: PathBuf::from(this.describe),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    /// Front ends move a source to a worker thread.
    #[test]
    fn a_source_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<super::OpenCodeStore>();
    }
}
