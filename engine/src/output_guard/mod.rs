//! What tierscope may write, and how. Every file a command writes is checked by
//! [`OutputGuard::check`] and written by [`AtomicFile`] (or [`write_file`]); every cache dir is
//! checked by [`cache_dir_refusal`].
//!
//! - **Never an input**: an output may not be a file the run reads (the trace, its database's
//!   `-wal`, `-shm` and `-journal`, a sidecar, a rules or policy file), whether named by the same
//!   path, through a symlink or `..`, or as a hard link (same device and inode).
//! - **Never inside an agent's data** ([`crate::trace::agent_dirs::agent_data_dirs`]), a data
//!   dir or storage tree being read, or the directory of a database being read.
//! - **Never half-written**: the bytes go to a temporary file in the target's directory, which
//!   is renamed over the target only once complete; a failed run leaves the previous file (or
//!   none) and no temporary file.
//!
//! Paths are compared resolved: the part that exists is canonical (symlinks and `..` followed),
//! the part that does not is taken as it will be created.

use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use crate::session::{LoadOptions, LoadedSession};
use crate::trace::adapter::{self, Env, ReadPart};
use crate::trace::agent_dirs::agent_data_dirs;

/// Why an output was refused: what it collides with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// The output is a file the run reads (`link`: through a symlink or a hard link).
    Input {
        what: String,
        path: PathBuf,
        link: bool,
    },
    /// The output is the `-wal`, `-shm` or `-journal` of a database the run reads.
    SqliteSide { suffix: &'static str, db: PathBuf },
    /// The output lies inside an agent's data dir, or a dir the run reads.
    InsideDir { what: String, dir: PathBuf },
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Conflict::Input {
                what,
                path,
                link: false,
            } => write!(f, "it is the {what} {}", path.display()),
            Conflict::Input {
                what,
                path,
                link: true,
            } => write!(f, "it is a link to the {what} {}", path.display()),
            Conflict::SqliteSide { suffix, db } => write!(
                f,
                "it is the {suffix} file of the input database {}",
                db.display()
            ),
            Conflict::InsideDir { what, dir } => {
                write!(f, "it is inside {what} {}", dir.display())
            }
        }
    }
}

/// An output refused by [`OutputGuard::check`]; nothing was created or truncated.
#[derive(Debug, Clone, thiserror::Error)]
#[error("refusing to write {}: {conflict} (tierscope never overwrites what it reads nor writes into an agent's data; nothing was written, choose another path)", output.display())]
pub struct Refused {
    pub output: PathBuf,
    pub conflict: Conflict,
}

/// Why an output was not written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(transparent)]
    Refused(#[from] Refused),
    /// [`AtomicFile::commit_new`] found the target already there.
    #[error("{} exists", path.display())]
    Exists { path: PathBuf },
    #[error("cannot write {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_owned(),
        source,
    }
}

/// A file's identity (device, inode), where the platform has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity(u64, u64);

#[cfg(unix)]
fn file_id(p: &Path) -> Option<FileIdentity> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).ok()?;
    Some(FileIdentity(m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_: &Path) -> Option<FileIdentity> {
    None
}

/// `p` absolute, component by component: an existing component is canonical (symlinks
/// followed), a missing one is taken as it will be created (so a later `..` removes it).
pub fn resolve(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let mut cur = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => cur.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                cur.pop();
            }
            Component::Normal(name) => {
                let next = cur.join(name);
                cur = match std::fs::canonicalize(&next) {
                    Ok(c) => c,
                    Err(_) => next,
                };
            }
        }
    }
    cur
}

#[derive(Debug, Clone)]
enum Scope {
    /// The output may not be this file.
    File {
        what: String,
        link_id: Option<FileIdentity>,
    },
    /// The output may not be this database side file (`id` when it exists).
    Side {
        suffix: &'static str,
        db: PathBuf,
        id: Option<FileIdentity>,
    },
    /// The output may not be inside this dir.
    Tree {
        what: String,
        id: Option<FileIdentity>,
    },
}

#[derive(Debug, Clone)]
struct Protected {
    /// As given (what messages show).
    shown: PathBuf,
    resolved: PathBuf,
    scope: Scope,
}

/// What a run reads and where agents keep their data: the places no output may go. See the
/// module docs.
#[derive(Debug, Clone, Default)]
pub struct OutputGuard {
    protected: Vec<Protected>,
}

impl OutputGuard {
    /// Every agent data dir of this process's environment; no input yet.
    pub fn new() -> Self {
        Self::with_agent_env(&Env::from_process())
    }

    /// Every agent data dir of `env`; no input yet.
    pub fn with_agent_env(env: &Env) -> Self {
        let mut g = OutputGuard::default();
        for d in agent_data_dirs(env) {
            g.tree(&d.dir, format!("{}'s data dir", d.agent));
        }
        g
    }

    /// A path read (a file or a dir, by what it is): a dir as [`Self::input_dir`], a SQLite
    /// database as [`Self::database`], any other file as [`Self::input_file`].
    pub fn input(&mut self, path: &Path, what: &str) {
        if path.is_dir() {
            self.input_dir(path, &format!("{what} dir"));
        } else if discover_sqlite(path) {
            self.database(path, what);
        } else {
            self.input_file(path, what);
        }
    }

