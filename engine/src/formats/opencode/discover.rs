//! Where OpenCode data lives and what a path argument points at.
//!
//! OpenCode keeps its data in `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`, on every
//! OS. `$OPENCODE_DB` names the database (absolute, or relative to the data dir);
//! preview channels write `opencode-<channel>.db` beside `opencode.db`. A path argument is
//! recognised by its content and shape, not only its name.

use std::path::{Path, PathBuf};

use super::storage::Storage;
use crate::trace::adapter::{Confidence, Detection, Env};
use crate::trace::error::LoadError;
use crate::trace::sqlite::looks_like_sqlite;

/// OpenCode's data dir for this environment (whether or not it exists).
pub fn default_data_dir(env: &Env) -> Option<PathBuf> {
    env.data_home().map(|d| d.join("opencode"))
}

/// What a path holds.
#[derive(Debug, Clone)]
pub enum Input {
    /// One database file.
    Database(PathBuf),
    /// A data dir: its databases (`opencode.db` first, then channel files) and JSON trees.
    DataDir {
        root: PathBuf,
        dbs: Vec<PathBuf>,
        trees: Vec<Storage>,
    },
    /// A JSON storage tree on its own.
    Storage(Storage),
    /// An `opencode export` file.
    Export(PathBuf),
}

impl Input {
    /// The path the input was recognised at.
    pub fn path(&self) -> &Path {
        match self {
            Input::Database(p) | Input::Export(p) => p,
            Input::DataDir { root, .. } => root,
            Input::Storage(t) => t.root(),
        }
    }
}

/// `opencode.db` first, then `opencode-<channel>.db` files in name order.
pub fn databases_in(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let main = dir.join("opencode.db");
    if main.is_file() {
        out.push(main);
    }
    let mut channels: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.is_file()
                        && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                            n.starts_with("opencode-")
                                && n.ends_with(".db")
                                && n.len() > "opencode-.db".len()
                        })
                })
                .collect()
        })
        .unwrap_or_default();
    channels.sort();
    out.extend(channels);
    out
}

fn data_dir_input(dir: &Path) -> Option<Input> {
    let dbs = databases_in(dir);
    let mut trees = Storage::find_in_data_dir(dir);
    if dbs.is_empty() && trees.is_empty() {
        // An OpenCode ≤0.5 `<data>/project` dir: one tree per project slug.
        trees = Storage::find_in_project_dir(dir);
    }
    if dbs.is_empty() && trees.is_empty() {
        return None;
    }
    Some(Input::DataDir {
        root: dir.to_owned(),
        dbs,
        trees,
    })
}

/// What `path` is to OpenCode, if anything: a database (by its SQLite header, or a `.db` name so
/// that a truncated one gives a database error), a data dir, a storage dir, or else (any other
/// regular file) an export, which its reader checks.
pub fn detect(path: &Path, meta: &std::fs::Metadata) -> Option<Detection> {
    let (kind, confidence) = if meta.is_dir() {
        if data_dir_input(path).is_some() {
            ("data dir", Confidence::Content)
        } else if Storage::detect(path).is_some() {
            ("JSON storage", Confidence::Content)
        } else {
            // Nothing of OpenCode's yet: loading it says so; following it waits for a tree.
            ("directory", Confidence::Fallback)
        }
    } else if looks_like_sqlite(path) {
        ("database", Confidence::Content)
    } else if has_database_name(path) {
        ("database", Confidence::Name)
    } else {
        ("export", Confidence::Fallback)
    };
    Some(Detection { kind, confidence })
}

/// A `.db` / `.sqlite` / `.sqlite3` name: OpenCode creates an empty `opencode.db` before its
/// first page is written.
pub fn has_database_name(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "db" | "sqlite" | "sqlite3"))
}

/// Recognise what `path` is (see [`detect`]), as the input to open.
pub fn classify(path: &Path) -> Result<Input, LoadError> {
    let meta = std::fs::metadata(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    if meta.is_dir() {
        if let Some(input) = data_dir_input(path) {
            return Ok(input);
        }
        if let Some(tree) = Storage::detect(path) {
            return Ok(Input::Storage(tree));
        }
        return Err(LoadError::NoData(path.to_owned()));
    }
    if !meta.is_file() {
        // Checked before anything opens it: a FIFO would block, a device never end.
        return Err(LoadError::NotAFile {
            path: path.to_owned(),
            kind: crate::trace::input::file_kind(&meta),
        });
    }
    if looks_like_sqlite(path) || has_database_name(path) {
        return Ok(Input::Database(path.to_owned()));
    }
    Ok(Input::Export(path.to_owned()))
}

/// With no path argument: `$OPENCODE_DB`, else the default data dir. `Ok(None)` when there is no
/// OpenCode data at all.
pub fn discover(env: &Env) -> Result<Option<Input>, LoadError> {
    let data = default_data_dir(env);
    if let Some(db) = env.var("OPENCODE_DB").filter(|d| *d != ":memory:") {
        let p = Path::new(db);
        let p = if p.is_absolute() {
            p.to_owned()
        } else if let Some(d) = &data {
            d.join(p)
        } else {
            p.to_owned()
        };
        // An explicitly named database that is missing is an error, not a silent fallback.
        return classify(&p).map(Some);
    }
    Ok(data.as_deref().and_then(data_dir_input))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_dir_follows_xdg_then_home() {
        let env = Env {
            xdg_data_home: Some("/x/data".into()),
            home: Some("/home/u".into()),
            ..Env::default()
        };
        assert_eq!(
            default_data_dir(&env),
            Some(PathBuf::from("/x/data/opencode"))
        );
        let env = Env {
            xdg_data_home: None,
            ..env
        };
        assert_eq!(
            default_data_dir(&env),
            Some(PathBuf::from("/home/u/.local/share/opencode"))
        );
    }
}
