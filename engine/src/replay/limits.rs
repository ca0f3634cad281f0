//! Model limits as data (`data/model_limits.toml`) and the default budget (MODEL §3 "Budget"):
//! the usable input limit = context − output (output capped at 32,000, as OpenCode reserves;
//! each agent reckons its own through its adapter's flat rules), looked up by
//! session (recordings made with a mock model configured per session), then by model, else a
//! documented fallback (128,000 − 32,000 = 96,000).

use serde::Deserialize;

use crate::trace::Trace;

/// The default cap on the output reserve (for a trace whose agent states no rules of its own;
/// OpenCode's `OUTPUT_TOKEN_MAX`).
pub const DEFAULT_OUTPUT_RESERVE_CAP: u64 = 32_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
struct Limit {
    context: u64,
    output: u64,
}

#[derive(Debug, Deserialize)]
struct SessionEntry {
    id: String,
    context: u64,
    output: u64,
}

#[derive(Debug, Deserialize)]
struct ModelEntry {
    #[serde(rename = "match")]
    matches: Vec<String>,
    context: u64,
    output: u64,
}

#[derive(Debug, Deserialize)]
struct LimitsFile {
    fallback: Limit,
    #[serde(default)]
    session: Vec<SessionEntry>,
    #[serde(default)]
    model: Vec<ModelEntry>,
}

static LIMITS_TOML: &str = include_str!("data/model_limits.toml");

/// A model's limits and where they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLimits {
    pub context: u64,
    pub output: u64,
    /// `session-limits:<id>`, `model-limits:<provider/model>` or `fallback`.
    pub source: String,
}

impl ModelLimits {
    /// Usable input: context − min(output, 32,000).
    pub fn usable(&self) -> u64 {
        self.context
            .saturating_sub(self.output.min(DEFAULT_OUTPUT_RESERVE_CAP))
    }
}

impl ModelLimits {
    /// Magic Context's usable window (`usableSoft` of its window geometry, the common case: no
    /// overlay file, no `output_reserve`): context − min(output, 25 % of context), keeping at
    /// least half the window (and 1,024 tokens).
    pub fn usable_soft(&self) -> u64 {
        let context = self.context as f64;
        let reserve = (self.output as f64).min(0.25 * context);
        let reserve = reserve.min((context - 1024f64.max(0.5 * context)).max(0.0));
        (context - reserve).floor() as u64
    }
    /// The model's limits are known (not the fallback).
    pub fn known(&self) -> bool {
        self.source != "fallback"
    }
}

/// Limits of the trace's model: by session id, then by the model of its first request (or the
/// session's model), else the fallback.
pub fn limits_for(trace: &Trace) -> ModelLimits {
    let model = trace
        .requests
        .iter()
        .find_map(|r| r.model.as_ref())
        .or(trace.session.model.as_ref());
    limits_for_model(trace, model)
}

/// Limits of one model of the trace: by session id, then by `model`, else the fallback.
pub fn limits_for_model(trace: &Trace, model: Option<&crate::trace::ModelRef>) -> ModelLimits {
    let file: LimitsFile = match toml::from_str(LIMITS_TOML) {
        Ok(f) => f,
        Err(_) => LimitsFile {
            fallback: Limit {
                context: 128_000,
                output: 32_000,
            },
            session: Vec::new(),
            model: Vec::new(),
        },
    };
    if let Some(s) = file.session.iter().find(|s| s.id == trace.session.id) {
        return ModelLimits {
            context: s.context,
            output: s.output,
            source: format!("session-limits:{}", s.id),
        };
    }
    if let Some(m) = model {
        let full = format!("{}/{}", m.provider_id, m.model_id);
        if let Some(e) = file.model.iter().find(|e| {
            e.matches.iter().any(|x| {
                *x == full
                    || *x == m.model_id
                    || *x == crate::replay::cache_cost::strip_date(&m.model_id)
            })
        }) {
            return ModelLimits {
                context: e.context,
                output: e.output,
                source: format!("model-limits:{full}"),
            };
        }
    }
    ModelLimits {
        context: file.fallback.context,
        output: file.fallback.output,
        source: "fallback".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_limits_parse() {
        let f: Result<LimitsFile, _> = toml::from_str(LIMITS_TOML);
        assert!(f.is_ok(), "{f:?}");
        let l = ModelLimits {
            context: 14_000,
            output: 3_000,
            source: String::new(),
        };
        assert_eq!(l.usable(), 11_000);
        // Magic Context's usableSoft: a 200K window with 64K catalog output keeps 150K.
        let mc = |context, output| ModelLimits {
            context,
            output,
            source: String::new(),
        };
        assert_eq!(mc(200_000, 64_000).usable_soft(), 150_000);
        assert_eq!(mc(200_000, 32_000).usable_soft(), 168_000);
        assert_eq!(mc(2_000, 1_900).usable_soft(), 1_500);
        assert_eq!(mc(1_500, 1_000).usable_soft(), 1_125);
    }
}
