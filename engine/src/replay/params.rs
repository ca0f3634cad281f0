//! A policy's knobs as typed values, read once per replay (no string lookups in the loop).

use crate::policy::decay::Curve;
use crate::policy::{Policy, PolicyKind};

/// When desired changes are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Boundary {
    Request,
    UserTurn,
    CacheExpiry,
    Milestone,
}

#[derive(Debug, Clone)]
pub(crate) struct Params {
    pub kind: PolicyKind,
    pub respect_floors: bool,
    pub ttl_ms: i64,
    pub thrash_window: usize,
    pub apply_prunes: bool,
    pub system_tokens: Option<u64>,
    pub boundary: Boundary,
    // progressive
    pub age_driver: bool,
    pub demote_at: f64,
    pub target: f64,
    pub promote_at: f64,
    pub min_dwell: usize,
    pub relevance_window: usize,
    pub relevance_probes: bool,
    pub age_thresholds: [usize; 3],
    // flat
    pub recorded: bool,
    pub context_limit: u64,
    pub max_output: u64,
    pub tail_turns: usize,
    pub preserve_share: f64,
    pub preserve_min: u64,
    pub preserve_max: u64,
    pub summary_tokens: u64,
    // decay
    pub curve: Curve,
    pub measured_cost: bool,
    pub const_costs: [f64; 4],
    pub history_share: f64,
    pub backstop_m1_m0: f64,
    pub backstop_m1_budget: f64,
}

fn uint(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 {
        x as u64
    } else {
        0
    }
}

impl Params {
    pub fn from_policy(p: &Policy) -> Params {
        let boundary = match p.choice("boundary") {
            "user-turn" => Boundary::UserTurn,
            "cache-expiry" => Boundary::CacheExpiry,
            "milestone" => Boundary::Milestone,
            _ => Boundary::Request,
        };
        let sys = p.num("system_tokens");
        Params {
            kind: p.kind,
            respect_floors: p.respect_floors,
            ttl_ms: (p.num("ttl_s") * 1000.0) as i64,
            thrash_window: uint(p.num("thrash_window")) as usize,
            apply_prunes: p.flag("apply_recorded_prunes"),
            system_tokens: if sys >= 0.0 { Some(uint(sys)) } else { None },
            boundary,
            age_driver: p.choice("driver") == "age",
            demote_at: p.num("demote_at"),
            target: p.num("target"),
            promote_at: p.num("promote_at"),
            min_dwell: uint(p.num("min_dwell")) as usize,
            relevance_window: uint(p.num("relevance_window")) as usize,
            relevance_probes: p.choice("relevance_source") == "probes",
            age_thresholds: [
                uint(p.num("dense_after")) as usize,
                uint(p.num("compact_after")) as usize,
                uint(p.num("anchor_after")) as usize,
            ],
            recorded: p.choice("trigger") != "simulate",
            context_limit: uint(p.num("context_limit")),
            max_output: uint(p.num("max_output")),
            tail_turns: uint(p.num("tail_turns")) as usize,
            preserve_share: p.num("preserve_recent_share"),
            preserve_min: uint(p.num("preserve_recent_min")),
            preserve_max: uint(p.num("preserve_recent_max")),
            summary_tokens: uint(p.num("summary_tokens")),
            curve: Curve {
                h50: p.num("h50"),
                d: p.num("d"),
                z: [p.num("z1"), p.num("z2"), p.num("z3"), p.num("z4")],
                p_floor: p.num("p_floor"),
            },
            measured_cost: p.choice("tier_cost") == "measured",
            const_costs: [
                p.num("cost_full"),
                p.num("cost_dense"),
                p.num("cost_compact"),
                p.num("cost_anchor"),
            ],
            history_share: p.num("execute_threshold") * p.num("history_budget_percentage"),
            backstop_m1_m0: p.num("backstop_m1_m0"),
            backstop_m1_budget: p.num("backstop_m1_budget"),
        }
    }
}
