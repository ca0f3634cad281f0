//! Codex's token usage and its conversion into the neutral [`Usage`].
//!
//! Codex records the provider's figures **inclusive**: `cached_input_tokens` is part of
//! `input_tokens`, and `reasoning_output_tokens` part of `output_tokens` (OpenAI's Responses API
//! `usage`). The neutral form is disjoint: `input` is the uncached input, `cache_read` the cached
//! part, `cache_write` 0 (Codex's `cache_write_input_tokens` is kept in [`TokenUsage`] but OpenAI
//! bills no cache writes), `output` the visible output, `reasoning` the reasoning part. A cached
//! count above the input (or reasoning above the output) is clamped so nothing goes negative.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::replay::cache_cost::{PricingInfo, PricingTable};
use crate::trace::model::{ModelRef, Usage};

/// The bundled pricing table, parsed once.
fn table() -> &'static PricingTable {
    static TABLE: std::sync::OnceLock<PricingTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(PricingTable::bundled)
}

/// The prices of a model by the replay's pricing table (`provider/model`, else the bare model
/// id; a model the table does not know gets its default, and the answer says so in `note`).
pub fn pricing(provider: Option<&str>, model: Option<&str>) -> PricingInfo {
    let m = model.map(|m| ModelRef {
        provider_id: provider.unwrap_or_default().to_owned(),
        model_id: m.to_owned(),
    });
    table().lookup(m.as_ref())
}

/// What one response cost, dollars: uncached input at the input price, cached input at the
/// cache-read price, output and reasoning at the output price (OpenAI bills reasoning as
/// output; no cache writes).
pub fn cost(u: &Usage, provider: Option<&str>, model: Option<&str>) -> f64 {
    let p = pricing(provider, model).price;
    (u.input as f64 * p.input
        + u.cache_read as f64 * p.input * p.read_multiplier
        + u.cache_write as f64 * p.input * p.write_multiplier
        + u.output.saturating_add(u.reasoning) as f64 * p.output)
        * 1e-6
}

/// One usage figure as Codex writes it (`usage`, `last_token_usage`, `total_token_usage`, …).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct TokenUsage {
    #[serde(default, deserialize_with = "count")]
    pub input_tokens: u64,
    #[serde(default, deserialize_with = "count")]
    pub cached_input_tokens: u64,
    #[serde(default, deserialize_with = "count")]
    pub cache_write_input_tokens: u64,
    #[serde(default, deserialize_with = "count")]
    pub output_tokens: u64,
    #[serde(default, deserialize_with = "count")]
    pub reasoning_output_tokens: u64,
    #[serde(default, deserialize_with = "count")]
    pub total_tokens: u64,
}

impl TokenUsage {
    /// The disjoint neutral form (see the module docs).
    pub fn normalize(&self) -> Usage {
        let cache_read = self.cached_input_tokens.min(self.input_tokens);
        let reasoning = self.reasoning_output_tokens.min(self.output_tokens);
        Usage {
            input: self.input_tokens - cache_read,
            cache_read,
            cache_write: 0,
            output: self.output_tokens - reasoning,
            reasoning,
        }
    }

    /// True when every figure but `total_tokens` is 0: what Codex writes after a compaction,
    /// with `total_tokens` holding its own estimate of the new history, not a response's usage.
    pub fn is_estimate_only(&self) -> bool {
        self.input_tokens == 0
            && self.cached_input_tokens == 0
            && self.cache_write_input_tokens == 0
            && self.output_tokens == 0
            && self.reasoning_output_tokens == 0
    }
}

/// A token count read leniently: a non-negative integer as is, a finite non-negative number
/// rounded down, a numeric string parsed; anything else (negative, null, text) is 0.
fn count<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(count_of(&Value::deserialize(d)?))
}

pub(crate) fn count_of(v: &Value) -> u64 {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .unwrap_or(0),
        Value::String(s) => s.trim().parse::<u64>().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inclusive_usage_becomes_disjoint() {
        let u: TokenUsage = serde_json::from_str(
            r#"{"input_tokens":8653,"cached_input_tokens":7680,"output_tokens":55,
                "reasoning_output_tokens":24,"total_tokens":8708}"#,
        )
        .expect("usage");
        assert_eq!(
            u.normalize(),
            Usage {
                input: 973,
                cache_read: 7680,
                cache_write: 0,
                output: 31,
                reasoning: 24
            }
        );
    }

    #[test]
    fn damaged_counts_read_as_zero_or_clamped() {
        let u: TokenUsage = serde_json::from_str(
            r#"{"input_tokens":"100","cached_input_tokens":500,"output_tokens":-3,
                "reasoning_output_tokens":null,"total_tokens":1.5e3}"#,
        )
        .expect("usage");
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.total_tokens),
            (100, 0, 1500)
        );
        let n = u.normalize();
        assert_eq!((n.input, n.cache_read), (0, 100));
    }
}
