//! Whole-screen states (too small, loading, failed), the one-line text field, the list of an
//! episode's sub-agent sessions and the yes / no question.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::{centered, layout, pane_block};
use crate::tui::app::{Confirm, Input, InputPurpose, State};
use crate::tui::theme::Theme;

const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];

pub fn too_small(f: &mut Frame, area: Rect, t: &Theme) {
    let lines = vec![
        Line::from(Span::styled("terminal too small", t.warn)),
        Line::from(Span::styled(
            format!(
                "{}×{}, need {}×{}",
                area.width,
                area.height,
                layout::MIN_WIDTH,
                layout::MIN_HEIGHT
            ),
            t.dim,
        )),
        Line::from(Span::styled("q quits", t.dim)),
    ];
    let h = (lines.len() as u16).min(area.height);
    let y = area.y + area.height.saturating_sub(h) / 2;
    f.render_widget(
        Paragraph::new(lines).centered().wrap(Wrap { trim: true }),
        Rect::new(area.x, y, area.width, h),
    );
}

pub fn loading(state: &State, f: &mut Frame, area: Rect, what: &str) {
    let t = &state.theme;
    let spin = SPINNER[state.spinner % SPINNER.len()];
    let lines = vec![
        Line::from(Span::styled("tierscope", t.title_focus)),
        Line::raw(""),
        Line::from(vec![
            Span::styled(format!("{spin} "), t.key),
            Span::styled(what.to_owned(), t.base),
        ]),
        Line::from(Span::styled(state.source.clone(), t.dim)),
    ];
    let rect = centered(area, area.width.min(100), 4);
    f.render_widget(
        Paragraph::new(lines).centered().wrap(Wrap { trim: true }),
        rect,
    );
}

pub fn failed(state: &State, f: &mut Frame, area: Rect, e: &str) {
    let t = &state.theme;
    let rect = centered(area, area.width.saturating_sub(4).min(100), 8);
    f.render_widget(
        Paragraph::new(vec![
            Line::from(Span::styled(crate::tui::safe_line(e), t.error)),
            Line::raw(""),
            Line::from(Span::styled("q quits", t.dim)),
        ])
        .wrap(Wrap { trim: true })
        .block(pane_block(" Cannot show the session ", true, t)),
        rect,
    );
}

pub fn input(state: &State, f: &mut Frame, area: Rect, input: &Input) {
    let t = &state.theme;
    let label = match input.purpose {
        InputPurpose::Search => "search episodes: ".to_owned(),
        InputPurpose::Goto => "go to request or episode: ".to_owned(),
        InputPurpose::KnobValue => {
            let name = state
                .knobs
                .panel
                .and_then(|sel| state.on_screen.policy.specs.get(sel.wrapping_sub(1)))
                .map(|s| s.name.clone())
                .unwrap_or_default();
            format!("{name} = ")
        }
        InputPurpose::Budget => "budget (tokens) = ".to_owned(),
        InputPurpose::SavePath => "save policy as: ".to_owned(),
    };
    let w = area.width.saturating_sub(4).min(80);
    let mut lines = vec![Line::from(vec![
        Span::styled(label, t.dim),
        Span::styled(crate::tui::safe_line(&input.text), t.key),
        Span::styled("▏", t.key),
    ])];
    if let Some(e) = &input.error {
        lines.push(Line::from(Span::styled(crate::tui::safe_line(e), t.error)));
    }
    // The field and its error wrap inside the borders: the box grows to hold them (a refused
    // value's reason is read whole, never cut at the border).
    let para = Paragraph::new(lines).wrap(Wrap { trim: false });
    let h = (para.line_count(w.saturating_sub(2)) as u16 + 2).min(area.height.saturating_sub(2));
    let rect = Rect::new(
        area.x + (area.width.saturating_sub(w)) / 2,
        area.bottom().saturating_sub(h + 2),
        w,
        h.min(area.height),
    );
    crate::tui::ui::clear(f, rect, t.base);
    let title = match input.purpose {
        InputPurpose::Search => {
            let n = state.main.search.hits.len();
            format!(" {n} match · Enter keeps, C-u clears, Esc cancels ")
        }
        InputPurpose::Goto => " 42, r42 or E3 · Enter goes, Esc cancels ".to_owned(),
        _ => " Enter accepts, C-u clears, Esc cancels ".to_owned(),
    };
    f.render_widget(para.block(pane_block(title, true, t)), rect);
}

/// The selected episode's sub-agent sessions, to open one.
pub fn children(state: &State, f: &mut Frame, area: Rect, selected: usize) {
    let t = &state.theme;
    let Some(ep) = state
        .session
        .as_ref()
        .and_then(|s| s.model.episodes.get(state.main.selected))
    else {
        return;
    };
    let rect = centered(
        area,
        area.width.saturating_sub(4).min(90),
        ep.children.len() as u16 + 2,
    );
    crate::tui::ui::clear(f, rect, t.base);
    let inner_w = usize::from(rect.width.saturating_sub(2));
    let lines: Vec<Line> = ep
        .children
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let st = if i == selected { t.selection } else { t.base };
            let req = c
                .requests
                .map_or("not in this recording".to_owned(), |n| format!("{n} req"));
            let text = format!(" {} · {req} · {}", c.title, c.id);
            Line::from(Span::styled(
                tierscope_engine::text::clip_chars(&text, inner_w),
                st,
            ))
        })
        .collect();
    let title = format!(
        " {} spawned {} sub-agents (Enter opens, Esc closes) ",
        ep.id,
        ep.children.len()
    );
    f.render_widget(
        Paragraph::new(lines).block(pane_block(title, true, t)),
        rect,
    );
}

/// A yes / no question over the screen.
pub fn confirm(state: &State, f: &mut Frame, area: Rect, c: &Confirm) {
    let t = &state.theme;
    let (title, body, keys) = match c {
        Confirm::Quit => (
            " Quit? ",
            "The knobs were changed and not saved; quitting loses them.".to_owned(),
            "y quit · w save first · n / Esc stay",
        ),
        Confirm::Overwrite { path, .. } => (
            " Overwrite? ",
            format!("{} exists.", crate::tui::safe_line(path)),
            "y overwrite · n / Esc keep it",
        ),
    };
    let w = area.width.saturating_sub(4).min(70);
    let para = Paragraph::new(vec![
        Line::from(Span::styled(body, t.base)),
        Line::raw(""),
        Line::from(Span::styled(keys, t.key)),
    ])
    .wrap(Wrap { trim: true });
    // As tall as its wrapped text (a long path stays whole).
    let h = para.line_count(w.saturating_sub(2)) as u16 + 2;
    let rect = centered(area, w, h);
    crate::tui::ui::clear(f, rect, t.base);
    f.render_widget(para.block(pane_block(title, true, t)), rect);
}