    /// A file read (an export, a sidecar, a rules or policy file).
    pub fn input_file(&mut self, path: &Path, what: &str) {
        self.protected.push(Protected {
            shown: path.to_owned(),
            resolved: resolve(path),
            scope: Scope::File {
                what: what.to_owned(),
                link_id: file_id(path),
            },
        });
    }

    /// A dir read as a whole (a data dir, a storage tree): no output inside.
    pub fn input_dir(&mut self, path: &Path, what: &str) {
        self.tree(path, format!("the {what}"));
    }

    /// A SQLite database read: the file, its `-wal`, `-shm` and `-journal` (beside the path as
    /// given and beside the file it resolves to), and its directory.
    pub fn database(&mut self, path: &Path, what: &str) {
        self.input_file(path, what);
        let real = resolve(path);
        for base in [path.to_owned(), real.clone()] {
            for suffix in ["-wal", "-shm", "-journal"] {
                let mut side = base.clone().into_os_string();
                side.push(suffix);
                let side = PathBuf::from(side);
                self.protected.push(Protected {
                    resolved: resolve(&side),
                    scope: Scope::Side {
                        suffix,
                        db: path.to_owned(),
                        id: file_id(&side),
                    },
                    shown: side,
                });
            }
        }
        for dir in [path.parent(), real.parent()].into_iter().flatten() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            self.tree(
                dir,
                format!("the directory of the {what} {}", path.display()),
            );
        }
    }

    fn tree(&mut self, dir: &Path, what: String) {
        self.protected.push(Protected {
            shown: dir.to_owned(),
            resolved: resolve(dir),
            scope: Scope::Tree {
                what,
                id: file_id(dir),
            },
        });
    }

    /// Every input a load with `opts` reads that is known before loading: the trace (a
    /// database with its side files and dir, a data dir, a storage tree, an export and its
    /// sub-agent exports), the rules file and the Magic Context database.
    pub fn for_load(opts: &LoadOptions) -> Self {
        let mut g = OutputGuard::new();
        g.load_options(opts);
        g
    }

    /// Adds what [`Self::for_load`] adds.
    pub fn load_options(&mut self, opts: &LoadOptions) {
        let paths = match &opts.path {
            Some(p) => vec![p.clone()],
            None => adapter::discover(&Env::from_process()).unwrap_or_default(),
        };
        for p in &paths {
            let parts = adapter::detect(p)
                .map(|d| d.adapter.read_parts(&d))
                .unwrap_or_default();
            if parts.is_empty() {
                self.input(p, "input");
            }
            for part in parts {
                match part {
                    ReadPart::File { path, what } => self.input_file(&path, what),
                    ReadPart::Database { path, what } => self.database(&path, what),
                    ReadPart::Dir { path, what } => self.input_dir(&path, what),
                }
            }
        }
        if let Some(r) = &opts.rules {
            self.input_file(r, "--rules file");
        }
        if let Some(mc) = &opts.magic_context {
            self.database(mc, "Magic Context database");
        }
    }

    /// The files a load read that only the load knew: its sidecars and Magic Context database,
    /// its sub-agent sessions' too.
    pub fn loaded(&mut self, l: &LoadedSession) {
        self.loaded_except(l, &[]);
    }

    /// [`Self::loaded`] without the sidecars of the kinds in `except` (the historian rewrites
    /// its own `*.tiers.json`).
    pub fn loaded_except(&mut self, l: &LoadedSession, except: &[&str]) {
        for (kind, p) in &l.sidecar_paths {
            if except.contains(&kind.as_str()) {
                continue;
            }
            if kind == "magic-context" {
                self.database(p, "Magic Context database");
            } else {
                self.input_file(p, &format!("{kind} sidecar"));
            }
        }
        for c in &l.children {
            self.loaded_except(c, except);
        }
    }

    /// `Err` when `output` (a file or a dir to write into) may not be written: it is an input,
    /// or lies inside an agent's data dir or a dir being read. Checks files before dirs, so the
    /// message names the most precise collision.
    pub fn check(&self, output: &Path) -> Result<(), Refused> {
        let resolved = resolve(output);
        let id = file_id(output);
        let is_link = std::fs::symlink_metadata(output).is_ok_and(|m| m.file_type().is_symlink());
        let refuse = |conflict| Refused {
            output: output.to_owned(),
            conflict,
        };
        for p in &self.protected {
            match &p.scope {
                Scope::File { what, link_id } => {
                    let same_path = resolved == p.resolved;
                    let same_file = id.is_some() && id == *link_id;
                    if same_path || same_file {
                        return Err(refuse(Conflict::Input {
                            what: what.clone(),
                            path: p.shown.clone(),
                            link: is_link || !same_path,
                        }));
                    }
                }
                Scope::Side {
                    suffix,
                    db,
                    id: side,
                } => {
                    if resolved == p.resolved || (id.is_some() && id == *side) {
                        return Err(refuse(Conflict::SqliteSide {
                            suffix,
                            db: db.clone(),
                        }));
                    }
                }
                Scope::Tree { .. } => {}
            }
        }
        // Identities of the dirs the output would sit in (a bind mount or a second path to the
        // same dir is the same dir).
        let ancestor_ids: Vec<FileIdentity> =
            resolved.ancestors().skip(1).filter_map(file_id).collect();
        for p in &self.protected {
            if let Scope::Tree { what, id } = &p.scope {
                let inside = resolved.starts_with(&p.resolved)
                    || id.is_some_and(|id| {
                        ancestor_ids.contains(&id) || Some(id) == file_id(output)
                    });
                if inside {
                    return Err(refuse(Conflict::InsideDir {
                        what: what.clone(),
                        dir: p.shown.clone(),
                    }));
                }
            }
        }
        Ok(())
    }
}

