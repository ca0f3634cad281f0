//! The sweep screen: a header, the setup form (x knob and range, y knob and range, metric), the
//! grid (one cell per point, coloured and shaded by the metric from best ░ to worst █, `*` on
//! the Pareto front, `●` the main view's knobs, `×` invalid), its legend, the selected point's
//! full metrics, and the status bar. The shading carries the value without colour (mono theme,
//! NO_COLOR); the selection is the theme's selection style plus the highlighted axis labels.
//! Reads only.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::grid::{Metric, SweepGrid};
use super::{Phase, SweepState, ROW_METRIC, ROW_X, ROW_Y};
use crate::tui::app::{Level, State};
use crate::tui::keymap;
use crate::tui::theme::Theme;
use crate::tui::ui::{key_spans, pane_block, rule_block, thousands};
use tierscope_engine::sweep::{format_value, Metrics};

/// Shades from best to worst: the value reads without colour.
pub const SHADES: [char; 4] = ['░', '▒', '▓', '█'];
pub const PARETO: char = '*';
pub const CURRENT: char = '●';
pub const INVALID: char = '×';

/// The colours of the four bins, best first, from the theme's gauge and change keys (their
/// foreground only: a theme's reversed gauge would hide the shade).
fn ramp(t: &Theme) -> [Style; 4] {
    let fg = |s: Style| Style::default().fg(s.fg.unwrap_or(Color::Reset));
    [
        fg(t.gauge_ok),
        fg(t.gauge_warn),
        fg(t.chunk_changed),
        fg(t.gauge_over),
    ]
}

/// The selection on top of a cell's style: the theme's selection background and modifiers,
/// the cell's own colour kept when the selection has a background.
fn selected(t: &Theme, s: Style) -> Style {
    let sel = Style {
        fg: if t.selection.bg.is_some() {
            None
        } else {
            t.selection.fg
        },
        ..t.selection
    };
    s.patch(sel)
}

/// Draws the sweep pane over the whole area.
pub fn render(state: &State, s: &SweepState, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    crate::tui::ui::clear(f, area, t.base);
    f.buffer_mut().set_style(area, t.base);
    let wide = area.width >= 110;
    let [header, form, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(3),
        Constraint::Min(4),
        Constraint::Length(1),
    ])
    .areas(area);
    header_line(state, s, f, header);
    form_lines(t, s, f, form);
    match (&s.phase, &s.grid) {
        (Phase::Running { done, total }, _) => progress(t, s, *done, *total, f, body),
        (_, Some(g)) => {
            // The grid box takes what its rows need (two lines a cell when there is room),
            // the point's details the rest (beside it when the terminal is wide).
            let need = |ch: usize| (5 + g.rows() * ch) as u16;
            let (grid_area, detail_area, ch) = if wide {
                let ch = if need(2) <= body.height { 2 } else { 1 };
                let h = need(ch).max(16).min(body.height);
                let [g, d] =
                    Layout::horizontal([Constraint::Min(40), Constraint::Length(42)]).areas(body);
                (Rect { height: h, ..g }, Rect { height: h, ..d }, ch)
            } else {
                let ch = if need(2) + 4 <= body.height { 2 } else { 1 };
                let [g, d] = Layout::vertical([
                    Constraint::Length(need(ch).min(body.height.saturating_sub(4))),
                    Constraint::Min(4),
                ])
                .areas(body);
                (g, d, ch)
            };
            grid(t, s, g, ch, f, grid_area);
            details(t, s, g, wide, f, detail_area);
        }
        (_, None) => intro(t, s, f, body),
    }
    status_line(state, s, f, status);
}

fn header_line(state: &State, s: &SweepState, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let policy = crate::tui::safe_line(&s.policy.name);
    let budget = match (s.budget, &s.grid) {
        (Some(b), _) => format!("budget {} (set)", thousands(b)),
        (None, Some(g)) => format!(
            "budget {} ({})",
            thousands(g.result.budget),
            // "session-limits:<session id>" → "session-limits": the header is one line.
            crate::tui::safe_line(g.result.budget_source.split(':').next().unwrap_or_default())
        ),
        (None, None) => format!("budget {} (default)", thousands(s.main_budget)),
    };
    let mut text = format!(" sweep  {policy} │ {budget}");
    if let Some(g) = &s.grid {
        let n = g.result.points.len();
        let valid = g.result.valid();
        let front = g.result.points.iter().filter(|p| p.pareto).count();
        text.push_str(&format!(
            " │ {n} points, {} invalid, {front} on the front",
            n - valid
        ));
    }
    f.render_widget(Paragraph::new(text).style(t.header), area);
}

