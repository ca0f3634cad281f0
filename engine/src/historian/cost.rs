//! Generation is billed: calls, tokens and dollars of the tiers a model wrote, priced from the
//! bundled pricing table (`replay/data/pricing.toml`) when the model is in it. A model that is not
//! is left unpriced and the output says so (a default price would read as a fact about it).

use std::collections::BTreeSet;

use serde::Serialize;

use super::response::Usage;
use super::run::UsageTotals;
use crate::episode::lineage::TierLineage;
use crate::replay::cache_cost::PricingTable;
use crate::trace::ModelRef;

/// Prices for generation, dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerationPrice {
    /// The pricing table's entry that matched, or `given` for prices from the command line.
    pub priced_as: String,
    pub input: f64,
    pub output: f64,
    /// Cached prompt tokens cost `input × cached_multiplier`.
    pub cached_multiplier: f64,
}

/// The table's prices for `model`: matched as `provider/model` and as the bare id (a gateway's
/// `openai/gpt-4.1` finds `gpt-4.1`), and with a dated snapshot suffix taken off
/// (`gpt-4.1-2025-04-14` is priced as `gpt-4.1`).
pub fn table_price(model: &str) -> Option<GenerationPrice> {
    let table = PricingTable::bundled();
    let (provider, bare) = model.rsplit_once('/').unwrap_or(("", model));
    let undated = strip_date(bare);
    [bare, undated].into_iter().find_map(|m| {
        let info = table.lookup(Some(&ModelRef {
            provider_id: provider.to_owned(),
            model_id: m.to_owned(),
        }));
        (info.source == "table").then(|| GenerationPrice {
            priced_as: m.to_owned(),
            input: info.price.input,
            output: info.price.output,
            cached_multiplier: info.price.read_multiplier,
        })
    })
}

/// `gpt-4.1-2025-04-14` → `gpt-4.1`; anything else unchanged.
fn strip_date(m: &str) -> &str {
    let b = m.as_bytes();
    let n = b.len();
    // `-YYYY-MM-DD`: dashes at n-11, n-6 and n-3, digits between.
    let dated = n > 11
        && b[n - 11] == b'-'
        && b[n - 6] == b'-'
        && b[n - 3] == b'-'
        && [n - 10, n - 9, n - 8, n - 7, n - 5, n - 4, n - 2, n - 1]
            .iter()
            .all(|&i| b[i].is_ascii_digit());
    if dated {
        &m[..n - 11]
    } else {
        m
    }
}

/// Dollars for `u` at `p`: not finite when the figures or the prices are absurd (see
/// [`finite_dollars`]).
pub fn dollars(p: &GenerationPrice, u: &UsageTotals) -> f64 {
    let cached = u.cached_input_tokens.min(u.input_tokens) as f64;
    let uncached = u.input_tokens as f64 - cached;
    (uncached * p.input
        + cached * p.input * p.cached_multiplier
        + u.output_tokens as f64 * p.output)
        / 1_000_000.0
}

/// `dollars` when it is a finite amount, else why it is not (for the output to say instead of
/// printing `inf` or a silent JSON `null`).
pub fn finite_dollars(dollars: f64) -> Result<f64, String> {
    if dollars.is_finite() {
        Ok(dollars)
    } else {
        Err("the cost is not a finite amount (the usage figures or the prices are absurd)".into())
    }
}

/// The calls behind a set of external tiers, each counted once (tiers of one call share its id).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bill {
    pub totals: UsageTotals,
    pub models: BTreeSet<String>,
    /// The dollars recorded when the calls were made, if every call has them, and at whose
    /// prices.
    pub recorded_dollars: Option<f64>,
    pub recorded_priced_as: BTreeSet<String>,
    /// The dollars recorded add up past a finite amount (absurd figures in a sidecar): said, and
    /// treated as none recorded.
    pub recorded_not_finite: bool,
}

