//! The knobs each policy kind understands: defaults, ranges, steps and help (MODEL §4), and the
//! constraints between them.

use super::model::{KnobSpec, KnobValue, Policy, PolicyKind};

/// Boundary kinds a schedule can wait for (MODEL §1 "boundary").
pub const BOUNDARIES: [&str; 5] = ["request", "user-turn", "cache-expiry", "milestone", "fold"];

fn num(name: &str, default: f64, min: f64, max: f64, step: f64, help: &str) -> KnobSpec {
    KnobSpec {
        name: name.into(),
        default: KnobValue::Num(default),
        min: Some(min),
        max: Some(max),
        step: Some(step),
        choices: Vec::new(),
        integer: step.fract() == 0.0,
        help: help.into(),
    }
}

fn flag(name: &str, default: bool, help: &str) -> KnobSpec {
    KnobSpec {
        name: name.into(),
        default: KnobValue::Bool(default),
        min: None,
        max: None,
        step: None,
        choices: Vec::new(),
        integer: false,
        help: help.into(),
    }
}

fn choice(name: &str, default: &str, choices: &[&str], help: &str) -> KnobSpec {
    KnobSpec {
        name: name.into(),
        default: KnobValue::Choice(default.into()),
        min: None,
        max: None,
        step: None,
        choices: choices.iter().map(|c| (*c).to_owned()).collect(),
        integer: false,
        help: help.into(),
    }
}

/// Knobs every kind has.
fn common(apply_prunes: bool) -> Vec<KnobSpec> {
    vec![
        num("ttl_s", 300.0, 0.0, 86_400.0, 30.0,
            "provider cache lifetime in seconds: a longer gap is a cache-expiry boundary and reads nothing from cache"),
        num("thrash_window", 20.0, 1.0, 10_000.0, 1.0,
            "a change that reverses the same episode's previous change within this many requests counts as thrash"),
        flag("apply_recorded_prunes", apply_prunes,
            "render tool outputs OpenCode pruned as \"[Old tool result content cleared]\" from the time it pruned them"),
        num("system_tokens", -1.0, -1.0, 1_000_000.0, 100.0,
            "tokens of the system chunk (system prompt + tool schemas); -1 = estimate per (agent, model) from the recording"),
    ]
}

fn boundary(default: &str) -> KnobSpec {
    choice("boundary", default, &BOUNDARIES[..4],
        "when desired changes are applied: request = at once; user-turn / milestone also at cache expiry; cache-expiry only when the cache is dead")
}

