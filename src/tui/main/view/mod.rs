//! The main screen's view: every pane in its rectangle (each pane's drawing in its own file);
//! reports where they went and how far the scrollable ones scroll. A pure function of the state.

pub mod chart;
pub mod context;
pub mod detail;
pub mod episodes;
pub mod header;
pub mod heatmap;
pub mod layout;
pub mod metrics;

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use crate::tui::app::State;
use crate::tui::geometry::MainGeometry;
use crate::tui::main::Pane;
use layout::MainRects;

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
    header::render(state, f, r.header);
    if r.heat.area() > 0 {
        heatmap::render(state, f, r);
    }
    if r.chart_block.area() > 0 {
        chart::render(state, f, r);
    }
    if r.table.area() > 0 {
        episodes::render(state, f, r.table);
    }
    if r.context.area() > 0 {
        g.context_scroll = context::render(state, f, r.context);
    }
    if r.detail.area() > 0 {
        g.detail_scroll = detail::render(state, f, r.detail);
    }
    if r.shared {
        shared_hint(state, f, r);
    }
    metrics::render(state, f, r.metrics);
    crate::tui::ui::status::render(state, f, r.status);
    g
}

/// The pane the context and the detail share on a narrow terminal names the other one and the
/// key that reaches it, in its bottom border.
fn shared_hint(state: &State, f: &mut Frame, r: &MainRects) {
    let (pane, other) = if r.context.area() > 0 {
        (r.context, Pane::Detail)
    } else {
        (r.detail, Pane::Context)
    };
    let from = state.main.focus;
    let key = if from.next(1) == other {
        "Tab"
    } else if from.next(-1) == other {
        "S-Tab"
    } else {
        "Tab Tab"
    };
    let text = format!(" {}: {key} ", other.name());
    let w = text.chars().count() as u16;
    if pane.height < 2 || pane.width < w + 4 {
        return;
    }
    let at = Rect::new(pane.x + 1, pane.bottom() - 1, w, 1);
    let t = &state.theme;
    f.render_widget(Line::from(Span::styled(text, t.key)), at);
}
