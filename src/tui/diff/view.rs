//! The diff screen: a header with both sides, a heatmap of where A and B disagree (▲ A shows the
//! episode more faithfully, ▼ B does; red where the lower side is below the floor; ▐ in a side's
//! colour where that side shows only the tail of `full`, its head in a summary), both
//! pressure curves on one chart, a deltas strip (this request, then the session), the episode
//! tiers of both sides at the cursor, and the rendered contexts side by side. Reads only.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};
use ratatui::Frame;

use super::view_model::{DiffModel, Disagreement};
use super::{DiffState, Side};
use crate::tui::app::State;
use crate::tui::geometry::Scroll;
use crate::tui::theme::Theme;
use crate::tui::ui::{centered, hidden_rows, pane_block, rule_block, scrollbar, thousands};
use crate::tui::view_model::cell;
use crate::tui::widgets::heatmap::TAIL_GLYPH;
use crate::tui::widgets::wrap;
use crate::tui::widgets::Viewport;
use tierscope_engine::compare::context::{RowKind, SideLine};
use tierscope_engine::compare::delta::{signed, signed_f};
use tierscope_engine::episode::Tier;
use tierscope_engine::policy::KnobValue;
use tierscope_engine::replay::tier_shown;

/// The screen's rectangles at a size.
pub struct DiffRects {
    pub header: Rect,
    pub heat: Rect,
    pub chart: Rect,
    pub deltas: Rect,
    pub tiers: Rect,
    pub context: Rect,
    pub status: Rect,
}

/// Lays the screen out: small terminals get a shorter heatmap and chart, never a missing pane.
pub fn rects(area: Rect, episodes: usize) -> DiffRects {
    let tall = area.height >= 36;
    // Tall terminals give the disagreements more rows (the context keeps at least 15).
    let cap = if tall {
        usize::from(area.height.saturating_sub(28)).clamp(8, 16)
    } else {
        4
    };
    let heat_rows = episodes.clamp(1, cap) as u16 + 1;
    let chart_h = if tall { 8 } else { 5 };
    let [header, heat, chart, deltas, bottom, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(heat_rows),
        Constraint::Length(chart_h),
        Constraint::Length(2),
        Constraint::Min(4),
        Constraint::Length(1),
    ])
    .areas(area);
    let tiers_w = if area.width >= 110 { 34 } else { 24 };
    let [tiers, context] =
        Layout::horizontal([Constraint::Length(tiers_w), Constraint::Min(20)]).areas(bottom);
    DiffRects {
        header,
        heat,
        chart,
        deltas,
        tiers,
        context,
        status,
    }
}

/// Colours of the two sides (theme keys reused: A like the replayed tokens, B like a change).
fn side_style(t: &Theme, s: Side) -> Style {
    match s {
        Side::A => t.line_tokens,
        Side::B => t.chunk_changed,
    }
}

/// Draws diff mode over the whole area; reports the context diff's scroll limits.
pub fn render(state: &State, d: &DiffState, f: &mut Frame, area: Rect) -> Scroll {
    let t = &state.theme;
    let episodes = d.model.as_ref().map_or(1, |m| m.episodes.len());
    let r = rects(area, episodes);
    let mut scroll = Scroll::default();
    header(state, d, f, r.header);
    match &d.model {
        Some(m) => {
            heatmap(state, d, m, f, r.heat);
            chart(t, d, m, f, r.chart);
            deltas(t, d, m, f, r.deltas);
            tiers(state, d, m, f, r.tiers);
            scroll = context(t, d, state.main.context.clip, f, r.context);
        }
        None => {
            let what = match (&d.error, d.pending) {
                (Some(e), _) => format!("diff failed: {e}"),
                (None, true) => "replaying A and B…".to_owned(),
                (None, false) => "choose policy B".to_owned(),
            };
            let body = Rect::new(
                area.x,
                r.heat.y,
                area.width,
                r.context.bottom().saturating_sub(r.heat.y),
            );
            f.render_widget(
                Paragraph::new(Line::from(Span::styled(format!(" {what}"), t.dim))),
                body,
            );
        }
    }
    status(state, d, f, r.status);
    if let Some((list, sel)) = &d.picker {
        picker(t, list, *sel, f, area);
    }
    if let Some(k) = d.knobs {
        let rect = knobs_rect(d.policy(k.side), area, r.tiers.y);
        knobs(t, d, k, f, rect);
    }
    scroll
}

