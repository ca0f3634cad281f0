//! Views: pure functions of the [`State`] that draw into a frame and report what `update` needs of
//! it ([`Geometry`]: page sizes, scroll limits, where the panes are). They only read; every text
//! they show was prepared (and made safe) before it reached the state, and the heavy numbers come
//! precomputed in the view-models, so a frame costs a slice walk per pane.

pub mod help;
pub mod screens;
pub mod status;

use ratatui::layout::{Margin, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, BorderType, Borders, Scrollbar, ScrollbarOrientation, ScrollbarState,
};
use ratatui::Frame;

use crate::tui::app::{Overlay, Screen, State};
use crate::tui::geometry::{Geometry, Scroll};
use crate::tui::main::view::{self as main_view, layout};
use crate::tui::theme::Theme;

/// Draws the whole screen and reports its [`Geometry`] (what `update` needs of this frame).
pub fn view(state: &State, f: &mut Frame) -> Geometry {
    let area = f.area();
    let t = &state.theme;
    f.buffer_mut().set_style(area, t.base);
    let mut g = Geometry::default();
    match &state.screen {
        Screen::Main => {
            let r = layout::main_rects(area, state);
            if r.too_small {
                screens::too_small(f, area, t);
                return g;
            }
            if !state.panels.cover_main() {
                g.main = main_view::render(state, f, &r);
            }
            if let Some(s) = crate::tui::panels::render(state, f, area) {
                g.panel_text = s;
            }
        }
        Screen::Picker => g.picker_rows = crate::tui::picker::view::render(state, f, area),
        Screen::Loading(what) => screens::loading(state, f, area, what),
        Screen::Failed(e) => screens::failed(state, f, area, e),
    }
    if area.width < layout::MIN_WIDTH.min(40) || area.height < 5 {
        return g;
    }
    if state.knobs.panel.is_some() {
        crate::tui::knobs::view::render(state, f, area);
    }
    if let Some(sel) = state.knobs.policies {
        crate::tui::knobs::view::render_policies(state, f, area, sel);
    }
    if let Some(sel) = state.main.children {
        screens::children(state, f, area, sel);
    }
    match &state.overlay {
        Overlay::None => {}
        Overlay::Help(h) => (g.help, g.help_top) = help::render(state, f, area, *h),
        Overlay::Confirm(c) => screens::confirm(state, f, area, c),
    }
    if let Some(input) = &state.input {
        screens::input(state, f, area, input);
    }
    g
}

/// A bordered pane with a title; the focused one has a thick border and the focus colours (the
/// border's shape tells focus apart without colour).
pub fn pane_block<'a>(title: impl Into<Line<'a>>, focused: bool, t: &Theme) -> Block<'a> {
    let (b, ts, kind) = if focused {
        (t.border_focus, t.title_focus, BorderType::Thick)
    } else {
        (t.border, t.title, BorderType::Plain)
    };
    Block::new()
        .borders(Borders::ALL)
        .border_type(kind)
        .border_style(b)
        .title(title.into().style(ts))
}

/// A top-rule-only block for the heatmap and the chart (they need every column); thick when
/// focused.
pub fn rule_block<'a>(title: Line<'a>, focused: bool, t: &Theme) -> Block<'a> {
    let (b, ts, kind) = if focused {
        (t.border_focus, t.title_focus, BorderType::Thick)
    } else {
        (t.border, t.title, BorderType::Plain)
    };
    Block::new()
        .borders(Borders::TOP)
        .border_type(kind)
        .border_style(b)
        .title(title.style(ts))
}

/// `▲ 3 · ▼ 12`: how many rows a scrolled view hides above and below (empty when none).
pub fn hidden_rows(top: usize, s: Scroll) -> String {
    let below = s.max.saturating_sub(top.min(s.max));
    match (top.min(s.max), below) {
        (0, 0) => String::new(),
        (0, b) => format!(" ▼ {b} more "),
        (a, 0) => format!(" ▲ {a} more "),
        (a, b) => format!(" ▲ {a} · ▼ {b} more "),
    }
}

