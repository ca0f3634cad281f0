//! The session picker: title, directory, updated, requests, tokens; sub-agent sessions under their
//! parents; typing filters.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;

use crate::tui::app::State;
use crate::tui::keymap::Mode;
use crate::tui::ui::{date, hidden_rows, pane_block, screens, scrollbar, status, thousands};

/// Draws the picker; returns the rows its list shows at once.
pub fn render(state: &State, f: &mut Frame, area: Rect) -> usize {
    let t = &state.theme;
    if area.width < 20 || area.height < 5 {
        screens::too_small(f, area, t);
        return 0;
    }
    let [head, filter, body, status] = area.layout(&Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ]));
    f.render_widget(
        Paragraph::new(format!(" tierscope │ {} ", state.source)).style(t.header),
        head,
    );
    let matches = state.picker.matches();
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(" filter: ", t.dim),
            Span::styled(state.picker.filter.clone(), t.key),
            Span::styled("▏", t.key),
            Span::styled(
                format!(
                    "   {} of {} sessions",
                    matches.len(),
                    state.picker.sessions.len()
                ),
                t.dim,
            ),
        ])),
        filter,
    );
    // Narrow: no id column (a cut id is no use), and directories keep their end (the project).
    let wide = body.width >= 110;
    // The agent column where there is room, and always when several agents' sessions are listed
    // together (narrow, one agent's sessions need the room for their titles).
    let agents = &state.picker.sessions;
    let show_agent = wide
        || agents
            .iter()
            .any(|s| Some(s.agent) != agents.first().map(|f| f.agent));
    let dir_w = 16usize;
    let inner_h = usize::from(body.height.saturating_sub(3));
    let sel = state.picker.selected.min(matches.len().saturating_sub(1));
    let first = sel.saturating_sub(inner_h.saturating_sub(1));
    let scroll = crate::tui::geometry::Scroll::of(matches.len(), inner_h);
    let rows: Vec<Row> = matches
        .iter()
        .enumerate()
        .skip(first)
        .take(inner_h)
        .map(|(vis, &i)| {
            let s = &state.picker.sessions[i];
            let indent = "  ".repeat(s.depth);
            let tree = if s.depth > 0 { "└ " } else { "" };
            let dir = if wide {
                s.directory.clone()
            } else {
                clip_left(&s.directory, dir_w)
            };
            let mut cells = vec![Cell::from(format!("{indent}{tree}{}", s.title))];
            if show_agent {
                cells.push(Cell::from(s.agent));
            }
            cells.extend([
                Cell::from(Span::styled(dir, t.dim)),
                Cell::from(date(s.updated)),
                Cell::from(Line::from(s.requests.to_string()).right_aligned()),
                Cell::from(Line::from(thousands(s.tokens)).right_aligned()),
            ]);
            if wide {
                cells.push(Cell::from(Span::styled(s.id.clone(), t.dim)));
            }
            let row = Row::new(cells);
            if vis == sel {
                row.style(t.selection)
            } else {
                row
            }
        })
        .collect();
    let mut widths = vec![
        Constraint::Fill(if wide { 3 } else { 1 }),
        if wide {
            Constraint::Fill(2)
        } else {
            Constraint::Length(dir_w as u16)
        },
        Constraint::Length(16),
        Constraint::Length(8),
        Constraint::Length(11),
    ];
    // Numbers are right-aligned, and so are their headers.
    let mut header = vec![
        Cell::from("title"),
        Cell::from("directory"),
        Cell::from("updated"),
        Cell::from(Line::from("requests").right_aligned()),
        Cell::from(Line::from("tokens used").right_aligned()),
    ];
    if show_agent {
        widths.insert(1, Constraint::Length(11));
        header.insert(1, Cell::from("agent"));
    }
    if wide {
        widths.push(Constraint::Fill(1));
        header.push(Cell::from("id"));
    }
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(t.title))
        .column_spacing(1)
        .block(pane_block(" Sessions ", true, t).title_bottom(
            Line::from(Span::styled(hidden_rows(first, scroll), t.dim)).right_aligned(),
        ));
    f.render_widget(table, body);
    scrollbar(f, body, first, scroll, t);
    let mut lead = Vec::new();
    if let Some((msg, _)) = &state.flash {
        lead.push(Span::styled(format!(" {msg} │"), t.error));
    }
    let tail = vec![Span::styled("  type to filter", t.status)];
    status::draw_bar(state, lead, Mode::Picker, tail, f, status);
    inner_h
}

/// The end of `s` in at most `max` chars, "…" in front when cut (a path's last components say
/// the most).
fn clip_left(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    let tail: String = s.chars().skip(n + 1 - max.max(1)).collect();
    format!("…{tail}")
}
