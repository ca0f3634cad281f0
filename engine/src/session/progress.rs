//! How far a load has got, for a front end to show while it waits (the explorer's loading
//! screen): the stage, and within it how much of how much is done.

use std::sync::Arc;

/// The stages of a load, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadStage {
    /// Reading and parsing the agent's files (`done`/`total`: bytes, known when it ends).
    Reading,
    /// Segmenting into episodes, writing their tiers and counting their tokens (`done`/`total`:
    /// episodes).
    Episodes,
    /// Sub-agent sessions, calibration, the token cache.
    Finishing,
}

impl LoadStage {
    pub const COUNT: usize = 3;

    /// 1-based position among the stages.
    pub fn number(self) -> usize {
        match self {
            LoadStage::Reading => 1,
            LoadStage::Episodes => 2,
            LoadStage::Finishing => 3,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            LoadStage::Reading => "reading the session",
            LoadStage::Episodes => "episodes, tiers and token counts",
            LoadStage::Finishing => "sub-agents, calibration, token cache",
        }
    }
}

/// One report: `done` of `total` within `stage` (`total` 0: not known yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadProgress {
    pub stage: LoadStage,
    pub done: u64,
    pub total: u64,
}

impl LoadProgress {
    /// `done` of `total` in percent, when the total is known.
    pub fn percent(&self) -> Option<u64> {
        (self.total > 0).then(|| (self.done.min(self.total) * 100) / self.total)
    }
}

/// Where a load reports its progress; nowhere by default.
#[derive(Clone, Default)]
pub struct ProgressSink(Option<Arc<dyn Fn(LoadProgress) + Send + Sync>>);

impl ProgressSink {
    pub fn new(f: impl Fn(LoadProgress) + Send + Sync + 'static) -> ProgressSink {
        ProgressSink(Some(Arc::new(f)))
    }

    pub fn report(&self, stage: LoadStage, done: u64, total: u64) {
        if let Some(f) = &self.0 {
            f(LoadProgress { stage, done, total });
        }
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ProgressSink(..)"
        } else {
            "ProgressSink(none)"
        })
    }
}
