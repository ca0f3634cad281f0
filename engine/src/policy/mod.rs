//! Policies (MODEL §4): what tier each episode should have, and when a change is applied.
//! A policy is data: a TOML file with a `kind` and knobs. The eight built-ins ship in the crate
//! (`builtin/*.toml`); users add their own files. The decision logic per kind lives in
//! [`crate::replay`]; this module holds the data, its validation and Magic Context's decay curve.

pub mod decay;
pub mod kinds;
pub mod model;

pub use model::{
    parse_overrides, parse_policy, KnobSpec, KnobValue, Policy, PolicyError, PolicyKind,
    PolicySource,
};

/// The built-in policies' names and TOML texts, in display order.
pub const BUILTIN_FILES: [(&str, &str); 8] = [
    ("full", include_str!("builtin/full.toml")),
    ("truncate", include_str!("builtin/truncate.toml")),
    ("opencode", include_str!("builtin/opencode.toml")),
    ("age", include_str!("builtin/age.toml")),
    ("retention", include_str!("builtin/retention.toml")),
    ("decay", include_str!("builtin/decay.toml")),
    ("oracle", include_str!("builtin/oracle.toml")),
    ("oracle-legal", include_str!("builtin/oracle-legal.toml")),
];

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
