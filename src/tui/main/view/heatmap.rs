//! The tier heatmap pane: a legend and the scale in its title rule, how many episode rows are out
//! of view (and where the active episode is when it is), then the widget.

use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::layout::MainRects;
use crate::tui::app::State;
use crate::tui::main::Pane;
use crate::tui::ui::rule_block;
use crate::tui::widgets::heatmap::{tier_glyph, Heatmap, RowLabel, TAIL_GLYPH};
use tierscope_engine::episode::model::Tier;

/// What the heatmap says for a session without requests (the model was never called yet).
pub const EMPTY_SESSION: &str = "No requests yet: the agent records one each time it calls the model, so there is nothing to replay. The episodes below come from the messages so far.";

/// The first episode row shown: the state's, kept inside the list.
pub fn top_row(state: &State, rows: usize) -> usize {
    state
        .main
        .heat
        .top
        .min(state.episodes().saturating_sub(rows))
}

pub fn render(state: &State, f: &mut Frame, r: &MainRects) {
    let t = &state.theme;
    let vp = state
        .main
        .viewport(usize::from(r.heat_cells.width), state.requests());
    let rows = usize::from(r.heat_cells.height);
    let top = top_row(state, rows);
    let n = state.episodes();
    // Right: the scale and the rows out of view (with the active episode when it is among
    // them); left: the legend, as much of it as fits beside them.
    let mut info = vec![Span::styled(format!(" {} ", vp.scale_label()), t.dim)];
    if !vp.fits() {
        info.push(Span::styled(
            format!("r{}–{} ", vp.first, vp.first + vp.span - 1),
            t.dim,
        ));
    }
    if n > rows && rows > 0 {
        let last = (top + rows).min(n) - 1;
        // Narrow: the rows in few words, so the legend keeps its marks beside them.
        let mut more = if r.heat.width < 100 {
            format!("ep {top}–{last}/{n}")
        } else {
            format!("episodes {top}–{last} of {n}")
        };
        let active = state
            .session
            .as_ref()
            .and_then(|s| s.model.requests.get(state.main.cursor))
            .and_then(|q| q.episode);
        if top > 0 {
            more.push_str(&format!(" ▲{top}"));
        }
        if top + rows < n {
            more.push_str(&format!(" ▼{}", n - top - rows));
        }
        if let (Some(a), Some(s)) = (active, &state.session) {
            if a < top || a >= top + rows {
                let id = s.model.episodes.get(a).map_or("", |e| e.id.as_str());
                more.push_str(&format!(
                    " (active {id} {})",
                    if a < top { "▲" } else { "▼" }
                ));
            }
        }
        more.push(' ');
        info.push(Span::styled(more, t.warn));
    }
    let info_w: usize = info.iter().map(Span::width).sum();
    let mut tiers = vec![Span::raw(" Tiers ")];
    // The legend, as much of it as fits beside the scale and the rows.
    for tier in Tier::ALL {
        tiers.push(Span::styled(tier_glyph(tier), t.tier(tier)));
        tiers.push(Span::styled(format!("{tier} "), t.dim));
    }
    tiers.push(Span::styled("◆", t.tier_active));
    tiers.push(Span::styled("active ", t.dim));
    let tails = state
        .on_screen
        .replay
        .as_ref()
        .is_some_and(|rp| rp.any_tail_only);
    if tails {
        tiers.push(Span::styled(TAIL_GLYPH, t.tier(Tier::Full)));
        tiers.push(Span::styled("tail only ", t.dim));
    }
    let marks = vec![
        Span::styled("▼▲", t.mark_change),
        Span::styled("change ", t.dim),
        // Each mark is one (episode, request) of the engine's counters: `⊥` every request an
        // episode is held (Σ hold), `…` every request a change waits (Σ wait), `!` a change
        // that reverses the previous one within thrash_window (Σ thrash).
        Span::styled("⊥", t.mark_hold),
        Span::styled("held ", t.dim),
        Span::styled("…", t.mark_deferred),
        Span::styled("waiting ", t.dim),
        Span::styled("!", t.mark_thrash),
        Span::styled("thrash ", t.dim),
        Span::styled("(per req) ", t.dim),
    ];
    // Narrower: the marks in short words (they say what the counters count, so they stay
    // longer than the tier names), then the tiers as glyphs alone (the help names them).
    let short_marks = vec![
        Span::styled("▼▲", t.mark_change),
        Span::styled("chg ", t.dim),
        Span::styled("⊥", t.mark_hold),
        Span::styled("hold ", t.dim),
        Span::styled("…", t.mark_deferred),
        Span::styled("wait ", t.dim),
        Span::styled("!", t.mark_thrash),
        Span::styled("thrash ", t.dim),
    ];
    let glyph_marks = vec![
        Span::styled("▼▲", t.mark_change),
        Span::styled("⊥", t.mark_hold),
        Span::styled("…", t.mark_deferred),
        Span::styled("!", t.mark_thrash),
        Span::raw(" "),
    ];
    let width = |v: &[Span]| v.iter().map(Span::width).sum::<usize>();
    let room = usize::from(r.heat.width).saturating_sub(info_w + 4);
    // Too narrow for the names: the glyphs alone, full first.
    let mut glyphs = vec![Span::raw(" Tiers ")];
    for tier in Tier::ALL {
        glyphs.push(Span::styled(tier_glyph(tier), t.tier(tier)));
    }
    glyphs.push(Span::styled("◆", t.tier_active));
    if tails {
        glyphs.push(Span::styled(TAIL_GLYPH, t.tier(Tier::Full)));
    }
    glyphs.push(Span::raw(" "));
    let title = [
        (&tiers, &marks),
        (&glyphs, &marks),
        (&glyphs, &short_marks),
        (&glyphs, &glyph_marks),
    ]
    .into_iter()
    .find(|(a, b)| width(a) + width(b) <= room)
    .map(|(a, b)| [a.clone(), b.clone()].concat())
    .unwrap_or_else(|| glyphs.clone());
    let block = rule_block(Line::from(title), state.main.focus == Pane::Heatmap, t)
        .title(Line::from(info).right_aligned());
    f.render_widget(block, r.heat);
    let Some(replay) = &state.on_screen.replay else {
        let msg = state
            .on_screen
            .error
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
    let with_titles = r.label_width > 9;
    let hits = &state.main.search.hits;
    let labels: Vec<RowLabel> = s
        .model
        .episodes
        .iter()
        .enumerate()
        .map(|(i, e)| RowLabel {
            id: e.id.as_str(),
            title: if with_titles { e.title.as_str() } else { "" },
            hit: hits.contains(&i),
        })
        .collect();
    f.render_widget(
        Heatmap {
            grid: &replay.grid,
            labels: &labels,
            vp,
            first_row: top,
            selected: state.main.selected,
            cursor: state.main.cursor,
            theme: t,
            label_width: r.label_width,
        },
        r.heat_body,
    );
}
