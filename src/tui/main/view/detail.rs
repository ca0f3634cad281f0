//! The selected episode as one scrollable page: class and floor, the tiers with the applied one
//! marked, a deferred change, the change history with reasons, the holds, where only its tail
//! was in the context, then why (class and floor reasons, pins, tier notes), its sub-agent
//! sessions, and the text of the shown tier.
//! The page wraps to the pane; the pane scrolls over all of it (scrollbar, "▲/▼ n more") and
//! reports its scroll limits.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use crate::tui::app::State;
use crate::tui::geometry::Scroll;
use crate::tui::main::Pane;
use crate::tui::ui::{hidden_rows, highlight, pane_block, scrollbar};
use crate::tui::view_model::{cell, EpisodeRow};
use tierscope_engine::episode::model::Tier;

/// Most runs of holds listed before "… (+n runs)".
const HOLDS_LISTED: usize = 24;

pub fn render(state: &State, f: &mut Frame, area: Rect) -> Scroll {
    let t = &state.theme;
    let focused = state.main.focus == Pane::Detail;
    let Some(ep) = state
        .session
        .as_ref()
        .and_then(|s| s.model.episodes.get(state.main.selected))
    else {
        f.render_widget(pane_block(" Detail ", focused, t), area);
        return Scroll::default();
    };
    let lines = page(state, ep);
    // Wrapped unless the user clips long lines (`E`, shared with the context and diff panes).
    let para = if state.main.context.clip {
        Paragraph::new(lines)
    } else {
        Paragraph::new(lines).wrap(Wrap { trim: false })
    };
    let inner_w = area.width.saturating_sub(2);
    let page_h = usize::from(area.height.saturating_sub(2));
    let total = para.line_count(inner_w);
    let scroll = Scroll::of(total, page_h);
    let top = state.main.detail.scroll.min(scroll.max);
    // Where the page is: `lines 1–5 of 672`, or on a narrow pane `1/672` (PgDn pages, `+`
    // gives the pane the screen).
    let title = if scroll.max > 0 {
        let long = format!(
            " Detail {}: lines {}–{} of {total} ",
            ep.id,
            top + 1,
            (top + page_h).min(total)
        );
        if long.chars().count() + 2 <= usize::from(area.width) {
            long
        } else {
            format!(" Detail {} {}/{total} ", ep.id, top + 1)
        }
    } else {
        format!(" Detail {} ", ep.id)
    };
    let block = pane_block(title, focused, t)
        .title_bottom(Line::from(Span::styled(hidden_rows(top, scroll), t.dim)).right_aligned());
    f.render_widget(
        para.scroll((u16::try_from(top).unwrap_or(u16::MAX), 0))
            .block(block),
        area,
    );
    scrollbar(f, area, top, scroll, t);
    scroll
}

