"""Project files for M1 (confmerge): the app and its vendored crates (a cargo directory source)."""

import hashlib
import json

TOMLETTE_VALUE = '''#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Bool(bool),
    Table(Table),
}

pub type Table = BTreeMap<String, Value>;

fn parse_value(v: &str) -> Option<Value> {
    if let Some(s) = v.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        return Some(Value::Str(s.to_string()));
    }
    match v {
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        _ => {}
    }
    v.replace('_', "").parse().ok().map(Value::Int)
}

fn strip_comment(line: &str) -> &str {
    let mut in_str = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '#' if !in_str => return &line[..i],
            _ => {}
        }
    }
    line
}
'''

TOMLETTE_03 = '''//! tomlette 0.3: a small parser for the TOML subset used in config files
//! (`[section]` headers, `key = value` with strings, integers and booleans).

use std::collections::BTreeMap;

''' + TOMLETTE_VALUE + '''
/// Parse a document into its root table.
///
/// A key that appears twice in the same table keeps the last value.
pub fn parse_str(src: &str) -> Result<Table, String> {
    let mut root = Table::new();
    let mut section: Option<String> = None;
    for (i, raw) in src.lines().enumerate() {
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            let name = line[1..line.len() - 1].trim().to_string();
            root.entry(name.clone()).or_insert_with(|| Value::Table(Table::new()));
            section = Some(name);
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("line {}: expected `key = value`", i + 1))?;
        let value = parse_value(v.trim()).ok_or_else(|| format!("line {}: bad value `{}`", i + 1, v.trim()))?;
        let table = match &section {
            None => &mut root,
            Some(s) => match root.get_mut(s) {
                Some(Value::Table(t)) => t,
                _ => return Err(format!("line {}: `{}` is not a table", i + 1, s)),
            },
        };
        table.insert(k.trim().to_string(), value);
    }
    Ok(root)
}
'''

TOMLETTE_04 = '''//! tomlette 0.4: a small parser for the TOML subset used in config files
//! (`[section]` headers, `key = value` with strings, integers and booleans).
//!
//! 0.4 replaces `parse_str` with `Document::parse`, which returns a `ParseError`
//! carrying the line number.

use std::collections::BTreeMap;
use std::fmt;

''' + TOMLETTE_VALUE + '''
/// A parse error and the 1-based line it was found on.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// A parsed document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    root: Table,
}

impl Document {
    pub fn parse(src: &str) -> Result<Document, ParseError> {
        let err = |line: usize, message: String| ParseError { line, message };
        let mut root = Table::new();
        let mut section: Option<String> = None;
        for (i, raw) in src.lines().enumerate() {
            let line = strip_comment(raw).trim();
            if line.is_empty() {
                continue;
            }
            if line.starts_with('[') && line.ends_with(']') {
                let name = line[1..line.len() - 1].trim().to_string();
                root.entry(name.clone()).or_insert_with(|| Value::Table(Table::new()));
                section = Some(name);
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| err(i + 1, "expected `key = value`".to_string()))?;
            let value = parse_value(v.trim()).ok_or_else(|| err(i + 1, format!("bad value `{}`", v.trim())))?;
            let table = match &section {
                None => &mut root,
                Some(s) => match root.get_mut(s) {
                    Some(Value::Table(t)) => t,
                    _ => return Err(err(i + 1, format!("`{}` is not a table", s))),
                },
            };
            let key = k.trim().to_string();
            /*DUP*/table.insert(key, value);
        }
        Ok(Document { root })
    }

    /// The root table.
    pub fn root(&self) -> &Table {
        &self.root
    }

    pub fn into_table(self) -> Table {
        self.root
    }

    /// Look up a dotted path such as `server.port`.
    pub fn get(&self, path: &str) -> Option<&Value> {
        let mut table = &self.root;
        let mut parts = path.split('.').peekable();
        while let Some(part) = parts.next() {
            let v = table.get(part)?;
            if parts.peek().is_none() {
                return Some(v);
            }
            match v {
                Value::Table(t) => table = t,
                _ => return None,
            }
        }
        None
    }
}
'''

DUP_CHECK = '''if table.contains_key(&key) {
                return Err(err(i + 1, format!("duplicate key `{}`", key)));
            }
            '''

TOMLETTE_040 = TOMLETTE_04.replace("/*DUP*/", "")
TOMLETTE_041 = TOMLETTE_04.replace("/*DUP*/", DUP_CHECK)

