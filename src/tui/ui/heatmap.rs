//! The tier heatmap pane: a legend in its title rule, then the widget.

use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::layout::MainRects;
use super::rule_block;
use crate::tui::app::{Pane, State};
use crate::tui::widgets::heatmap::{tier_glyph, Heatmap};
use tierscope_engine::episode::model::Tier;

/// What the heatmap says for a session without requests (the model was never called yet).
pub const EMPTY_SESSION: &str = "No requests yet: OpenCode records one each time it calls the model, so there is nothing to replay. The episodes below come from the messages so far.";

pub fn render(state: &State, f: &mut Frame, r: &MainRects) {
    let t = &state.theme;
    let vp = state.viewport();
    let mut title = vec![Span::raw(" Tiers ")];
    for tier in Tier::ALL {
        title.push(Span::styled(tier_glyph(tier), t.tier(tier)));
        title.push(Span::styled(format!("{tier} "), t.dim));
    }
    title.push(Span::styled("◆", t.tier_active));
    title.push(Span::styled("active ", t.dim));
    if r.heat.width >= 110 {
        title.push(Span::styled("▼▲", t.mark_change));
        title.push(Span::styled("change ", t.dim));
        title.push(Span::styled("⊥", t.mark_hold));
        title.push(Span::styled("hold ", t.dim));
        title.push(Span::styled("…", t.mark_deferred));
        title.push(Span::styled("deferred ", t.dim));
        title.push(Span::styled("!", t.mark_thrash));
        title.push(Span::styled("thrash ", t.dim));
    }
    title.push(Span::styled(format!(" 1 col = {} req ", vp.per_col), t.dim));
    let block = rule_block(Line::from(title), state.focus == Pane::Heatmap, t);
    f.render_widget(block, r.heat);
    let Some(replay) = &state.replay else {
        let msg = state
            .replay_error
            .clone()
            .unwrap_or_else(|| "replaying…".to_owned());
        f.render_widget(Paragraph::new(msg).style(t.dim), r.heat_body);
        return;
    };
    let Some(s) = &state.session else { return };
    if state.requests() == 0 {
        f.render_widget(
            Paragraph::new(EMPTY_SESSION)
                .style(t.dim)
                .wrap(ratatui::widgets::Wrap { trim: true }),
            r.heat_body,
        );
        return;
    }
    let labels: Vec<&str> = s.model.episodes.iter().map(|e| e.id.as_str()).collect();
    f.render_widget(
        Heatmap {
            grid: &replay.grid,
            labels: &labels,
            vp,
            first_row: state.ep_first,
            selected: state.selected,
            cursor: state.cursor,
            theme: t,
            label_width: r.label_width,
        },
        r.heat_body,
    );
}
