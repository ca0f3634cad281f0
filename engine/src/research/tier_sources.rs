//! Tier sources side by side (the chapter's first experiment): what to call a load's tiers, what
//! they cost to create, and the policy table run on each. Generic over where tiers come from:
//! `source`, `cascade`, a model through `tiers generate` (external tiers with lineage), or any
//! other [`TierSource`](crate::episode::options::TierSource).
//!
//! "Tier changes also bill their creation": a deterministic generator costs no model call (its
//! tokens are what it read and wrote, by our tokenizer); a model's tiers cost the calls that wrote
//! them, from the usage the endpoint reported, priced from the bundled table when the model is
//! in it.

use std::convert::Infallible;

use serde::Serialize;

use super::audit::{tokenizer_generation, GenerationCost};
use super::experiment::{run, run_with_summaries, BudgetMode, Experiment};
use super::flat_summaries::{FlatSummaryError, FlatSummaryReport, SummarySource};
use crate::episode::lineage;
use crate::episode::options::TierSource;
use crate::historian::cost::{bill, dollars, table_price};
use crate::policy::Policy;
use crate::session::LoadedSession;

/// The name of a load's tiers in tables: the tier source, or for model-written tiers
/// `model:<model>/<strategy>`.
pub fn label(s: &LoadedSession) -> String {
    match s.tier_source {
        TierSource::External => {
            lineage::label(&s.tier_lineage).unwrap_or_else(|| s.tier_source.as_str().to_owned())
        }
        other => other.as_str().to_owned(),
    }
}

/// What a load's tiers cost to create: the model's bill when a model wrote them, else what the
/// deterministic generator read and wrote (no calls, no dollars).
pub fn generation_cost(s: &LoadedSession) -> GenerationCost {
    let written: Vec<_> = s
        .tier_lineage
        .iter()
        .filter(|l| l.model.is_some())
        .cloned()
        .collect();
    if s.tier_source != TierSource::External {
        return tokenizer_generation(s);
    }
    if written.is_empty() {
        // Someone else's tiers (Magic Context, a hand-written sidecar): no record of their cost.
        return GenerationCost {
            dollars: None,
            pricing: Some("not priced: written elsewhere, no usage recorded".to_owned()),
            ..tokenizer_generation(s)
        };
    }
    let b = bill(&written);
    let totals = b.totals;
    let models: Vec<String> = b.models.iter().cloned().collect();
    let price = match models.as_slice() {
        [m] => table_price(m),
        _ => None,
    };
    let mut unreported = if totals.calls_without_usage > 0 {
        format!(
            "; {} calls reported no usage and are not in it",
            totals.calls_without_usage
        )
    } else {
        String::new()
    };
    if totals.saturated {
        unreported.push_str("; the usage recorded is too large to add up (the totals are a floor)");
    }
    if b.recorded_not_finite {
        unreported.push_str("; the dollars recorded do not add up to a finite amount");
    }
    let (dollars, pricing) = match (&price, b.recorded_dollars, models.as_slice()) {
        (Some(p), _, _) if !dollars(p, &totals).is_finite() => (
            None,
            format!(
                "not priced: at {} prices the cost is not a finite amount{unreported}",
                p.priced_as
            ),
        ),
        (Some(p), _, _) => (
            Some(dollars(p, &totals)),
            format!(
                "priced as {} (${}/${} per M tokens in/out){unreported}",
                p.priced_as, p.input, p.output
            ),
        ),
        (None, Some(d), _) => (
            Some(d),
            format!(
                "priced when generated ({}){unreported}",
                b.recorded_priced_as
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        (None, None, [m]) => (
            None,
            format!("not priced: model {m} is not in the pricing table{unreported}"),
        ),
        (None, None, _) => (
            None,
            format!(
                "not priced: several models ({}){unreported}",
                models.join(", ")
            ),
        ),
    };
    GenerationCost {
        representations: written.len(),
        input_tokens: totals.input_tokens,
        output_tokens: totals.output_tokens,
        calls: totals.calls,
        basis: "usage".to_owned(),
        cached_input_tokens: totals.cached_input_tokens,
        calls_without_usage: totals.calls_without_usage,
        models,
        dollars,
        pricing: Some(pricing),
    }
}

/// One tier source's policy table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierSourceRun {
    pub strategy: String,
    pub generation: GenerationCost,
    pub experiment: Experiment,
}

/// The policy table on each tier source, at the same budgets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierSourceComparison {
    pub session: String,
    pub title: String,
    pub mode: String,
    pub target_mean_tokens: Option<f64>,
    /// How the target was chosen, when the experiment chose it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_rule: Option<String>,
    pub runs: Vec<TierSourceRun>,
    /// The flat baseline's summaries, when a model wrote them (see [`compare_with_summaries`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flat_summaries: Option<FlatSummaryReport>,
}

/// Run `policies` on every load. With mean-matched budgets and no target, the target is the
/// first load's ([`auto_target`](super::experiment::auto_target)), so every tier source is held
/// to the same mean.
pub fn compare(
    loads: &[&LoadedSession],
    policies: &[Policy],
    mode: BudgetMode,
) -> TierSourceComparison {
    let plain = |s: &LoadedSession, m: BudgetMode| Ok::<_, Infallible>(run(s, policies, m));
    match compare_by(loads, mode, &plain) {
        Ok(c) => c,
        Err(never) => match never {},
    }
}

/// [`compare`] with the flat baseline's summaries written by a model (the report of what was
/// written and what it cost is left to the caller, who knows the prices).
pub fn compare_with_summaries(
    loads: &[&LoadedSession],
    policies: &[Policy],
    mode: BudgetMode,
    src: &SummarySource<'_>,
) -> Result<TierSourceComparison, FlatSummaryError> {
    let written = |s: &LoadedSession, m: BudgetMode| run_with_summaries(s, policies, m, src);
    compare_by(loads, mode, &written)
}

fn compare_by<E>(
    loads: &[&LoadedSession],
    mode: BudgetMode,
    run_one: &dyn Fn(&LoadedSession, BudgetMode) -> Result<Experiment, E>,
) -> Result<TierSourceComparison, E> {
    let auto = mode == BudgetMode::MatchMeanTokens(None);
    let mode = match (mode, loads.first()) {
        (BudgetMode::MatchMeanTokens(None), Some(first)) => {
            let input = crate::replay::Input::from(*first);
            BudgetMode::MatchMeanTokens(Some(super::experiment::auto_target(&input)))
        }
        (m, _) => m,
    };
    let rule = auto.then(|| super::experiment::AUTO_TARGET_RULE.to_owned());
    let runs: Vec<TierSourceRun> = loads
        .iter()
        .map(|s| {
            Ok(TierSourceRun {
                strategy: label(s),
                generation: generation_cost(s),
                experiment: run_one(s, mode)?,
            })
        })
        .collect::<Result<_, E>>()?;
    let first = runs.first().map(|r| &r.experiment);
    Ok(TierSourceComparison {
        session: first.map(|e| e.session.clone()).unwrap_or_default(),
        title: first.map(|e| e.title.clone()).unwrap_or_default(),
        mode: first.map(|e| e.mode.clone()).unwrap_or_default(),
        target_mean_tokens: first.and_then(|e| e.target_mean_tokens),
        target_rule: rule,
        runs,
        flat_summaries: None,
    })
}
