//! The main screen: every pane in its rectangle; reports where they went and how far the
//! scrollable ones scroll.

use ratatui::Frame;

use super::layout::{self, MainRects};
use crate::tui::app::State;
use crate::tui::geometry::MainGeometry;

pub fn render(state: &State, f: &mut Frame, r: &MainRects) -> MainGeometry {
    let mut g = MainGeometry {
        heat: r.heat,
        heat_labels: r.heat_labels,
        heat_cells: r.heat_cells,
        heat_rows: usize::from(r.heat_cells.height),
        chart: r.chart,
        table: r.table,
        table_body: layout::table_body(r.table),
        context: r.context,
        detail: r.detail,
        ..MainGeometry::default()
    };
    super::header::render(state, f, r.header);
    if r.heat.area() > 0 {
        super::heatmap::render(state, f, r);
    }
    if r.chart_block.area() > 0 {
        super::chart::render(state, f, r);
    }
    if r.table.area() > 0 {
        super::episodes::render(state, f, r.table);
    }
    if r.context.area() > 0 {
        g.context_scroll = super::context::render(state, f, r.context);
    }
    if r.detail.area() > 0 {
        g.detail_scroll = super::detail::render(state, f, r.detail);
    }
    super::metrics::render(state, f, r.metrics);
    super::status::render(state, f, r.status);
    g
}
