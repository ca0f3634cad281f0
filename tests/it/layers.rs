//! The engine's layers (docs/ARCHITECTURE.md): a core that reads traces, builds episodes and
//! tiers, counts tokens and replays schedules, as plain data and pure functions; above it the
//! integrations that call models or the outside (the historian, model-written summaries), follow
//! a live session, and run research, comparisons, sweeps and fixtures. Data flows up: no core
//! module names an integration outside its tests, so the core builds and runs without them.

use std::path::{Path, PathBuf};

const ENGINE_SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/engine/src");

/// The core's modules (`engine/src/<name>/` or `<name>.rs`).
const CORE: &[&str] = &[
    "trace",
    "formats",
    "episode",
    "tokens",
    "session",
    "policy",
    "replay",
    "text",
    "output_guard",
    "cache_file",
    "rng",
    "watch",
];

/// The integrations above it.
const ABOVE: &[&str] = &[
    "historian",
    "research",
    "follow",
    "compare",
    "sweep",
    "fixture",
];

fn rust_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        for e in std::fs::read_dir(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())) {
            rust_files(&e.expect("dir entry").path(), out);
        }
    } else if p.extension().is_some_and(|x| x == "rs") {
        out.push(p.to_owned());
    }
}

#[test]
fn no_core_module_names_an_integration() {
    let root = Path::new(ENGINE_SRC);
    let module = |name: &str| -> PathBuf {
        let dir = root.join(name);
        let file = root.join(format!("{name}.rs"));
        assert!(
            dir.is_dir() || file.is_file(),
            "module {name} is gone: update the layers"
        );
        if dir.is_dir() {
            dir
        } else {
            file
        }
    };
    for a in ABOVE {
        module(a);
    }
    let mut files = Vec::new();
    for c in CORE {
        rust_files(&module(c), &mut files);
    }
    assert!(files.len() > 100, "{} core files", files.len());
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        // A file's tests may use the fixtures; the code above them may not reach up.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for a in ABOVE {
                if line.contains(&format!("crate::{a}::")) || line.contains(&format!("crate::{a};"))
                {
                    found.push(format!("{}:{}: {line}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "core modules reaching up:\n{}",
        found.join("\n")
    );
}

/// Inside `episode/`, each job's module uses only the ones below it: the rules and the text
/// readers stand alone, the evidence rule reads them, the facts hold what the evidence found,
/// and classification uses them all. A cycle here is how one 1,800-line module grew.
#[test]
fn the_episode_modules_depend_one_way() {
    let below: &[(&str, &[&str])] = &[
        ("rules", &["reading", "evidence", "facts", "classify"]),
        (
            "reading",
            &["rules", "evidence", "facts", "classify", "prose"],
        ),
        ("prose", &["evidence", "facts", "classify"]),
        ("evidence", &["facts", "classify"]),
        ("facts", &["classify"]),
    ];
    let mut found = Vec::new();
    for (module, not) in below {
        let path = Path::new(ENGINE_SRC).join(format!("episode/{module}.rs"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for above in *not {
                if line.contains(&format!("super::{above}"))
                    || line.contains(&format!("episode::{above}"))
                {
                    found.push(format!("episode/{module}.rs:{}: {line}", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "episode modules reaching up:\n{}",
        found.join("\n")
    );
}

/// Episodes are built from data: a database (Magic Context's `context.db`, an agent's) is read by
/// its reader in `formats/`, never from `episode/`.
#[test]
fn no_database_is_opened_in_episode() {
    let mut files = Vec::new();
    rust_files(&Path::new(ENGINE_SRC).join("episode"), &mut files);
    assert!(files.len() > 10, "{} episode files", files.len());
    let found: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .expect("read")
                .contains("rusqlite")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        found.is_empty(),
        "episode modules opening a database: {found:?}"
    );
}
