//! The selected episode: class and floor with their reasons, pins, the tiers with the applied one
//! marked, the change history with reasons, holds, then the text of the shown tier (scrollable).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::pane_block;
use crate::tui::app::{applied_tier, shown_tier, Pane, State};

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let focused = state.focus == Pane::Detail;
    let Some(ep) = state
        .session
        .as_ref()
        .and_then(|s| s.model.episodes.get(state.selected))
    else {
        f.render_widget(pane_block(" Detail ", focused, t), area);
        return;
    };
    let applied = applied_tier(state, state.selected);
    let shown = shown_tier(state);
    let mut lines: Vec<Line> = Vec::new();
    lines.push(Line::from(vec![
        Span::styled(format!("{} ", ep.id), t.key),
        Span::styled(ep.title.clone(), t.base),
    ]));
    let children = if ep.children.is_empty() {
        String::new()
    } else {
        format!("  sub-agents: {} (Enter opens)", ep.children.join(", "))
    };
    lines.push(Line::from(Span::styled(
        format!(
            "kinds {}  requests {}{}",
            ep.kinds,
            match (ep.first_request, ep.last_request) {
                (Some(a), Some(b)) => format!("{a}–{b}"),
                _ => "none".to_owned(),
            },
            children
        ),
        t.dim,
    )));
    lines.push(Line::from(vec![
        Span::styled("class ", t.dim),
        Span::styled(ep.class, t.key),
    ]));
    for r in &ep.class_reasons {
        lines.push(Line::from(Span::styled(format!("  · {r}"), t.dim)));
    }
    lines.push(Line::from(vec![
        Span::styled("floor ", t.dim),
        Span::styled(ep.floor.as_str(), t.key),
    ]));
    for r in &ep.floor_reasons {
        lines.push(Line::from(Span::styled(format!("  · {r}"), t.dim)));
    }
    for (reason, text) in &ep.pins {
        lines.push(Line::from(vec![
            Span::styled("pin ", t.warn),
            Span::styled(format!("({reason}) "), t.dim),
            Span::styled(text.clone(), t.base),
        ]));
    }
    // Tiers: the applied one marked ●, the shown one underlined by the selection style.
    let mut tiers = vec![Span::styled("tiers ", t.dim)];
    for tt in &ep.tiers {
        let mark = if Some(tt.tier) == applied {
            "●"
        } else {
            "○"
        };
        let st = if Some(tt.tier) == shown {
            t.selection
        } else {
            t.tier(tt.tier)
        };
        tiers.push(Span::styled(format!("{mark}{} {}", tt.tier, tt.tokens), st));
        tiers.push(Span::raw("  "));
    }
    if applied == Some(tierscope_engine::episode::model::Tier::Dropped) {
        tiers.push(Span::styled("●dropped", t.tier_dropped));
    }
    lines.push(Line::from(tiers));
    for n in &ep.tier_notes {
        lines.push(Line::from(Span::styled(format!("  · {n}"), t.dim)));
    }
    if let Some(rp) = &state.replay {
        if let (Some(d), Some(a)) = (rp.desired.get(&(state.selected, state.cursor)), applied) {
            let boundary = state
                .policy
                .knobs
                .get("boundary")
                .map(|b| b.to_string())
                .unwrap_or_else(|| "request".to_owned());
            lines.push(Line::from(Span::styled(
                format!(
                    "deferred: the policy wants {d}, {a} stays until the next {boundary} boundary (or an emergency)"
                ),
                t.mark_deferred,
            )));
        }
        let hist = rp
            .history
            .get(state.selected)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if hist.is_empty() {
            lines.push(Line::from(Span::styled("changes: none", t.dim)));
        } else {
            lines.push(Line::from(Span::styled(
                format!("changes ({}):", hist.len()),
                t.dim,
            )));
            for c in hist {
                let st = if c.request <= state.cursor {
                    t.base
                } else {
                    t.dim
                };
                lines.push(Line::from(Span::styled(
                    format!(
                        "  r{:<4} {}→{}  {} ({})",
                        c.request, c.from, c.to, c.reason, c.applied
                    ),
                    st,
                )));
            }
        }
        let holds = rp
            .holds_of
            .get(state.selected)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if !holds.is_empty() {
            let shown: Vec<String> = holds.iter().take(12).map(|r| format!("r{r}")).collect();
            let more = if holds.len() > 12 {
                format!(" … (+{})", holds.len() - 12)
            } else {
                String::new()
            };
            lines.push(Line::from(Span::styled(
                format!(
                    "held at floor {} ({}×): {}{more}",
                    ep.floor,
                    holds.len(),
                    shown.join(" ")
                ),
                t.mark_hold,
            )));
        }
    }
    let header_len = lines.len();
    if let Some(tier) = shown {
        let active = state.replay.as_ref().is_some_and(|r| {
            r.grid.get(state.selected, state.cursor) & crate::tui::model::cell::STATE
                == crate::tui::model::cell::ACTIVE
        });
        let label = if Some(tier) == applied {
            "applied at the cursor; [ ] other tiers"
        } else if active && tier == tierscope_engine::episode::model::Tier::Full {
            "active: rendered as it stands; [ ] other tiers"
        } else {
            "not applied at the cursor; [ ] other tiers"
        };
        lines.push(Line::from(Span::styled(
            format!("── {tier} text ({label}) ──"),
            t.title_focus,
        )));
        match ep.tier_text(tier) {
            Some(tt) => {
                let h = usize::from(area.height);
                let start = state.detail_scroll.min(tt.lines.len().saturating_sub(1));
                for l in tt.lines.iter().skip(start).take(h) {
                    lines.push(Line::from(Span::styled(l.clone(), t.base)));
                }
            }
            None => lines.push(Line::from(Span::styled(
                format!("no {tier} representation (see the notes above)"),
                t.dim,
            ))),
        }
    }
    let title = format!(
        " Detail {}{} ",
        ep.id,
        if header_len > 0 && state.detail_scroll > 0 {
            format!(" (text line {})", state.detail_scroll + 1)
        } else {
            String::new()
        }
    );
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(pane_block(title, focused, t)),
        area,
    );
}
