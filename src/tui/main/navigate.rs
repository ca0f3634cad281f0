//! Moving around the main screen: the request cursor (and the context render it asks for), the
//! selected episode, the panes' scrolls, the heatmap's zoom and pan. Each keeps what it moved in
//! view using the geometry the view last reported.

use crate::tui::app::{Effect, Level, State};
use crate::tui::ui::context::ContextLayout;
use crate::tui::view_model::ContextModel;
use crate::tui::widgets::Viewport;

/// Moves the request cursor to `to` (clamped) and asks for the context there.
pub fn move_cursor(state: &mut State, to: usize, fx: &mut Vec<Effect>) {
    let n = state.requests();
    if n == 0 {
        return;
    }
    let to = to.min(n - 1);
    let m = &state.main;
    if to == m.cursor && m.context.model.as_ref().is_some_and(|c| c.request == to) {
        return;
    }
    state.main.cursor = to;
    crate::tui::follow::on_cursor_moved(state);
    follow_cursor(state);
    if state.on_screen.replay.is_some() {
        state.main.context.pending = true;
        fx.push(Effect::Context {
            gen: state.on_screen.gen,
            at: to,
        });
    }
}

/// Keeps the cursor's request inside the heatmap's requests, and the episode holding it
/// inside its rows (the heatmap's rows follow what moved last: the cursor here, the selection
/// in [`follow_selection`]; the table always shows the selection).
pub fn follow_cursor(state: &mut State) {
    let cells = usize::from(state.geometry.main.heat_cells.width);
    let vp = state.main.viewport(cells, state.requests());
    state.main.heat.first = vp.follow(state.main.cursor);
    let active = state
        .session
        .as_ref()
        .and_then(|s| s.model.requests.get(state.main.cursor))
        .and_then(|r| r.episode);
    if let Some(e) = active {
        let rows = state.geometry.main.heat_rows;
        state.main.heat.top = keep_in_view(state.main.heat.top, e, rows);
    }
}

/// `top` moved as little as possible so that row `row` is among `rows` rows from it (unchanged
/// when nothing is known about the height yet).
pub fn keep_in_view(top: usize, row: usize, rows: usize) -> usize {
    if rows == 0 {
        return top;
    }
    if row < top {
        row
    } else if row >= top + rows {
        row + 1 - rows
    } else {
        top
    }
}

/// Keeps the selected episode inside the heatmap rows and the table.
pub fn follow_selection(state: &mut State) {
    let g = &state.geometry.main;
    let sel = state.main.selected;
    state.main.heat.top = keep_in_view(state.main.heat.top, sel, g.heat_rows);
    let rows = state.main.table_rows(state.episodes());
    if let Some(i) = rows.iter().position(|&e| e == sel) {
        let page = usize::from(g.table_body.height);
        state.main.table_top = keep_in_view(state.main.table_top, i, page);
    }
}

/// Selects episode `i` (clamped); a new selection shows its applied tier from the top.
pub fn select(state: &mut State, i: usize) {
    let n = state.episodes();
    if n == 0 {
        return;
    }
    let i = i.min(n - 1);
    if i != state.main.selected {
        state.main.detail = Default::default();
    }
    state.main.selected = i;
    follow_selection(state);
}

/// Moves the selection `by` rows among the episodes the table lists (the search's matches while
/// a search filters it).
pub fn select_by(state: &mut State, by: isize) {
    let rows = state.main.table_rows(state.episodes());
    if rows.is_empty() {
        return;
    }
    let at = rows
        .iter()
        .position(|&e| e >= state.main.selected)
        .unwrap_or(rows.len() - 1);
    let to = at.saturating_add_signed(by).min(rows.len() - 1);
    select(state, rows[to]);
}

pub fn scroll_detail(state: &mut State, by: isize) {
    let s = state.geometry.main.detail_scroll;
    state.main.detail.scroll = s.moved(state.main.detail.scroll, by);
}

pub fn scroll_context(state: &mut State, by: isize) {
    let s = state.geometry.main.context_scroll;
    state.main.context.scroll = s.moved(state.main.context.scroll, by);
}

/// Scrolls the heatmap's episode rows (the wheel); the selection may leave the view.
pub fn scroll_heat_rows(state: &mut State, by: isize) {
    let max = state
        .episodes()
        .saturating_sub(state.geometry.main.heat_rows);
    state.main.heat.top = state.main.heat.top.saturating_add_signed(by).min(max);
}

/// The context pane's layout at the width it was last drawn at.
pub fn context_layout(state: &State, c: &ContextModel, expanded: bool) -> ContextLayout {
    let w = usize::from(state.geometry.main.context.width.saturating_sub(2));
    ContextLayout::of(c, expanded, state.main.context.clip, w, &state.theme)
}

/// The context pane's top line when a render arrives: the divergence marker a third of the way
/// down (what broke the cache, with what came before it), the pane filled when it can be.
pub fn context_home(
    c: &ContextModel,
    layout: &ContextLayout,
    expanded: bool,
    page: usize,
) -> usize {
    let max = layout.total().saturating_sub(page.max(1));
    let want = c
        .divergence_row(expanded)
        .map_or(0, |d| layout.line_of(d).saturating_sub(page / 3));
    want.min(max)
}

