//! The metrics strip at the cursor: tokens / budget gauge, divergence, radius, cache, cost
//! (request and cumulative), changes, holds, thrash, probes.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::tui::app::State;
use crate::tui::widgets::chart::short;

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let Some(fr) = state
        .replay
        .as_ref()
        .and_then(|r| r.frames.get(state.cursor))
    else {
        let msg = match &state.replay {
            Some(r) if r.frames.is_empty() => " no requests: no metrics to show",
            Some(_) => " no frame at the cursor",
            None if state.replay_pending => " replaying…",
            None => " no replay yet",
        };
        f.render_widget(Paragraph::new(msg).style(t.dim), area);
        return;
    };
    let p = fr.pressure;
    let gauge_style = if p > 1.0 {
        t.gauge_over
    } else if p > 0.9 {
        t.gauge_warn
    } else {
        t.gauge_ok
    };
    let gw = 10usize;
    let filled = ((p.clamp(0.0, 1.0)) * gw as f64).round() as usize;
    let gauge = format!("{}{}", "█".repeat(filled), "░".repeat(gw - filled));
    let sep = || Span::styled(" │ ", t.border);
    let kv = |k: &str, v: String| {
        vec![
            Span::styled(format!("{k} "), t.dim),
            Span::styled(v, t.base),
        ]
    };
    let mut spans = vec![
        Span::styled(" tok ", t.dim),
        Span::styled(
            format!("{}/{} ", short(fr.tokens as f64), short(fr.budget as f64)),
            t.base,
        ),
        Span::styled(gauge, gauge_style),
        Span::styled(format!(" {:.0}%", p * 100.0), gauge_style),
        sep(),
    ];
    spans.extend(kv("div", short(fr.divergence as f64)));
    spans.push(Span::raw(" "));
    spans.extend(kv("radius", short(fr.radius as f64)));
    spans.push(sep());
    spans.extend(kv(
        "cache r/w",
        format!(
            "{}/{}",
            short(fr.cache_read as f64),
            short(fr.cache_write as f64)
        ),
    ));
    spans.push(sep());
    spans.extend(kv("$", format!("{:.4} Σ{:.4}", fr.cost, fr.cum_cost)));
    spans.push(sep());
    spans.extend(kv("chg", fr.changes.to_string()));
    spans.push(Span::raw(" "));
    spans.extend(kv("def", fr.deferred.to_string()));
    spans.push(Span::raw(" "));
    spans.push(Span::styled("hold ", t.dim));
    spans.push(Span::styled(
        fr.holds.to_string(),
        if fr.holds > 0 { t.mark_hold } else { t.base },
    ));
    spans.push(Span::raw(" "));
    spans.push(Span::styled("thrash ", t.dim));
    spans.push(Span::styled(
        fr.thrash.to_string(),
        if fr.thrash > 0 { t.mark_thrash } else { t.base },
    ));
    if fr.floor_violations + fr.pin_violations > 0 {
        spans.push(Span::raw(" "));
        spans.push(Span::styled(
            format!("viol {}f/{}p", fr.floor_violations, fr.pin_violations),
            t.error,
        ));
    }
    if fr.probes_due > 0 {
        spans.push(sep());
        let st = if fr.probes_ok < fr.probes_due {
            t.warn
        } else {
            t.ok
        };
        spans.extend([
            Span::styled("probes ", t.dim),
            Span::styled(format!("{}/{}", fr.probes_ok, fr.probes_due), st),
        ]);
    }
    if !fr.status.is_empty() && fr.status != "ok" {
        spans.push(sep());
        spans.push(Span::styled(fr.status.clone(), t.warn));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}
