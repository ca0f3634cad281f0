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
/// classification uses them all, and the tiers and the canonical record sit on top. A cycle here
/// is how one 1,800-line module grew, so the whole graph is checked for one.
#[test]
fn the_episode_modules_depend_one_way() {
    let dir = Path::new(ENGINE_SRC).join("episode");
    let mut modules: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let p = e.ok()?.path();
            let stem = p.file_stem()?.to_str()?.to_owned();
            (p.extension()? == "rs" && stem != "mod").then_some(stem)
        })
        .collect();
    modules.sort();
    assert!(modules.len() >= 15, "{modules:?}");
    // Who uses whom, from the code above each file's tests (comments and docs left out).
    let uses: Vec<Vec<usize>> = modules
        .iter()
        .map(|m| {
            let path = dir.join(format!("{m}.rs"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let mut used = Vec::new();
            for (j, other) in modules.iter().enumerate() {
                let named = [format!("super::{other}"), format!("episode::{other}")]
                    .iter()
                    .any(|p| {
                        code.match_indices(p.as_str()).any(|(i, _)| {
                            let next = code[i + p.len()..].chars().next();
                            !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        })
                    });
                if other != m && named {
                    used.push(j);
                }
            }
            used
        })
        .collect();
    // Depth-first: a module met again while still on the path closes a cycle.
    fn visit(
        i: usize,
        uses: &[Vec<usize>],
        state: &mut [u8],
        path: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        match state[i] {
            2 => return None,
            1 => {
                let from = path.iter().position(|&p| p == i).unwrap_or(0);
                let mut cycle = path[from..].to_vec();
                cycle.push(i);
                return Some(cycle);
            }
            _ => {}
        }
        state[i] = 1;
        path.push(i);
        for &j in &uses[i] {
            if let Some(c) = visit(j, uses, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state[i] = 2;
        None
    }
    let mut state = vec![0u8; modules.len()];
    for i in 0..modules.len() {
        if let Some(c) = visit(i, &uses, &mut state, &mut Vec::new()) {
            let names: Vec<&str> = c.iter().map(|&i| modules[i].as_str()).collect();
            panic!("a cycle among episode's modules: {}", names.join(" -> "));
        }
    }
    // And the basics stand alone.
    for base in ["reading", "segment", "model"] {
        let i = modules.iter().position(|m| m == base).expect(base);
        assert!(
            uses[i].iter().all(|&j| modules[j] == "model"),
            "{base} uses {:?}",
            uses[i].iter().map(|&j| &modules[j]).collect::<Vec<_>>()
        );
    }
}

/// The episode stage builds on the trace, the formats' readers and the token counter; the
/// session that loads it (and everything above) is not named from it.
#[test]
fn episodes_do_not_name_the_session_that_loads_them() {
    let mut files = Vec::new();
    rust_files(&Path::new(ENGINE_SRC).join("episode"), &mut files);
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for up in ["session", "replay", "policy", "compare", "research"] {
                if line.contains(&format!("crate::{up}")) {
                    found.push(format!("{}:{}: {line}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "episode reaching up:\n{}",
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

/// The explorer knows a pane (diff mode, the sweep pane) only through its registry
/// (`src/tui/panels.rs`): no other file of the explorer names a pane's module or its registry
/// variant, so adding a pane is its folder and one registry line.
#[test]
fn the_explorer_names_a_pane_only_in_its_registry() {
    let tui = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/tui"));
    let registry = std::fs::read_to_string(tui.join("panels.rs")).expect("read panels.rs");
    // The registered panes: `Id => field: crate::tui::<module>::<State>` lines of `panels!`.
    let panes: Vec<(String, String)> = registry
        .lines()
        .filter_map(|l| {
            let (id, rest) = l.trim().split_once(" => ")?;
            let module = rest.split("crate::tui::").nth(1)?.split("::").next()?;
            Some((id.to_owned(), module.to_owned()))
        })
        .collect();
    assert!(
        panes.len() >= 2,
        "no panes found in the registry: {panes:?}"
    );
    let mut files = Vec::new();
    rust_files(tui, &mut files);
    let mut found = Vec::new();
    for (id, module) in &panes {
        let own = tui.join(module);
        for f in files
            .iter()
            .filter(|f| !f.starts_with(&own) && !f.ends_with("panels.rs"))
        {
            let text = std::fs::read_to_string(f).expect("read");
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (n, line) in code.lines().enumerate() {
                let line = line.trim_start();
                if line.starts_with("//") {
                    continue;
                }
                let names = [
                    format!("tui::{module}::"),
                    format!("PanelId::{id}"),
                    format!("PanelMode::{id}"),
                    format!("PanelAction::{id}"),
                ];
                if names.iter().any(|w| line.contains(w.as_str())) {
                    found.push(format!("{}:{}: {line}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a pane named outside its folder and the registry:\n{}",
        found.join("\n")
    );
}
