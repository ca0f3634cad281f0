//! OpenCode's own compaction, by release (notes: opencode-requests-by-era §6), as the flat
//! policy simulates it:
//! - **trigger**: after a request whose total (prompt + output) reaches the usable limit, the
//!   next request compacts first (`>=` from 1.1.57, `>` before, and 0.9 × usable before 0.7.4);
//!   the request that crossed was sent as it was — the cliff;
//! - **kept tail**: none before 1.14.19 (everything before the current request is summarised);
//!   1.14.19–1.18.24 the last 2 human turns within 8,000 tokens; 1.18.25+ every turn within
//!   15,000 (the policy's knobs clamp the cap to the usable limit's share);
//! - **usable limit**: context − min(output, 32,000) (`OUTPUT_TOKEN_MAX`).

use super::dialect::{Dialect, Era};
use crate::trace::flat_rules::{FlatRules, KeptTail, TriggerCount, TriggerRule};

/// OpenCode's `OUTPUT_TOKEN_MAX`: the output reserve never exceeds this.
pub const OUTPUT_TOKEN_MAX: u64 = 32_000;

/// The rules of the release a dialect names.
pub fn flat_rules(d: &Dialect) -> FlatRules {
    let trigger = match d.era {
        Era::V01 | Era::MultiStep => TriggerRule::AboveShare(0.9),
        _ if d.version.is_some_and(|v| v < (1, 1, 57)) => TriggerRule::Above,
        _ => TriggerRule::AtLeast,
    };
    let tail = match d.era {
        Era::V01 | Era::MultiStep | Era::SummaryMessage | Era::CompactionPart | Era::Sqlite => {
            KeptTail::None
        }
        Era::AnchoredSummary => KeptTail::Turns {
            turns: Some(2),
            cap: 8_000,
        },
        Era::TextSummary => KeptTail::Turns {
            turns: None,
            cap: 15_000,
        },
    };
    FlatRules {
        agent: "OpenCode",
        rules: d.era.as_str().to_owned(),
        count: TriggerCount::PreviousTotal,
        trigger,
        tail,
        context_share: 1.0,
        output_reserve_cap: OUTPUT_TOKEN_MAX,
        buffer: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(era: Era, version: (u64, u64, u64)) -> FlatRules {
        flat_rules(&Dialect {
            era,
            version: Some(version),
            inferred: false,
        })
    }

    #[test]
    fn the_trigger_follows_the_release() {
        // 1.1.57+: count >= usable.
        let r = rules(Era::TextSummary, (1, 18, 33));
        assert!(r.fires(9_000, 9_000) && !r.fires(8_999, 9_000));
        // Before 1.1.57: count > usable.
        let r = rules(Era::CompactionPart, (1, 1, 22));
        assert!(!r.fires(9_000, 9_000) && r.fires(9_001, 9_000));
        // 0.2–0.7: 90 % of usable.
        let r = rules(Era::MultiStep, (0, 5, 29));
        assert!(r.fires(8_101, 9_000) && !r.fires(8_100, 9_000));
    }

    #[test]
    fn the_kept_tail_and_the_usable_limit_follow_the_release() {
        assert_eq!(rules(Era::Sqlite, (1, 2, 1)).tail, KeptTail::None);
        assert_eq!(
            rules(Era::AnchoredSummary, (1, 14, 41)).tail,
            KeptTail::Turns {
                turns: Some(2),
                cap: 8_000
            }
        );
        let r = rules(Era::TextSummary, (1, 18, 33));
        assert_eq!(
            r.tail,
            KeptTail::Turns {
                turns: None,
                cap: 15_000
            }
        );
        assert_eq!(r.usable(128_000, 12_000), 116_000);
        assert_eq!(r.usable(200_000, 64_000), 168_000);
    }
}
