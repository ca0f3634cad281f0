//! The chapter's ecological questions over real sessions ("fixtures prove fidelity behaviour,
//! traces prove the workload exists"): how much old context exists, which classes and kinds
//! dominate aged history, how often each tier would be selected, what each policy saves against
//! `full` and `opencode`, and how often it switches.
//!
//! "Old context" at a request is the full-tier tokens of the episodes closed before it; its share
//! is taken of the `full` replay's context size (system chunk included). "Aged history" is the
//! set of episodes closed before the session's last request, weighted by their full-tier tokens.

use std::collections::BTreeMap;

use serde::Serialize;

use super::experiment::{row_of, TierShare};
use crate::episode::Tier;
use crate::policy::Policy;
use crate::replay::{self, Replay};
use crate::session::LoadedSession;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicySurvey {
    pub policy: String,
    pub mean_tokens: f64,
    pub cost: f64,
    pub tiers: TierShare,
    pub switches_per_100: f64,
    /// 1 − (this policy ÷ full), for mean tokens and for cost.
    pub saves_vs_full_tokens: f64,
    pub saves_vs_full_cost: f64,
    /// 1 − (this policy ÷ opencode).
    pub saves_vs_opencode_tokens: f64,
    pub saves_vs_opencode_cost: f64,
    pub probe_survival: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSurvey {
    pub session: String,
    pub title: String,
    pub requests: usize,
    pub episodes: usize,
    /// Mean over requests of old context ÷ context size under `full`.
    pub old_context_share: f64,
    pub mean_old_tokens: f64,
    pub mean_full_tokens: f64,
    /// Aged history's full-tier tokens by retention class and by episode kind.
    pub aged_by_class: BTreeMap<String, u64>,
    pub aged_by_kind: BTreeMap<String, u64>,
    pub policies: Vec<PolicySurvey>,
}

/// A session that could not be surveyed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unsurveyed {
    pub session: String,
    pub error: String,
}

/// Totals over every surveyed session, per policy weighted by requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyTotals {
    pub policy: String,
    pub sessions: usize,
    pub requests: usize,
    pub tiers: TierShare,
    pub switches_per_100: f64,
    pub saves_vs_full_tokens: f64,
    pub saves_vs_full_cost: f64,
    pub saves_vs_opencode_tokens: f64,
    pub saves_vs_opencode_cost: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Survey {
    pub source: String,
    pub sessions: Vec<SessionSurvey>,
    pub failures: Vec<Unsurveyed>,
    /// Requests-weighted old-context share over all sessions.
    pub old_context_share: f64,
    pub aged_by_class: BTreeMap<String, u64>,
    pub aged_by_kind: BTreeMap<String, u64>,
    pub policies: Vec<PolicyTotals>,
}

fn saving(x: f64, base: f64) -> f64 {
    if base > 0.0 {
        1.0 - x / base
    } else {
        0.0
    }
}

