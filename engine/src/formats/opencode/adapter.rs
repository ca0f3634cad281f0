//! OpenCode behind the adapter seam.

use std::path::{Path, PathBuf};

use super::discover;
use super::store::open_input;
use super::watch::OpenCodeWatch;
use crate::trace::adapter::{Adapter, Detected, Detection, Env, SessionStore, WatchSpec};
use crate::trace::error::LoadError;

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

    /// The data dir, and the directory of a database `$OPENCODE_DB` names outside it.
    fn data_dirs(&self, env: &Env) -> Vec<PathBuf> {
        let data = discover::default_data_dir(env);
        let mut dirs: Vec<PathBuf> = data.iter().cloned().collect();
        if let Some(db) = env.var("OPENCODE_DB").filter(|d| *d != ":memory:") {
            let p = Path::new(db);
            if p.is_absolute() {
                dirs.extend(p.parent().map(Path::to_owned));
            }
        }
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

    fn watch_spec(&self, detected: &Detected<'_>) -> Box<dyn WatchSpec> {
        Box::new(OpenCodeWatch::new(detected.path, detected.path.is_dir()))
    }
}
