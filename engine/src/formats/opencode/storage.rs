//! OpenCode's JSON file trees (docs/opencode-eras.md, the storage of each release):
//!
//! * global storage (v0.6 → v1.1.65): `storage/session/<project>/<ses>.json`,
//!   `storage/message/<ses>/<msg>.json`, `storage/part/<msg>/<prt>.json`;
//! * per-project storage (≤ v0.5): `project/<slug>/storage/session/info/<ses>.json`,
//!   `…/session/message/<ses>/<msg>.json`, `…/session/part/<ses>/<msg>/<prt>.json`.
//!
//! File names are the ids (OpenCode's own migration took ids from paths), so an id missing from
//! the JSON is taken from the path. Very old message files with inline `parts` are read too.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::formats::opencode::parse::{parse_message_with_inline_parts, parse_part, parse_session};
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::model::{Message, SessionInfo};
use crate::trace::plain_name::{BadId, PlainName};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `storage/{session/<project>,message,part}`.
    Global,
    /// `project/<slug>/storage/session/{info,message,part}`.
    PerProject,
}

/// One JSON tree.
#[derive(Debug, Clone)]
pub struct Storage {
    root: PathBuf,
    layout: Layout,
}

impl Storage {
    /// Recognise `dir` as a storage root by its shape.
    pub fn detect(dir: &Path) -> Option<Storage> {
        if dir.join("session").join("info").is_dir() {
            return Some(Storage {
                root: dir.to_owned(),
                layout: Layout::PerProject,
            });
        }
        if dir.join("session").is_dir()
            && (dir.join("message").is_dir() || dir.join("part").is_dir())
        {
            return Some(Storage {
                root: dir.to_owned(),
                layout: Layout::Global,
            });
        }
        None
    }

    /// Every tree under a data dir: `storage/` and `project/*/storage/`.
    pub fn find_in_data_dir(data: &Path) -> Vec<Storage> {
        let mut out = Vec::new();
        out.extend(Storage::detect(&data.join("storage")));
        out.extend(Storage::find_in_project_dir(&data.join("project")));
        out
    }

    /// The per-project trees of an OpenCode ≤0.5 `project/` dir (`<slug>/storage/`).
    pub fn find_in_project_dir(dir: &Path) -> Vec<Storage> {
        sorted_entries(dir)
            .iter()
            .filter_map(|slug| Storage::detect(&slug.join("storage")))
            .filter(|s| s.layout == Layout::PerProject)
            .collect()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    fn session_files(&self) -> Vec<PathBuf> {
        let dir = self.root.join("session");
        match self.layout {
            Layout::PerProject => json_files(&dir.join("info")),
            Layout::Global => sorted_entries(&dir)
                .into_iter()
                .filter(|p| p.is_dir())
                .flat_map(|p| json_files(&p))
                .collect(),
        }
    }

    fn message_dir(&self, session: PlainName) -> PathBuf {
        match self.layout {
            Layout::Global => session.dir_in(&self.root.join("message")),
            Layout::PerProject => session.dir_in(&self.root.join("session").join("message")),
        }
    }

    fn part_dir(&self, session: PlainName, message: PlainName) -> PathBuf {
        match self.layout {
            Layout::Global => message.dir_in(&self.root.join("part")),
            Layout::PerProject => {
                message.dir_in(&session.dir_in(&self.root.join("session").join("part")))
            }
        }
    }

    /// Every session in the tree.
    pub fn sessions(&self, diags: &mut Diagnostics) -> Vec<SessionInfo> {
        let mut out = Vec::new();
        for file in self.session_files() {
            let Some(mut v) = read_json(&file, diags) else {
                continue;
            };
            inject(&mut v, "id", stem(&file));
            if let Some(mut info) = parse_session(&v) {
                // Its id names its message dir: one that is not a plain name is not followed.
                if let Err(e) = PlainName::new(&info.id) {
                    unsafe_id(diags, &file, "session", &e);
                    continue;
                }
                if info.directory.is_empty() {
                    self.directory_from_project(&mut info, diags);
                }
                out.push(info);
            }
        }
        out
    }

    /// A session without a directory (one OpenCode migrated from a ≤0.5 per-project tree) gets
    /// its project's worktree (`storage/project/<projectID>.json`), and says so.
    fn directory_from_project(&self, info: &mut SessionInfo, diags: &mut Diagnostics) {
        let Some(pid) = info.project_id.as_deref().filter(|p| !p.is_empty()) else {
            return;
        };
        let pid = match PlainName::new(pid) {
            Ok(pid) => pid,
            Err(e) => {
                let what = format!("session {}'s project", info.id);
                unsafe_id(diags, Path::new(&self.root), &what, &e);
                return;
            }
        };
        let file = pid.file_in(&self.root.join("project"), ".json");
        if !file.is_file() {
            return;
        }
        let Some(project) = read_json(&file, diags) else {
            return;
        };
        if let Some(w) = project
            .get("worktree")
            .and_then(Value::as_str)
            .filter(|w| !w.is_empty() && *w != "/")
        {
            diags.push(
                DiagnosticKind::RuleDirectory,
                format!(
                    "session {}: no directory stored; taken from its project's worktree {w} ({})",
                    info.id,
                    file.display()
                ),
            );
            info.directory = w.to_owned();
        }
    }

    /// Messages of one session with their parts (unordered). An id that is not a plain name
    /// (the session's, a message's) is reported and not followed.
    pub fn messages(&self, session_id: &str, diags: &mut Diagnostics) -> Vec<Message> {
        let Some(session) = self.checked(session_id, "session", diags) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for file in json_files(&self.message_dir(session)) {
            let Some(mut m) = message_file(&file, session_id, diags) else {
                continue;
            };
            let message = match PlainName::new(&m.id) {
                Ok(id) => id,
                Err(e) => {
                    unsafe_id(diags, &file, "message", &e);
                    continue;
                }
            };
            for pf in json_files(&self.part_dir(session, message)) {
                let Some(mut pv) = read_json(&pf, diags) else {
                    continue;
                };
                inject(&mut pv, "id", stem(&pf));
                if let Some(p) = parse_part(&pv, diags) {
                    if !m.parts.iter().any(|x| x.id == p.id) {
                        m.parts.push(p);
                    }
                }
            }
            out.push(m);
        }
        out
    }

    /// The messages of one session as their message files hold them, without reading a part
    /// file (the listing's read, see [`crate::formats::opencode::listing`]; parts stored inline are kept).
    pub fn listing_messages(&self, session_id: &str, diags: &mut Diagnostics) -> Vec<Message> {
        let Some(session) = self.checked(session_id, "session", diags) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for file in json_files(&self.message_dir(session)) {
            let Some(m) = message_file(&file, session_id, diags) else {
                continue;
            };
            // Skipped as the full load skips it, so both count the same messages.
            match PlainName::new(&m.id) {
                Ok(_) => out.push(m),
                Err(e) => unsafe_id(diags, &file, "message", &e),
            }
        }
        out
    }

    /// `id` as a file name in this tree, or a diagnostic.
    fn checked<'a>(
        &self,
        id: &'a str,
        what: &str,
        diags: &mut Diagnostics,
    ) -> Option<PlainName<'a>> {
        PlainName::new(id)
            .map_err(|e| unsafe_id(diags, &self.root, what, &e))
            .ok()
    }
}

