//! The main screen: every pane in its rectangle.

use ratatui::Frame;

use super::layout::MainRects;
use crate::tui::app::State;

pub fn render(state: &State, f: &mut Frame, r: &MainRects) {
    super::header::render(state, f, r.header);
    super::heatmap::render(state, f, r);
    super::chart::render(state, f, r);
    super::episodes::render(state, f, r);
    if r.context.area() > 0 {
        super::context::render(state, f, r.context);
    }
    if r.detail.area() > 0 {
        super::detail::render(state, f, r.detail);
    }
    super::metrics::render(state, f, r.metrics);
    super::status::render(state, f, r.status);
}
