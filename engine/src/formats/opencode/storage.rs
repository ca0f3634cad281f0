//! OpenCode's JSON file trees (reference §1.2, §1.3):
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

    fn message_dir(&self, session_id: &str) -> PathBuf {
        match self.layout {
            Layout::Global => self.root.join("message").join(session_id),
            Layout::PerProject => self.root.join("session").join("message").join(session_id),
        }
    }

    fn part_dir(&self, session_id: &str, message_id: &str) -> PathBuf {
        match self.layout {
            Layout::Global => self.root.join("part").join(message_id),
            Layout::PerProject => self
                .root
                .join("session")
                .join("part")
                .join(session_id)
                .join(message_id),
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
        let file = self.root.join("project").join(format!("{pid}.json"));
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

    /// Messages of one session with their parts (unordered).
    pub fn messages(&self, session_id: &str, diags: &mut Diagnostics) -> Vec<Message> {
        let mut out = Vec::new();
        for file in json_files(&self.message_dir(session_id)) {
            let Some(mut m) = message_file(&file, session_id, diags) else {
                continue;
            };
            for pf in json_files(&self.part_dir(session_id, &m.id)) {
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
        json_files(&self.message_dir(session_id))
            .iter()
            .filter_map(|file| message_file(file, session_id, diags))
            .collect()
    }
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

fn json_files(dir: &Path) -> Vec<PathBuf> {
    sorted_entries(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect()
}

/// Read one JSON file; unreadable, non-UTF-8 or corrupt files become diagnostics.
pub(crate) fn read_json(path: &Path, diags: &mut Diagnostics) -> Option<Value> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            diags.push(
                DiagnosticKind::UnreadableFile,
                format!("{}: {e}", path.display()),
            );
            return None;
        }
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            diags.push(
                DiagnosticKind::NonUtf8,
                format!(
                    "{}: invalid UTF-8 at byte {}; replaced",
                    path.display(),
                    e.utf8_error().valid_up_to()
                ),
            );
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
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
