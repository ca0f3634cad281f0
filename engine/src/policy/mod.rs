//! Policies (MODEL §4): what tier each episode should have, and when a change is applied.
//! A policy is data: a TOML file with a `kind` and knobs. The built-ins ship in the crate
//! (`builtin/*.toml`, listed by the registry in [`kinds`]); users add their own files. Each kind
//! lives in one file (or folder) under [`kinds`]: its knobs, its answers to what the engine and
//! the explorer ask, its decision (`decay/` also holds Magic Context's curve and fold). This
//! module holds the policy as data and its validation.

pub mod kinds;
pub mod knobs;
pub mod model;

pub use model::{
    parse_overrides, parse_policy, Floors, KindRole, KnobSpec, KnobValue, Policy, PolicyError,
    PolicyKind, PolicySource,
};

pub use kinds::{PromotionWait, Thresholds, BUILTIN_FILES};

/// The names of the built-in policies.
pub fn builtin_names() -> Vec<String> {
    BUILTIN_FILES.iter().map(|(n, _)| (*n).to_owned()).collect()
}

/// Every built-in policy, resolved with its defaults.
pub fn builtins() -> Result<Vec<Policy>, PolicyError> {
    BUILTIN_FILES
        .iter()
        .map(|(name, text)| parse_policy(text, name, name, PolicySource::Builtin))
        .collect()
}

/// The built-ins a session recorded by `agent` is compared under: every one but the flat
/// baselines of other agents (the session's own agent's compaction is its baseline; every flat
/// built-in where none names the agent).
pub fn builtins_for_agent(agent: &str) -> Result<Vec<Policy>, PolicyError> {
    let all = builtins()?;
    let own = |p: &Policy| p.kind != PolicyKind::Flat || p.choice("rules") == agent;
    if all.iter().any(|p| p.kind == PolicyKind::Flat && own(p)) {
        Ok(all.into_iter().filter(own).collect())
    } else {
        Ok(all)
    }
}

/// Load a policy by built-in name or TOML file path, then apply `KEY=VALUE` overrides.
/// A name that is neither a built-in nor an existing file is an error that lists the built-ins.
pub fn load(name_or_path: &str, overrides: &[(String, String)]) -> Result<Policy, PolicyError> {
    let policy = if let Some((name, text)) = BUILTIN_FILES.iter().find(|(n, _)| *n == name_or_path)
    {
        parse_policy(text, name, name, PolicySource::Builtin)?
    } else {
        let path = std::path::Path::new(name_or_path);
        if !path.is_file() {
            return Err(PolicyError::NotFound {
                name: name_or_path.to_owned(),
                builtins: builtin_names(),
            });
        }
        let text =
            crate::trace::input::read_to_string_capped(path, crate::trace::input::MAX_CONFIG_BYTES)
                .map_err(|source| PolicyError::Io {
                    path: path.to_path_buf(),
                    source,
                })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| name_or_path.to_owned());
        parse_policy(
            &text,
            &stem,
            &path.display().to_string(),
            PolicySource::File(path.to_path_buf()),
        )?
    };
    policy.with_overrides(overrides)
}