/// The knob declarations of a kind, with the kind's defaults, in name order.
pub fn specs(kind: PolicyKind) -> Vec<KnobSpec> {
    let mut v = match kind {
        PolicyKind::Full => common(false),
        PolicyKind::Truncate => {
            let mut v = common(false);
            v.push(boundary("request"));
            v
        }
        PolicyKind::Flat => {
            let mut v = common(true);
            v.extend([
                choice("trigger", "recorded", &["recorded", "simulate"],
                    "recorded = compact where OpenCode did and render what it sent; simulate = compact when tokens reach the usable limit"),
                num("context_limit", 0.0, 0.0, 10_000_000.0, 1000.0,
                    "model context window in tokens for simulate; 0 = the model-limits table"),
                num("max_output", 0.0, 0.0, 1_000_000.0, 1000.0,
                    "model output limit in tokens for simulate; 0 = the model-limits table"),
                num("tail_turns", 2.0, 0.0, 100.0, 1.0,
                    "simulate: keep at most the last N human turns verbatim after a compaction"),
                num("preserve_recent_share", 0.25, 0.0, 1.0, 0.05,
                    "simulate: the kept tail holds at most this share of the usable limit"),
                num("preserve_recent_min", 2000.0, 0.0, 1_000_000.0, 500.0,
                    "simulate: lower clamp of the kept tail in tokens"),
                num("preserve_recent_max", 8000.0, 0.0, 1_000_000.0, 500.0,
                    "simulate: upper clamp of the kept tail in tokens"),
                num("summary_tokens", 2000.0, 0.0, 100_000.0, 100.0,
                    "simulate, where the trace has no recorded summary: tokens of compact tiers that stand in for one"),
            ]);
            v
        }
        PolicyKind::Progressive => {
            let mut v = common(false);
            v.extend([
                choice("driver", "pressure", &["pressure", "age"],
                    "pressure = demote/promote by budget pressure with hysteresis (retention); age = tier from age alone (the naive baseline)"),
                num("demote_at", 0.9, 0.05, 2.0, 0.01, "pressure above which victims are demoted"),
                num("target", 0.75, 0.05, 2.0, 0.01, "pressure that demotion aims for and promotion must not exceed"),
                num("promote_at", 0.6, 0.0, 2.0, 0.01, "pressure below which episodes are promoted"),
                num("min_dwell", 3.0, 0.0, 1000.0, 1.0,
                    "an episode changed less than this many requests ago is not changed again (except in an emergency)"),
                boundary("user-turn"),
                num("relevance_window", 10.0, 0.0, 1000.0, 1.0,
                    "an episode is relevant when one of the last N requests touched one of its keys"),
                choice("relevance_source", "keys", &["keys", "probes"],
                    "keys = from tool inputs and user text; probes = the scheduler is told which episodes due probes need"),
                num("dense_after", 2.0, 0.0, 100_000.0, 1.0, "age driver: requests after closing before dense"),
                num("compact_after", 4.0, 0.0, 100_000.0, 1.0, "age driver: requests after closing before compact"),
                num("anchor_after", 8.0, 0.0, 100_000.0, 1.0, "age driver: requests after closing before anchor"),
            ]);
            v
        }
        PolicyKind::Decay => {
            let mut v = common(false);
            v.extend([
                flag("respect_floors", false,
                    "keep episodes at or above their floors (Magic Context has no floors, so off by default)"),
                num("h50", 24.0, 1.0, 1000.0, 1.0, "half-life in episodes at importance 50 and pressure 1"),
                num("d", 25.0, 1.0, 200.0, 1.0, "importance points per doubling of the half-life"),
                num("z1", 0.201, 0.0, 10.0, 0.001, "z-boundary full → dense"),
                num("z2", 0.729, 0.0, 10.0, 0.001, "z-boundary dense → compact"),
                num("z3", 1.322, 0.0, 10.0, 0.001, "z-boundary compact → anchor"),
                num("z4", 2.587, 0.0, 20.0, 0.001, "z-boundary anchor → archived (dropped)"),
                num("p_floor", 0.1, 0.001, 1.0, 0.01, "pressure floor (caps relaxation at 1/p_floor)"),
                choice("tier_cost", "constants", &["constants", "measured"],
                    "pressure from Magic Context's per-tier constants or from each episode's own token counts"),
                num("cost_full", 322.0, 0.0, 100_000.0, 1.0, "constant tokens of a full (P1) episode"),
                num("cost_dense", 109.0, 0.0, 100_000.0, 1.0, "constant tokens of a dense (P2) episode"),
                num("cost_compact", 35.0, 0.0, 100_000.0, 1.0, "constant tokens of a compact (P3) episode"),
                num("cost_anchor", 20.0, 0.0, 100_000.0, 1.0, "constant tokens of an anchor (P4) episode"),
                num("execute_threshold", 0.65, 0.2, 0.9, 0.05, "Magic Context's execute threshold (share of the budget)"),
                num("history_budget_percentage", 0.15, 0.05, 1.0, 0.05,
                    "history budget = budget × execute_threshold × this"),
                num("backstop_m1_m0", 0.15, 0.0, 10.0, 0.01,
                    "fold when tokens closed since the last fold exceed this share of the folded tokens (folded ≥ 500)"),
                num("backstop_m1_budget", 0.2, 0.0, 10.0, 0.01,
                    "fold when tokens closed since the last fold exceed this share of the history budget"),
            ]);
            v
        }
        PolicyKind::Oracle => {
            let mut v = common(false);
            v.push(boundary("request"));
            v
        }
    };
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// Whether the replay reads knob `name` under `p`'s other settings: the choice knobs that pick
/// a driver leave some knobs unread. A progressive policy on the age driver ignores the pressure
/// thresholds and relevance, on the pressure driver the age steps (and the relevance window when
/// relevance comes from probes); `flat` with `trigger = recorded` ignores the simulate knobs;
/// `decay` with `tier_cost = measured` ignores the per-tier constants. A knob the kind does not
/// declare is not read. Sliders and sweeps that offer only read knobs never move a dead one.
pub fn is_read(p: &Policy, name: &str) -> bool {
    if p.spec(name).is_none() {
        return false;
    }
    match p.kind {
        PolicyKind::Progressive => {
            let age = p.choice("driver") == "age";
            match name {
                "demote_at" | "target" | "promote_at" | "relevance_source" => !age,
                "relevance_window" => !age && p.choice("relevance_source") != "probes",
                "dense_after" | "compact_after" | "anchor_after" => age,
                _ => true,
            }
        }
        PolicyKind::Flat => match name {
            "context_limit"
            | "max_output"
            | "tail_turns"
            | "preserve_recent_share"
            | "preserve_recent_min"
            | "preserve_recent_max"
            | "summary_tokens" => p.choice("trigger") == "simulate",
            _ => true,
        },
        PolicyKind::Decay => match name {
            "cost_full" | "cost_dense" | "cost_compact" | "cost_anchor" => {
                p.choice("tier_cost") != "measured"
            }
            _ => true,
        },
        _ => true,
    }
}

/// Constraints between knobs; `Err` explains the first one violated.
pub fn check_constraints(p: &Policy) -> Result<(), String> {
    match p.kind {
        PolicyKind::Progressive => {
            let (pa, t, da) = (p.num("promote_at"), p.num("target"), p.num("demote_at"));
            if !(pa < t && t < da) {
                return Err(format!(
                    "knobs must satisfy promote_at < target < demote_at (got {pa} < {t} < {da})"
                ));
            }
            let (d, c, a) = (
                p.num("dense_after"),
                p.num("compact_after"),
                p.num("anchor_after"),
            );
            if !(d <= c && c <= a) {
                return Err(format!(
                    "knobs must satisfy dense_after <= compact_after <= anchor_after (got {d}, {c}, {a})"
                ));
            }
        }
        PolicyKind::Decay => {
            let z = [p.num("z1"), p.num("z2"), p.num("z3"), p.num("z4")];
            if !(z[0] < z[1] && z[1] < z[2] && z[2] < z[3]) {
                return Err(format!("knobs must satisfy z1 < z2 < z3 < z4 (got {z:?})"));
            }
        }
        PolicyKind::Flat if p.num("preserve_recent_min") > p.num("preserve_recent_max") => {
            return Err("knobs must satisfy preserve_recent_min <= preserve_recent_max".into());
        }
        _ => {}
    }
    if p.kind != PolicyKind::Decay
        && p.knobs.contains_key("boundary")
        && p.choice("boundary") == "fold"
    {
        return Err("boundary = fold is only for kind decay".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::policy::load;

    fn over(name: &str, sets: &[(&str, &str)]) -> crate::policy::Policy {
        let o: Vec<(String, String)> = sets
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        load(name, &o).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn drivers_say_which_knobs_they_read() {
        let retention = over("retention", &[]);
        assert!(retention.reads("demote_at") && retention.reads("min_dwell"));
        assert!(!retention.reads("dense_after"));
        assert!(!retention.reads("h50"), "not a knob of the kind");
        let age = over("age", &[]);
        assert!(age.reads("dense_after") && age.reads("boundary"));
        assert!(!age.reads("demote_at") && !age.reads("relevance_window"));
        let probes = over("retention", &[("relevance_source", "probes")]);
        assert!(!probes.reads("relevance_window"));
        let flat = over("opencode", &[]);
        assert!(!flat.reads("tail_turns") && flat.reads("ttl_s"));
        assert!(over("opencode", &[("trigger", "simulate")]).reads("tail_turns"));
        let decay = over("decay", &[("tier_cost", "measured")]);
        assert!(!decay.reads("cost_full") && decay.reads("h50"));
    }
}
