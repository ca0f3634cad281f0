//! Where every pane goes, as a pure function of the terminal size and the state. The view draws
//! into these rectangles and `update` hit-tests mouse clicks against the same ones.
//!
//! ```text
//! header ─────────────────────────────────────────────────────────────
//! tier heatmap: episodes × requests (grows with the episode count)
//! pressure / cost chart (same columns as the heatmap)
//! episode table │ context at the cursor │ detail of the selected episode
//! metrics strip ───────────────────────────────────────────────────────
//! status bar ──────────────────────────────────────────────────────────
//! ```
//! Below 150 columns the context and the detail share the right column; below 100 they share
//! one pane (Tab switches).

use ratatui::layout::{Constraint, Layout, Rect};

use crate::tui::app::{Pane, State};

/// Smallest size the main screen is drawn at; below it a "terminal too small" notice shows.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MainRects {
    pub too_small: bool,
    pub header: Rect,
    /// The heatmap block (title line included).
    pub heat: Rect,
    /// The axis line plus the rows, labels included (what the widget draws into).
    pub heat_body: Rect,
    pub heat_labels: Rect,
    pub heat_cells: Rect,
    pub heat_cols: u16,
    pub heat_rows: u16,
    pub label_width: u16,
    /// The chart block and the area the chart draws into.
    pub chart_block: Rect,
    pub chart: Rect,
    pub table: Rect,
    pub table_body: Rect,
    pub table_rows: u16,
    /// Zero-sized when hidden (narrow terminals show context or detail).
    pub context: Rect,
    pub detail: Rect,
    pub detail_rows: u16,
    pub metrics: Rect,
    pub status: Rect,
}

/// Width of the episode-id column of the heatmap and chart.
pub fn label_width(state: &State) -> u16 {
    let longest = state
        .session
        .as_ref()
        .and_then(|s| s.model.episodes.iter().map(|e| e.id.chars().count()).max())
        .unwrap_or(3);
    (longest as u16 + 1).clamp(4, 8)
}

pub fn main_rects(area: Rect, state: &State) -> MainRects {
    let mut r = MainRects::default();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        r.too_small = true;
        return r;
    }
    let [header, body, metrics, status] = area.layout(&Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ]));
    r.header = header;
    r.metrics = metrics;
    r.status = status;
    let eps = state.episodes().max(1) as u16;
    let heat_h = (eps + 2).min((body.height * 35 / 100).max(4));
    let chart_h = (body.height / 6).clamp(5, 16);
    let [heat, chart, bottom] = body.layout(&Layout::vertical([
        Constraint::Length(heat_h),
        Constraint::Length(chart_h),
        Constraint::Fill(1),
    ]));
    r.heat = heat;
    r.label_width = label_width(state);
    // Title line, then the widget (axis line + rows).
    r.heat_body = Rect::new(
        heat.x,
        heat.y + 1,
        heat.width,
        heat.height.saturating_sub(1),
    );
    let rows_y = r.heat_body.y + 1;
    let rows_h = r.heat_body.height.saturating_sub(1);
    r.heat_labels = Rect::new(heat.x, rows_y, r.label_width, rows_h);
    r.heat_cells = Rect::new(
        heat.x + r.label_width,
        rows_y,
        heat.width.saturating_sub(r.label_width),
        rows_h,
    );
    r.heat_cols = r.heat_cells.width;
    r.heat_rows = rows_h;
    r.chart_block = chart;
    r.chart = Rect::new(
        chart.x,
        chart.y + 1,
        chart.width,
        chart.height.saturating_sub(1),
    );

    let w = bottom.width;
    let (table, context, detail) = if w >= 150 {
        let [t, c, d] = bottom.layout(&Layout::horizontal([
            Constraint::Percentage(40),
            Constraint::Percentage(30),
            Constraint::Percentage(30),
        ]));
        (t, c, d)
    } else if w >= 100 {
        let [t, right] = bottom.layout(&Layout::horizontal([
            Constraint::Percentage(50),
            Constraint::Percentage(50),
        ]));
        let [c, d] = right.layout(&Layout::vertical([
            Constraint::Percentage(45),
            Constraint::Percentage(55),
        ]));
        (t, c, d)
    } else {
        let [t, right] = bottom.layout(&Layout::horizontal([
            Constraint::Percentage(50),
            Constraint::Percentage(50),
        ]));
        if state.focus == Pane::Context {
            (t, right, Rect::default())
        } else {
            (t, Rect::default(), right)
        }
    };
    r.table = table;
    // Border, then a header row.
    r.table_body = Rect::new(
        table.x + 1,
        table.y + 2,
        table.width.saturating_sub(2),
        table.height.saturating_sub(3),
    );
    r.table_rows = r.table_body.height;
    r.context = context;
    r.detail = detail;
    r.detail_rows = detail
        .height
        .saturating_sub(2)
        .max(context.height.saturating_sub(2));
    r
}
