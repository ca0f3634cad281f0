//! The pressure chart pane (or cumulative cost, `v`), aligned with the heatmap's columns.

use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::layout::MainRects;
use super::rule_block;
use crate::tui::app::State;
use crate::tui::widgets::chart::{short, ChartKind, StripChart};

pub fn render(state: &State, f: &mut Frame, r: &MainRects) {
    let t = &state.theme;
    let mut title = match state.chart {
        ChartKind::Pressure => vec![
            Span::raw(" Pressure "),
            Span::styled("▆", t.line_tokens),
            Span::styled("tokens ", t.dim),
            Span::styled("•", t.line_recorded),
            Span::styled("recorded prompt ", t.dim),
            Span::styled("╌", t.line_budget),
            Span::styled("budget ", t.dim),
            Span::styled("╌", t.line_demote),
            Span::styled("demote_at ", t.dim),
            Span::styled("╌", t.line_target),
            Span::styled("target ", t.dim),
            Span::styled("╌", t.line_promote),
            Span::styled("promote_at ", t.dim),
            Span::styled("↯", t.divergence),
            Span::styled("cache break ", t.dim),
        ],
        ChartKind::Cost => vec![
            Span::raw(" Cumulative cost "),
            Span::styled("▆", t.line_tokens),
            Span::styled("replayed ", t.dim),
            Span::styled("•", t.line_recorded),
            Span::styled("recorded ", t.dim),
        ],
    };
    let mut at = Vec::new();
    if let Some(rp) = &state.replay {
        if state.chart == ChartKind::Pressure && rp.budget > rp.y_max {
            title.push(Span::styled(
                format!("(budget {} off-scale) ", short(rp.budget as f64)),
                t.dim,
            ));
        }
        if let Some(fr) = rp.frames.get(state.cursor) {
            let text = match state.chart {
                ChartKind::Pressure => format!(
                    " @t: {} tok, {:.0}% ",
                    short(fr.tokens as f64),
                    fr.pressure * 100.0
                ),
                ChartKind::Cost => format!(
                    " @t: ${:.4} vs ${:.4} recorded ",
                    fr.cum_cost, fr.recorded_cum_cost
                ),
            };
            at.push(Span::styled(text, t.key));
        }
    }
    title.splice(1..1, at);
    f.render_widget(rule_block(Line::from(title), false, t), r.chart_block);
    let (Some(replay), Some(s)) = (&state.replay, &state.session) else {
        return;
    };
    if state.requests() == 0 {
        return;
    }
    f.render_widget(
        StripChart {
            replay,
            session: &s.model,
            vp: state.viewport(),
            cursor: state.cursor,
            theme: t,
            kind: state.chart,
            label_width: r.label_width,
        },
        r.chart,
    );
}
