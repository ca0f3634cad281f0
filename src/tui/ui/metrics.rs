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
    let kv = |k: &str, v: String| {
        vec![
            Span::styled(format!("{k} "), t.dim),
            Span::styled(v, t.base),
        ]
    };
    // Most important first; a part that does not fit whole is left out, never cut.
    let mut groups = vec![
        vec![
            Span::styled(" tok ", t.dim),
            Span::styled(
                format!("{}/{} ", short(fr.tokens as f64), short(fr.budget as f64)),
                t.base,
            ),
            Span::styled(gauge, gauge_style),
            Span::styled(format!(" {:.0}%", p * 100.0), gauge_style),
        ],
        [
            kv("div", short(fr.divergence as f64)),
            vec![Span::raw(" ")],
            kv("radius", short(fr.radius as f64)),
        ]
        .concat(),
        kv(
            "cache r/w",
            format!(
                "{}/{}",
                short(fr.cache_read as f64),
                short(fr.cache_write as f64)
            ),
        ),
    ];
    let mut moves = [
        kv("chg", fr.changes.to_string()),
        vec![Span::raw(" ")],
        kv("def", fr.deferred.to_string()),
        vec![
            Span::raw(" "),
            Span::styled("hold ", t.dim),
            Span::styled(
                fr.holds.to_string(),
                if fr.holds > 0 { t.mark_hold } else { t.base },
            ),
            Span::raw(" "),
            Span::styled("thrash ", t.dim),
            Span::styled(
                fr.thrash.to_string(),
                if fr.thrash > 0 { t.mark_thrash } else { t.base },
            ),
        ],
    ]
    .concat();
    if fr.floor_violations + fr.pin_violations > 0 {
        moves.push(Span::raw(" "));
        moves.push(Span::styled(
            format!("viol {}f/{}p", fr.floor_violations, fr.pin_violations),
            t.error,
        ));
    }
    groups.push(kv("$", format!("{:.4} Σ{:.4}", fr.cost, fr.cum_cost)));
    groups.push(moves);
    if fr.probes_due > 0 {
        let st = if fr.probes_ok < fr.probes_due {
            t.warn
        } else {
            t.ok
        };
        groups.push(vec![
            Span::styled("probes ", t.dim),
            Span::styled(format!("{}/{}", fr.probes_ok, fr.probes_due), st),
        ]);
    }
    if !fr.status.is_empty() && fr.status != "ok" {
        groups.push(vec![Span::styled(fr.status.clone(), t.warn)]);
    }
    let spans = super::fit_groups(
        groups,
        Span::styled(" │ ", t.border),
        usize::from(area.width),
    );
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}
