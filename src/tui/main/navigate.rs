//! Moving around the main screen: the request cursor (and the context render it asks for), the
//! selected episode, the panes' scrolls, the heatmap's zoom and pan. Each keeps what it moved in
//! view using the geometry the view last reported.

use super::view::context::ContextLayout;
use super::{Ask, Env, MainState, Out, Pane};
use crate::tui::app::{Effect, Level};
use crate::tui::geometry::MainGeometry;
use crate::tui::view_model::ContextModel;
use crate::tui::widgets::Viewport;

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

/// The context pane's layout at the width it was last drawn at.
pub fn context_layout(
    env: &Env<'_>,
    c: &ContextModel,
    expanded: bool,
    clip: bool,
) -> ContextLayout {
    let w = usize::from(env.geometry.context.width.saturating_sub(2));
    ContextLayout::of(c, expanded, clip, w, env.theme)
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

impl MainState {
    /// Moves the request cursor to `to` (clamped) and asks for the context there.
    pub fn move_cursor(&mut self, env: &Env<'_>, to: usize, out: &mut Out) {
        let n = env.requests();
        if n == 0 {
            return;
        }
        let to = to.min(n - 1);
        if to == self.cursor && self.context.model.as_ref().is_some_and(|c| c.request == to) {
            return;
        }
        self.cursor = to;
        out.ask(Ask::CursorMoved);
        self.follow_cursor(env);
        if env.on_screen.replay.is_some() {
            self.context.pending = true;
            out.fx.push(Effect::Context {
                gen: env.on_screen.gen,
                at: to,
            });
        }
    }

    /// The session on screen grew (live follow; `env` holds the grown one): the cursor stays at
    /// the newest request when it was there (`at_newest`), else where it was; the context at it
    /// is rendered anew.
    pub fn on_grown(&mut self, env: &Env<'_>, at_newest: bool) {
        let n = env.requests();
        self.context.model = None;
        self.cursor = if at_newest && n > 0 {
            n - 1
        } else {
            self.cursor.min(n.saturating_sub(1))
        };
        self.selected = self.selected.min(env.episodes().saturating_sub(1));
        self.refresh_search(env);
        self.follow_cursor(env);
    }

    /// Keeps the cursor's request inside the heatmap's requests, and the episode holding it
    /// inside its rows (the heatmap's rows follow what moved last: the cursor here, the
    /// selection in [`MainState::follow_selection`]; the table always shows the selection).
    pub fn follow_cursor(&mut self, env: &Env<'_>) {
        let cells = usize::from(env.geometry.heat_cells.width);
        let vp = self.viewport(cells, env.requests());
        self.heat.first = vp.follow(self.cursor);
        let active = env
            .session
            .and_then(|s| s.model.requests.get(self.cursor))
            .and_then(|r| r.episode);
        if let Some(e) = active {
            self.heat.top = keep_in_view(self.heat.top, e, env.geometry.heat_rows);
        }
    }

    /// Keeps the selected episode inside the heatmap rows and the table.
    pub fn follow_selection(&mut self, env: &Env<'_>) {
        let g = env.geometry;
        let sel = self.selected;
        self.heat.top = keep_in_view(self.heat.top, sel, g.heat_rows);
        let rows = self.table_rows(env.episodes());
        if let Some(i) = rows.iter().position(|&e| e == sel) {
            let page = usize::from(g.table_body.height);
            self.table_top = keep_in_view(self.table_top, i, page);
        }
    }

    /// Selects episode `i` (clamped); a new selection shows its applied tier from the top.
    pub fn select(&mut self, env: &Env<'_>, i: usize) {
        let n = env.episodes();
        if n == 0 {
            return;
        }
        let i = i.min(n - 1);
        if i != self.selected {
            self.detail = Default::default();
        }
        self.selected = i;
        self.follow_selection(env);
    }

    /// Moves the selection `by` rows among the episodes the table lists (the search's matches
    /// while a search filters it).
    pub fn select_by(&mut self, env: &Env<'_>, by: isize) {
        let rows = self.table_rows(env.episodes());
        if rows.is_empty() {
            return;
        }
        let at = rows
            .iter()
            .position(|&e| e >= self.selected)
            .unwrap_or(rows.len() - 1);
        let to = at.saturating_add_signed(by).min(rows.len() - 1);
        self.select(env, rows[to]);
    }

    pub fn scroll_detail(&mut self, env: &Env<'_>, by: isize) {
        self.detail.scroll = env.geometry.detail_scroll.moved(self.detail.scroll, by);
    }

    pub fn scroll_context(&mut self, env: &Env<'_>, by: isize) {
        self.context.scroll = env.geometry.context_scroll.moved(self.context.scroll, by);
    }

    /// Scrolls the heatmap's episode rows (the wheel); the selection may leave the view.
    pub fn scroll_heat_rows(&mut self, env: &Env<'_>, by: isize) {
        let max = env.episodes().saturating_sub(env.geometry.heat_rows);
        self.heat.top = self.heat.top.saturating_add_signed(by).min(max);
    }

    /// A rendered context arrived for the cursor: shown with the divergence in view
    /// ([`context_home`]).
    pub fn show_context(&mut self, env: &Env<'_>, c: std::sync::Arc<ContextModel>) {
        let cv = &mut self.context;
        let layout = context_layout(env, &c, cv.expanded, cv.clip);
        let page = env.geometry.context_scroll.page;
        cv.scroll = context_home(&c, &layout, cv.expanded, page);
        cv.model = Some(c);
    }

    /// Switches the context pane between one line per chunk and every chunk's text: the
    /// divergence stays in view if it was, else the chunk at the top stays at the top.
    pub fn toggle_context_text(&mut self, env: &Env<'_>) {
        let page = env.geometry.context_scroll.page;
        if let Some(c) = self.context.model.clone() {
            let (expanded, clip) = (self.context.expanded, self.context.clip);
            let old = context_layout(env, &c, expanded, clip);
            let new = context_layout(env, &c, !expanded, clip);
            let top = self.context.scroll.min(env.geometry.context_scroll.max);
            let divergence_shown = c.divergence_row(expanded).is_some_and(|d| {
                let l = old.line_of(d);
                l >= top && l < top + page.max(1)
            });
            let chunk = c.chunk_at(old.row_at(top).0, expanded);
            let cv = &mut self.context;
            cv.expanded = !expanded;
            cv.scroll = if divergence_shown {
                context_home(&c, &new, cv.expanded, page)
            } else {
                c.chunk_row(chunk, cv.expanded)
                    .map_or(0, |r| new.line_of(r))
            };
        } else {
            self.context.expanded = !self.context.expanded;
        }
        self.focus = Pane::Context;
        self.side = Pane::Context;
    }

    /// Wraps long lines of the context, detail and diff panes, or clips them at the border
    /// (`E`): the context keeps the row at its top.
    pub fn toggle_wrap(&mut self, env: &Env<'_>, out: &mut Out) {
        let clip = !self.context.clip;
        if let Some(c) = self.context.model.clone() {
            let expanded = self.context.expanded;
            let old = context_layout(env, &c, expanded, self.context.clip);
            let (row, _) = old.row_at(self.context.scroll);
            let new = context_layout(env, &c, expanded, clip);
            self.context.scroll = new.line_of(row);
        }
        self.context.clip = clip;
        let what = if clip {
            "long lines clipped at the border (E wraps them)"
        } else {
            "long lines wrapped (E clips them)"
        };
        out.flash(what, Level::Info);
    }

    /// Zooms the heatmap in (half the requests) or out (twice as many, up to the whole trace).
    pub fn zoom(&mut self, env: &Env<'_>, zoom_in: bool, out: &mut Out) {
        let cells = usize::from(env.geometry.heat_cells.width);
        let total = env.requests();
        if cells == 0 || total == 0 {
            return;
        }
        // Zoom levels, not spans: level k shows ⌈total / 2^k⌉ requests (at least what the
        // cells resolve), so `z` then `Z` as often comes back to exactly where it was, and `Z`
        // at level 1 to the whole session (halving and doubling a span drifts: 671 → 335 → 670).
        let min = Viewport::min_span(cells).min(total);
        let span_at = |level: u32| total.div_ceil(1usize << level.min(40)).max(min).min(total);
        let level = self.heat.level;
        let level = if zoom_in {
            if span_at(level) <= min {
                out.flash(
                    "zoomed in as far as the cells go (Z zooms out)",
                    Level::Info,
                );
                return;
            }
            level + 1
        } else {
            if level == 0 {
                out.flash("the whole session is in view", Level::Info);
                return;
            }
            level - 1
        };
        self.heat.level = level;
        let span = span_at(level);
        self.heat.span = (level > 0 && span < total).then_some(span);
        // Zoom about the cursor.
        let first = self.cursor.saturating_sub(span / 2);
        self.heat.first = Viewport::new(first, self.heat.span, cells, total).first;
        self.follow_cursor(env);
    }

    /// Pans the heatmap by a quarter of its span.
    pub fn pan(&mut self, env: &Env<'_>, right: bool) {
        let cells = usize::from(env.geometry.heat_cells.width);
        let vp = self.viewport(cells, env.requests());
        let step = (vp.span / 4).max(1);
        let first = if right {
            vp.first + step
        } else {
            vp.first.saturating_sub(step)
        };
        self.heat.first = Viewport::new(first, Some(vp.span), cells, vp.total).first;
    }

    /// The view reported a new geometry (`old` the previous one): scrolls back inside their
    /// limits, and after a resize (or a pane maximised) the cursor and selection back in view.
    pub fn on_geometry(&mut self, env: &Env<'_>, old: &MainGeometry) {
        let g = env.geometry;
        // The context pane changed width (a resize, a pane maximised): its lines wrap anew, so
        // the row at its top stays at the top.
        if old.context.width != g.context.width && !self.context.clip {
            if let Some(c) = &self.context.model {
                let cv = &self.context;
                let at = |w: u16| {
                    let w = usize::from(w.saturating_sub(2));
                    ContextLayout::of(c, cv.expanded, cv.clip, w, env.theme)
                };
                let (row, _) = at(old.context.width).row_at(cv.scroll);
                let scroll = at(g.context.width).line_of(row);
                self.context.scroll = scroll;
            }
        }
        self.detail.scroll = self.detail.scroll.min(g.detail_scroll.max);
        self.context.scroll = self.context.scroll.min(g.context_scroll.max);
        let resized = old.heat_cells != g.heat_cells
            || old.heat_rows != g.heat_rows
            || old.table_body != g.table_body;
        if resized {
            self.follow_cursor(env);
            self.follow_selection(env);
        }
    }
}
