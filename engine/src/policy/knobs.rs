//! Knob declarations (MODEL §4): the helpers each kind's file uses to declare its knobs, the
//! knobs every kind has, and the dispatch to the kinds' own declarations and constraints
//! (`policy/kinds/<kind>.rs`).

use super::model::{KnobSpec, KnobValue, Policy, PolicyKind};

/// Boundary kinds a schedule can wait for (MODEL §1 "boundary").
pub const BOUNDARIES: [&str; 5] = ["request", "user-turn", "cache-expiry", "milestone", "fold"];

/// A numeric knob (whole numbers when `step` is whole).
pub fn num(name: &str, default: f64, min: f64, max: f64, step: f64, help: &str) -> KnobSpec {
    KnobSpec {
        name: name.into(),
        default: KnobValue::Num(default),
        min: Some(min),
        max: Some(max),
        step: Some(step),
        choices: Vec::new(),
        integer: step.fract() == 0.0,
        help: help.into(),
        short: None,
    }
}

/// A switch.
pub fn flag(name: &str, default: bool, help: &str) -> KnobSpec {
    KnobSpec {
        name: name.into(),
        default: KnobValue::Bool(default),
        min: None,
        max: None,
        step: None,
        choices: Vec::new(),
        integer: false,
        help: help.into(),
        short: None,
    }
}

/// One of a fixed set of words.
pub fn choice(name: &str, default: &str, choices: &[&str], help: &str) -> KnobSpec {
    KnobSpec {
        name: name.into(),
        default: KnobValue::Choice(default.into()),
        min: None,
        max: None,
        step: None,
        choices: choices.iter().map(|c| (*c).to_owned()).collect(),
        integer: false,
        help: help.into(),
        short: None,
    }
}

/// Knobs every kind has.
pub fn common(apply_prunes: bool) -> Vec<KnobSpec> {
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

/// The `boundary` knob of the kinds that defer.
pub fn boundary(default: &str) -> KnobSpec {
    choice("boundary", default, &BOUNDARIES[..4],
        "when desired changes are applied: request = at once; user-turn / milestone also at cache expiry; cache-expiry only when the cache is dead")
        .short("bnd")
}

/// The common knobs as typed values, read once per replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Common {
    pub respect_floors: bool,
    pub ttl_ms: i64,
    pub thrash_window: usize,
    pub apply_prunes: bool,
    /// `None` = estimate the system chunk from the recording.
    pub system_tokens: Option<u64>,
}

/// A non-negative whole knob value (0 for anything else).
pub fn uint(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 {
        x as u64
    } else {
        0
    }
}

impl Common {
    pub fn from_policy(p: &Policy) -> Common {
        let sys = p.num("system_tokens");
        Common {
            respect_floors: p.respect_floors,
            ttl_ms: (p.num("ttl_s") * 1000.0) as i64,
            thrash_window: uint(p.num("thrash_window")) as usize,
            apply_prunes: p.flag("apply_recorded_prunes"),
            system_tokens: if sys >= 0.0 { Some(uint(sys)) } else { None },
        }
    }
}

/// The knob declarations of a kind, with the kind's defaults, in name order.
pub fn specs(kind: PolicyKind) -> Vec<KnobSpec> {
    let mut v = crate::policy::kinds::specs(kind);
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// Whether the replay reads knob `name` under `p`'s other settings: a knob the kind does not
/// declare is not read, and the kind says which of its own its choices leave unread (a
/// progressive policy on the age driver ignores the pressure thresholds, `flat` with `trigger =
/// recorded` the simulation's knobs, …). Sliders and sweeps that offer only read knobs never
/// move a dead one.
pub fn is_read(p: &Policy, name: &str) -> bool {
    p.spec(name).is_some() && crate::policy::kinds::reads(p, name)
}

/// Constraints between knobs; `Err` explains the first one violated.
pub fn check_constraints(p: &Policy) -> Result<(), String> {
    // (A kind that does not offer `boundary = fold` rejects it as a choice it does not have.)
    crate::policy::kinds::check(p.kind, p)
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
        // `auto` simulates under a budget: the tail knobs are read, the model limits are not
        // (the budget is the limit); `recorded` reads neither.
        let flat = over("opencode", &[]);
        assert!(flat.reads("tail_turns") && flat.reads("ttl_s"));
        assert!(!flat.reads("context_limit"));
        let recorded = over("opencode", &[("trigger", "recorded")]);
        assert!(!recorded.reads("tail_turns") && !recorded.reads("context_limit"));
        let simulate = over("opencode", &[("trigger", "simulate")]);
        assert!(simulate.reads("tail_turns") && simulate.reads("context_limit"));
        let decay = over("decay", &[("tier_cost", "measured")]);
        assert!(!decay.reads("cost_full") && decay.reads("h50"));
    }
}
