//! Sessions resumed into a new file. `claude --resume` / `--continue` of an older session may
//! start a new session file that opens with copies of the older session's records, which keep
//! that session's `sessionId`. Those responses were sent and billed in the older session: in
//! the new file they are history the model was shown again, not requests of its own, so each
//! response is counted once (ccusage counts the same way, by message id and request id across
//! files).

use std::collections::HashSet;
use std::path::Path;

/// The other sessions of a session file's project dir (their files' names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    others: HashSet<String>,
}

impl Origins {
    /// The sessions beside `path` (none for a sub-agent transcript, whose records carry the
    /// parent session's id by design).
    pub fn of(path: &Path) -> Origins {
        let own = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        let Some(dir) = path.parent() else {
            return Origins::default();
        };
        if dir.file_name().is_some_and(|n| n == "subagents") {
            return Origins::default();
        }
        let others = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let p = e.path();
                (p.extension().is_some_and(|x| x == "jsonl"))
                    .then(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                    .flatten()
            })
            .filter(|s| Some(s) != own.as_ref())
            .collect();
        Origins { others }
    }

    /// Whether a record carrying `session_id` is a copy of another session's (that session's
    /// file is here to count it).
    pub fn copied(&self, session_id: Option<&str>) -> bool {
        session_id.is_some_and(|s| self.others.contains(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_of_a_sibling_session_is_a_copy_and_a_sub_agents_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a.jsonl");
        let b = dir.path().join("b.jsonl");
        std::fs::write(&a, "").expect("write");
        std::fs::write(&b, "").expect("write");
        let o = Origins::of(&b);
        assert!(o.copied(Some("a")));
        assert!(!o.copied(Some("b")) && !o.copied(Some("c")) && !o.copied(None));
        let subs = dir.path().join("b").join("subagents");
        std::fs::create_dir_all(&subs).expect("mkdir");
        let agent = subs.join("agent-x.jsonl");
        std::fs::write(&agent, "").expect("write");
        assert!(!Origins::of(&agent).copied(Some("a")));
    }
}
