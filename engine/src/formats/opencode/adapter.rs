//! OpenCode behind the adapter seam.

use std::path::{Path, PathBuf};

use super::compaction_request;
use super::discover;
use super::discover::Input;
use super::store::export_children;
use super::store::open_input;
use super::watch::OpenCodeWatch;
use crate::trace::adapter::{Adapter, Detected, Detection, Env, ReadPart, SessionStore, WatchSpec};
use crate::trace::error::LoadError;
use crate::trace::model::Trace;
use crate::trace::summary_call::{BuiltSummaryCall, SummaryCalls};

/// OpenCode (sst/opencode): a SQLite database since 1.2, a JSON storage tree before it, and
/// `opencode export` files.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenCode;

impl Adapter for OpenCode {
    fn id(&self) -> &'static str {
        "opencode"
    }

    fn name(&self) -> &'static str {
        "OpenCode"
    }

    /// The data dir the environment selects, the default one (data left there after
    /// `$XDG_DATA_HOME` was set is still OpenCode's), and the dir of the database `$OPENCODE_DB`
    /// names.
    fn data_dirs(&self, env: &Env) -> Vec<PathBuf> {
        let data = discover::default_data_dir(env);
        let mut dirs: Vec<PathBuf> = data.iter().cloned().collect();
        if let Some(h) = &env.home {
            dirs.push(h.join(".local").join("share").join("opencode"));
        }
        if let Some(db) = env.var("OPENCODE_DB").filter(|d| *d != ":memory:") {
            let p = Path::new(db);
            let p = if p.is_absolute() {
                Some(p.to_owned())
            } else {
                data.as_ref().map(|d| d.join(p))
            };
            dirs.extend(p.as_deref().and_then(Path::parent).map(Path::to_owned));
        }
        dirs.dedup();
        dirs
    }

    fn detect(&self, path: &Path, meta: &std::fs::Metadata) -> Option<Detection> {
        discover::detect(path, meta)
    }

    fn discover(&self, env: &Env) -> Result<Option<PathBuf>, LoadError> {
        Ok(discover::discover(env)?.map(|i| i.path().to_owned()))
    }

    fn open(&self, detected: &Detected<'_>) -> Result<Box<dyn SessionStore>, LoadError> {
        Ok(Box::new(open_input(discover::classify(detected.path)?)?))
    }

    /// A database with its side files, a data dir with its databases and trees, a storage tree,
    /// or an export with its sub-agent exports.
    fn read_parts(&self, detected: &Detected<'_>) -> Vec<ReadPart> {
        let database = |path: &std::path::Path| ReadPart::Database {
            path: path.to_owned(),
            what: "input database",
        };
        let tree = |path: &std::path::Path| ReadPart::Dir {
            path: path.to_owned(),
            what: "input storage tree",
        };
        match discover::classify(detected.path) {
            Ok(Input::Database(db)) => vec![database(&db)],
            Ok(Input::DataDir { root, dbs, trees }) => {
                let mut parts = vec![ReadPart::Dir {
                    path: root,
                    what: "input data dir",
                }];
                parts.extend(dbs.iter().map(|d| database(d)));
                parts.extend(trees.iter().map(|t| tree(t.root())));
                parts
            }
            Ok(Input::Storage(t)) => vec![tree(t.root())],
            Ok(Input::Export(p)) => {
                let mut parts: Vec<ReadPart> = export_children(&p)
                    .into_iter()
                    .map(|path| ReadPart::File {
                        path,
                        what: "input sub-agent export",
                    })
                    .collect();
                parts.insert(
                    0,
                    ReadPart::File {
                        path: p,
                        what: "input export",
                    },
                );
                parts
            }
            Err(_) => Vec::new(),
        }
    }

    /// OpenCode's compaction by release ([`super::flat_rules`]).
    fn flat_rules(&self, trace: &Trace) -> crate::trace::flat_rules::FlatRules {
        super::flat_rules::flat_rules(&super::Dialect::of(&trace.origin))
    }

    /// OpenCode sizes its kept tail by characters ÷ 4 ([`super::tail_estimate`]).
    fn tail_estimate(&self, trace: &Trace) -> Option<crate::trace::adapter::TailEstimate> {
        Some(crate::trace::adapter::TailEstimate {
            message_units: super::tail_estimate::message_sizes(trace),
            to_tokens: super::tail_estimate::to_tokens,
        })
    }

    /// Each recorded compaction call as the release built it, and the release's fixed prompt.
    fn summary_calls(&self, trace: &Trace) -> SummaryCalls {
        let dialect = super::Dialect::of(&trace.origin);
        let built = compaction_request::build_all(trace);
        let prompt = super::agent_prompt::agent_prompt(&dialect, &built);
        SummaryCalls {
            built: built
                .into_iter()
                .map(|r| BuiltSummaryCall {
                    compaction: r.compaction,
                    request: r.request,
                    shape: r.shape,
                    history_messages: r.history.len(),
                    clipped_outputs: r.clipped_outputs,
                    previous_summary: r.previous_summary,
                    text: r.text,
                })
                .collect(),
            fixed_prompt: compaction_request::fixed_prompt_text(&dialect),
            fixed_prompt_tokens: None,
            prompt,
        }
    }

    fn watch_spec(&self, detected: &Detected<'_>) -> Box<dyn WatchSpec> {
        Box::new(OpenCodeWatch::new(detected.path, detected.path.is_dir()))
    }
}