CFGKIT_LIB = '''//! cfgkit: helpers for layered configuration on top of tomlette.

use tomlette::{Table, Value};

/// Merge `overlay` into `base`: tables are merged key by key (recursively),
/// any other value in `overlay` replaces the one in `base`.
pub fn merge(base: &mut Table, overlay: Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(b)), Value::Table(o)) => merge(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}
'''


def crate_toml(name, version, deps="", rust_version="1.60", desc=""):
    s = f'''[package]
edition = "2021"
rust-version = "{rust_version}"
name = "{name}"
version = "{version}"
description = "{desc}"
license = "MIT OR Apache-2.0"
'''
    if deps:
        s += "\n[dependencies]\n" + deps
    return s


def checksum(name, version):
    digest = hashlib.sha256(f"{name}-{version}.crate".encode()).hexdigest()
    return json.dumps({"files": {}, "package": digest})


VENDOR = {
    ("tomlette", "0.3.5"): (crate_toml("tomlette", "0.3.5", desc="A small parser for the TOML subset used in config files"), TOMLETTE_03),
    ("tomlette", "0.4.0"): (crate_toml("tomlette", "0.4.0", desc="A small parser for the TOML subset used in config files"), TOMLETTE_040),
    ("tomlette", "0.4.1"): (crate_toml("tomlette", "0.4.1", desc="A small parser for the TOML subset used in config files"), TOMLETTE_041),
    ("cfgkit", "0.2.3"): (crate_toml("cfgkit", "0.2.3", 'tomlette = "0.3"\n', desc="Layered configuration helpers for tomlette"), CFGKIT_LIB),
    ("cfgkit", "0.3.0"): (crate_toml("cfgkit", "0.3.0", 'tomlette = "=0.4.0"\n', desc="Layered configuration helpers for tomlette"), CFGKIT_LIB),
}

VENDOR_FILES = {}
for (name, version), (toml, lib) in VENDOR.items():
    d = f"vendor/{name}-{version}"
    VENDOR_FILES[f"{d}/Cargo.toml"] = toml
    VENDOR_FILES[f"{d}/src/lib.rs"] = lib
    VENDOR_FILES[f"{d}/.cargo-checksum.json"] = checksum(name, version)

CARGO_CONFIG = '''# The build machines have no network: every dependency is vendored into vendor/
# (`cargo vendor`), and cargo reads crates-io from there.
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "vendor"

[net]
offline = true
'''

CARGO_TOML = '''[package]
name = "confmerge"
version = "0.6.2"
edition = "2021"
rust-version = "1.70"
description = "Layered config files: defaults, then site, then local overrides"
publish = false

[dependencies]
tomlette = "0.3"
cfgkit = "0.2"
'''

LIB_RS = '''//! confmerge: load layered config files (defaults, then site, then local
//! overrides) into one view.
//!
//! Public API, used by deployctl and healthd: `Config::load`, `Config::get`,
//! `ConfigError`.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use tomlette::{Table, Value};

/// A merged configuration. Keys are dotted paths such as `server.port`.
#[derive(Debug, Clone, Default)]
pub struct Config {
    root: Table,
}

/// Why a layer could not be loaded.
#[derive(Debug)]
pub enum ConfigError {
    Io(PathBuf, std::io::Error),
    Parse(PathBuf, String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Io(path, e) => write!(f, "{}: {}", path.display(), e),
            ConfigError::Parse(path, msg) => write!(f, "{}: {}", path.display(), msg),
        }
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Load `layers` in order; later files override earlier ones key by key.
    pub fn load<P: AsRef<Path>>(layers: &[P]) -> Result<Config, ConfigError> {
        let mut root = Table::new();
        for path in layers {
            let path = path.as_ref();
            let text = fs::read_to_string(path).map_err(|e| ConfigError::Io(path.to_path_buf(), e))?;
            let table = tomlette::parse_str(&text).map_err(|e| ConfigError::Parse(path.to_path_buf(), e))?;
            cfgkit::merge(&mut root, table);
        }
        Ok(Config { root })
    }

    /// The value at a dotted path as text (`"8443"`, `"true"`, `"db.internal"`);
    /// `None` if it is missing or a table.
    pub fn get(&self, key: &str) -> Option<String> {
        let mut table = &self.root;
        let mut parts = key.split('.').peekable();
        while let Some(part) = parts.next() {
            match (table.get(part)?, parts.peek()) {
                (Value::Table(t), Some(_)) => table = t,
                (v, None) => return scalar(v),
                _ => return None,
            }
        }
        None
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Table(_) => None,
    }
}
'''