fn header(state: &State, d: &DiffState, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let mut spans = vec![Span::styled(" diff ", t.header)];
    let (a, b) = match &d.model {
        Some(m) => (m.a_label.clone(), m.b_label.clone()),
        None if d.picker.is_some() => (d.a.name.clone(), "?".to_owned()),
        None => (
            super::view_model::side_label(&d.a, &d.b),
            super::view_model::side_label(&d.b, &d.a),
        ),
    };
    let hs = |s: Side| {
        side_style(t, s)
            .patch(t.header)
            .fg(side_style(t, s).fg.unwrap_or_default())
    };
    // The budgets first: each side's label may be long, and a comparison is read at its budgets.
    if let Some(m) = &d.model {
        let budget = if m.budget == m.budget_b {
            format!("budget {} │ ", thousands(m.budget))
        } else {
            format!(
                "budget A {} · B {} │ ",
                thousands(m.budget),
                thousands(m.budget_b)
            )
        };
        spans.push(Span::styled(budget, t.header));
    }
    spans.push(Span::styled("A ", t.header));
    spans.push(Span::styled(a, hs(Side::A)));
    spans.push(Span::styled(" vs ", t.header));
    spans.push(Span::styled("B ", t.header));
    spans.push(Span::styled(b, hs(Side::B)));
    // Then the parts that fit whole (a number cut in half misleads), the title clipped last.
    let mut parts: Vec<Vec<Span>> = Vec::new();
    if let Some(m) = &d.model {
        for text in [
            format!("r{}/{}", d.cursor, m.requests.saturating_sub(1)),
            format!("{} of {} requests differ", m.differing.len(), m.requests),
        ] {
            parts.push(vec![Span::styled(text, t.header)]);
        }
    }
    if d.pending || d.context_pending {
        parts.push(vec![Span::styled("replaying…", t.header)]);
    }
    let sep = Span::styled(" │ ", t.header);
    let lead: usize = spans.iter().map(Span::width).sum::<usize>() + sep.width();
    let fitted = crate::tui::ui::fit_groups(
        parts,
        sep.clone(),
        usize::from(area.width).saturating_sub(lead),
    );
    if !fitted.is_empty() {
        spans.push(sep.clone());
        spans.extend(fitted);
    }
    let used: usize = spans.iter().map(Span::width).sum::<usize>() + sep.width();
    let room = usize::from(area.width).saturating_sub(used);
    if let (Some(s), true) = (&state.session, room >= 8) {
        spans.push(sep);
        spans.push(Span::styled(
            tierscope_engine::text::clip_chars(&crate::tui::safe_line(&s.model.title), room),
            t.header,
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(t.header), area);
}

const LABEL_W: u16 = 6;

fn heatmap(state: &State, d: &DiffState, m: &DiffModel, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    // The legend's long form needs about 100 columns; narrower, the short one.
    let wide = area.width >= 100;
    let mut legend = vec![
        Span::raw(if wide {
            " where A and B disagree: "
        } else {
            " A vs B: "
        }),
        Span::styled("▲", side_style(t, Side::A)),
        Span::raw(" A higher "),
        Span::styled("▼", side_style(t, Side::B)),
        Span::raw(" B higher "),
        Span::styled("▲▼", t.error),
        Span::raw(if wide {
            " lower side below its floor "
        } else {
            " below floor "
        }),
    ];
    if m.tail_only {
        legend.push(Span::styled(TAIL_GLYPH, t.base));
        legend.push(Span::raw(" tail only "));
    }
    legend.push(Span::raw(if wide { " ─ same " } else { "─ same " }));
    let title = Line::from(legend);
    let rows = usize::from(area.height.saturating_sub(1));
    let n = m.episodes.len();
    let first = d.selected.saturating_sub(rows.saturating_sub(1));
    // The rows out of view, as on the main screen.
    let more = if n > rows && rows > 0 {
        let mut v = format!(" episodes {first}–{} of {n}", (first + rows).min(n) - 1);
        if first > 0 {
            v.push_str(&format!(" ▲{first}"));
        }
        if first + rows < n {
            v.push_str(&format!(" ▼{}", n - first - rows));
        }
        v + " "
    } else {
        String::new()
    };
    let block =
        rule_block(title, false, t).title(Line::from(Span::styled(more, t.warn)).right_aligned());
    let inner = block.inner(area);
    f.render_widget(block, area);
    let cols_w = usize::from(inner.width.saturating_sub(LABEL_W));
    if cols_w == 0 || inner.height == 0 {
        return;
    }
    let vp = viewport(m.requests, cols_w, d.cursor);
    let cursor_cells = vp.cells_of(d.cursor);
    let buf = f.buffer_mut();
    for (vis, e) in (first..m.episodes.len()).take(rows).enumerate() {
        let y = inner.y + vis as u16;
        let (id, _) = &m.episodes[e];
        let ls = if e == d.selected { t.selection } else { t.dim };
        buf.set_stringn(inner.x, y, format!("{id:<5} "), usize::from(LABEL_W), ls);
        // Every cell of a request carries its mark: the mark is the information.
        for x in 0..vp.used_cells() {
            let (glyph, mut st) = bucket(t, m, e, vp.range(x));
            if cursor_cells.as_ref().is_some_and(|c| c.contains(&x)) {
                st = st.patch(t.cursor);
            }
            buf.set_string(inner.x + LABEL_W + x as u16, y, glyph, st);
        }
    }
}

/// The whole trace over `width` cells (following the cursor if it ever does not fit).
fn viewport(total: usize, width: usize, cursor: usize) -> Viewport {
    let vp = Viewport::new(0, None, width, total);
    Viewport::new(vp.follow(cursor), None, width, total)
}

/// The glyph of one heatmap column: the strongest disagreement among its requests.
fn bucket(
    t: &Theme,
    m: &DiffModel,
    e: usize,
    range: std::ops::Range<usize>,
) -> (&'static str, Style) {
    let mut best: Option<Disagreement> = None;
    let mut closed = false;
    for r in range {
        if m.tiers_a.tier(e, r).is_some() {
            closed = true;
        }
        if let Some(dis) = m.disagreement(e, r) {
            // Below-floor first, then a tail-only side, then any disagreement.
            let rank = |d: &Disagreement| (d.below_floor, d.tail_only.is_some());
            if best.is_none_or(|b| rank(&dis) > rank(&b)) {
                best = Some(dis);
            }
        }
    }
    match best {
        Some(d) => (mark_glyph(&d), mark_style(t, &d)),
        None if closed => ("─", t.dim),
        None => (" ", t.tier_future),
    }
}

/// `▲` A higher, `▼` B higher, `▐` one side keeps only the tail of `full`.
fn mark_glyph(d: &Disagreement) -> &'static str {
    match (d.tail_only, d.a_higher) {
        (Some(_), _) => TAIL_GLYPH,
        (None, true) => "▲",
        (None, false) => "▼",
    }
}

/// Red when the lower side is below its floor, else the colour of the side the glyph names.
fn mark_style(t: &Theme, d: &Disagreement) -> Style {
    if d.below_floor {
        return t.error;
    }
    let side = match d.tail_only {
        Some(s) => s,
        None if d.a_higher => Side::A,
        None => Side::B,
    };
    side_style(t, side)
}

fn chart(t: &Theme, d: &DiffState, m: &DiffModel, f: &mut Frame, area: Rect) {
    let title = Line::from(vec![
        Span::raw(" pressure: "),
        Span::styled("A", side_style(t, Side::A)),
        Span::raw(" "),
        Span::styled("B", side_style(t, Side::B)),
        Span::raw(" "),
        Span::styled("budget", t.line_budget),
        Span::raw(" "),
    ]);
    let n = m.requests.max(1);
    let pts = |v: &[f64]| -> Vec<(f64, f64)> {
        v.iter().enumerate().map(|(i, p)| (i as f64, *p)).collect()
    };
    let (pa, pb) = (pts(&m.pressure_a), pts(&m.pressure_b));
    let (y_lo, y_hi) = pressure_range(&m.pressure_a, &m.pressure_b);
    let x_max = (n - 1).max(1) as f64;
    let budget = [(0.0, 1.0), (x_max, 1.0)];
    let cur = [(d.cursor as f64, y_lo), (d.cursor as f64, y_hi)];
    let mut sets = vec![
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(t.dim)
            .data(&cur),
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(side_style(t, Side::A))
            .data(&pa),
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(side_style(t, Side::B))
            .data(&pb),
    ];
    if (y_lo..=y_hi).contains(&1.0) {
        sets.insert(
            0,
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(t.line_budget)
                .data(&budget),
        );
    }
    let pct = |v: f64| Span::styled(format!("{:.0}%", v * 100.0), t.dim);
    let chart = Chart::new(sets)
        .block(rule_block(title, false, t))
        .style(t.base)
        .x_axis(Axis::default().bounds([0.0, x_max]).style(t.dim))
        .y_axis(Axis::default().bounds([y_lo, y_hi]).style(t.dim).labels([
            pct(y_lo),
            pct((y_lo + y_hi) / 2.0),
            pct(y_hi),
        ]));
    f.render_widget(chart, area);
}

/// The pressure range the diff chart shows: both curves with a margin, the budget line (1.0)
/// taken in when the curves come near it (within half their range).
pub fn pressure_range(a: &[f64], b: &[f64]) -> (f64, f64) {
    let vals = a.iter().chain(b).copied().filter(|v| v.is_finite());
    let (lo, hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
        (l.min(v), h.max(v))
    });
    if lo > hi {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.1).max(0.01);
    let (mut lo, mut hi) = ((lo - pad).max(0.0), hi + pad);
    let near = (hi - lo) / 2.0;
    if hi < 1.0 && 1.0 - hi <= near {
        hi = 1.02;
    }
    if lo > 1.0 && lo - 1.0 <= near {
        lo = 0.98;
    }
    (lo, hi)
}

