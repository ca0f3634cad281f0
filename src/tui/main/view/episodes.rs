//! The episode table at the cursor: id, title, kinds, class, floor, applied tier (and the desired
//! one when a change is deferred), tokens at that tier, and the last change with its reason.
//! While a search is on it lists only the matches, the matched text highlighted.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table};
use ratatui::Frame;

use crate::tui::app::State;
use crate::tui::geometry::Scroll;
use crate::tui::main::Pane;
use crate::tui::ui::{hidden_rows, highlight, pane_block, scrollbar};
use crate::tui::view_model::cell;
use crate::tui::widgets::chart::short;
use tierscope_engine::episode::model::Tier;
use tierscope_engine::replay::tier_shown;

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let m = &state.main;
    let n = state.episodes();
    let shown = m.table_rows(n);
    let page = usize::from(area.height.saturating_sub(3));
    let scroll = Scroll::of(shown.len(), page);
    let top = m.table_top.min(scroll.max);
    let at = shown.iter().position(|&e| e == m.selected);
    let title = if m.search.filters() {
        format!(
            " Episodes: {} of {n} match {:?} at r{} (Esc clears) ",
            shown.len(),
            m.search.query,
            m.cursor
        )
    } else {
        format!(
            " Episodes {}/{} at r{} ",
            at.map_or(0, |i| i + 1),
            n,
            m.cursor
        )
    };
    let focused = m.focus == Pane::Episodes;
    let block = pane_block(title, focused, t)
        .title_bottom(Line::from(Span::styled(hidden_rows(top, scroll), t.dim)).right_aligned());
    let Some(s) = &state.session else {
        f.render_widget(block, area);
        return;
    };
    let w = area.width;
    let wide = w >= 90;
    let with_last = w >= 64;
    // Narrower: the class only in the detail pane; the floor stays (it says why an episode
    // holds), abbreviated with the other columns below 56 columns.
    let with_class = wide;
    let narrow = w < 56;
    let needle = m.search.needle();
    let replay = state.on_screen.replay.as_deref();
    let mut rows = Vec::with_capacity(page);
    for &i in shown.iter().skip(top).take(page) {
        let e = &s.model.episodes[i];
        let (tier_text, tier_style, tokens) = match replay {
            Some(rp) => {
                let v = rp.grid.state(i, m.cursor);
                match v {
                    cell::NONE => ("—".to_owned(), t.dim, String::new()),
                    cell::ACTIVE => (
                        "active".to_owned(),
                        t.tier_active,
                        e.tier_text(Tier::Full)
                            .map(|x| short(x.tokens as f64))
                            .unwrap_or_default(),
                    ),
                    cell::TAIL_ONLY => {
                        // Only the tail is in the context: its tokens, not the whole tier's.
                        let full = e.tier_text(Tier::Full).map_or(0, |x| x.tokens);
                        let hidden = rp.tail_at(i, m.cursor).map_or(0, |c| c.hidden_tokens);
                        (
                            tier_shown(Tier::Full, true),
                            t.tier(Tier::Full),
                            short(full.saturating_sub(hidden) as f64),
                        )
                    }
                    _ => {
                        let tier = rp.grid.tier(i, m.cursor).unwrap_or_default();
                        let name = |t: Tier| {
                            if narrow {
                                abbrev_tier(&t.to_string())
                            } else {
                                t.to_string()
                            }
                        };
                        let mut text = name(tier);
                        if let Some(d) = rp.desired_at(i, m.cursor) {
                            let more = if narrow { "" } else { "…" };
                            text = format!("{}→{}{more}", name(tier), name(d));
                        }
                        let tok = e
                            .tier_text(tier)
                            .map(|x| short(x.tokens as f64))
                            .unwrap_or_else(|| "0".to_owned());
                        (text, t.tier(tier), tok)
                    }
                }
            }
            None => ("…".to_owned(), t.dim, String::new()),
        };
        let last = replay.and_then(|rp| {
            let h = rp.history.get(i)?;
            let k = h.partition_point(|c| c.request <= m.cursor);
            k.checked_sub(1).map(|k| &h[k])
        });
        let last = last
            .map(|c| format!("r{} {}→{} {}", c.request, c.from, c.to, c.reason))
            .unwrap_or_default();
        let hit = m.search.hits.contains(&i);
        let id_style = if hit {
            t.search_match
        } else {
            Style::default()
        };
        let mut cells = vec![
            Cell::from(Span::styled(e.id.clone(), id_style)),
            Cell::from(Line::from(highlight(
                &e.title,
                needle.as_deref(),
                Style::default(),
                t.search_match,
            ))),
        ];
        if wide {
            cells.push(Cell::from(Span::styled(e.kinds.clone(), t.dim)));
        }
        if with_class {
            cells.push(Cell::from(e.class));
        }
        let floor = e.floor.as_str();
        cells.push(Cell::from(if narrow {
            abbrev_tier(floor)
        } else {
            floor.to_owned()
        }));
        cells.extend([
            Cell::from(Span::styled(tier_text, tier_style)),
            Cell::from(Line::from(tokens).right_aligned()),
        ]);
        if with_last {
            cells.push(Cell::from(Span::styled(last, t.dim)));
        }
        let mut row = Row::new(cells);
        if i == m.selected {
            row = row.style(t.selection);
        }
        rows.push(row);
    }
    let mut widths = vec![Constraint::Length(5), Constraint::Fill(3)];
    let mut header = vec!["id", "title"];
    if wide {
        widths.push(Constraint::Fill(1));
        header.push("kinds");
    }
    if with_class {
        widths.push(Constraint::Length(12));
        header.push("class");
    }
    widths.push(Constraint::Length(if narrow { 5 } else { 7 }));
    header.push("floor");
    widths.extend([
        Constraint::Length(if with_last {
            13
        } else if narrow {
            11
        } else {
            12
        }),
        Constraint::Length(5),
    ]);
    header.extend(["tier", "tok"]);
    if with_last {
        widths.push(Constraint::Fill(2));
        header.push("last change");
    }
    let empty = rows.is_empty() && m.search.filters();
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(t.title))
        .column_spacing(1)
        .block(block);
    f.render_widget(table, area);
    if empty {
        let msg = Line::from(Span::styled(" no episode matches (Esc clears)", t.dim));
        let r = super::layout::table_body(area);
        f.render_widget(ratatui::widgets::Paragraph::new(msg), r);
    }
    scrollbar(f, area, top, scroll, t);
}

/// A tier's name in at most five letters for a narrow table (`compact` → `cmpct`, `dropped`
/// → `drop`); the help lists the full names.
fn abbrev_tier(name: &str) -> String {
    match name {
        "compact" => "cmpct".to_owned(),
        "dropped" => "drop".to_owned(),
        "anchor" => "anchr".to_owned(),
        "active" => "activ".to_owned(),
        other => other.chars().take(5).collect(),
    }
}
