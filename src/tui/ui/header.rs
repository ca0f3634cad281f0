//! The header line: session, policy (for `opencode`, the trigger that ran and where it compacted)
//! and its key knobs, budget (and where it came from: set, the session's or the model's limit, or
//! assumed), assumed prices, the request cursor and its time.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{clock, thousands};
use crate::tui::app::State;
use crate::tui::main::speed_label;
use tierscope_engine::policy::PolicyKind;

/// The knobs worth a place in the header for a policy: those overridden, then the kind's main ones.
pub fn key_knobs(state: &State) -> Vec<String> {
    let p = &state.schedule.policy;
    let mut names: Vec<&str> = p.overridden.iter().map(String::as_str).collect();
    let main: &[&str] = match p.kind {
        PolicyKind::Progressive if p.choice("driver") == "age" => {
            &["dense_after", "compact_after", "anchor_after"]
        }
        PolicyKind::Progressive => &["demote_at", "target", "promote_at", "min_dwell"],
        PolicyKind::Decay => &["h50", "d", "respect_floors"],
        PolicyKind::Flat => &["trigger"],
        _ => &["boundary"],
    };
    for m in main {
        if !names.contains(m) && p.knobs.contains_key(*m) {
            names.push(m);
        }
    }
    names
        .iter()
        .take(5)
        .filter_map(|n| p.knobs.get(*n).map(|v| format!("{n}={v}")))
        .collect()
}

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let sep = || Span::styled(" │ ", t.header);
    // Most important first: the line is cut at the right edge on narrow terminals.
    let mut spans = vec![Span::styled(" tierscope", t.header), sep()];
    let n = state.requests();
    let cursor = state.main.cursor;
    let time = state
        .session
        .as_ref()
        .and_then(|s| s.model.requests.get(cursor))
        .map(|r| clock(r.time))
        .unwrap_or_default();
    let at = if n == 0 && state.session.is_some() {
        "no requests yet".to_owned()
    } else {
        format!("t {} / {} {time}", cursor, n.saturating_sub(1))
    };
    spans.push(Span::styled(at, t.header));
    if state.main.playing {
        let speed = speed_label(state.main.speed);
        spans.push(Span::styled(format!(" ▶ {speed}"), t.header));
    }
    if state.schedule.pending {
        spans.push(Span::styled(" replaying…", t.header));
    }
    spans.push(sep());
    spans.push(Span::styled(
        format!("policy {}", state.schedule.policy.name),
        t.header,
    ));
    // `opencode`: which trigger ran (with `auto`, the budget decides) and where it compacted,
    // before the knobs: it says what the replay on screen is.
    if let Some(c) = state
        .schedule
        .replay
        .as_deref()
        .and_then(|r| r.compaction.as_deref())
    {
        let text = format!(" [{c}]");
        let used: usize = spans.iter().map(|s| s.width()).sum();
        if used + text.chars().count() + 30 <= usize::from(area.width) {
            spans.push(Span::styled(text, t.header));
        }
    }
    // The key knobs go only where the title still fits after them (the knobs panel shows all).
    let title_w = state
        .session
        .as_ref()
        .map_or(0, |s| s.model.title.chars().count().min(40));
    let used: usize = spans.iter().map(|s| s.width()).sum::<usize>() + 30 + title_w;
    let mut knobs = key_knobs(state);
    while !knobs.is_empty() {
        let text = format!(" ({})", knobs.join(" "));
        if used + text.chars().count() <= usize::from(area.width) {
            spans.push(Span::styled(text, t.header));
            break;
        }
        knobs.pop();
    }
    let b = state.schedule.effective_budget();
    let replay = state.schedule.replay.as_deref();
    let src = match (&state.schedule.budget, replay) {
        (Some(_), _) => "set",
        (None, Some(r)) => r.budget_origin(),
        (None, None) => "…",
    };
    // From here on nothing is cut mid-word: the budget shows whole or not at all, the titles
    // are clipped with "…".
    let width = usize::from(area.width);
    let used = |spans: &[Span]| spans.iter().map(|s| s.width()).sum::<usize>();
    let budget = [
        format!("budget {} ({src})", thousands(b)),
        format!("budget {}", thousands(b)),
    ]
    .into_iter()
    .find(|b| used(&spans) + 3 + b.chars().count() <= width);
    if let Some(budget) = budget {
        spans.push(sep());
        let st = if src == "assumed" { t.warn } else { t.header };
        spans.push(Span::styled(budget, st));
    }
    // Prices the pricing table does not know are an assumption: say so (the CLI does too).
    if replay.is_some_and(|r| r.pricing_note.is_some()) {
        let text = "prices assumed (model not in the table)";
        let short = "prices assumed";
        if let Some(p) = [text, short]
            .into_iter()
            .find(|p| used(&spans) + 3 + p.chars().count() + 10 <= width)
        {
            spans.push(sep());
            spans.push(Span::styled(p, t.warn));
        }
    }
    let room = width.saturating_sub(used(&spans) + 3);
    // Inside a sub-agent: the parents' titles first, shortened to "… › " before the shown
    // session's own title is.
    let own = state
        .session
        .as_ref()
        .map_or(String::new(), |s| s.model.title.clone());
    let parents: String = state
        .main
        .stack
        .iter()
        .map(|c| format!("{} › ", c.title))
        .collect();
    let title = if parents.chars().count() + own.chars().count() <= room || parents.is_empty() {
        parents + &own
    } else {
        format!("… › {own}")
    };
    if !title.is_empty() && room >= 8 {
        spans.push(sep());
        spans.push(Span::styled(
            tierscope_engine::text::clip_chars(&title, room),
            t.header,
        ));
    }
    let line = Line::from(spans).style(t.header);
    f.render_widget(Paragraph::new(line).style(t.header), area);
}
