//! The one entry point for loading sessions, whatever the agent and the format.
//!
//! ```no_run
//! use tierscope_engine::trace::load;
//! let source = load::open(None)?;              // every agent's data here, else the bundled sample
//! println!("{}", source.describe());
//! for s in source.list_sessions()? { println!("{} {}", s.id, s.title); }
//! let trace = source.load_session(None)?;      // the most recently updated main session
//! let children = source.load_children(&trace); // its sub-agent sessions
//! # Ok::<(), tierscope_engine::trace::LoadError>(())
//! ```
//!
//! A path is recognised by the adapter registry ([`super::adapter::detect`]); with no path every
//! registered agent's data on this machine is opened, and the sessions of all of them are listed
//! together.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::adapter::{self, Env, ListingCache, SessionStore};
use super::diagnostics::Diagnostics;
use super::error::LoadError;
use super::model::{Trace, Usage};

/// One line of `tierscope sessions`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    /// The id of the adapter that read it (`opencode`, `claude-code`, …).
    pub agent: &'static str,
    pub id: String,
    pub title: String,
    pub directory: String,
    pub parent_id: Option<String>,
    /// Unix ms.
    pub created: i64,
    /// Unix ms.
    pub updated: i64,
    pub messages: usize,
    pub requests: usize,
    /// Recorded usage summed over requests.
    pub tokens: Usage,
    pub cost: f64,
    /// Sub-agent sessions of this one: its sub-agent calls' sessions, then the sessions naming
    /// it as parent. A session listed without reading its parts has the sessions naming it as
    /// parent, oldest first — the order its calls created them in.
    pub children: Vec<String>,
}

impl SessionSummary {
    /// The line of a loaded session.
    pub fn of(t: &Trace, children: Vec<String>) -> SessionSummary {
        SessionSummary {
            agent: t.origin.agent,
            id: t.session.id.clone(),
            title: t.session.title.clone(),
            directory: t.session.directory.clone(),
            parent_id: t.session.parent_id.clone(),
            created: t.session.time_created,
            updated: t.session.time_updated,
            messages: t.messages.len(),
            requests: t.requests.len(),
            tokens: t.total_usage(),
            cost: t.total_cost(),
            children,
        }
    }
}

/// Where sessions come from: one or more opened stores (one per agent's data). See the module
/// docs.
#[derive(Debug)]
pub struct Source {
    stores: Vec<Box<dyn SessionStore>>,
    /// Every store's indexing diagnostics, in store order.
    diagnostics: Diagnostics,
}

/// Open `path` (any input a registered agent recognises), or with `None` every agent's data on
/// this machine, else the bundled sample session.
pub fn open(path: Option<&Path>) -> Result<Source, LoadError> {
    open_with_env(path, &Env::from_process())
}

/// [`open`] with an explicit environment.
pub fn open_with_env(path: Option<&Path>, env: &Env) -> Result<Source, LoadError> {
    let stores = match path {
        Some(p) => vec![adapter::open_path(p)?],
        None => {
            let found = adapter::discover(env)?;
            if found.is_empty() {
                return open_bundled();
            }
            found
                .iter()
                .map(|p| adapter::open_path(p))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    Ok(Source::of(stores))
}

/// The sample session compiled into the binary.
pub fn open_bundled() -> Result<Source, LoadError> {
    Ok(Source::of(vec![crate::formats::bundled_sample()?]))
}

/// Pick a session: exact id, else a unique id prefix.
pub(crate) fn resolve<'a>(
    ids: impl Iterator<Item = &'a str> + Clone,
    want: &str,
    path: &str,
) -> Result<String, LoadError> {
    if let Some(id) = ids.clone().find(|i| *i == want) {
        return Ok(id.to_owned());
    }
    let matches: Vec<&str> = ids.filter(|i| i.starts_with(want)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).to_owned()),
        _ => Err(LoadError::SessionNotFound {
            id: want.to_owned(),
            path: PathBuf::from(path),
        }),
    }
}

impl Source {
    fn of(stores: Vec<Box<dyn SessionStore>>) -> Source {
        let mut diagnostics = Diagnostics::new();
        for s in &stores {
            diagnostics.extend(s.diagnostics());
        }
        Source {
            stores,
            diagnostics,
        }
    }

    /// What was opened, for humans ("database /…/opencode.db", "export …", "bundled sample …").
    pub fn describe(&self) -> String {
        let all: Vec<String> = self.stores.iter().map(|s| s.describe()).collect();
        all.join("; ")
    }