/// A regular file with SQLite's header (never opens a FIFO or a device, which could block).
fn discover_sqlite(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && crate::trace::sqlite::looks_like_sqlite(path)
}

/// Why a cache may not be kept in `dir`: it lies inside an agent's data dir, inside a dir among
/// `inputs`, in the directory of a database among `inputs`, or is one of them. Caches are never
/// kept beside the data they describe; the caller goes without (the listing cache, the token
/// cache).
pub fn cache_dir_refusal(dir: &Path, inputs: &[&Path]) -> Option<Refused> {
    let mut g = OutputGuard::new();
    for p in inputs {
        g.input(p, "input");
    }
    g.check(dir).err()
}

/// An output file being written: a temporary file in the target's directory, renamed over the
/// target by [`AtomicFile::commit`]. Dropped without a commit, it leaves nothing behind.
pub struct AtomicFile {
    target: PathBuf,
    file: io::BufWriter<tempfile::NamedTempFile>,
}

impl AtomicFile {
    /// Checks `target` against `guard`, then opens the temporary file (creating the target's
    /// directory if missing). Nothing is created when the target is refused.
    pub fn create(target: &Path, guard: &OutputGuard) -> Result<AtomicFile, OutputError> {
        guard.check(target)?;
        let tmp = temp_beside(target, false).map_err(io_at(target))?;
        Ok(AtomicFile {
            target: target.to_owned(),
            file: io::BufWriter::with_capacity(1 << 16, tmp),
        })
    }

    /// Writes to disk and renames over the target.
    pub fn commit(self) -> Result<(), OutputError> {
        self.finish(true)
    }

    /// [`Self::commit`], but never over an existing file ([`OutputError::Exists`]).
    pub fn commit_new(self) -> Result<(), OutputError> {
        self.finish(false)
    }

    /// [`Self::commit`] without syncing to disk first: for a cache entry, which after a crash
    /// may be torn (and is then a miss) but must not cost the run a sync.
    pub fn commit_unsynced(self) -> Result<(), OutputError> {
        self.finish_with(true, false)
    }

    fn finish(self, overwrite: bool) -> Result<(), OutputError> {
        self.finish_with(overwrite, true)
    }

    fn finish_with(self, overwrite: bool, sync: bool) -> Result<(), OutputError> {
        let target = self.target;
        let tmp = self
            .file
            .into_inner()
            .map_err(|e| io_at(&target)(e.into_error()))?;
        if sync {
            tmp.as_file().sync_all().map_err(io_at(&target))?;
        }
        let persisted = if overwrite {
            tmp.persist(&target)
        } else {
            tmp.persist_noclobber(&target)
        };
        match persisted {
            Ok(_) => Ok(()),
            Err(e) if !overwrite && e.error.kind() == io::ErrorKind::AlreadyExists => {
                Err(OutputError::Exists { path: target })
            }
            Err(e) => Err(io_at(&target)(e.error)),
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Writes `bytes` to `target` through [`AtomicFile`].
pub fn write_file(target: &Path, guard: &OutputGuard, bytes: &[u8]) -> Result<(), OutputError> {
    let mut f = AtomicFile::create(target, guard)?;
    f.write_all(bytes).map_err(io_at(target))?;
    f.commit()
}

/// A temporary file in `target`'s directory (created if missing), named so that one left by a
/// killed process is recognisable (`.tierscope-….tmp`); `private`: readable by the user only
/// (caches), else as any file the user creates.
fn temp_beside(target: &Path, private: bool) -> io::Result<tempfile::NamedTempFile> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut b = tempfile::Builder::new();
    b.prefix(".tierscope-").suffix(".tmp");
    #[cfg(unix)]
    if !private {
        use std::os::unix::fs::PermissionsExt;
        // The umask applies, as for any file the user creates.
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    b.tempfile_in(dir)
}

/// Replaces the file at `path` with `bytes` through a temporary file and a rename, without
/// checking it against a guard: for the caches, whose dir [`cache_dir_refusal`] checked.
/// `durable`: wait for the disk before the rename.
pub(crate) fn replace_file(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let mut tmp = temp_beside(path, true)?;
    tmp.write_all(bytes)?;
    if durable {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests;
