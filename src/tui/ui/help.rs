//! The help overlay: every binding of every mode, from the keymap itself, descriptions wrapped
//! under their column so nothing is cut. It opens at the section of where the user is and
//! reports its scroll limits and the row at its top.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{centered, hidden_rows, pane_block, scrollbar};
use crate::tui::app::{HelpView, State};
use crate::tui::geometry::Scroll;
use crate::tui::keymap::{bindings, keys_label, Mode};

/// The sections of the shell and the main screen, in order; every registered pane's follow
/// ([`crate::tui::panels::modes`]).
const MODES: [Mode; 8] = [
    Mode::Main,
    Mode::SubAgents,
    Mode::Knobs,
    Mode::PolicyPick,
    Mode::Picker,
    Mode::Input,
    Mode::Help,
    Mode::Confirm,
];

/// Every section, in order.
fn all_modes() -> impl Iterator<Item = Mode> {
    MODES.into_iter().chain(crate::tui::panels::modes())
}

/// Width of the key column.
const KEYS_W: usize = 18;

/// Every figure and mark the explorer shows, in its words (the "Figures" section, after the
/// main screen's keys).
pub const FIGURES: &[(&str, &str)] = &[
    ("r12", "request 12 (the first is r0); r12/671 in the header: the cursor and the last request"),
    ("E3", "episode 3: a unit of the conversation the schedule shows at a tier"),
    ("tiers", "full > dense > compact > anchor > dropped: how much of an episode's text the context holds; ◆ active: the episode being written, as it stands; ▐ tail only: its head is no longer in the context"),
    ("dem tgt pro dwell", "the header's knobs on a narrow terminal: demote_at, target, promote_at, min_dwell (bnd boundary, cmpct compact_after, anchr anchor_after, trig trigger); K lists every knob"),
    ("cmpct anchr drop", "tiers abbreviated in a narrow episode table: compact, anchor, dropped"),
    ("floor", "the lowest tier an episode may be shown at (a pin or its class sets it)"),
    ("budget", "tokens the rendered context may use: set (--budget or K), the session's or the model's limit, or assumed"),
    ("tok 12k/9k 133%", "the rendered context at the cursor over the budget; the gauge and the percentage are the pressure (tokens ÷ budget)"),
    ("kept", "tokens of the prompt prefix unchanged since the previous request (the provider can read them from its cache)"),
    ("redo", "tokens after that prefix, processed again (the context pane's ↯ line marks where)"),
    ("cache read, write", "tokens read from and written to the provider's cache at the cursor"),
    ("$, so far", "the request's cost and the run's up to the cursor, at the prices the costs use (the header says when they are assumed and which they are)"),
    ("chg", "tier changes applied (▼ demotion, ▲ promotion in the heatmap)"),
    ("wait", "(episode, request) pairs whose change waits for a boundary or min_dwell: … in the heatmap"),
    ("hold", "(episode, request) pairs held at their floor although pressure wanted them lower: ⊥ in the heatmap"),
    ("thrash", "changes that reverse the same episode's previous change within thrash_window requests: ! in the heatmap"),
    ("emerg", "emergencies: changes applied off schedule (between boundaries or inside min_dwell) because the context would overflow the budget"),
    ("over", "requests whose context went over the budget"),
    ("run", "the metrics strip's second line: totals over the whole run (the first line is the request at the cursor)"),
    ("ep·req", "the unit of hold and wait: (episode, request) pairs, one per episode per request (the run's other units: changes, req = requests)"),
    ("3→5", "a total before the last edits (the baseline the strip names, with its budget) → now"),
    ("viol f/p", "floor and pin violations at the cursor (a tier below an episode's floor, a pinned text not shown)"),
    ("probes ok/due", "planted needles still in the context / needles due by the cursor"),
    ("▆ tokens • rec.", "chart: the replayed context's tokens as bars, the recorded prompt as dots; the lines are the budget and the policy's thresholds (demote_at, target, promote_at), each labelled at the left"),
    ("dem+", "chart: a line's label sharing its row with another line (a narrow label column: dem demote_at, pro promote_at, tgt target)"),
    ("▲↑ off scale", "chart: a value above the chart's top (the budget band); the title says how far it goes"),
    ("↯", "a cache break: the prompt changed before its end, so the provider reprocesses from there (the context pane's ↯ line: kept / redo)"),
    ("div. cost vs full", "sweep: Σ redo tokens above those of the full policy on the same trace, and their price"),
    ("* Pareto", "sweep: no other point is better; a point with no request over the budget beats any that has one, then lower cost, thrash and overflow and higher probe survival"),
    ("⚠ unmeetable", "no schedule keeps to the budget: the system chunk alone (which no tier shrinks) is over it, or every request is"),
];

