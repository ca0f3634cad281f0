//! Calibrating token counts to a provider whose tokenizer is not the one tierscope counts with.
//!
//! The replay counts every chunk with one tokenizer (o200k by default). A Claude model counts the
//! same text with Anthropic's own tokenizer, typically more tokens: the recorded usage of a real
//! Claude session and the replay's counts then drift apart as the conversation grows. Where the
//! model's provider tokenizes differently, the session's recorded usage tells by how much: between
//! two consecutive requests of one conversation (no compaction between them) the prompt grew by
//! what the second added, so the recorded growth against the counted growth, fitted over every
//! such pair (least squares through the origin), is the factor between the two tokenizers. Every
//! chunk's count is scaled by it, so budgets, pressure and sizes are in the provider's tokens.
//!
//! A factor within [`TOLERANCE`] of 1 is not applied (the session was counted with the
//! provider's tokenizer after all: the recordings' model counts with o200k); the outcome is
//! reported either way.

use serde::Serialize;

use super::LoadedSession;
use crate::policy::KindRole;
use crate::trace::RequestStatus;

/// A fitted factor this close to 1 is left unapplied.
pub const TOLERANCE: f64 = 0.02;

/// Fewer growth pairs than this fit no factor.
pub const MIN_PAIRS: usize = 3;

/// What calibration found for one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// Recorded tokens per counted token.
    pub factor: f64,
    /// Request pairs it was fitted on.
    pub pairs: usize,
    /// Whether the chunks' counts were scaled by it.
    pub applied: bool,
}

impl Calibration {
    /// A few words for a header: "calibrated ×1.18 to the recorded usage (41 pairs)".
    pub fn describe(&self) -> String {
        if self.applied {
            format!(
                "token counts calibrated ×{:.3} to the recorded usage ({} request pairs)",
                self.factor, self.pairs
            )
        } else {
            format!(
                "token counts match the recorded usage (×{:.3} over {} request pairs, not calibrated)",
                self.factor, self.pairs
            )
        }
    }
}

/// Whether a model's provider counts tokens with another tokenizer than o200k / cl100k.
pub fn tokenizer_differs(model_id: &str) -> bool {
    let m = model_id.to_ascii_lowercase();
    m.contains("claude")
}

/// The factor between the recorded usage and the counts of `l`, fitted on its requests under
/// the flat policy following the recording; `None` when too few requests carry usage.
pub fn fit(l: &LoadedSession) -> Option<Calibration> {
    let policy = crate::policy::builtins()
        .ok()?
        .into_iter()
        .find(|p| p.role() == KindRole::Compaction)?;
    let policy =
        crate::policy::load(&policy.name, &[("trigger".into(), "recorded".into())]).ok()?;
    // Only each frame's request and size are read: the frames are not kept whole, nor the
    // views (on a long session those are most of a load's memory).
    let mut sizes = Sizes(Vec::with_capacity(l.trace.requests.len()));
    crate::replay::replay_session_into(
        l,
        &policy,
        None,
        crate::replay::Keep { views: false },
        &mut sizes,
    )?;
    let trace = &l.trace;
    let (mut num, mut den, mut pairs) = (0f64, 0f64, 0usize);
    for w in sizes.0.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let (ra, rb) = (&trace.requests[a.request], &trace.requests[b.request]);
        let usable = |x: &crate::trace::Request| {
            !x.synthetic_call && x.status == RequestStatus::Ok && x.recorded_prompt() > 0
        };
        if b.request != a.request + 1 || !usable(ra) || !usable(rb) || b.tokens <= a.tokens {
            continue;
        }
        let counted = (b.tokens - a.tokens) as f64;
        let recorded = rb.recorded_prompt() as f64 - ra.recorded_prompt() as f64;
        num += counted * recorded;
        den += counted * counted;
        pairs += 1;
    }
    if pairs < MIN_PAIRS || den <= 0.0 {
        return None;
    }
    let factor = num / den;
    (factor.is_finite() && factor > 0.0).then_some(Calibration {
        factor,
        pairs,
        applied: false,
    })
}

/// What the fit reads of a frame.
struct Size {
    request: usize,
    tokens: u64,
}

/// A sink keeping each frame's [`Size`].
struct Sizes(Vec<Size>);

impl crate::replay::FrameSink for Sizes {
    fn head(
        &mut self,
        _: &crate::replay::output::TraceInfo,
        _: &crate::replay::output::PolicyInfo,
    ) -> std::ops::ControlFlow<()> {
        std::ops::ControlFlow::Continue(())
    }
    fn frame(&mut self, f: crate::replay::output::Frame) -> std::ops::ControlFlow<()> {
        self.0.push(Size {
            request: f.request,
            tokens: f.tokens,
        });
        std::ops::ControlFlow::Continue(())
    }
}

/// Scale every chunk's count of `l` (every tier, pruned variants, summary-call sizes) by
/// `factor`.
pub fn apply(l: &mut LoadedSession, factor: f64) {
    let scale = |n: u32| ((n as f64 * factor).round() as u64).min(u64::from(u32::MAX)) as u32;
    let scale64 = |n: u64| (n as f64 * factor).round() as u64;
    for e in &mut l.episodes {
        for rep in e.tiers.values_mut() {
            let mut sum = 0u32;
            for c in &mut rep.chunks {
                c.tokens = scale(c.tokens);
                if let Some(p) = &mut c.pruned {
                    p.tokens = scale(p.tokens);
                }
                sum = sum.saturating_add(c.tokens);
            }
            rep.tokens = sum;
        }
    }
    for c in &mut l.compaction.calls {
        c.tokens = scale64(c.tokens);
    }
    l.compaction.prompt_tokens = scale64(l.compaction.prompt_tokens);
}

/// Fit and, where the model's provider tokenizes differently and the factor is off by more
/// than [`TOLERANCE`], apply.
pub fn calibrate(l: &mut LoadedSession) -> Option<Calibration> {
    let differs = l
        .trace
        .requests
        .iter()
        .find_map(|r| r.model.as_ref())
        .is_some_and(|m| tokenizer_differs(&m.model_id));
    if !differs {
        return None;
    }
    let mut c = fit(l)?;
    if (c.factor - 1.0).abs() > TOLERANCE {
        apply(l, c.factor);
        c.applied = true;
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_models_are_the_ones_tokenized_otherwise() {
        assert!(tokenizer_differs("claude-opus-4-8"));
        assert!(tokenizer_differs("anthropic/Claude-Haiku-4-5"));
        assert!(!tokenizer_differs("gpt-5.1-codex"));
        assert!(!tokenizer_differs("scripted"));
    }
}
