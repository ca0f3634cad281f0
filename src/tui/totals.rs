//! The run totals the metrics strip shows beside the per-request figures, and their before →
//! after delta after a knob change. The one place that says which replay summary field feeds
//! which total (and under which name), so a change in what the summary counts is one edit here.

use tierscope_engine::replay::Replay;

/// Totals over a whole replay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunTotals {
    /// Tier changes applied.
    pub changes: u64,
    /// (episode, request) pairs held at the floor: the heatmap's `⊥` cells.
    pub holds: u64,
    /// (episode, request) pairs whose change waits (for a boundary or `min_dwell`): the
    /// heatmap's `…` cells.
    pub deferrals: u64,
    /// Changes that reversed the same episode's previous change within the thrash window.
    pub thrash: u64,
    /// Requests whose rendered context went over the budget.
    pub overflow: u64,
    /// Changes applied off schedule (between boundaries or inside `min_dwell`) because the
    /// context would otherwise overflow the budget.
    pub emergencies: u64,
}

impl RunTotals {
    /// The totals of a replay: its summary, and the over-budget requests of its frames.
    pub fn of(r: &Replay) -> RunTotals {
        let s = &r.summary;
        RunTotals {
            changes: s.changes,
            holds: s.holds,
            deferrals: s.deferred + s.dwell_blocks,
            thrash: s.thrash,
            emergencies: s.emergencies,
            overflow: r
                .frames
                .iter()
                .filter(|f| f.budget > 0 && f.tokens > f.budget)
                .count() as u64,
        }
    }

    /// The totals in the strip's groups, each group with the unit its values count:
    /// (unit, [(short name, value)]).
    pub fn groups(&self) -> [(&'static str, Vec<(&'static str, u64)>); 3] {
        [
            (
                "changes",
                vec![
                    ("chg", self.changes),
                    ("thrash", self.thrash),
                    ("emerg", self.emergencies),
                ],
            ),
            (
                "ep·req",
                vec![("hold", self.holds), ("wait", self.deferrals)],
            ),
            ("req", vec![("over", self.overflow)]),
        ]
    }
}

/// `12→8` when a total moved, else `8`.
pub fn before_after(before: Option<u64>, after: u64) -> String {
    match before {
        Some(b) if b != after => format!("{b}→{after}"),
        _ => after.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_follow_the_fields_and_deltas_show_only_moves() {
        let t = RunTotals {
            changes: 1,
            holds: 2,
            deferrals: 3,
            thrash: 4,
            overflow: 5,
            emergencies: 6,
        };
        let v: Vec<u64> = t
            .groups()
            .iter()
            .flat_map(|(_, g)| g.iter().map(|(_, v)| *v))
            .collect();
        assert_eq!(v, [1, 4, 6, 2, 3, 5]);
        assert_eq!(before_after(Some(12), 8), "12→8");
        assert_eq!(before_after(Some(8), 8), "8");
        assert_eq!(before_after(None, 8), "8");
    }
}