/// Scroll marks of a bordered pane: a scrollbar in its right border when it scrolls.
pub fn scrollbar(f: &mut Frame, area: Rect, top: usize, s: Scroll, t: &Theme) {
    if s.max == 0 || area.height < 4 {
        return;
    }
    let mut st = ScrollbarState::new(s.max + 1)
        .position(top.min(s.max))
        .viewport_content_length(s.page);
    let bar = Scrollbar::new(ScrollbarOrientation::VerticalRight)
        .begin_symbol(Some("▲"))
        .end_symbol(Some("▼"))
        .track_symbol(Some("│"))
        .thumb_symbol("█")
        .style(t.border);
    f.render_stateful_widget(
        bar,
        area.inner(Margin {
            vertical: 1,
            horizontal: 0,
        }),
        &mut st,
    );
}

/// `text` split into spans with every case-insensitive occurrence of `needle` (lower-cased) in
/// `hit`, the rest in `base`.
pub fn highlight<'a>(text: &str, needle: Option<&str>, base: Style, hit: Style) -> Vec<Span<'a>> {
    let Some(needle) = needle.filter(|n| !n.is_empty()) else {
        return vec![Span::styled(text.to_owned(), base)];
    };
    // Fold char by char (one char to one char) so a match in the folded text is a match of as
    // many chars in `text`; `match_indices` finds them in linear time.
    let fold = |c: char| c.to_lowercase().next().unwrap_or(c);
    let pat: String = needle.chars().map(fold).collect();
    let pat_chars = pat.chars().count();
    let hay: Vec<char> = text.chars().collect();
    let mut folded = String::with_capacity(text.len());
    // Where each char starts in `folded` (ascending: a match's char index by binary search).
    let mut starts = Vec::with_capacity(hay.len());
    for c in &hay {
        starts.push(folded.len());
        folded.push(fold(*c));
    }
    let mut out = Vec::new();
    let mut start = 0;
    for (byte, _) in folded.match_indices(pat.as_str()) {
        let Ok(i) = starts.binary_search(&byte) else {
            continue;
        };
        if start < i {
            out.push(Span::styled(hay[start..i].iter().collect::<String>(), base));
        }
        out.push(Span::styled(
            hay[i..i + pat_chars].iter().collect::<String>(),
            hit,
        ));
        start = i + pat_chars;
    }
    if start < hay.len() || out.is_empty() {
        out.push(Span::styled(hay[start..].iter().collect::<String>(), base));
    }
    out
}

/// 1234567 → "1,234,567".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rectangle of at most `w`×`h` centred in `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// `key label` pairs as status-bar spans.
pub fn key_spans<'a>(pairs: &[(String, &'a str)], key: Style, text: Style) -> Vec<Span<'a>> {
    let mut v = Vec::new();
    for (k, d) in pairs {
        v.push(Span::styled(format!(" {k}"), key));
        v.push(Span::styled(format!(" {d} "), text));
    }
    v
}

/// The hints of `pairs` that fit in `width` cells as [`key_spans`] draws them: a hint is shown
/// whole or not at all, and the rightmost ones go first, except `help` (it lists every key),
/// `quit` / `close` (the way out) and the main screen's `knobs` and `diff` (what the explorer
/// is for: they stay at 80 columns).
pub fn fit_hints<'a>(pairs: &[(String, &'a str)], width: usize) -> Vec<(String, &'a str)> {
    use unicode_width::UnicodeWidthStr;
    let cost = |(k, d): &(String, &str)| k.width() + d.width() + 3;
    let keep = |d: &str| matches!(d, "help" | "quit" | "close" | "knobs" | "diff");
    let mut shown: Vec<(String, &'a str)> = pairs.to_vec();
    while shown.iter().map(cost).sum::<usize>() > width {
        match shown.iter().rposition(|(_, d)| !keep(d)) {
            Some(i) => {
                shown.remove(i);
            }
            None => break,
        }
    }
    shown
}

/// Groups of spans joined by `sep`, each shown whole or not at all: in order, a group that does
/// not fit in what is left of `width` is left out and the next (often shorter) one tried. For
/// lines whose parts are each meaningful alone (the metrics strip, the header).
pub fn fit_groups<'a>(groups: Vec<Vec<Span<'a>>>, sep: Span<'a>, width: usize) -> Vec<Span<'a>> {
    let mut out: Vec<Span<'a>> = Vec::new();
    let mut used = 0usize;
    for g in groups.into_iter().filter(|g| !g.is_empty()) {
        let sep_w = if out.is_empty() { 0 } else { sep.width() };
        let w: usize = g.iter().map(Span::width).sum();
        if used + sep_w + w > width {
            continue;
        }
        if !out.is_empty() {
            out.push(sep.clone());
        }
        out.extend(g);
        used += sep_w + w;
    }
    out
}

/// Local time of a unix-ms timestamp as `HH:MM:SS` (UTC, so output does not depend on the
/// machine).
pub fn clock(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%H:%M:%S").to_string())
        .unwrap_or_else(|| "--:--:--".to_owned())
}

pub fn date(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| "-".to_owned())
}