fn deltas(t: &Theme, d: &DiffState, m: &DiffModel, f: &mut Frame, area: Rect) {
    let mut lines = Vec::new();
    // Only what differs: a strip of zeros would hide the numbers that matter.
    // Each item shown whole or not at all (a number cut in half misleads).
    let item = |name: &str, v: String| -> Vec<Span<'static>> {
        if v == "·" || v == "·%" {
            return Vec::new();
        }
        vec![
            Span::styled(format!("{name} "), t.dim),
            Span::styled(v, t.base),
        ]
    };
    let width = usize::from(area.width);
    let fit = |groups: Vec<Vec<Span<'static>>>| {
        Line::from(crate::tui::ui::fit_groups(groups, Span::raw(" "), width))
    };
    if let Some(fr) = m.frames.get(d.cursor) {
        let x = &fr.delta;
        let mut spans = vec![vec![Span::styled(format!(" r{} B−A", fr.request), t.key)]];
        if fr.same {
            spans.push(vec![Span::styled("no difference at this request", t.dim)]);
        } else {
            // Violations first: on a narrow terminal the end of the strip is cut.
            for (n, v) in [
                ("floor-viol", signed(x.floor_violations)),
                ("pin-viol", signed(x.pin_violations)),
                ("tok", signed(x.tokens)),
                ("$", signed_f(x.cost, 5)),
                ("kept", signed(x.divergence)),
                ("redo", signed(x.radius)),
                ("cache read", signed(x.cache_read)),
                ("cache write", signed(x.cache_write)),
                ("chg", signed(x.changes)),
                ("holds", signed(x.holds)),
                ("thrash", signed(x.thrash)),
                ("probes ok", signed(x.probes_ok)),
            ] {
                spans.push(item(n, v));
            }
        }
        lines.push(fit(spans));
    }
    if let Some(s) = &m.summary {
        let x = &s.delta;
        let mut spans = vec![vec![Span::styled(" session B−A", t.key)]];
        for (n, v) in [
            ("floor-viol", signed(x.floor_violations)),
            ("pin-viol", signed(x.pin_violations)),
            ("$", signed_f(x.cost, 4)),
            ("mean tok", signed_f(x.mean_tokens, 0)),
            ("cache hit", signed_f(x.cache_hit_ratio * 100.0, 1) + "%"),
            ("chg", signed(x.changes)),
            ("thrash", signed(x.thrash)),
            ("holds", signed(x.holds)),
        ] {
            spans.push(item(n, v));
        }
        if let Some(p) = x.probe_survival {
            spans.push(item("survival", signed_f(p * 100.0, 1) + "%"));
        }
        lines.push(fit(spans));
    }
    f.render_widget(Paragraph::new(lines).style(t.base), area);
}