fn form_lines(t: &Theme, s: &SweepState, f: &mut Frame, area: Rect) {
    let focused = s.phase == Phase::Setup;
    let mut lines = Vec::new();
    for (row, name, knob, axis) in [
        (ROW_X, "x (columns)", s.x_knob(), &s.x_axis),
        (ROW_Y, "y (rows)   ", s.y_knob(), &s.y_axis),
    ] {
        let on = focused && s.form_row == row;
        let label = knob.map_or(String::new(), |k| k.label.clone());
        let range = match (&s.edit, on) {
            (Some((text, _)), true) => format!("{}▏", crate::tui::safe_line(text)),
            _ => format!(
                "{} … {} step {} ({} values)",
                format_value(axis.from),
                format_value(axis.to),
                format_value(axis.step),
                axis.len()
            ),
        };
        let mut spans = vec![
            Span::styled(format!(" {name} "), t.dim),
            Span::styled(
                format!(" ◂ {label:<22} ▸ "),
                if on { t.selection } else { t.key },
            ),
            Span::styled(
                format!(" {range}"),
                if on && s.edit.is_some() {
                    t.selection
                } else {
                    t.base
                },
            ),
        ];
        if on {
            if let Some((_, Some(e))) = &s.edit {
                spans.push(Span::styled(format!("  {e}"), t.error));
            }
        }
        lines.push(Line::from(spans));
    }
    let on = focused && s.form_row == ROW_METRIC;
    let dir = if s.metric.higher_is_better() {
        "higher is better"
    } else {
        "lower is better"
    };
    lines.push(Line::from(vec![
        Span::styled(" metric      ", t.dim),
        Span::styled(
            format!(" ◂ {:<22} ▸ ", s.metric.label()),
            if on { t.selection } else { t.key },
        ),
        Span::styled(format!(" {dir}"), t.dim),
    ]));
    f.render_widget(Paragraph::new(lines), area);
}

fn intro(t: &Theme, s: &SweepState, f: &mut Frame, area: Rect) {
    let n = s.x_axis.len() * s.y_axis.len();
    let mut lines = vec![
        Line::raw(""),
        Line::from(Span::styled(
            format!(
                " Enter replays {} on a grid of {n} points: every x value × every y value.",
                crate::tui::safe_line(&s.policy.name)
            ),
            t.base,
        )),
        Line::from(Span::styled(
            " ↑/↓ choose a row · ←/→ change the knob or the metric · e type a range FROM:TO:STEP",
            t.dim,
        )),
        Line::from(Span::styled(
            " The proposed ranges hold the current values and keep the policy's constraints; only the knobs its driver reads are offered, and only those that tune the schedule (not system_tokens, the recording's, nor thrash_window, what thrash counts). A pressure threshold ends at 1.0: above the budget it acts only once the context overflows.",
            t.dim,
        )),
        Line::from(Span::styled(
            format!(
                " {PARETO} marks the Pareto front: a point with no request over the budget beats any that has one, then lower cost, thrash and overflow and higher probe survival."
            ),
            t.dim,
        )),
        Line::from(Span::styled(
            " Points of a typed range that break the constraints are kept as invalid and not replayed.",
            t.dim,
        )),
    ];
    if let Some(e) = &s.error {
        lines.push(Line::raw(""));
        lines.push(Line::from(Span::styled(
            format!(" sweep failed: {e}"),
            t.error,
        )));
    }
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(rule_block(Line::raw(" sweep "), false, t)),
        area,
    );
}