/// (keys, description) rows of a section, the extra rows (mouse, typing) included.
fn entries(state: &State, m: Mode) -> Vec<(String, &'static str)> {
    // Backspace reaches the session picker only when there is one (not with `--session` or an
    // export file, which open one session directly).
    let picker = state.picker.sessions.len() > 1;
    let mut v: Vec<(String, &'static str)> = bindings()
        .filter(|b| b.mode == m)
        .map(|b| {
            let desc = match b.action {
                crate::tui::keymap::Action::Back if m == Mode::Main && picker => {
                    "back to the parent session, else to the session picker"
                }
                _ => b.desc,
            };
            (keys_label(b), desc)
        })
        .collect();
    match m {
        Mode::Main => v.extend([(
            "C-z".to_owned(),
            "suspend to the shell, in any mode, under a shell with job control; fg comes back and redraws (as less and vim do)",
        ), (
            "mouse".to_owned(),
            "click a heatmap cell or a row to select it and focus its pane, the chart to move the cursor; the wheel scrolls the pane under it (over the heatmap: its rows, else the cursor)",
        )]),
        Mode::Picker => v.push((
            "any text".to_owned(),
            "filters by title, directory or id",
        )),
        _ => {}
    }
    v
}

/// `text` in lines of at most `width` chars, broken at spaces (a longer word is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut out = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let n = line.chars().count();
        if n > 0 && n + 1 + word.chars().count() > width {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        while line.chars().count() > width {
            let head: String = line.chars().take(width).collect();
            line = line.chars().skip(width).collect();
            out.push(head);
        }
    }
    if !line.is_empty() || out.is_empty() {
        out.push(line);
    }
    out
}

/// Every line of the help text for an overlay `width` wide (borders included), and the row
/// where each section starts.
pub fn lines(state: &State, width: u16) -> (Vec<Line<'static>>, Vec<(Mode, usize)>) {
    let t = &state.theme;
    let desc_w = usize::from(width.saturating_sub(2)).saturating_sub(KEYS_W + 2);
    let mut out = Vec::new();
    let mut sections = Vec::new();
    for (i, m) in all_modes().enumerate() {
        if i > 0 {
            out.push(Line::raw(""));
        }
        if i == 1 {
            // After the main screen's keys: what its figures mean.
            out.push(Line::from(Span::styled(
                "Figures on screen".to_owned(),
                t.title_focus,
            )));
            for (fig, desc) in FIGURES {
                for (j, part) in wrap(desc, desc_w).into_iter().enumerate() {
                    let k = if j == 0 { *fig } else { "" };
                    out.push(Line::from(vec![
                        Span::styled(format!("  {k:<KEYS_W$}"), t.key),
                        Span::styled(part, t.base),
                    ]));
                }
            }
            out.push(Line::raw(""));
        }
        sections.push((m, out.len()));
        out.push(Line::from(Span::styled(
            m.title().to_owned(),
            t.title_focus,
        )));
        for (keys, desc) in entries(state, m) {
            for (j, part) in wrap(desc, desc_w).into_iter().enumerate() {
                let k = if j == 0 { keys.as_str() } else { "" };
                out.push(Line::from(vec![
                    Span::styled(format!("  {k:<KEYS_W$}"), t.key),
                    Span::styled(part, t.base),
                ]));
            }
        }
    }
    (out, sections)
}

/// The overlay's rectangle in `area` for `n` lines of help.
fn rect(area: Rect, n: usize) -> Rect {
    let h = (n as u16 + 2).min(area.height.saturating_sub(2)).max(3);
    centered(area, 96, h)
}

pub fn render(state: &State, f: &mut Frame, area: Rect, h: HelpView) -> (Scroll, usize) {
    let t = &state.theme;
    let width = centered(area, 96, area.height).width;
    let (all, sections) = lines(state, width);
    let rect = rect(area, all.len());
    let page = usize::from(rect.height.saturating_sub(2));
    let scroll = Scroll::of(all.len(), page);
    let top = match h.section {
        Some(m) => sections
            .iter()
            .find(|(s, _)| *s == m)
            .map_or(0, |(_, row)| *row),
        None => h.top,
    }
    .min(scroll.max);
    let shown: Vec<Line> = all.into_iter().skip(top).take(page).collect();
    crate::tui::ui::clear(f, rect, t.base);
    let block = pane_block(
        " Help: every key (↑/↓ PgUp/PgDn scroll, Esc close) ",
        true,
        t,
    )
    .title_bottom(Line::from(Span::styled(hidden_rows(top, scroll), t.dim)).right_aligned());
    f.render_widget(Paragraph::new(shown).style(t.base).block(block), rect);
    scrollbar(f, rect, top, scroll, t);
    (scroll, top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::StartOptions;
    use crate::tui::theme::Theme;

    #[test]
    fn help_lists_every_binding_whole() {
        let policy =
            tierscope_engine::policy::load("retention", &[]).unwrap_or_else(|e| panic!("{e}"));
        let state = State::new(
            Theme::default_for_env(),
            policy,
            None,
            StartOptions::default(),
        );
        // At 80 columns the descriptions wrap; joined back they are whole.
        let (lines, _) = lines(&state, 80);
        let text: Vec<String> = lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(
            text.iter().all(|l| l.chars().count() <= 78),
            "a line is cut"
        );
        let joined = text.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
        for b in bindings() {
            let keys = keys_label(b);
            assert!(
                text.iter().any(|l| l.contains(&keys)) && joined.contains(b.desc),
                "help misses {keys} ({})",
                b.desc
            );
        }
        assert!(joined.contains("the wheel scrolls the pane under it"));
        assert!(!joined.contains("S-S-Tab"));
    }

    #[test]
    fn text_wraps_at_spaces() {
        assert_eq!(wrap("aaa bbb ccc", 8), ["aaa bbb", "ccc"]);
        assert_eq!(wrap("", 8), [""]);
        assert_eq!(wrap("abcdefghij", 8), ["abcdefgh", "ij"]);
    }
}
