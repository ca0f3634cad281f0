//! Where every pane goes, as a pure function of the terminal size and the state. The view draws
//! into these rectangles and reports them (with the panes' scroll limits) as the geometry that
//! `update` hit-tests mouse clicks against.
//!
//! ```text
//! header ─────────────────────────────────────────────────────────────
//! tier heatmap: episodes × requests (up to 40 % of the body)
//! pressure / cost chart (same columns as the heatmap; 40 % of what is left, 5 to 14 rows)
//! episode table │ context at the cursor │ detail of the selected episode
//! metrics strip: this request, then the run's totals ─────────────────
//! status bar ──────────────────────────────────────────────────────────
//! ```
//! Below 150 columns the context and the detail share the right column; below 100 they share
//! one pane, which shows the one of them focused last (Tab / S-Tab reach the other; its border
//! says so). `+` gives the focused pane the whole body.

use ratatui::layout::{Constraint, Layout, Rect};

use crate::tui::app::State;
use crate::tui::main::Pane;

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
    /// Width of the label column of the heatmap and the chart (ids, titles when room allows).
    pub label_width: u16,
    /// The chart block and the area the chart draws into (zero-sized when hidden).
    pub chart_block: Rect,
    pub chart: Rect,
    pub table: Rect,
    /// Zero-sized when hidden (narrow terminals show context or detail).
    pub context: Rect,
    pub detail: Rect,
    /// The context and the detail share one pane (a narrow terminal).
    pub shared: bool,
    /// One line (this request) or two (and the run's totals).
    pub metrics: Rect,
    pub status: Rect,
}

/// Width of the id column of the heatmap and the chart: the longest id, and room for the
/// chart's value labels ("133k").
fn id_width(state: &State) -> u16 {
    let longest = state
        .session
        .as_ref()
        .and_then(|s| s.model.episodes.iter().map(|e| e.id.chars().count()).max())
        .unwrap_or(3);
    (longest as u16 + 1).clamp(5, 8)
}

/// The label column: ids, plus the episode titles when the heatmap is wide (they take what
/// the cells can spare beyond 100 columns, at most 24).
pub fn label_width(state: &State, heat_width: u16) -> u16 {
    let id = id_width(state);
    let titles = (heat_width.saturating_sub(100) / 2).min(24);
    if titles >= 10 {
        id + titles
    } else {
        id
    }
}

pub fn main_rects(area: Rect, state: &State) -> MainRects {
    let mut r = MainRects::default();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        r.too_small = true;
        return r;
    }
    let metrics_h = if area.height >= 20 { 2 } else { 1 };
    let [header, body, metrics, status] = area.layout(&Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(metrics_h),
        Constraint::Length(1),
    ]));
    r.header = header;
    r.metrics = metrics;
    r.status = status;
    let m = &state.main;
    let (heat, chart, bottom) = if m.maximized {
        match m.focus {
            Pane::Heatmap => (body, Rect::default(), Rect::default()),
            _ => (Rect::default(), Rect::default(), body),
        }
    } else {
        // The heatmap first (every episode while they take at most 40 % of the body), then the
        // chart from what is left (its resolution is what tells the thresholds apart), then
        // the panes.
        let eps = state.episodes().max(1) as u16;
        let heat_h = (eps + 2).min(body.height * 2 / 5).max(4);
        let chart_h = (body.height.saturating_sub(heat_h) * 2 / 5).clamp(5, 14);
        let [heat, chart, bottom] = body.layout(&Layout::vertical([
            Constraint::Length(heat_h),
            Constraint::Length(chart_h),
            Constraint::Fill(1),
        ]));
        (heat, chart, bottom)
    };
    r.heat = heat;
    r.label_width = label_width(state, heat.width.max(body.width));
    // Title line, then the widget (axis line + rows).
    if heat.height > 0 {
        r.heat_body = Rect::new(heat.x, heat.y + 1, heat.width, heat.height - 1);
        let rows_y = r.heat_body.y + 1;
        let rows_h = r.heat_body.height.saturating_sub(1);
        r.heat_labels = Rect::new(heat.x, rows_y, r.label_width, rows_h);
        r.heat_cells = Rect::new(
            heat.x + r.label_width,
            rows_y,
            heat.width.saturating_sub(r.label_width),
            rows_h,
        );
    }
    r.chart_block = chart;
    if chart.height > 0 {
        r.chart = Rect::new(chart.x, chart.y + 1, chart.width, chart.height - 1);
    }
    let w = bottom.width;
    let (table, context, detail) = if m.maximized {
        match m.focus {
            Pane::Episodes => (bottom, Rect::default(), Rect::default()),
            Pane::Context => (Rect::default(), bottom, Rect::default()),
            Pane::Detail => (Rect::default(), Rect::default(), bottom),
            Pane::Heatmap => (Rect::default(), Rect::default(), Rect::default()),
        }
    } else if w >= 150 {
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
        r.shared = true;
        if m.side == Pane::Context {
            (t, right, Rect::default())
        } else {
            (t, Rect::default(), right)
        }
    };
    r.table = table;
    r.context = context;
    r.detail = detail;
    r
}

/// The episode table's rows: inside the border, below the header row.
pub fn table_body(table: Rect) -> Rect {
    if table.height < 3 || table.width < 2 {
        return Rect::default();
    }
    Rect::new(table.x + 1, table.y + 2, table.width - 2, table.height - 3)
}
