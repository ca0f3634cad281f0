//! The help overlay: every binding of every mode, from the keymap itself.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::{centered, pane_block};
use crate::tui::app::State;
use crate::tui::keymap::{keys_label, Mode, BINDINGS};

/// Every line of the help text (also used by tests to check every key is listed).
pub fn lines(state: &State) -> Vec<Line<'static>> {
    let t = &state.theme;
    let mut out = Vec::new();
    let modes = [
        Mode::Main,
        Mode::Knobs,
        Mode::PolicyPick,
        Mode::Picker,
        Mode::Input,
        Mode::Help,
        Mode::Diff,
        Mode::DiffKnobs,
        Mode::DiffPick,
        Mode::Sweep,
        Mode::SweepSetup,
        Mode::SweepEdit,
    ];
    for (i, m) in modes.iter().enumerate() {
        if i > 0 {
            out.push(Line::raw(""));
        }
        out.push(Line::from(Span::styled(
            m.title().to_owned(),
            t.title_focus,
        )));
        for b in BINDINGS.iter().filter(|b| b.mode == *m) {
            out.push(Line::from(vec![
                Span::styled(format!("  {:<18}", keys_label(b)), t.key),
                Span::styled(b.desc.to_owned(), t.base),
            ]));
        }
        if *m == Mode::Main {
            out.push(Line::from(vec![
                Span::styled(format!("  {:<18}", "mouse"), t.key),
                Span::styled(
                    "click a heatmap cell or a row to select, the chart to move the cursor; wheel scrolls"
                        .to_owned(),
                    t.base,
                ),
            ]));
        }
        if *m == Mode::Picker {
            out.push(Line::from(vec![
                Span::styled(format!("  {:<18}", "any text"), t.key),
                Span::styled("filters by title, directory or id".to_owned(), t.base),
            ]));
        }
    }
    out
}

/// The overlay's rectangle in `area` for `n` lines of help.
fn rect(area: Rect, n: usize) -> Rect {
    let h = (n as u16 + 2).min(area.height.saturating_sub(2)).max(3);
    centered(area, 88, h)
}

/// Lines the overlay shows at once, and the furthest it scrolls, at the state's size.
pub fn page_and_max_scroll(state: &State) -> (usize, usize) {
    let n = lines(state).len();
    let r = rect(Rect::new(0, 0, state.width, state.height), n);
    let page = usize::from(r.height.saturating_sub(2)).max(1);
    (page, n.saturating_sub(page))
}

/// The scroll that opens the overlay at `mode`'s section (the keys of where the user is).
pub fn scroll_to(state: &State, mode: Mode) -> usize {
    let title = mode.title();
    let at = lines(state)
        .iter()
        .position(|l| l.spans.first().is_some_and(|s| s.content == title))
        .unwrap_or(0);
    at.min(page_and_max_scroll(state).1)
}

pub fn render(state: &State, f: &mut Frame, area: Rect, scroll: usize) {
    let t = &state.theme;
    let all = lines(state);
    let rect = rect(area, all.len());
    let inner_h = usize::from(rect.height.saturating_sub(2));
    let scroll = scroll.min(all.len().saturating_sub(inner_h));
    let shown: Vec<Line> = all.into_iter().skip(scroll).take(inner_h).collect();
    f.render_widget(Clear, rect);
    let title = " Help: every key (↑/↓ PgUp/PgDn scroll, Esc close) ";
    f.render_widget(
        Paragraph::new(shown)
            .style(t.base)
            .block(pane_block(title, true, t)),
        rect,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::StartOptions;
    use crate::tui::theme::Theme;

    #[test]
    fn help_lists_every_binding() {
        let policy =
            tierscope_engine::policy::load("retention", &[]).unwrap_or_else(|e| panic!("{e}"));
        let state = State::new(
            Theme::default_for_env(),
            policy,
            None,
            StartOptions::default(),
        );
        let text: Vec<String> = lines(&state)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        for b in BINDINGS {
            let keys = keys_label(b);
            assert!(
                text.iter().any(|l| l.contains(&keys) && l.contains(b.desc)),
                "help misses {keys} ({})",
                b.desc
            );
        }
    }
}
