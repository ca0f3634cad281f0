//! The episode table at the cursor: id, title, kinds, class, floor, applied tier (and the desired
//! one when a change is deferred), tokens at that tier, and the last change with its reason.

use ratatui::layout::Constraint;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table};
use ratatui::Frame;

use super::layout::MainRects;
use super::pane_block;
use crate::tui::app::{Pane, State};
use crate::tui::model::cell;
use crate::tui::widgets::chart::short;

pub fn render(state: &State, f: &mut Frame, r: &MainRects) {
    let t = &state.theme;
    let n = state.episodes();
    let title = format!(
        " Episodes {}/{} at t {} ",
        (state.selected + 1).min(n),
        n,
        state.cursor
    );
    let block = pane_block(title, state.focus == Pane::Episodes, t);
    let Some(s) = &state.session else {
        f.render_widget(block, r.table);
        return;
    };
    let w = r.table.width;
    let wide = w >= 90;
    let with_last = w >= 64;
    // Narrow: class and floor live in the detail pane; the title needs the room.
    let with_class = w >= 56;
    let class_of = |c: &'static str| -> &'static str {
        if wide {
            c
        } else {
            match c {
                "compressible" => "cmp",
                "discardable" => "dsc",
                other => other,
            }
        }
    };
    let matches = &state.search_hits;
    let rows_n = usize::from(r.table_rows);
    let mut rows = Vec::with_capacity(rows_n);
    for i in state.table_first..(state.table_first + rows_n).min(n) {
        let e = &s.model.episodes[i];
        let (tier_text, tier_style, tokens) = match &state.replay {
            Some(rp) => {
                let v = rp.grid.get(i, state.cursor) & cell::STATE;
                match v {
                    cell::NONE => ("—".to_owned(), t.dim, String::new()),
                    cell::ACTIVE => (
                        "active".to_owned(),
                        t.tier_active,
                        e.tier_text(tierscope_engine::episode::model::Tier::Full)
                            .map(|x| short(x.tokens as f64))
                            .unwrap_or_default(),
                    ),
                    _ => {
                        let tier = rp.grid.tier(i, state.cursor).unwrap_or_default();
                        let mut text = tier.to_string();
                        if let Some(d) = rp.desired.get(&(i, state.cursor)) {
                            text = format!("{tier}→{d}…");
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
        let last = state.replay.as_ref().and_then(|rp| {
            let h = rp.history.get(i)?;
            let k = h.partition_point(|c| c.request <= state.cursor);
            k.checked_sub(1).map(|k| &h[k])
        });
        let last = last
            .map(|c| format!("r{} {}→{} {}", c.request, c.from, c.to, c.reason))
            .unwrap_or_default();
        let id_style = if matches.contains(&i) {
            t.search_match
        } else {
            Style::default()
        };
        let mut cells = vec![
            Cell::from(Span::styled(e.id.clone(), id_style)),
            Cell::from(e.title.clone()),
        ];
        if wide {
            cells.push(Cell::from(Span::styled(e.kinds.clone(), t.dim)));
        }
        if with_class {
            cells.extend([Cell::from(class_of(e.class)), Cell::from(e.floor.as_str())]);
        }
        cells.extend([
            Cell::from(Span::styled(tier_text, tier_style)),
            Cell::from(Line::from(tokens).right_aligned()),
        ]);
        if with_last {
            cells.push(Cell::from(Span::styled(last, t.dim)));
        }
        let mut row = Row::new(cells);
        if i == state.selected {
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
        widths.extend([
            Constraint::Length(if wide { 12 } else { 5 }),
            Constraint::Length(7),
        ]);
        header.extend(["class", "floor"]);
    }
    widths.extend([
        Constraint::Length(if with_last { 13 } else { 9 }),
        Constraint::Length(6),
    ]);
    header.extend(["tier", "tok"]);
    if with_last {
        widths.push(Constraint::Fill(2));
        header.push("last change");
    }
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(t.title))
        .column_spacing(1)
        .block(block);
    f.render_widget(table, r.table);
}
