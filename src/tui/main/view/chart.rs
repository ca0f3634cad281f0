//! The pressure chart pane (or cumulative cost, `v`), aligned with the heatmap's cells. Its
//! legend lists only the lines the chart draws, and says when the budget is off the scale.

use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::layout::MainRects;
use crate::tui::app::State;
use crate::tui::ui::rule_block;
use crate::tui::widgets::chart::{short, ChartKind, StripChart};

pub fn render(state: &State, f: &mut Frame, r: &MainRects) {
    let t = &state.theme;
    let replay = state.on_screen.replay.as_deref();
    let mut title = match state.main.chart {
        ChartKind::Pressure => {
            let mut v = vec![
                Span::raw(" Pressure "),
                Span::styled("▆", t.line_tokens),
                Span::styled("tokens ", t.dim),
                Span::styled("•", t.line_recorded),
                Span::styled("recorded prompt ", t.dim),
                Span::styled("─", t.line_budget),
                Span::styled("budget ", t.dim),
            ];
            if let Some(rp) = replay {
                for (k, st, name) in [
                    (rp.demote_at, t.line_demote, "demote_at"),
                    (rp.target, t.line_target, "target"),
                    (rp.promote_at, t.line_promote, "promote_at"),
                ] {
                    if let Some(k) = k {
                        v.push(Span::styled("─", st));
                        v.push(Span::styled(format!("{name} {k} "), t.dim));
                    }
                }
            }
            v.push(Span::styled("↯", t.divergence));
            v.push(Span::styled("cache break ", t.dim));
            v
        }
        ChartKind::Cost => vec![
            Span::raw(" Cumulative cost "),
            Span::styled("▆", t.line_tokens),
            Span::styled("replayed ", t.dim),
            Span::styled("•", t.line_recorded),
            Span::styled("recorded ", t.dim),
        ],
    };
    let (mut at, mut off): (Vec<Span>, Vec<Span>) = (Vec::new(), Vec::new());
    if let Some(rp) = replay {
        if state.main.chart == ChartKind::Pressure && rp.budget as f64 > rp.y_max as f64 {
            title.push(Span::styled(
                format!("(budget {} off the scale) ", short(rp.budget as f64)),
                t.warn,
            ));
        }
        // What the scale (the budget band) leaves out, and how it is drawn: first after the
        // figures at the cursor, so a narrow terminal keeps it.
        if state.main.chart == ChartKind::Pressure && rp.data_max > rp.y_max {
            off.push(Span::styled("▲↑", t.warn));
            off.push(Span::styled(
                format!("off scale (to {}) ", short(rp.data_max as f64)),
                t.dim,
            ));
        }
        if let Some(fr) = rp.frames.get(state.main.cursor) {
            let text = match state.main.chart {
                ChartKind::Pressure => format!(
                    " r{}: {} tok, {:.0}% ",
                    state.main.cursor,
                    short(fr.tokens as f64),
                    fr.pressure * 100.0
                ),
                ChartKind::Cost => format!(
                    " r{}: ${:.4} vs ${:.4} recorded ",
                    state.main.cursor, fr.cum_cost, fr.recorded_cum_cost
                ),
            };
            at.push(Span::styled(text, t.key));
        }
        // No schedule keeps to this budget: said before the legend (in full in the footer).
        if let Some(w) = &rp.budget_warning_short {
            off.push(Span::styled(format!("⚠ {w} "), t.error));
        }
    }
    at.extend(off);
    title.splice(1..1, at);
    f.render_widget(rule_block(Line::from(title), false, t), r.chart_block);
    let (Some(replay), Some(s)) = (replay, &state.session) else {
        return;
    };
    if state.requests() == 0 {
        return;
    }
    f.render_widget(
        StripChart {
            replay,
            session: &s.model,
            vp: state
                .main
                .viewport(usize::from(r.heat_cells.width), state.requests()),
            cursor: state.main.cursor,
            theme: t,
            kind: state.main.chart,
            label_width: r.label_width,
        },
        r.chart,
    );
}