/// A tier's name at a cell; `full▐` where only the tail of the full tier is shown.
fn tier_name(t: Option<Tier>, active: bool, tail: bool) -> String {
    match t {
        Some(t) => tier_shown(t, tail),
        None if active => "active".to_owned(),
        None => "–".to_owned(),
    }
}

fn tiers(state: &State, d: &DiffState, m: &DiffModel, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let block = pane_block(format!(" tiers at r{} ", d.cursor), false, t);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 {
        return;
    }
    let wide = inner.width >= 32;
    let mut lines = vec![Line::from(Span::styled(
        if wide {
            " ep   floor   A       B"
        } else {
            " ep   A       B"
        },
        t.dim,
    ))];
    let rows = usize::from(inner.height).saturating_sub(1);
    let first = d.selected.saturating_sub(rows.saturating_sub(1));
    for e in (first..m.episodes.len()).take(rows) {
        let (id, floor) = &m.episodes[e];
        let c = d.cursor;
        let state = |g: &crate::tui::view_model::Grid| g.state(e, c);
        let active = state(&m.tiers_a) == cell::ACTIVE;
        let (tail_a, tail_b) = (
            state(&m.tiers_a) == cell::TAIL_ONLY,
            state(&m.tiers_b) == cell::TAIL_ONLY,
        );
        let (ta, tb) = (m.tiers_a.tier(e, c), m.tiers_b.tier(e, c));
        let below = |x: Option<Tier>| x.is_some_and(|x| x.depth() > floor.depth());
        let st = |x: Option<Tier>| match x {
            Some(x) if below(Some(x)) => t.error,
            Some(x) => t.tier(x),
            None => t.dim,
        };
        let mark = match m.disagreement(e, c) {
            Some(d) => Span::styled(mark_glyph(&d), mark_style(t, &d)),
            None => Span::raw(" "),
        };
        let bang = |x: Option<Tier>| if below(x) { "!" } else { "" };
        let sel = e == d.selected;
        let idst = if sel { t.selection } else { t.base };
        let mut spans = vec![Span::styled(format!(" {id:<4}"), idst)];
        if wide {
            spans.push(Span::styled(format!("{:<8}", floor.as_str()), t.dim));
        }
        spans.push(Span::styled(
            format!("{:<8}", tier_name(ta, active, tail_a) + bang(ta)),
            st(ta),
        ));
        spans.push(Span::styled(
            format!("{:<8}", tier_name(tb, active, tail_b) + bang(tb)),
            st(tb),
        ));
        spans.push(mark);
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines).style(t.base), inner);
}