MAIN_RS = '''use std::process::ExitCode;

use confmerge::Config;

const USAGE: &str = "usage: confmerge [--get KEY] LAYER...";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let key = match args.iter().position(|a| a == "--get") {
        Some(i) if i + 1 < args.len() => {
            args.remove(i);
            Some(args.remove(i))
        }
        Some(_) => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
        None => None,
    };
    if args.is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let cfg = match Config::load(&args) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("confmerge: {e}");
            return ExitCode::from(2);
        }
    };
    match key {
        Some(key) => match cfg.get(&key) {
            Some(v) => println!("{v}"),
            None => {
                eprintln!("confmerge: {key}: not set");
                return ExitCode::from(1);
            }
        },
        None => println!("ok: {} layers", args.len()),
    }
    ExitCode::SUCCESS
}
'''

TESTS_RS = '''use confmerge::{Config, ConfigError};

const DEFAULTS: &str = "tests/fixtures/defaults.toml";
const SITE: &str = "tests/fixtures/site.toml";
const LOCAL: &str = "tests/fixtures/local.toml";

#[test]
fn later_layers_override_earlier_ones() {
    let cfg = Config::load(&[DEFAULTS, SITE, LOCAL]).unwrap();
    assert_eq!(cfg.get("server.port").as_deref(), Some("8443"));
    assert_eq!(cfg.get("server.host").as_deref(), Some("edge-1.internal"));
    assert_eq!(cfg.get("db.pool").as_deref(), Some("16"));
    assert_eq!(cfg.get("db.url").as_deref(), Some("postgres://db.internal/app"));
    assert_eq!(cfg.get("debug").as_deref(), Some("true"));
}

#[test]
fn tables_and_missing_keys_are_none() {
    let cfg = Config::load(&[DEFAULTS]).unwrap();
    assert_eq!(cfg.get("server"), None);
    assert_eq!(cfg.get("server.tls"), None);
    assert_eq!(cfg.get("nope.nope"), None);
}

#[test]
fn parse_errors_name_the_file() {
    match Config::load(&[DEFAULTS, "tests/fixtures/broken.toml"]) {
        Err(ConfigError::Parse(path, msg)) => {
            assert!(path.ends_with("broken.toml"));
            assert!(msg.contains("line 2"), "{msg}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}
'''

FIXTURES = {
    "tests/fixtures/defaults.toml": '''# Shipped defaults.
debug = false

[server]
host = "0.0.0.0"
port = 8080

[db]
url = "postgres://localhost/app"
pool = 16
''',
    "tests/fixtures/site.toml": '''# Per-site settings (written by the provisioning job).
[server]
host = "edge-1.internal"
port = 8443

[db]
url = "postgres://db.internal/app"
''',
    "tests/fixtures/local.toml": '''# Local overrides on one box.
debug = true
''',
    "tests/fixtures/broken.toml": '''[server]
port 8080
''',
}

CHANGELOG = '''# Changelog

## 0.6.2 - 2026-10-08

- `confmerge --get KEY` exits 1 when the key is not set.

## 0.6.1 - 2026-09-21

- Parse errors name the file they come from.
'''

README = '''# confmerge

Loads layered config files (shipped defaults, then per-site settings, then local
overrides on one box) into one view. Library used by deployctl and healthd; the
`confmerge` binary is for debugging a box:

    confmerge --get server.port /etc/app/defaults.toml /etc/app/site.toml /etc/app/local.toml

Build: `cargo build` / `cargo test`. Dependencies are vendored in `vendor/` and the
build is offline (`.cargo/config.toml`); the build machines have no network.
Supported toolchains: Rust 1.70 and newer (`rust-version` in Cargo.toml).
'''

FILES = {
    "Cargo.toml": CARGO_TOML,
    ".cargo/config.toml": CARGO_CONFIG,
    ".gitignore": "/target\n",
    "src/lib.rs": LIB_RS,
    "src/main.rs": MAIN_RS,
    "tests/layers.rs": TESTS_RS,
    "CHANGELOG.md": CHANGELOG,
    "README.md": README,
}
FILES.update(FIXTURES)
FILES.update(VENDOR_FILES)