    /// What went wrong while indexing the source (corrupt session rows, unreadable files);
    /// per-session trouble is in each [`Trace::diagnostics`].
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// True for the sample session compiled into the binary.
    pub fn is_bundled(&self) -> bool {
        self.stores.iter().any(|s| s.is_bundled())
    }

    /// Every session, most recently updated first (each child listed after the sessions; see
    /// `children` for the tree).
    ///
    /// Each store lists as cheaply as its format allows, through the listing cache in the
    /// default cache dir ([`ListingCache::Default`]; `$TIERSCOPE_CACHE_DIR` moves it).
    pub fn list_sessions(&self) -> Result<Vec<SessionSummary>, LoadError> {
        self.list(Some(&ListingCache::Default))
    }

    /// [`Source::list_sessions`] through the listing cache `cache` (a dir of its own, or
    /// [`ListingCache::Off`]: every row read again). The lines are the same whatever the cache.
    pub fn list_sessions_with(
        &self,
        cache: &ListingCache,
    ) -> Result<Vec<SessionSummary>, LoadError> {
        self.list(Some(cache))
    }

    /// [`Source::list_sessions`] by loading every session in full: the same lines, at the cost
    /// of the whole store (the reference the quick listing is tested against).
    pub fn list_sessions_by_full_load(&self) -> Result<Vec<SessionSummary>, LoadError> {
        self.list(None)
    }