/// The context diff, A left and B right. Long lines wrap within their side (a row takes the
/// lines of its longer side) unless clipped (`E`); the scroll counts rows, so hunks stay where
/// `n` / `N` put them, and the last page is the rows that fit whole.
fn context(t: &Theme, d: &DiffState, clip: bool, f: &mut Frame, area: Rect) -> Scroll {
    let title = match &d.context {
        Some(c) if c.request == d.cursor => {
            let hunk = match (d.hunk, c.hunks.len()) {
                (_, 0) => "identical".to_owned(),
                (Some(i), n) => format!("hunk {}/{n} (n/N)", i + 1),
                (None, n) => format!("{n} hunks (n/N)"),
            };
            format!(
                " context at r{}: A {} tok │ B {} tok │ {hunk} ",
                c.request,
                thousands(c.a_tokens),
                thousands(c.b_tokens)
            )
        }
        _ if d.context_pending => format!(" context at r{}: rendering A and B… ", d.cursor),
        _ => " context ".to_owned(),
    };
    let page = usize::from(area.height.saturating_sub(2));
    let inner_w = area.width.saturating_sub(2);
    let half = inner_w.saturating_sub(1) / 2;
    let text_w = (
        usize::from(half.saturating_sub(GUTTER)),
        usize::from(inner_w.saturating_sub(half + 1).saturating_sub(GUTTER)),
    );
    let height = |row: &tierscope_engine::compare::context::DiffRow| -> usize {
        if clip {
            return 1;
        }
        let h = |l: Option<&SideLine>, w: usize| {
            l.map_or(1, |l| {
                let text: String = l.segments.iter().map(|(_, s)| s.as_str()).collect();
                wrap::height(&text, 0, w, 0)
            })
        };
        h(row.a.as_ref(), text_w.0).max(h(row.b.as_ref(), text_w.1))
    };
    // The furthest top row: from it to the end fills at most a page.
    let max = d.context.as_ref().map_or(0, |c| {
        let mut lines = 0;
        let mut first = c.rows.len();
        for (i, row) in c.rows.iter().enumerate().rev() {
            lines += height(row);
            if lines > page {
                break;
            }
            first = i;
        }
        first
    });
    let scroll = Scroll { page, max };
    let top = d.context_scroll.min(scroll.max);
    let block = pane_block(title, false, t)
        .title_bottom(Line::from(Span::styled(hidden_rows(top, scroll), t.dim)).right_aligned());
    let inner = block.inner(area);
    f.render_widget(block, area);
    scrollbar(f, area, top, scroll, t);
    let Some(c) = &d.context else {
        return scroll;
    };
    if inner.width < 10 || inner.height == 0 {
        return scroll;
    }
    let (left, right) = (
        Rect::new(inner.x, inner.y, half, inner.height),
        Rect::new(
            inner.x + half + 1,
            inner.y,
            inner.width - half - 1,
            inner.height,
        ),
    );
    let buf = f.buffer_mut();
    let mut y = inner.y;
    for row in c.rows.iter().skip(top) {
        if y >= inner.bottom() {
            break;
        }
        let (sa, sb) = match row.kind {
            RowKind::Equal => (t.base, t.base),
            RowKind::Changed => (t.gauge_over, t.gauge_ok),
            RowKind::Removed => (t.gauge_over, t.dim),
            RowKind::Added => (t.dim, t.gauge_ok),
        };
        let mark = |kind: RowKind, side: Side| match (kind, side) {
            (RowKind::Equal, _) => " ",
            (RowKind::Changed | RowKind::Removed, Side::A) => "-",
            (RowKind::Changed | RowKind::Added, Side::B) => "+",
            _ => " ",
        };
        let room = inner.bottom() - y;
        let ha = side_line(
            buf,
            left,
            y,
            room,
            clip,
            row.a.as_ref(),
            mark(row.kind, Side::A),
            sa,
        );
        let hb = side_line(
            buf,
            right,
            y,
            room,
            clip,
            row.b.as_ref(),
            mark(row.kind, Side::B),
            sb,
        );
        let h = ha.max(hb).max(1);
        for dy in 0..h {
            buf.set_string(inner.x + half, y + dy, "│", t.border);
        }
        y += h;
    }
    scroll
}