/// Survey one loaded session under `policies` at the default budget.
pub fn survey_session(s: &LoadedSession, policies: &[Policy]) -> SessionSurvey {
    let input = replay::Input::from(s);
    let run = |name: &str| -> Option<Replay> {
        crate::policy::load(name, &[])
            .ok()
            .map(|p| replay::replay(&input, &p, None))
    };
    let full = run("full");
    let opencode = run("opencode");

    // Old context per request: full-tier tokens of the episodes closed before it.
    let mut old_share_sum = 0.0;
    let mut old_sum = 0.0;
    let mut full_sum = 0.0;
    let mut k = 0usize;
    let mut closed_tokens = 0u64;
    for (t, req) in s.trace.requests.iter().enumerate() {
        while k < s.episodes.len() && s.episodes[k].last_message < req.message_index {
            closed_tokens += u64::from(s.episodes[k].tokens(Tier::Full));
            k += 1;
        }
        let size = full
            .as_ref()
            .and_then(|f| f.frames.get(t))
            .map_or(0, |f| f.tokens);
        old_sum += closed_tokens as f64;
        full_sum += size as f64;
        if size > 0 {
            old_share_sum += (closed_tokens as f64 / size as f64).min(1.0);
        }
    }
    let n = s.trace.requests.len().max(1) as f64;

    let mut aged_by_class: BTreeMap<String, u64> = BTreeMap::new();
    let mut aged_by_kind: BTreeMap<String, u64> = BTreeMap::new();
    if let Some(last) = s.trace.requests.last() {
        for e in s
            .episodes
            .iter()
            .filter(|e| e.last_message < last.message_index)
        {
            let tok = u64::from(e.tokens(Tier::Full));
            *aged_by_class
                .entry(e.class.as_str().to_owned())
                .or_default() += tok;
            for kind in &e.kinds {
                *aged_by_kind.entry(kind.as_str().to_owned()).or_default() += tok;
            }
        }
    }

    let base = |r: &Option<Replay>| {
        r.as_ref()
            .map_or((0.0, 0.0), |r| (r.summary.mean_tokens, r.summary.cost))
    };
    let (full_tokens, full_cost) = base(&full);
    let (oc_tokens, oc_cost) = base(&opencode);
    let rows = policies
        .iter()
        .map(|p| {
            let r = replay::replay(&input, p, None);
            let row = row_of(&r, None, &[]);
            PolicySurvey {
                policy: row.policy,
                mean_tokens: row.mean_tokens,
                cost: row.cost,
                tiers: row.tiers,
                switches_per_100: row.switches_per_100,
                saves_vs_full_tokens: saving(row.mean_tokens, full_tokens),
                saves_vs_full_cost: saving(row.cost, full_cost),
                saves_vs_opencode_tokens: saving(row.mean_tokens, oc_tokens),
                saves_vs_opencode_cost: saving(row.cost, oc_cost),
                probe_survival: row.probe_survival,
            }
        })
        .collect();
    SessionSurvey {
        session: s.trace.session.id.clone(),
        title: s.trace.session.title.clone(),
        requests: s.trace.requests.len(),
        episodes: s.episodes.len(),
        old_context_share: old_share_sum / n,
        mean_old_tokens: old_sum / n,
        mean_full_tokens: full_sum / n,
        aged_by_class,
        aged_by_kind,
        policies: rows,
    }
}

/// Combine per-session surveys (in the given order) into totals.
pub fn combine(source: String, sessions: Vec<SessionSurvey>, failures: Vec<Unsurveyed>) -> Survey {
    let reqs: usize = sessions.iter().map(|s| s.requests).sum();
    let w = |s: &SessionSurvey| s.requests as f64 / reqs.max(1) as f64;
    let mut aged_by_class: BTreeMap<String, u64> = BTreeMap::new();
    let mut aged_by_kind: BTreeMap<String, u64> = BTreeMap::new();
    for s in &sessions {
        for (k, v) in &s.aged_by_class {
            *aged_by_class.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &s.aged_by_kind {
            *aged_by_kind.entry(k.clone()).or_default() += v;
        }
    }
    let mut names: Vec<String> = Vec::new();
    for s in &sessions {
        for p in &s.policies {
            if !names.contains(&p.policy) {
                names.push(p.policy.clone());
            }
        }
    }
    let policies = names
        .into_iter()
        .map(|name| {
            let rows: Vec<(&SessionSurvey, &PolicySurvey)> = sessions
                .iter()
                .filter_map(|s| s.policies.iter().find(|p| p.policy == name).map(|p| (s, p)))
                .collect();
            let r: usize = rows.iter().map(|(s, _)| s.requests).sum();
            let wt = |s: &SessionSurvey| s.requests as f64 / r.max(1) as f64;
            let avg = |f: &dyn Fn(&PolicySurvey) -> f64| {
                rows.iter().map(|(s, p)| wt(s) * f(p)).sum::<f64>()
            };
            PolicyTotals {
                policy: name,
                sessions: rows.len(),
                requests: r,
                tiers: TierShare {
                    full: avg(&|p| p.tiers.full),
                    dense: avg(&|p| p.tiers.dense),
                    compact: avg(&|p| p.tiers.compact),
                    anchor: avg(&|p| p.tiers.anchor),
                    dropped: avg(&|p| p.tiers.dropped),
                },
                switches_per_100: avg(&|p| p.switches_per_100),
                saves_vs_full_tokens: avg(&|p| p.saves_vs_full_tokens),
                saves_vs_full_cost: avg(&|p| p.saves_vs_full_cost),
                saves_vs_opencode_tokens: avg(&|p| p.saves_vs_opencode_tokens),
                saves_vs_opencode_cost: avg(&|p| p.saves_vs_opencode_cost),
            }
        })
        .collect();
    Survey {
        source,
        old_context_share: sessions.iter().map(|s| w(s) * s.old_context_share).sum(),
        sessions,
        failures,
        aged_by_class,
        aged_by_kind,
        policies,
    }
}