    fn list(&self, cache: Option<&ListingCache>) -> Result<Vec<SessionSummary>, LoadError> {
        let mut out = Vec::new();
        for s in &self.stores {
            out.extend(s.list(cache)?);
        }
        out.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Load one session (`id`: exact or a unique prefix). Default: the most recently updated main
    /// session (one without a parent) of any store.
    pub fn load_session(&self, id: Option<&str>) -> Result<Trace, LoadError> {
        let [only] = self.stores.as_slice() else {
            return self.load_from_several(id);
        };
        only.load_session(id)
    }

    fn load_from_several(&self, id: Option<&str>) -> Result<Trace, LoadError> {
        match id {
            None => {
                let newest = self
                    .stores
                    .iter()
                    .filter_map(|s| s.default_session().map(|d| (d, s)))
                    .max_by(|((ta, ma, ia), _), ((tb, mb, ib), _)| {
                        (ma, ta).cmp(&(mb, tb)).then_with(|| ib.cmp(ia))
                    });
                match newest {
                    Some(((_, _, id), store)) => store.load_session(Some(&id)),
                    None => Err(LoadError::NoSessions {
                        path: PathBuf::from(self.describe()),
                    }),
                }
            }
            Some(want) => {
                if let Some(s) = self.stores.iter().find(|s| s.has_session(want)) {
                    return s.load_session(Some(want));
                }
                let mut found = None;
                for s in &self.stores {
                    match s.load_session(Some(want)) {
                        Ok(t) if found.is_none() => found = Some(t),
                        // The same prefix in two agents' data names no one session.
                        Ok(_) => break,
                        Err(LoadError::SessionNotFound { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                found.ok_or_else(|| LoadError::SessionNotFound {
                    id: want.to_owned(),
                    path: PathBuf::from(self.describe()),
                })
            }
        }
    }

    /// [`Source::load_session`] with [`Source::child_ids`] and, when `children`,
    /// [`Source::load_children`], giving the source up (for a load that needs nothing else
    /// from it): a store that holds the session hands it over rather than a copy, so the
    /// session is held once while the rest of the load runs.
    pub fn into_session(
        mut self,
        id: Option<&str>,
        children: bool,
    ) -> Result<super::adapter::SessionParts, LoadError> {
        if self.stores.len() == 1 {
            if let Some(only) = self.stores.pop() {
                return only.into_session(id, children);
            }
        }
        let trace = self.load_session(id)?;
        Ok(match self.store_of(&trace) {
            Some(store) => super::adapter::SessionParts::of(store, trace, children),
            None => super::adapter::SessionParts {
                trace,
                child_ids: Vec::new(),
                children: Vec::new(),
            },
        })
    }

    /// The store a loaded session came from.
    fn store_of(&self, trace: &Trace) -> Option<&dyn SessionStore> {
        match self.stores.as_slice() {
            [only] => Some(only.as_ref()),
            all => all
                .iter()
                .find(|s| s.has_session(&trace.session.id))
                .map(|s| s.as_ref()),
        }
    }

    /// Ids of the sub-agent sessions of `trace` (its sub-agent calls' sessions, then sessions
    /// naming it as parent). Never `trace` itself or one of its ancestors.
    pub fn child_ids(&self, trace: &Trace) -> Vec<String> {
        self.store_of(trace)
            .map(|s| s.child_ids(trace))
            .unwrap_or_default()
    }

    /// The sub-agent sessions of `trace`, one result each (a child that cannot be loaded is an
    /// error in its slot, the others still load).
    pub fn load_children(&self, trace: &Trace) -> Vec<Result<Trace, LoadError>> {
        self.store_of(trace)
            .map(|s| s.load_children(trace))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Giving a source up with its session reads what borrowing it reads: the same trace,
    /// sub-agent ids and children, by default and by id (an export's main session moved out,
    /// its child file's session and a database's session loaded as before).
    #[test]
    fn a_session_taken_from_its_source_is_the_session_loaded_from_it() {
        for (file, id) in [
            ("M1.json", None),
            // The main session by id, by a prefix, and the sub-agent's file.
            ("M1.json", Some("ses_dd584fea1fferO2dnWzHsfVmcZ")),
            ("M1.json", Some("ses_dd584fe")),
            ("M1.json", Some("ses_dd584f7b6ffeknyVO3Z4g5sBjI")),
            ("opencode.db", None),
        ] {
            let path = sample(file);
            let borrowed = open(Some(&path)).expect("opens");
            let want = borrowed.load_session(id).expect("loads");
            let want_ids = borrowed.child_ids(&want);
            let want_kids: Vec<String> = borrowed
                .load_children(&want)
                .into_iter()
                .map(|k| k.expect("child loads").session.id)
                .collect();
            let parts = open(Some(&path))
                .expect("opens")
                .into_session(id, true)
                .expect("loads");
            assert!(parts.trace == want, "{file} {id:?}: the trace differs");
            assert_eq!(parts.child_ids, want_ids, "{file}");
            let kids: Vec<String> = parts
                .children
                .into_iter()
                .map(|k| k.expect("child loads").session.id)
                .collect();
            assert_eq!(kids, want_kids, "{file}");
            if file == "M1.json" && id != Some("ses_dd584f7b6ffeknyVO3Z4g5sBjI") {
                assert!(!kids.is_empty(), "M1's sub-agent comes with it");
            }
            let no_kids = open(Some(&path))
                .expect("opens")
                .into_session(id, false)
                .expect("loads");
            assert!(no_kids.children.is_empty() && no_kids.child_ids == want_ids);
        }
    }

    /// Front ends move a source to a worker thread.
    #[test]
    fn a_source_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<super::Source>();
        send::<super::Trace>();
    }

    fn sample(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../sample-traces")
            .join(name)
    }

    /// Several agents' data opened together (as with no path): one listing, the newest main
    /// session by default, any session by id, and children from the store that holds the parent.
    #[test]
    fn several_stores_act_as_one_source() {
        let stores: Vec<Box<dyn SessionStore>> = ["B1.json", "M1.json", "C1.json"]
            .iter()
            .map(|n| adapter::open_path(&sample(n)).expect("sample opens"))
            .collect();
        let one_by_one: Vec<Trace> = stores
            .iter()
            .map(|s| s.load_session(None).expect("loads"))
            .collect();
        let source = Source::of(stores);
        assert_eq!(
            source.describe().matches("; ").count(),
            2,
            "{}",
            source.describe()
        );

        let listed = source
            .list_sessions_with(&ListingCache::Off)
            .expect("lists");
        // Each export's main session, and M1's sub-agent from its `.child1.json`.
        assert_eq!(listed.len(), 4);
        assert!(listed.windows(2).all(|w| w[0].updated >= w[1].updated));

        let newest = one_by_one
            .iter()
            .max_by_key(|t| t.session.time_updated)
            .expect("three sessions");
        let default = source.load_session(None).expect("default session");
        assert_eq!(default.session.id, newest.session.id);

        for t in &one_by_one {
            let again = source.load_session(Some(&t.session.id)).expect("by id");
            assert_eq!(again.session.id, t.session.id);
            let prefix = &t.session.id[..t.session.id.len() - 3];
            assert_eq!(
                source
                    .load_session(Some(prefix))
                    .expect("by prefix")
                    .session
                    .id,
                t.session.id
            );
        }
        assert!(matches!(
            source.load_session(Some("ses_nowhere")),
            Err(LoadError::SessionNotFound { .. })
        ));

        let m1 = one_by_one
            .iter()
            .find(|t| !t.children.is_empty())
            .expect("M1 spawned a sub-agent");
        let kids = source.load_children(m1);
        assert_eq!(kids.len(), 1);
        assert_eq!(source.child_ids(m1).len(), 1);
        let kid = kids[0].as_ref().expect("child loads");
        assert_eq!(
            kid.session.parent_id.as_deref(),
            Some(m1.session.id.as_str())
        );
    }
}