/// Columns of a side's gutter (line number and mark).
const GUTTER: u16 = 6;

/// One side of a row from line `y`: gutter with the line number and mark, then the text,
/// emphasised words bold and reversed (visible without colour too), wrapped to the side's width
/// (at most `room` lines) unless `clip`. Returns the lines drawn.
#[allow(clippy::too_many_arguments)]
fn side_line(
    buf: &mut ratatui::buffer::Buffer,
    r: Rect,
    y: u16,
    room: u16,
    clip: bool,
    l: Option<&SideLine>,
    mark: &str,
    st: Style,
) -> u16 {
    let Some(l) = l else {
        return 1;
    };
    if r.width <= GUTTER || room == 0 {
        return 1;
    }
    buf.set_stringn(
        r.x,
        y,
        format!("{:>4}{mark} ", l.number),
        usize::from(GUTTER),
        st.patch(Style::default().add_modifier(Modifier::DIM)),
    );
    // Emphasis flips reverse video (a theme may already draw changed lines reversed), so the
    // changed words stand out with or without colour.
    let spans: Vec<Span> = l
        .segments
        .iter()
        .map(|(emph, s)| {
            let sst = match (*emph, st.add_modifier.contains(Modifier::REVERSED)) {
                (false, _) => st,
                (true, false) => st.add_modifier(Modifier::BOLD | Modifier::REVERSED),
                (true, true) => st
                    .remove_modifier(Modifier::REVERSED)
                    .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            };
            Span::styled(s.as_str(), sst)
        })
        .collect();
    let w = r.width - GUTTER;
    let lines = if clip {
        vec![Line::from(spans)]
    } else {
        wrap::wrap(Line::from(spans), usize::from(w), 0, None)
    };
    let mut drawn = 0;
    for line in lines.iter().take(usize::from(room)) {
        buf.set_line(r.x + GUTTER, y + drawn, line, w);
        drawn += 1;
    }
    drawn.max(1)
}

