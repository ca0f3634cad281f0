//! Claude's usage, normalized.
//!
//! **Claude's semantics are disjoint.** An Anthropic `usage` splits the prompt into three parts
//! that do not overlap: `input_tokens` is only what was neither read from nor written to the
//! cache (after the last cache breakpoint), `cache_read_input_tokens` what was read from it, and
//! `cache_creation_input_tokens` what was written to it (split by lifetime under
//! `cache_creation`: `ephemeral_5m_input_tokens`, `ephemeral_1h_input_tokens`). The prompt the
//! model received is their sum. `output_tokens` includes any thinking (no separate reasoning
//! count). So the normalized form takes each count as it is: uncached input = `input_tokens`,
//! cache read, cache write (= `cache_creation_input_tokens`, its 5 m / 1 h split kept), output;
//! reasoning 0. (OpenAI's usage is inclusive instead: its `prompt_tokens` contains the cached
//! part.)
//!
//! When the 5 m / 1 h split is missing (older releases) or does not add up to the total, the
//! remainder is taken as 5-minute writes, the API's default lifetime.

use serde::Serialize;

use super::record::RawUsage;
use crate::trace::model::Usage;

/// One response's usage, normalized (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ClaudeUsage {
    /// Prompt tokens neither read from nor written to the cache.
    pub input: u64,
    pub cache_read: u64,
    /// Cache writes with the 5-minute lifetime.
    pub cache_write_5m: u64,
    /// Cache writes with the 1-hour lifetime.
    pub cache_write_1h: u64,
    pub output: u64,
}

impl ClaudeUsage {
    /// Normalize a recorded `usage`; the second value is true when a count was not a
    /// non-negative integer (read as the nearest count).
    pub fn from_raw(raw: &RawUsage) -> (ClaudeUsage, bool) {
        let split = raw.cache_creation.clone().unwrap_or_default();
        let total_write = raw.cache_creation_input_tokens.value;
        let h1 = split.ephemeral_1h_input_tokens.value.min(total_write);
        let bad = raw.input_tokens.bad
            || raw.cache_creation_input_tokens.bad
            || raw.cache_read_input_tokens.bad
            || raw.output_tokens.bad
            || split.ephemeral_5m_input_tokens.bad
            || split.ephemeral_1h_input_tokens.bad;
        (
            ClaudeUsage {
                input: raw.input_tokens.value,
                cache_read: raw.cache_read_input_tokens.value,
                cache_write_5m: total_write - h1,
                cache_write_1h: h1,
                output: raw.output_tokens.value,
            },
            bad,
        )
    }

    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m.saturating_add(self.cache_write_1h)
    }

    /// What the model received: uncached input, cache read and cache write together.
    pub fn prompt(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write())
    }

    /// Sums saturate: a damaged count must not wrap a session's total.
    pub fn add(&mut self, o: &ClaudeUsage) {
        self.input = self.input.saturating_add(o.input);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.cache_write_5m = self.cache_write_5m.saturating_add(o.cache_write_5m);
        self.cache_write_1h = self.cache_write_1h.saturating_add(o.cache_write_1h);
        self.output = self.output.saturating_add(o.output);
    }

    /// Field by field, the larger of the two (blocks of a response written while it streamed
    /// can carry an earlier, smaller usage).
    pub fn max(&self, o: &ClaudeUsage) -> ClaudeUsage {
        ClaudeUsage {
            input: self.input.max(o.input),
            cache_read: self.cache_read.max(o.cache_read),
            cache_write_5m: self.cache_write_5m.max(o.cache_write_5m),
            cache_write_1h: self.cache_write_1h.max(o.cache_write_1h),
            output: self.output.max(o.output),
        }
    }

    /// The neutral model's usage (its `input` is uncached input too).
    pub fn to_usage(&self) -> Usage {
        Usage {
            input: self.input,
            output: self.output,
            reasoning: 0,
            cache_read: self.cache_read,
            cache_write: self.cache_write(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(v: serde_json::Value) -> RawUsage {
        serde_json::from_value(v).expect("usage")
    }

    #[test]
    fn disjoint_counts_are_taken_as_they_are_and_the_prompt_is_their_sum() {
        let (u, bad) = ClaudeUsage::from_raw(&raw(serde_json::json!({
            "input_tokens": 1371, "cache_creation_input_tokens": 16326,
            "cache_read_input_tokens": 0, "output_tokens": 32,
            "cache_creation": {"ephemeral_1h_input_tokens": 326, "ephemeral_5m_input_tokens": 16000}
        })));
        assert!(!bad);
        assert_eq!(
            (
                u.input,
                u.cache_read,
                u.cache_write_5m,
                u.cache_write_1h,
                u.output
            ),
            (1371, 0, 16000, 326, 32)
        );
        assert_eq!(u.prompt(), 17697);
        assert_eq!(u.to_usage().cache_write, 16326);
    }

    #[test]
    fn a_missing_split_is_five_minute_writes_and_bad_counts_are_marked() {
        let (u, bad) = ClaudeUsage::from_raw(&raw(serde_json::json!({
            "input_tokens": "12", "cache_creation_input_tokens": 100, "output_tokens": -3
        })));
        assert!(bad);
        assert_eq!(
            (u.input, u.cache_write_5m, u.cache_write_1h, u.output),
            (12, 100, 0, 0)
        );
        // A split claiming more than the total is capped by it.
        let (u, _) = ClaudeUsage::from_raw(&raw(serde_json::json!({
            "cache_creation_input_tokens": 10, "cache_creation": {"ephemeral_1h_input_tokens": 50}
        })));
        assert_eq!((u.cache_write_5m, u.cache_write_1h), (0, 10));
    }
}
