//! tierscope's side of the Magic Context fold conformance harness
//! (`scripts/conformance/magic-context-fold.sh`, docs/decay.md): the tiers `decay` folds a
//! `context.db` to, at each history budget, as JSON.
//!
//! ```text
//! cargo run --example magic_context_fold -- --ids N          # message ids for N compartments
//! cargo run --example magic_context_fold -- DB 20,40,…,400 [TAIL]
//!     # {"estimator", "folds": {budget: tiers at the last fold},
//!     #  "every": {budget: [[request, tiers of the compartments closed then], …]}}
//! ```
//!
//! The compartments of `DB` must be those of session `ses_synth_3`, compartment `i` covering the
//! message ids `--ids` gives for turn `i`; `TAIL` turns (default 0) follow that no compartment
//! covers.

#[path = "../tests/it/mc_fold_common/mod.rs"]
mod common;

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("magic_context_fold: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<serde_json::Value, String> {
    match args {
        [flag, n] if flag == "--ids" => {
            let n: usize = n.parse().map_err(|_| format!("not a count: {n}"))?;
            let t = common::trace(n, 0);
            let ids: Option<Vec<(String, String)>> =
                (0..n).map(|i| common::turn_ids(&t, i)).collect();
            Ok(serde_json::json!({ "session": common::SESSION, "ids": ids }))
        }
        [db, budgets, tail @ ..] if tail.len() <= 1 => {
            let tail = match tail.first() {
                Some(t) => t.parse().map_err(|_| format!("not a count: {t}"))?,
                None => 0,
            };
            let (l, n) = common::load(Path::new(db), tail)?;
            let (mut folds, mut every) = (serde_json::Map::new(), serde_json::Map::new());
            for b in budgets.split(',') {
                let hb: u64 = b.parse().map_err(|_| format!("not a budget: {b}"))?;
                folds.insert(b.to_owned(), common::fold_tiers(&l, n, hb)?.into());
                let all = common::every_fold(&l, n, hb)?;
                every.insert(
                    b.to_owned(),
                    serde_json::to_value(all).map_err(|e| e.to_string())?,
                );
            }
            Ok(serde_json::json!({
                "estimator": common::estimator(),
                "folds": folds,
                "every": every,
            }))
        }
        _ => Err("usage: magic_context_fold --ids N | DB BUDGET,BUDGET,… [TAIL]".into()),
    }
}