fn status(state: &State, d: &DiffState, f: &mut Frame, area: Rect) {
    let lead = crate::tui::ui::status::flash_spans(state);
    crate::tui::ui::status::draw_bar(state, lead, d.mode().into(), Vec::new(), f, area);
}

fn picker(t: &Theme, list: &[super::Choice], sel: usize, f: &mut Frame, area: Rect) {
    let h = (list.len() as u16 + 2).min(area.height.saturating_sub(2));
    let rect = centered(area, 84, h);
    crate::tui::ui::clear(f, rect, t.base);
    let block = pane_block(
        " compare with policy B (Enter choose, Esc cancel) ",
        true,
        t,
    );
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let rows = usize::from(inner.height);
    let first = sel.saturating_sub(rows.saturating_sub(1));
    let label_w = list
        .iter()
        .map(|c| c.label.chars().count())
        .max()
        .unwrap_or(0)
        .min(36);
    let desc_w = usize::from(inner.width).saturating_sub(label_w + 2);
    let lines: Vec<Line> = list
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .map(|(i, c)| {
            let st = if i == sel { t.selection } else { t.base };
            Line::from(vec![
                Span::styled(
                    format!(
                        " {:<label_w$} ",
                        tierscope_engine::text::clip_chars(&c.label, label_w)
                    ),
                    st,
                ),
                Span::styled(
                    tierscope_engine::text::clip_chars(&crate::tui::safe_line(&c.desc), desc_w),
                    t.dim,
                ),
            ])
        })
        .collect();
    f.render_widget(Paragraph::new(lines).style(t.base), inner);
}