/// Report an id that was not followed into the tree.
fn unsafe_id(diags: &mut Diagnostics, at: &Path, what: &str, e: &BadId) {
    diags.push(
        DiagnosticKind::UnsafeId,
        format!("{}: {what} {e}; skipped", at.display()),
    );
}

/// One message file (ids taken from the path where the JSON lacks them).
fn message_file(file: &Path, session_id: &str, diags: &mut Diagnostics) -> Option<Message> {
    let mut v = read_json(file, diags)?;
    inject(&mut v, "id", stem(file));
    inject(&mut v, "sessionID", Some(session_id.to_owned()));
    parse_message_with_inline_parts(&v, diags)
}

fn stem(path: &Path) -> Option<String> {
    path.file_stem().map(|s| s.to_string_lossy().into_owned())
}

/// Set `key` when the JSON object lacks it (ids come from file names when missing).
fn inject(v: &mut Value, key: &str, value: Option<String>) {
    if let (Some(obj), Some(value)) = (v.as_object_mut(), value) {
        if !obj.get(key).is_some_and(Value::is_string) {
            obj.insert(key.to_owned(), Value::String(value));
        }
    }
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The largest file of a tree read (OpenCode writes one message or part per file).
pub const MAX_STORAGE_FILE_BYTES: u64 = 1 << 30;

/// The `*.json` regular files of `dir`, by name. A symbolic link is not followed, as a file or
/// as `dir` itself (OpenCode writes none; one could point anywhere outside the data dir).
fn json_files(dir: &Path) -> Vec<PathBuf> {
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Vec::new();
    }
    sorted_entries(dir)
        .into_iter()
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file())
        })
        .collect()
}

/// Read one JSON file (a regular file within [`MAX_STORAGE_FILE_BYTES`]); unreadable, too
/// large, non-UTF-8 or corrupt files become diagnostics.
pub(crate) fn read_json(path: &Path, diags: &mut Diagnostics) -> Option<Value> {
    let bytes = match crate::trace::input::read_bounded(path, MAX_STORAGE_FILE_BYTES) {
        Ok(b) => b,
        Err(e) => {
            diags.push(DiagnosticKind::UnreadableFile, e.with_cause());
            return None;
        }
    };
    let text = crate::trace::input::lossy_utf8(&bytes, &path.display(), diags);
    match serde_json::from_str::<Value>(&text) {
        Ok(v @ Value::Object(_)) => Some(v),
        Ok(_) => {
            diags.push(
                DiagnosticKind::CorruptJson,
                format!("{}: not a JSON object; skipped", path.display()),
            );
            None
        }
        Err(e) => {
            diags.push(
                DiagnosticKind::CorruptJson,
                format!("{}: {e}; skipped", path.display()),
            );
            None
        }
    }
}