/// Switches the context pane between one line per chunk and every chunk's text: the divergence
/// stays in view if it was, else the chunk at the top stays at the top.
pub fn toggle_context_text(state: &mut State) {
    let page = state.geometry.main.context_scroll.page;
    if let Some(c) = state.main.context.model.clone() {
        let expanded = state.main.context.expanded;
        let old = context_layout(state, &c, expanded);
        let new = context_layout(state, &c, !expanded);
        let top = state
            .main
            .context
            .scroll
            .min(state.geometry.main.context_scroll.max);
        let divergence_shown = c.divergence_row(expanded).is_some_and(|d| {
            let l = old.line_of(d);
            l >= top && l < top + page.max(1)
        });
        let chunk = c.chunk_at(old.row_at(top).0, expanded);
        let cv = &mut state.main.context;
        cv.expanded = !expanded;
        cv.scroll = if divergence_shown {
            context_home(&c, &new, cv.expanded, page)
        } else {
            c.chunk_row(chunk, cv.expanded)
                .map_or(0, |r| new.line_of(r))
        };
    } else {
        state.main.context.expanded = !state.main.context.expanded;
    }
    state.main.focus = super::Pane::Context;
    state.main.side = super::Pane::Context;
}

/// Wraps long lines of the context, detail and diff panes, or clips them at the border (`E`):
/// the context keeps the row at its top.
pub fn toggle_wrap(state: &mut State) {
    let clip = !state.main.context.clip;
    if let Some(c) = state.main.context.model.clone() {
        let expanded = state.main.context.expanded;
        let old = context_layout(state, &c, expanded);
        let (row, _) = old.row_at(state.main.context.scroll);
        state.main.context.clip = clip;
        let new = context_layout(state, &c, expanded);
        state.main.context.scroll = new.line_of(row);
    }
    state.main.context.clip = clip;
    let what = if clip {
        "long lines clipped at the border (E wraps them)"
    } else {
        "long lines wrapped (E clips them)"
    };
    state.flash(what, crate::tui::app::Level::Info);
}

/// Zooms the heatmap in (half the requests) or out (twice as many, up to the whole trace).
pub fn zoom(state: &mut State, zoom_in: bool) {
    let cells = usize::from(state.geometry.main.heat_cells.width);
    let total = state.requests();
    if cells == 0 || total == 0 {
        return;
    }
    // Zoom levels, not spans: level k shows ⌈total / 2^k⌉ requests (at least what the cells
    // resolve), so `z` then `Z` as often comes back to exactly where it was, and `Z` at level 1
    // to the whole session (halving and doubling a span drifts: 671 → 335 → 670).
    let min = Viewport::min_span(cells).min(total);
    let span_at = |level: u32| total.div_ceil(1usize << level.min(40)).max(min).min(total);
    let level = state.main.heat.level;
    let level = if zoom_in {
        if span_at(level) <= min {
            state.flash(
                "zoomed in as far as the cells go (Z zooms out)",
                Level::Info,
            );
            return;
        }
        level + 1
    } else {
        if level == 0 {
            state.flash("the whole session is in view", Level::Info);
            return;
        }
        level - 1
    };
    state.main.heat.level = level;
    let span = span_at(level);
    state.main.heat.span = (level > 0 && span < total).then_some(span);
    // Zoom about the cursor.
    let first = state.main.cursor.saturating_sub(span / 2);
    state.main.heat.first = Viewport::new(first, state.main.heat.span, cells, total).first;
    follow_cursor(state);
}

/// Pans the heatmap by a quarter of its span.
pub fn pan(state: &mut State, right: bool) {
    let cells = usize::from(state.geometry.main.heat_cells.width);
    let vp = state.main.viewport(cells, state.requests());
    let step = (vp.span / 4).max(1);
    let first = if right {
        vp.first + step
    } else {
        vp.first.saturating_sub(step)
    };
    state.main.heat.first = Viewport::new(first, Some(vp.span), cells, vp.total).first;
}

/// The view reported a new geometry (`old` is the previous one): scrolls back inside their
/// limits, and after a resize (or a pane maximised) the cursor and selection back in view.
pub fn on_geometry(state: &mut State, old: &crate::tui::geometry::Geometry) {
    let g = state.geometry.main.clone();
    // The context pane changed width (a resize, a pane maximised): its lines wrap anew, so the
    // row at its top stays at the top.
    if old.main.context.width != g.context.width && !state.main.context.clip {
        if let Some(c) = state.main.context.model.clone() {
            let (cv, t) = (&state.main.context, &state.theme);
            let at = |w: u16| {
                let w = usize::from(w.saturating_sub(2));
                ContextLayout::of(&c, cv.expanded, cv.clip, w, t)
            };
            let (row, _) = at(old.main.context.width).row_at(cv.scroll);
            state.main.context.scroll = at(g.context.width).line_of(row);
        }
    }
    let m = &mut state.main;
    m.detail.scroll = m.detail.scroll.min(g.detail_scroll.max);
    m.context.scroll = m.context.scroll.min(g.context_scroll.max);
    let resized = old.main.heat_cells != g.heat_cells
        || old.main.heat_rows != g.heat_rows
        || old.main.table_body != g.table_body;
    if resized {
        follow_cursor(state);
        follow_selection(state);
    }
}