/// The whole page for episode `ep`, unwrapped.
fn page<'a>(state: &'a State, ep: &'a EpisodeRow) -> Vec<Line<'a>> {
    let t = &state.theme;
    let sel = state.main.selected;
    let cursor = state.main.cursor;
    let needle = state.main.search.needle();
    let applied = state.main.applied_tier(&state.on_screen, sel);
    let shown = state.main.shown_tier(&state.on_screen);
    let replay = state.on_screen.replay.as_deref();
    let section = |s: &'a str| Line::from(Span::styled(s, t.title_focus));
    let mut lines: Vec<Line> = Vec::new();
    let mut head = vec![Span::styled(format!("{} ", ep.id), t.key)];
    head.extend(highlight(
        &ep.title,
        needle.as_deref(),
        t.base,
        t.search_match,
    ));
    lines.push(Line::from(head));
    lines.push(Line::from(Span::styled(
        format!(
            "kinds {}  requests {}",
            ep.kinds,
            match (ep.first_request, ep.last_request) {
                (Some(a), Some(b)) => format!("{a}–{b}"),
                _ => "none".to_owned(),
            },
        ),
        t.dim,
    )));
    lines.push(Line::from(vec![
        Span::styled("class ", t.dim),
        Span::styled(ep.class, t.key),
        Span::styled("  floor ", t.dim),
        Span::styled(ep.floor.as_str(), t.key),
    ]));
    // Tiers: the applied one marked ●, the shown one in the selection style.
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
    if applied == Some(Tier::Dropped) {
        tiers.push(Span::styled("●dropped", t.tier_dropped));
    }
    lines.push(Line::from(tiers));
    if let Some(rp) = replay {
        if let (Some(d), Some(a)) = (rp.desired_at(sel, cursor).as_ref(), applied) {
            let boundary = state
                .on_screen
                .policy
                .knobs
                .get("boundary")
                .map(|b| b.to_string())
                .unwrap_or_else(|| "request".to_owned());
            lines.push(Line::from(Span::styled(
                format!(
                    "waiting (…): the policy wants {d}, {a} stays until the next {boundary} boundary (or an emergency)"
                ),
                t.mark_deferred,
            )));
        }
        let hist = rp.history.get(sel).map(Vec::as_slice).unwrap_or(&[]);
        if hist.is_empty() {
            lines.push(Line::from(Span::styled("changes: none", t.dim)));
        } else {
            lines.push(section("changes"));
            for (j, c) in hist.iter().enumerate() {
                // Changes after the cursor are still to come: dimmed.
                let st = if c.request <= cursor { t.base } else { t.dim };
                lines.push(Line::from(Span::styled(
                    format!(
                        "  r{:<4} {}→{}  {} ({})",
                        c.request, c.from, c.to, c.reason, c.applied
                    ),
                    st,
                )));
                // A thrash says which change it undid and how soon, so the count can be read;
                // on a line of its own, so a narrow or clipped pane still shows it whole.
                if let (true, Some(prev)) = (c.thrash, j.checked_sub(1).and_then(|p| hist.get(p))) {
                    lines.push(Line::from(Span::styled(
                        format!(
                            "        ! thrash: undoes r{}'s {}→{} ({}, {}), {} requests on",
                            prev.request,
                            prev.from,
                            prev.to,
                            prev.reason,
                            prev.applied,
                            c.request - prev.request
                        ),
                        t.mark_thrash,
                    )));
                }
            }
        }
        if let Some(line) = promotion_wait(&state.on_screen.policy, hist, cursor) {
            lines.push(Line::from(Span::styled(line, t.mark_deferred)));
        }
        let runs = rp.holds_of.get(sel).map(Vec::as_slice).unwrap_or(&[]);
        if !runs.is_empty() {
            // One per held request (what the `hold` counter counts), listed as runs.
            let held: usize = runs.iter().map(|&(a, b)| b - a + 1).sum();
            let listed: Vec<String> = runs
                .iter()
                .take(HOLDS_LISTED)
                .map(|&(a, b)| {
                    if a == b {
                        format!("r{a}")
                    } else {
                        format!("r{a}–{b}")
                    }
                })
                .collect();
            let more = if runs.len() > HOLDS_LISTED {
                format!(" … (+{} runs)", runs.len() - HOLDS_LISTED)
            } else {
                String::new()
            };
            lines.push(Line::from(Span::styled(
                format!(
                    "held at floor {} on {} request{}: {}{more}",
                    ep.floor,
                    held,
                    if held == 1 { "" } else { "s" },
                    listed.join(" ")
                ),
                t.mark_hold,
            )));
        }
        let tails = rp.tail_only.get(sel).map(Vec::as_slice).unwrap_or(&[]);
        if !tails.is_empty() {
            lines.push(section("tail only (the head not in the context)"));
            for s in tails {
                let st = if s.first <= cursor { t.base } else { t.dim };
                let span = if s.first == s.last {
                    format!("r{}", s.first)
                } else {
                    format!("r{}–{}", s.first, s.last)
                };
                lines.push(Line::from(Span::styled(
                    format!(
                        "  {span:<8} {}",
                        s.by.describe(s.hidden, s.chunks, s.hidden_tokens)
                    ),
                    st,
                )));
            }
        }
    }
    if !(ep.class_reasons.is_empty() && ep.floor_reasons.is_empty() && ep.pins.is_empty()) {
        lines.push(section("why"));
    }
    for r in ep.class_reasons.iter().chain(&ep.floor_reasons) {
        lines.push(Line::from(Span::styled(format!("  · {r}"), t.dim)));
    }
    for (reason, text) in &ep.pins {
        lines.push(Line::from(vec![
            Span::styled("  pin ", t.warn),
            Span::styled(format!("({reason}) "), t.dim),
            Span::styled(text.as_str(), t.base),
        ]));
    }
    for n in &ep.tier_notes {
        lines.push(Line::from(Span::styled(format!("  · {n}"), t.dim)));
    }
    if !ep.children.is_empty() {
        let how = if ep.children.len() == 1 {
            "Enter opens it"
        } else {
            "Enter lists them"
        };
        lines.push(section("sub-agent sessions"));
        lines.push(Line::from(Span::styled(format!("  ({how})"), t.dim)));
        for c in &ep.children {
            let req = c
                .requests
                .map_or(" (not in this recording)".to_owned(), |n| {
                    format!(" ({n} requests)")
                });
            lines.push(Line::from(vec![
                Span::styled(format!("  {}", c.title), t.base),
                Span::styled(format!("{req} {}", c.id), t.dim),
            ]));
        }
    }
    if let Some(tier) = shown {
        let active = replay.is_some_and(|r| r.grid.state(sel, cursor) == cell::ACTIVE);
        let label = if Some(tier) == applied {
            "applied at the cursor; [ ] other tiers"
        } else if active && tier == Tier::Full {
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
                for l in &tt.lines {
                    lines.push(Line::from(highlight(
                        l,
                        needle.as_deref(),
                        t.base,
                        t.search_match,
                    )));
                }
            }
            None => lines.push(Line::from(Span::styled(
                format!("no {tier} representation (see the notes above)"),
                t.dim,
            ))),
        }
    }
    lines
}

/// Why a demoted episode is not promoted yet: its last change up to the cursor was a demotion
/// no longer ago than the policy's wait before a promotion (its hysteresis in time, as its kind
/// says: `promote_after` for the pressure driver).
fn promotion_wait(
    policy: &tierscope_engine::policy::Policy,
    hist: &[crate::tui::view_model::ChangeRow],
    cursor: usize,
) -> Option<String> {
    let tierscope_engine::policy::PromotionWait {
        requests: wait,
        knob,
    } = policy.promotion_wait()?;
    let last = hist.iter().rev().find(|c| c.request <= cursor)?;
    let since = cursor - last.request;
    (last.to > last.from && wait > 0 && since <= wait).then(|| {
        format!(
            "no promotion before r{}: demoted at r{} ({} requests ago), {knob} {wait}",
            last.request + wait + 1,
            last.request,
            since
        )
    })
}
