//! The cache and cost model (MODEL §3.5, reference table (c)), with the pricing table as data
//! (`data/pricing.toml`). The replay changes what the model is shown, not what it answered, so
//! output tokens are the recording's.

use serde::{Deserialize, Serialize};

use crate::trace::ModelRef;

/// How a provider caches prompt prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheStyle {
    /// Automatic prefix cache: at least `min_cached` tokens, on a grid, no write fee.
    Openai,
    /// Explicit breakpoints: uncached prompt tokens are written at a premium.
    Anthropic,
}

/// Prices of one model, dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub style: CacheStyle,
    pub input: f64,
    pub output: f64,
    pub read_multiplier: f64,
    pub write_multiplier: f64,
    pub min_cached: u64,
    pub grain: u64,
}

#[derive(Debug, Deserialize)]
struct DefaultEntry {
    name: String,
    #[serde(flatten)]
    price: Price,
}

#[derive(Debug, Deserialize)]
struct ModelEntry {
    #[serde(rename = "match")]
    matches: Vec<String>,
    #[serde(flatten)]
    price: Price,
}

#[derive(Debug, Deserialize)]
struct PricingFile {
    default: DefaultEntry,
    model: Vec<ModelEntry>,
}

/// The prices of a trace's model: the first request's that names one, else the session's.
pub fn pricing_of(trace: &crate::trace::Trace) -> PricingInfo {
    let model = trace
        .requests
        .iter()
        .find_map(|r| r.model.as_ref())
        .or(trace.session.model.as_ref());
    PricingTable::bundled().lookup(model)
}

/// The bundled pricing table.
#[derive(Debug)]
pub struct PricingTable {
    default_name: String,
    default: Price,
    models: Vec<ModelEntry>,
}

/// Which prices a replay used, for the output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PricingInfo {
    /// "provider/model" as recorded (or "unknown").
    pub model: String,
    /// `table` or `default`.
    pub source: String,
    /// What the default is, when it was used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub price: Price,
}

static PRICING_TOML: &str = include_str!("data/pricing.toml");

impl PricingTable {
    /// The table shipped in the crate. It is checked by a unit test, so a parse failure here
    /// can only come from editing the file; it then falls back to the GPT-5 default alone.
    pub fn bundled() -> PricingTable {
        match toml::from_str::<PricingFile>(PRICING_TOML) {
            Ok(f) => PricingTable {
                default_name: f.default.name,
                default: f.default.price,
                models: f.model,
            },
            Err(_) => PricingTable {
                default_name: "default (GPT-5 list prices, OpenAI-style caching)".into(),
                default: Price {
                    style: CacheStyle::Openai,
                    input: 1.25,
                    output: 10.0,
                    read_multiplier: 0.1,
                    write_multiplier: 1.0,
                    min_cached: 1024,
                    grain: 128,
                },
                models: Vec::new(),
            },
        }
    }

    /// Prices for a model; `source` says whether the table knew it.
    pub fn lookup(&self, model: Option<&ModelRef>) -> PricingInfo {
        let full = model
            .map(|m| format!("{}/{}", m.provider_id, m.model_id))
            .unwrap_or_else(|| "unknown".into());
        let bare = model.map(|m| m.model_id.as_str()).unwrap_or("");
        // A dated snapshot (`claude-haiku-4-5-20251001`) is priced as its model.
        let undated = strip_date(bare);
        let hit = self.models.iter().find(|e| {
            e.matches
                .iter()
                .any(|m| *m == full || *m == bare || *m == undated)
        });
        match hit {
            Some(e) => PricingInfo {
                model: full,
                source: "table".into(),
                note: None,
                price: e.price.clone(),
            },
            None => PricingInfo {
                note: Some(format!(
                    "model {full} is not in the pricing table; priced with {}",
                    self.default_name
                )),
                model: full,
                source: "default".into(),
                price: self.default.clone(),
            },
        }
    }
}