fn progress(t: &Theme, s: &SweepState, done: usize, total: usize, f: &mut Frame, area: Rect) {
    let block = rule_block(Line::raw(" sweeping "), true, t);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let w = usize::from(inner.width.saturating_sub(4)).min(60);
    let filled = (w * done).checked_div(total).unwrap_or(0);
    let bar = format!(
        " {}{}",
        "█".repeat(filled),
        "░".repeat(w.saturating_sub(filled))
    );
    let lines = vec![
        Line::raw(""),
        Line::from(Span::styled(
            format!(
                " replaying {} × {} = {total} points of {} on the worker thread…",
                s.x_axis.len(),
                s.y_axis.len(),
                crate::tui::safe_line(&s.policy.name)
            ),
            t.base,
        )),
        Line::raw(""),
        Line::from(Span::styled(bar, t.gauge_ok)),
        Line::from(Span::styled(
            format!(" {done} of {total} points done · Esc cancels"),
            t.dim,
        )),
    ];
    f.render_widget(Paragraph::new(lines), inner);
}

/// The text and style of one line of a cell.
fn cell_lines(
    t: &Theme,
    g: &SweepGrid,
    m: Metric,
    row: usize,
    col: usize,
    w: usize,
) -> (String, String, Style) {
    let Some(p) = g.index(row, col).and_then(|i| g.result.points.get(i)) else {
        return (" ".repeat(w), " ".repeat(w), t.dim);
    };
    let center = |s: &str| {
        let n = s.chars().count().min(w);
        let left = (w - n) / 2;
        let body: String = s.chars().take(n).collect();
        format!("{}{body}{}", " ".repeat(left), " ".repeat(w - n - left))
    };
    let Some(metrics) = &p.metrics else {
        return (center(&INVALID.to_string()), center("invalid"), t.dim);
    };
    let Some(v) = m.value(metrics) else {
        return (center("·"), center("n/a"), t.dim);
    };
    let b = g.bin(m, v, SHADES.len());
    let mut top: Vec<char> = vec![SHADES[b]; w];
    if p.pareto {
        top[0] = PARETO;
    }
    if g.current == Some((row, col)) && w > 1 {
        top[w - 1] = CURRENT;
    }
    (top.into_iter().collect(), center(&m.format(v)), ramp(t)[b])
}

fn grid(t: &Theme, s: &SweepState, g: &SweepGrid, ch: usize, f: &mut Frame, area: Rect) {
    let (Some(xk), Some(yk)) = (s.x_knob(), s.y_knob()) else {
        return;
    };
    // The axes of the grid as it was run (the form may have changed since).
    let (x_vals, y_vals) = match g.result.axes.as_slice() {
        [y, x] => (x.values(), y.values()),
        _ => return,
    };
    let (x_name, y_name) = match g.result.axes.as_slice() {
        [y, x] => (crate::tui::safe_line(&x.key), crate::tui::safe_line(&y.key)),
        _ => (xk.label.clone(), yk.label.clone()),
    };
    let title = format!(" {} by {x_name} × {y_name} ", s.metric.label());
    let block = pane_block(title, s.phase == Phase::Grid, t);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let (rows, cols) = (g.rows(), g.cols());
    if rows == 0 || cols == 0 || inner.height < 4 {
        return;
    }
    let y_labels: Vec<String> = y_vals.iter().map(|v| format_value(*v)).collect();
    let label_w = y_labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(1)
        .max(4)
        + 2;
    let avail = usize::from(inner.width).saturating_sub(label_w);
    let cw = (avail / cols).clamp(4, 10);
    let iw = cw - 1;
    // Rows: axis title, x values, the cells, the legend.
    let room = usize::from(inner.height).saturating_sub(3);
    let ch = if room >= rows * 2 { ch } else { 1 };
    let shown_rows = (room / ch).min(rows);
    // Keep the selected row in view when the grid is taller than the pane.
    let first = s.sel.0.saturating_sub(shown_rows.saturating_sub(1));
    let buf = f.buffer_mut();
    let (x0, y0) = (inner.x, inner.y);
    let max_x = inner.right();
    let put = |buf: &mut ratatui::buffer::Buffer, x: usize, y: u16, text: &str, st: Style| {
        let x = x0 + x as u16;
        if x < max_x {
            buf.set_stringn(x, y, text, usize::from(max_x - x), st);
        }
    };
    put(buf, 0, y0, &format!("{y_name} ↓   {x_name} →"), t.title);
    for (c, v) in x_vals.iter().enumerate() {
        let st = if c == s.sel.1 {
            selected(t, t.key)
        } else {
            t.key
        };
        let text: String = format_value(*v).chars().take(iw).collect();
        // Centred over its column.
        let pad = (iw - text.chars().count()) / 2;
        put(buf, label_w + c * cw + pad, y0 + 1, &text, st);
    }
    for (i, r) in (first..rows).take(shown_rows).enumerate() {
        let y = y0 + 2 + (i * ch) as u16;
        let st = if r == s.sel.0 {
            selected(t, t.key)
        } else {
            t.key
        };
        put(
            buf,
            0,
            y,
            &format!("{:>w$}", y_labels[r], w = label_w - 2),
            st,
        );
        for c in 0..cols {
            let (top, bottom, mut cs) = cell_lines(t, g, s.metric, r, c, iw);
            if (r, c) == s.sel {
                cs = selected(t, cs);
            }
            put(buf, label_w + c * cw, y, &top, cs);
            if ch == 2 {
                put(buf, label_w + c * cw, y + 1, &bottom, cs);
            }
        }
    }
    let ly = y0 + 2 + (shown_rows * ch) as u16;
    if ly < inner.bottom() {
        let line = legend(t, g, s.metric);
        let legend_area = Rect::new(x0, ly, inner.width, 1);
        f.render_widget(Paragraph::new(line), legend_area);
    }
}

