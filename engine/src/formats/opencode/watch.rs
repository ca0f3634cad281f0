//! What a followed OpenCode source is made of: a database and its `-wal` (`-shm` changes on every
//! read and is ignored), an export and its `<stem>.childN.json` siblings, a data dir's
//! `opencode*.db` files with their `-wal` and its `storage/` tree, or a JSON tree (`*.json` only).

use std::path::{Path, PathBuf};

use crate::trace::adapter::WatchSpec;
use crate::watch::{is_json, json_files, side_file, sorted_entries};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Database,
    Export,
    DataDir,
    Tree,
}

/// See the module docs.
#[derive(Debug, Clone)]
pub struct OpenCodeWatch {
    path: PathBuf,
    kind: Kind,
}

impl OpenCodeWatch {
    /// `path` is absolute, a directory or a regular file.
    pub fn new(path: &Path, is_dir: bool) -> OpenCodeWatch {
        let kind = if is_dir {
            if database_files(path).is_empty() {
                Kind::Tree
            } else {
                Kind::DataDir
            }
        } else if super::discover::has_database_name(path)
            || crate::trace::sqlite::looks_like_sqlite(path)
        {
            // By name too: OpenCode creates an empty `opencode.db` before its first page.
            Kind::Database
        } else {
            Kind::Export
        };
        OpenCodeWatch {
            path: path.to_owned(),
            kind,
        }
    }
}

impl WatchSpec for OpenCodeWatch {
    fn roots(&self) -> Vec<(PathBuf, bool)> {
        match self.kind {
            Kind::DataDir => {
                let mut roots = vec![(self.path.clone(), false)];
                let storage = self.path.join("storage");
                if storage.is_dir() {
                    roots.push((storage, true));
                }
                roots
            }
            Kind::Tree => vec![(self.path.clone(), true)],
            Kind::Database | Kind::Export => {
                let parent = self
                    .path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map_or_else(|| PathBuf::from("."), Path::to_owned);
                vec![(parent, false)]
            }
        }
    }

    fn is_relevant(&self, p: &Path) -> bool {
        match self.kind {
            Kind::Database => p == self.path || p == side_file(&self.path, "-wal"),
            Kind::Export => {
                if p == self.path {
                    return true;
                }
                let (Some(stem), Some(name)) = (
                    self.path.file_stem().and_then(|s| s.to_str()),
                    p.file_name().and_then(|s| s.to_str()),
                ) else {
                    return false;
                };
                p.parent() == self.path.parent()
                    && name.starts_with(&format!("{stem}.child"))
                    && name.ends_with(".json")
            }
            Kind::DataDir => {
                if p.parent() == Some(self.path.as_path()) {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(is_db_file_name)
                } else {
                    p.starts_with(self.path.join("storage")) && is_json(p)
                }
            }
            Kind::Tree => p.starts_with(&self.path) && is_json(p),
        }
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        match self.kind {
            Kind::Database => {
                out.push(self.path.clone());
                out.push(side_file(&self.path, "-wal"));
            }
            Kind::Export => {
                out.push(self.path.clone());
                out.extend(
                    sorted_entries(self.path.parent())
                        .into_iter()
                        .filter(|p| *p != self.path && self.is_relevant(p)),
                );
            }
            Kind::DataDir => {
                out.extend(
                    sorted_entries(Some(&self.path))
                        .into_iter()
                        .filter(|p| self.is_relevant(p)),
                );
                json_files(&mut out, &self.path.join("storage"));
            }
            Kind::Tree => json_files(&mut out, &self.path),
        }
        out
    }

    fn databases(&self) -> Vec<PathBuf> {
        match self.kind {
            Kind::Database => vec![self.path.clone()],
            Kind::DataDir => database_files(&self.path),
            Kind::Export | Kind::Tree => Vec::new(),
        }
    }
}

fn is_db_file_name(n: &str) -> bool {
    let base = n.strip_suffix("-wal").unwrap_or(n);
    base.starts_with("opencode") && base.ends_with(".db")
}

/// The `opencode*.db` files of a directory (not their `-wal`).
fn database_files(dir: &Path) -> Vec<PathBuf> {
    sorted_entries(Some(dir))
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| is_db_file_name(n) && !n.ends_with("-wal"))
        })
        .collect()
}