/// The knobs panel's rectangle: over the bottom of the screen from `top`, left-aligned.
fn knobs_rect(p: &tierscope_engine::policy::Policy, area: Rect, top: u16) -> Rect {
    let rows = 1 + p.specs.len();
    let h = (rows as u16 + 2)
        .min(area.height.saturating_sub(top))
        .max(3);
    Rect::new(
        area.x,
        top.min(area.bottom().saturating_sub(h)),
        area.width.min(64),
        h,
    )
}

fn knobs(t: &Theme, d: &DiffState, k: super::KnobEdit, f: &mut Frame, rect: Rect) {
    let (side, selected) = (k.side, k.selected);
    let p = d.policy(side);
    let other = d.policy(side.other());
    let rows = 1 + p.specs.len();
    crate::tui::ui::clear(f, rect, t.base);
    let state = if d.pending {
        "replaying…"
    } else {
        "up to date"
    };
    let title = format!(
        " knobs of {} ({}) — {state} · Tab other side ",
        side.label(),
        p.name
    );
    let block = pane_block(title, true, t);
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let list_h = usize::from(inner.height);
    let first = selected.saturating_sub(list_h.saturating_sub(1));
    let mut lines = Vec::new();
    for row in (first..rows).take(list_h) {
        let (name, value, theirs) = if row == 0 {
            let b = super::shown_budget(d, side);
            let o = super::shown_budget(d, side.other());
            (
                "budget".to_owned(),
                thousands(b),
                (b != o).then(|| thousands(o)),
            )
        } else {
            let spec = &p.specs[row - 1];
            let v = crate::tui::knobs::knob_value(p, spec);
            let shown = match &v {
                KnobValue::Num(n) => crate::tui::knobs::fmt_knob(*n, spec.integer),
                other => other.to_string(),
            };
            // Only knobs both sides have can differ (each kind has its own knobs).
            let differs = other.knobs.get(&spec.name).is_some_and(|o| *o != v);
            let theirs = differs.then(|| other_value(other, &spec.name));
            (spec.name.clone(), shown, theirs)
        };
        let st = if row == selected { t.selection } else { t.base };
        lines.push(Line::from(vec![
            Span::styled(format!(" {name:<26}"), st),
            Span::styled(
                format!("{value:>12} "),
                if row == selected { t.key } else { t.base },
            ),
            Span::styled(
                theirs.map(|o| format!("≠ {o}")).unwrap_or_default(),
                side_style(t, side.other()),
            ),
        ]));
    }
    f.render_widget(Paragraph::new(lines).style(t.base), inner);
}

fn other_value(p: &tierscope_engine::policy::Policy, name: &str) -> String {
    match (p.knobs.get(name), p.spec(name)) {
        (Some(KnobValue::Num(n)), Some(s)) => crate::tui::knobs::fmt_knob(*n, s.integer),
        (Some(v), _) => v.to_string(),
        (None, _) => "–".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::pressure_range;

    #[test]
    fn the_chart_fits_both_curves() {
        // Two curves between 74 % and 92 %: the range hugs them, and takes the budget line in
        // when they come near it.
        let (lo, hi) = pressure_range(&[0.74, 0.8], &[0.9, 0.92]);
        assert!(
            lo > 0.6 && lo < 0.74 && hi > 0.92 && hi <= 1.02,
            "{lo} {hi}"
        );
        assert!(hi >= 1.0, "0.92 is near the budget: {hi}");
        // Far below the budget: no budget line, no squeezing into the top row.
        let (lo, hi) = pressure_range(&[0.05, 0.06], &[0.07, 0.08]);
        assert!(lo < 0.05 && hi < 0.2, "{lo} {hi}");
        assert_eq!(pressure_range(&[], &[]), (0.0, 1.0));
    }
}