/// Best value, the shades in their colours, worst value, then the marks.
fn legend(t: &Theme, g: &SweepGrid, m: Metric) -> Line<'static> {
    let mut spans = Vec::new();
    match g.range(m) {
        Some((lo, hi)) => {
            let (best, worst) = if m.higher_is_better() {
                (hi, lo)
            } else {
                (lo, hi)
            };
            spans.push(Span::styled(format!("best {} ", m.format(best)), t.dim));
            for (i, st) in ramp(t).into_iter().enumerate() {
                spans.push(Span::styled(SHADES[i].to_string(), st));
            }
            spans.push(Span::styled(format!(" {} worst", m.format(worst)), t.dim));
        }
        None => spans.push(Span::styled(
            match m {
                Metric::Survival => "no probes in this session: survival n/a",
                _ => "no valid point",
            },
            t.warn,
        )),
    }
    spans.push(Span::styled(
        format!("  {PARETO} Pareto  {CURRENT} current  {INVALID} invalid"),
        t.dim,
    ));
    Line::from(spans)
}

/// The selected point's knobs and every metric.
fn point_fields(g: &SweepGrid, sel: (usize, usize)) -> (String, Vec<(&'static str, String)>) {
    let Some(i) = g.index(sel.0, sel.1) else {
        return (String::new(), Vec::new());
    };
    let Some(p) = g.result.points.get(i) else {
        return (String::new(), Vec::new());
    };
    let knobs = p
        .knobs
        .iter()
        .map(|(k, v)| format!("{} = {}", crate::tui::safe_line(k), format_value(*v)))
        .collect::<Vec<_>>()
        .join("   ");
    let Some(m) = &p.metrics else {
        let why = g.reasons.get(i).cloned().flatten().unwrap_or_default();
        return (knobs, vec![("invalid", why)]);
    };
    (knobs, metric_fields(m))
}

/// −$0.0017 rather than $-0.0017.
fn dollars(v: f64) -> String {
    if v < 0.0 {
        format!("−${:.4}", -v)
    } else {
        format!("${v:.4}")
    }
}

/// A signed whole number with thousands separators.
fn signed(v: f64) -> String {
    let n = thousands(v.abs().round() as u64);
    if v < 0.0 {
        format!("−{n}")
    } else {
        n
    }
}

fn metric_fields(m: &Metrics) -> Vec<(&'static str, String)> {
    vec![
        ("cost", dollars(m.cost)),
        (
            "divergence",
            format!(
                "{} tok ({}) vs full",
                signed(m.divergence_tokens as f64),
                dollars(m.divergence_dollars)
            ),
        ),
        (
            "mean tokens",
            thousands(m.mean_tokens.max(0.0).round() as u64),
        ),
        (
            "overflow",
            format!(
                "{} req (max {} tok)",
                thousands(m.overflow_requests),
                thousands(m.max_overflow)
            ),
        ),
        ("thrash", thousands(m.thrash)),
        ("holds", thousands(m.holds)),
        ("violations", thousands(m.violations)),
        ("changes", thousands(m.changes)),
        (
            "survival",
            m.probe_survival
                .map_or("n/a (no probes)".to_owned(), |v| format!("{v:.3}")),
        ),
    ]
}

fn details(t: &Theme, s: &SweepState, g: &SweepGrid, wide: bool, f: &mut Frame, area: Rect) {
    let (knobs, fields) = point_fields(g, s.sel);
    let idx = g.index(s.sel.0, s.sel.1);
    let p = idx.and_then(|i| g.result.points.get(i));
    let mut marks = Vec::new();
    if p.is_some_and(|p| p.pareto) {
        marks.push(format!("{PARETO} on the Pareto front"));
    }
    if g.current == Some(s.sel) {
        marks.push(format!("{CURRENT} the main view's knobs"));
    }
    let valid = p.is_some_and(|p| p.is_valid());
    let mut lines = Vec::new();
    if wide {
        let block = pane_block(" point ", false, t);
        let inner = block.inner(area);
        f.render_widget(block, area);
        lines.push(Line::from(Span::styled(format!(" {knobs}"), t.title_focus)));
        lines.push(Line::raw(""));
        for (k, v) in &fields {
            let st = if *k == "invalid" { t.warn } else { t.base };
            lines.push(Line::from(vec![
                Span::styled(format!(" {k:<12}"), t.dim),
                Span::styled(v.clone(), st),
            ]));
        }
        lines.push(Line::raw(""));
        for m in &marks {
            lines.push(Line::from(Span::styled(format!(" {m}"), t.ok)));
        }
        if valid {
            lines.push(Line::from(vec![
                Span::styled(" Enter", t.key),
                Span::styled(" loads these knobs", t.dim),
            ]));
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
    } else {
        let block = rule_block(Line::raw(" point "), false, t);
        let inner = block.inner(area);
        f.render_widget(block, area);
        let mut head = vec![Span::styled(format!(" {knobs}"), t.title_focus)];
        for m in &marks {
            head.push(Span::styled(format!(" · {m}"), t.ok));
        }
        lines.push(Line::from(head));
        // Whole fields per line: a value never breaks away from its name.
        let width = usize::from(inner.width);
        let mut body: Vec<Span> = Vec::new();
        let mut used = 0;
        for (k, v) in &fields {
            let st = if *k == "invalid" { t.warn } else { t.base };
            let len = k.chars().count() + v.chars().count() + 4;
            if used > 0 && used + len > width {
                lines.push(Line::from(std::mem::take(&mut body)));
                used = 0;
            }
            let sep = if used == 0 { " " } else { " · " };
            body.push(Span::styled(format!("{sep}{k} "), t.dim));
            body.push(Span::styled(v.clone(), st));
            used += len;
        }
        if !body.is_empty() {
            lines.push(Line::from(body));
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
    }
}

fn status_line(state: &State, s: &SweepState, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let mut spans = Vec::new();
    if let Some((msg, level)) = &state.flash {
        let st = match level {
            Level::Info => t.status_key,
            Level::Warn => t.warn,
            Level::Error => t.error,
        };
        spans.push(Span::styled(format!(" {msg} "), st));
        spans.push(Span::styled("│", t.status));
    }
    let hints: Vec<(String, &str)> = if let Phase::Running { .. } = s.phase {
        vec![("Esc".to_owned(), "cancel")]
    } else {
        keymap::hints(s.mode().into(), state.main.focus)
    };
    spans.extend(key_spans(&hints, t.status_key, t.status));
    f.render_widget(Paragraph::new(Line::from(spans)).style(t.status), area);
}
