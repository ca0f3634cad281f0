//! Where OpenCode data lives and what a path argument points at.
//!
//! OpenCode keeps its data in `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`, on every
//! OS (reference §1.1). `$OPENCODE_DB` names the database (absolute, or relative to the data dir);
//! preview channels write `opencode-<channel>.db` beside `opencode.db`. A path argument is
//! recognised by its content and shape, not only its name.

use std::path::{Path, PathBuf};

use super::db::looks_like_sqlite;
use super::storage::Storage;
use crate::trace::error::LoadError;

/// The environment discovery reads (explicit, so tests need not touch the process environment).
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub xdg_data_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
    pub opencode_db: Option<String>,
}

impl Env {
    /// The running process's `XDG_DATA_HOME`, `HOME` (`USERPROFILE` on Windows) and `OPENCODE_DB`.
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        Env {
            xdg_data_home: var("XDG_DATA_HOME").map(PathBuf::from),
            home: var("HOME")
                .or_else(|| var("USERPROFILE"))
                .map(PathBuf::from),
            opencode_db: var("OPENCODE_DB").map(|v| v.to_string_lossy().into_owned()),
        }
    }
}

/// OpenCode's data dir for this environment (whether or not it exists).
pub fn default_data_dir(env: &Env) -> Option<PathBuf> {
    if let Some(x) = &env.xdg_data_home {
        if x.is_absolute() {
            return Some(x.join("opencode"));
        }
    }
    env.home
        .as_ref()
        .map(|h| h.join(".local").join("share").join("opencode"))
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

/// Recognise what `path` is: a database (by its SQLite header, or a `.db` name so that a
/// truncated one gives a database error), a data dir, a storage dir, or else an export file.
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
    let by_name = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "db" | "sqlite" | "sqlite3"));
    if looks_like_sqlite(path) || by_name {
        return Ok(Input::Database(path.to_owned()));
    }
    Ok(Input::Export(path.to_owned()))
}

/// With no path argument: `$OPENCODE_DB`, else the default data dir. `Ok(None)` when there is no
/// OpenCode data at all (the caller then falls back to the bundled sample).
pub fn discover(env: &Env) -> Result<Option<Input>, LoadError> {
    let data = default_data_dir(env);
    if let Some(db) = env.opencode_db.as_deref().filter(|d| *d != ":memory:") {
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
            opencode_db: None,
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