/// Clears `area` for an overlay and paints it in the theme's base style (its background too:
/// a theme that sets one, such as `light`, stays readable on a dark terminal).
pub fn clear(f: &mut Frame, area: Rect, base: Style) {
    f.render_widget(ratatui::widgets::Clear, area);
    f.buffer_mut().set_style(area, base);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_are_highlighted_case_insensitively() {
        let (b, h) = (Style::default(), Style::default().bold());
        let spans = highlight("Fix the Parser, parse", Some("pars"), b, h);
        let parts: Vec<(&str, bool)> = spans
            .iter()
            .map(|s| (s.content.as_ref(), s.style == h))
            .collect();
        assert_eq!(
            parts,
            [
                ("Fix the ", false),
                ("Pars", true),
                ("er, ", false),
                ("pars", true),
                ("e", false)
            ]
        );
        assert_eq!(highlight("abc", None, b, h).len(), 1);
        assert_eq!(hidden_rows(0, Scroll::of(10, 4)), " ▼ 6 more ".to_owned());
        assert_eq!(hidden_rows(6, Scroll::of(10, 4)), " ▲ 6 more ");
        assert_eq!(hidden_rows(0, Scroll::of(3, 4)), "");
    }

    #[test]
    fn hints_are_dropped_whole_from_the_right_keeping_help_and_quit() {
        let pairs: Vec<(String, &str)> =
            [("→", "step"), ("x", "next"), ("?", "help"), ("q", "quit")]
                .iter()
                .map(|(k, d)| (k.to_string(), *d))
                .collect();
        // " → step " is 8 cells, " x next " 8, " ? help " 8, " q quit " 8.
        assert_eq!(fit_hints(&pairs, 32).len(), 4);
        let fit: Vec<&str> = fit_hints(&pairs, 31).iter().map(|p| p.1).collect();
        assert_eq!(fit, ["step", "help", "quit"]);
        let fit: Vec<&str> = fit_hints(&pairs, 5).iter().map(|p| p.1).collect();
        assert_eq!(fit, ["help", "quit"]);
        // The main screen's knobs and diff stay too (they stay at 80 columns).
        let pairs: Vec<(String, &str)> = [("→", "step"), ("K", "knobs"), ("d", "diff")]
            .iter()
            .map(|(k, d)| (k.to_string(), *d))
            .collect();
        let fit: Vec<&str> = fit_hints(&pairs, 12).iter().map(|p| p.1).collect();
        assert_eq!(fit, ["knobs", "diff"]);
    }

    #[test]
    fn groups_are_shown_whole_or_left_out() {
        let g = |s: &'static str| vec![Span::raw(s)];
        let text = |v: Vec<Span>| v.iter().map(|s| s.content.to_string()).collect::<String>();
        let groups = || vec![g("aaaa"), g("bbbbbbbb"), g("cc")];
        assert_eq!(
            text(fit_groups(groups(), Span::raw("|"), 20)),
            "aaaa|bbbbbbbb|cc"
        );
        // "bbbbbbbb" would be cut: it is left out and "cc" still fits.
        assert_eq!(text(fit_groups(groups(), Span::raw("|"), 10)), "aaaa|cc");
        assert_eq!(text(fit_groups(groups(), Span::raw("|"), 3)), "cc");
    }
}
