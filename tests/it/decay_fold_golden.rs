//! `decay`'s fold against Magic Context's own renderer, at every history budget of the golden
//! files `tests/data/magic-context/fold-golden-{chars,claude}.json` (written by
//! `scripts/conformance/magic-context-fold.sh` from Magic Context's `decay-render.ts`; see
//! docs/decay.md). Each set of compartments is written to a v98 `context.db`, replayed under
//! `decay` with `ttl_s = 0` (with the case's uncovered turns after the compartments), and the
//! tiers of the last request's fold must be ones Magic Context renders identically to its own
//! choice. Both files must be present; the one of the estimator this run counts with is checked.

use std::path::Path;

use rusqlite::params;
use serde_json::Value;

use crate::decay_conformance::build_db;
use crate::mc_fold_common as common;

fn golden(tokenizer: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/magic-context")
        .join(format!("fold-golden-{tokenizer}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the fold golden file {} is missing: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

/// The compartments of one case as Magic Context's `appendCompartments` stores them: `legacy`
/// is 0 exactly when p1 is a non-empty string; compartment `i` covers turn `i` by message id.
fn write_case(db: &Path, case: &Value) -> usize {
    let c = build_db(db, 98);
    let rows = case["compartments"].as_array().unwrap();
    let t = common::trace(rows.len(), 0);
    for (i, r) in rows.iter().enumerate() {
        let (first, last) = common::turn_ids(&t, i).unwrap();
        let p: Vec<Option<String>> = ["p1", "p2", "p3", "p4"]
            .iter()
            .map(|k| text(&r[k]))
            .collect();
        let legacy = i64::from(p[0].as_deref().is_none_or(str::is_empty));
        c.execute(
            "INSERT INTO compartments (session_id, sequence, start_message, end_message,
               start_message_id, end_message_id, title, content, p1, p2, p3, p4, importance,
               legacy, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            params![
                common::SESSION,
                r["sequence"].as_i64().unwrap(),
                r["startMessage"].as_i64().unwrap(),
                r["endMessage"].as_i64().unwrap(),
                first,
                last,
                r["title"].as_str().unwrap(),
                r["content"].as_str().unwrap(),
                p[0],
                p[1],
                p[2],
                p[3],
                r["importance"].as_i64().unwrap(),
                legacy,
                1_700_000_000_000i64 + i as i64,
            ],
        )
        .unwrap();
    }
    rows.len()
}

#[test]
fn the_fold_agrees_with_magic_contexts_renderer_at_every_budget() {
    // The golden of the estimator this run counts with (CI installs the Claude vocabulary);
    // both files must be present either way.
    let files = [("chars", golden("chars")), ("claude", golden("claude"))];
    let active = common::estimator();
    let g = &files.iter().find(|(name, _)| *name == active).unwrap().1;
    assert_eq!(g["tokenizer"], active);
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for case in g["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let db = dir.path().join(format!("{name}.db"));
        let n = write_case(&db, case);
        let tail = case["tail_turns"].as_u64().unwrap() as usize;
        let (l, read) = common::load(&db, tail).unwrap();
        assert_eq!(read, n, "{name}");
        let folds = case["folds"].as_object().unwrap();
        assert!(!folds.is_empty(), "{name}");
        for (budget, fold) in folds {
            let hb: u64 = budget.parse().unwrap();
            let ours = common::fold_tiers(&l, n, hb).unwrap();
            // Magic Context's tiers, and for a row where several tiers render the same text (a
            // NULL tier falls back to a denser one) any of those.
            let digits = |s: &str| -> Vec<u8> { s.bytes().map(|b| b - b'0').collect() };
            let mut same: Vec<Vec<u8>> = digits(fold["tiers"].as_str().unwrap())
                .into_iter()
                .map(|t| vec![t])
                .collect();
            for (row, ties) in fold["ties"].as_object().unwrap() {
                same[row.parse::<usize>().unwrap()] = digits(ties.as_str().unwrap());
            }
            assert_eq!(same.len(), n, "{name} at {hb}");
            if !ours.iter().zip(&same).all(|(t, ok)| ok.contains(t)) {
                wrong.push(format!(
                    "{name} at {hb}: tierscope {}, Magic Context {}",
                    ours.iter().map(u8::to_string).collect::<String>(),
                    fold["tiers"]
                ));
            }
            checked += 1;
        }
    }
    assert!(checked >= 200, "only {checked} folds in the golden file");
    assert!(
        wrong.is_empty(),
        "{} of {checked} folds differ from Magic Context's:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
