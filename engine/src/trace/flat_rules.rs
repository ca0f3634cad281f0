//! How an agent compacts on its own (the "compaction cliff" the flat baseline replays): when it
//! fires, what it keeps verbatim, and the usable limit it measures against. Each adapter states
//! its agent's rules ([`crate::trace::adapter::Adapter::flat_rules`]); the flat policy simulates
//! whichever agent's rules it is asked for.

use serde::Serialize;

/// What the trigger measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerCount {
    /// The previous request's prompt plus its output: after a request crosses, the next one
    /// compacts first (the crossing one was sent as it was).
    PreviousTotal,
    /// The previous request's prompt and output plus an estimate of what was added since (its
    /// text's bytes over `bytes_per_token`): the agent's own estimate before it sends, which a
    /// large tool output can cross before the model ever counts it.
    PreviousTotalPlusEstimate { bytes_per_token: u64 },
    /// The context the request is about to send: it compacts before it is sent.
    NextRequest,
}

/// When the measured count fires.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerRule {
    /// `count >= usable`.
    AtLeast,
    /// `count > usable`.
    Above,
    /// `count > share × usable`.
    AboveShare(f64),
}

/// What a compaction keeps verbatim after its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptTail {
    /// Nothing: everything before the request is summarised.
    None,
    /// Whole human turns, newest first (`turns`: at most that many; `None`: any number) within
    /// a token cap, then the longest suffix of the next turn that fits.
    Turns { turns: Option<usize>, cap: u64 },
    /// The last step: the response the request follows, with its tool results (what had not
    /// been sent yet when the agent compacted).
    LastStep,
}

/// One agent's compaction rules for one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatRules {
    /// The agent's name ("OpenCode").
    pub agent: &'static str,
    /// Which of the agent's rule sets (a release family), for the output.
    pub rules: String,
    pub count: TriggerCount,
    pub trigger: TriggerRule,
    pub tail: KeptTail,
    /// The share of the model's window the limit starts from (1 for most agents).
    pub context_share: f64,
    /// The output reserve is the model's output limit, at most this.
    pub output_reserve_cap: u64,
    /// Tokens kept free below the usable limit besides the output reserve.
    pub buffer: u64,
}

impl FlatRules {
    /// The usable input limit of a model with these context and output limits.
    pub fn usable(&self, context: u64, output: u64) -> u64 {
        ((context as f64 * self.context_share) as u64)
            .saturating_sub(output.min(self.output_reserve_cap))
            .saturating_sub(self.buffer)
    }

    /// Whether `count` fires at the usable limit `usable`.
    pub fn fires(&self, count: u64, usable: u64) -> bool {
        match self.trigger {
            TriggerRule::AtLeast => count >= usable,
            TriggerRule::Above => count > usable,
            TriggerRule::AboveShare(s) => count as f64 > s * usable as f64,
        }
    }

    /// A rule set for an agent whose compaction is not described: it fires when the next
    /// request would reach the limit and keeps nothing.
    pub fn generic(agent: &'static str) -> FlatRules {
        FlatRules {
            agent,
            rules: "generic".into(),
            count: TriggerCount::NextRequest,
            trigger: TriggerRule::AtLeast,
            tail: KeptTail::None,
            context_share: 1.0,
            output_reserve_cap: u64::MAX,
            buffer: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usable_limit_reserves_the_capped_output_and_the_buffer() {
        let r = FlatRules {
            output_reserve_cap: 20_000,
            buffer: 13_000,
            ..FlatRules::generic("x")
        };
        assert_eq!(r.usable(200_000, 64_000), 167_000);
        assert_eq!(r.usable(200_000, 8_000), 179_000);
        assert_eq!(r.usable(10_000, 64_000), 0);
        let share = FlatRules {
            context_share: 0.9,
            output_reserve_cap: 0,
            buffer: 0,
            ..FlatRules::generic("x")
        };
        assert_eq!(share.usable(128_000, 32_000), 115_200);
    }

    #[test]
    fn each_trigger_rule_fires_where_it_says() {
        let mut r = FlatRules::generic("x");
        assert!(r.fires(100, 100) && !r.fires(99, 100));
        r.trigger = TriggerRule::Above;
        assert!(!r.fires(100, 100) && r.fires(101, 100));
        r.trigger = TriggerRule::AboveShare(0.9);
        assert!(!r.fires(90, 100) && r.fires(91, 100));
    }
}