pub fn bill(lineage: &[TierLineage]) -> Bill {
    let mut seen = BTreeSet::new();
    let mut totals = UsageTotals::default();
    let mut models = BTreeSet::new();
    let mut recorded = Some(0.0);
    let mut priced_as = BTreeSet::new();
    for l in lineage {
        models.extend(l.model.clone());
        let Some(u) = &l.usage else { continue };
        if !seen.insert(u.call.clone()) {
            continue;
        }
        recorded = recorded.zip(u.dollars).map(|(a, b)| a + b);
        priced_as.extend(u.priced_as.clone());
        let usage = match (u.input_tokens, u.output_tokens) {
            (Some(i), Some(o)) => Some(Usage {
                input_tokens: i,
                output_tokens: o,
                cached_input_tokens: u.cached_input_tokens,
            }),
            _ => None,
        };
        totals.add(usage.as_ref());
    }
    Bill {
        totals,
        models,
        // An absurd recorded amount is no amount: the bill is priced as if none was recorded.
        recorded_dollars: recorded.filter(|d| totals.calls > 0 && d.is_finite()),
        recorded_priced_as: priced_as,
        recorded_not_finite: recorded.is_some_and(|d| !d.is_finite()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::sidecar::TierUsage;
    use crate::episode::Tier;

    #[test]
    fn models_in_the_table_are_priced_and_others_are_not() {
        let p = table_price("gpt-4.1").expect("gpt-4.1 is in the bundled table");
        assert_eq!(p.priced_as, "gpt-4.1");
        assert_eq!(table_price("openai/gpt-4.1"), Some(p.clone()));
        assert_eq!(table_price("gpt-4.1-2025-04-14"), Some(p));
        assert_eq!(table_price("llama3.1:8b"), None);
        assert_eq!(strip_date("gpt-4.1-mini"), "gpt-4.1-mini");
    }

    #[test]
    fn dollars_price_cached_input_at_the_read_rate() {
        let p = GenerationPrice {
            priced_as: "x".into(),
            input: 2.0,
            output: 8.0,
            cached_multiplier: 0.25,
        };
        let u = UsageTotals {
            calls: 2,
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cached_input_tokens: 400_000,
            calls_without_usage: 0,
            saturated: false,
        };
        // 600k × $2 + 400k × $0.5 + 100k × $8 = 1.2 + 0.2 + 0.8
        assert!((dollars(&p, &u) - 2.2).abs() < 1e-9);
    }

    #[test]
    fn absurd_usage_saturates_and_an_absurd_cost_is_not_a_finite_amount() {
        let huge = Usage {
            input_tokens: u64::MAX,
            output_tokens: u64::MAX - 1,
            cached_input_tokens: Some(u64::MAX),
        };
        let mut u = UsageTotals::default();
        u.add(Some(&huge));
        assert!(!u.saturated);
        u.add(Some(&huge));
        assert!(u.saturated);
        assert_eq!(
            (u.calls, u.input_tokens, u.output_tokens),
            (2, u64::MAX, u64::MAX)
        );
        let p = GenerationPrice {
            priced_as: "--price".into(),
            input: 1e300,
            output: 1e300,
            cached_multiplier: 1.0,
        };
        assert!(finite_dollars(dollars(&p, &u)).is_err());
        assert_eq!(finite_dollars(2.5), Ok(2.5));
    }

    #[test]
    fn a_call_that_wrote_three_tiers_is_billed_once() {
        let l = |tier, call: &str| TierLineage {
            episode: "E0".into(),
            tier,
            generator: None,
            model: Some("m".into()),
            prompt_version: None,
            strategy: Some("source".into()),
            from_tier: Some(Tier::Full),
            usage: Some(TierUsage {
                call: call.into(),
                input_tokens: Some(100),
                output_tokens: Some(10),
                cached_input_tokens: None,
                response_model: None,
                dollars: Some(0.5),
                priced_as: Some("--price".into()),
            }),
        };
        let b = bill(&[
            l(Tier::Dense, "a"),
            l(Tier::Compact, "a"),
            l(Tier::Anchor, "b"),
        ]);
        let t = b.totals;
        assert_eq!((t.calls, t.input_tokens, t.output_tokens), (2, 200, 20));
        assert_eq!(b.models.into_iter().collect::<Vec<_>>(), ["m"]);
        assert_eq!(b.recorded_dollars, Some(1.0));
        assert!(!b.recorded_not_finite);
    }

    #[test]
    fn recorded_dollars_past_a_finite_amount_are_flagged_not_summed_to_inf() {
        let l = |call: &str| TierLineage {
            episode: "E0".into(),
            tier: Tier::Dense,
            generator: None,
            model: Some("m".into()),
            prompt_version: None,
            strategy: Some("source".into()),
            from_tier: Some(Tier::Full),
            usage: Some(TierUsage {
                call: call.into(),
                input_tokens: Some(u64::MAX),
                output_tokens: Some(1),
                cached_input_tokens: None,
                response_model: None,
                dollars: Some(1.7e308),
                priced_as: Some("--price".into()),
            }),
        };
        let b = bill(&[l("a"), l("b")]);
        assert_eq!(b.recorded_dollars, None);
        assert!(b.recorded_not_finite);
        assert!(b.totals.saturated);
        assert_eq!(b.totals.input_tokens, u64::MAX);
    }
}
