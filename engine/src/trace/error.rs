//! Errors that stop a load altogether (a file that cannot be read at all). Everything less is a
//! [`super::diagnostics::Diagnostic`].

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not an OpenCode export: {reason}")]
    NotAnExport { path: PathBuf, reason: String },
    #[error("cannot open database {path}: {reason}")]
    Database { path: PathBuf, reason: String },
    #[error("no OpenCode data found at {0}")]
    NoData(PathBuf),
    #[error("session {id} not found in {path}")]
    SessionNotFound { id: String, path: PathBuf },
    #[error("{path} holds no sessions")]
    NoSessions { path: PathBuf },
    #[error("{path} is {kind}, not a regular file; tierscope reads an opencode.db, an OpenCode data dir or an export file")]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{path} is {}, more than the {} tierscope reads from one file", super::input::human_size(*size), super::input::human_size(*cap))]
    TooLarge { path: PathBuf, size: u64, cap: u64 },
}

impl LoadError {
    /// The message with its cause (`cannot read P: permission denied`), for a diagnostic.
    pub fn with_cause(&self) -> String {
        match self {
            LoadError::Io { source, .. } => format!("{self}: {source}"),
            other => other.to_string(),
        }
    }
}