/// A model id without a trailing `-YYYYMMDD` snapshot date.
pub(crate) fn strip_date(id: &str) -> &str {
    match id.rsplit_once('-') {
        Some((head, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => id,
    }
}

/// Cache figures and cost of one request.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CacheCost {
    pub cache_read: u64,
    pub cache_write: u64,
    pub uncached: u64,
    pub cost: f64,
}

/// Price one request of `tokens` prompt tokens whose first `divergence` tokens equal the
/// previous request of its conversation, `fresh` when that request is within the cache TTL.
/// What `radius` tokens past the shared prefix cost above reading them from the cache: sent
/// uncached (OpenAI style) or written to the cache (Anthropic style) instead of read. The
/// dollars of a divergence.
pub fn radius_price(p: &Price, radius: u64) -> f64 {
    let paid = match p.style {
        CacheStyle::Openai => 1.0,
        CacheStyle::Anthropic => p.write_multiplier,
    };
    radius as f64 * p.input * (paid - p.read_multiplier) * 1e-6
}

pub fn price_request(
    p: &Price,
    tokens: u64,
    divergence: u64,
    fresh: bool,
    output: u64,
) -> CacheCost {
    let reusable = if fresh { divergence.min(tokens) } else { 0 };
    let cache_read = match p.style {
        CacheStyle::Openai => {
            let g = p.grain.max(1);
            let on_grid = reusable / g * g;
            if on_grid >= p.min_cached {
                on_grid
            } else {
                0
            }
        }
        CacheStyle::Anthropic => {
            if reusable >= p.min_cached {
                reusable
            } else {
                0
            }
        }
    };
    let cache_write = match p.style {
        CacheStyle::Openai => 0,
        CacheStyle::Anthropic => tokens - cache_read,
    };
    let uncached = tokens - cache_read - cache_write;
    let m = 1e-6;
    let cost = (uncached as f64 * p.input
        + cache_read as f64 * p.input * p.read_multiplier
        + cache_write as f64 * p.input * p.write_multiplier
        + output as f64 * p.output)
        * m;
    CacheCost {
        cache_read,
        cache_write,
        uncached,
        cost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_table_parses_and_knows_claude() {
        let f: Result<PricingFile, _> = toml::from_str(PRICING_TOML);
        assert!(f.is_ok(), "{f:?}");
        let t = PricingTable::bundled();
        let m = ModelRef {
            provider_id: "anthropic".into(),
            model_id: "claude-sonnet-4-5".into(),
        };
        let info = t.lookup(Some(&m));
        assert_eq!(info.source, "table");
        assert_eq!(info.price.style, CacheStyle::Anthropic);
        let mock = ModelRef {
            provider_id: "mock".into(),
            model_id: "scripted".into(),
        };
        let info = t.lookup(Some(&mock));
        assert_eq!(info.source, "default");
        assert!(info.note.is_some());
    }

    #[test]
    fn openai_grid_and_anthropic_write() {
        let t = PricingTable::bundled();
        let p = t.lookup(None).price;
        // The recorder's simulation: 8,352 prompt, 6,812 common → 6,784 cached.
        let c = price_request(&p, 8352, 6812, true, 0);
        assert_eq!(c.cache_read, 6784);
        assert_eq!(c.cache_write, 0);
        assert_eq!(c.uncached, 8352 - 6784);
        assert_eq!(price_request(&p, 8352, 1000, true, 0).cache_read, 0);
        assert_eq!(price_request(&p, 8352, 6812, false, 0).cache_read, 0);
        let a = Price {
            style: CacheStyle::Anthropic,
            input: 3.0,
            output: 15.0,
            read_multiplier: 0.1,
            write_multiplier: 1.25,
            min_cached: 1024,
            grain: 1,
        };
        let c = price_request(&a, 10_000, 6000, true, 100);
        assert_eq!((c.cache_read, c.cache_write, c.uncached), (6000, 4000, 0));
        let want = (6000.0 * 0.3 + 4000.0 * 3.75 + 100.0 * 15.0) * 1e-6;
        assert!((c.cost - want).abs() < 1e-12);
    }
}
