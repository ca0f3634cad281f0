//! The metrics strip: first the request at the cursor (`r12`): the tokens / budget gauge, the
//! prefix kept from the previous request and the tokens redone after it, cache, cost (the
//! request's and so far), changes, waiting changes, holds, thrash, emergencies, probes; then the
//! whole `run`'s totals by unit (changes, thrash and emergencies; held and waiting episode ×
//! requests; requests over budget) and, after the policy, a knob or the budget changed, each
//! total as baseline → now. One line when the terminal is short: the totals go where there is
//! room. Every figure's meaning is in the help (`?`, "Figures").

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::tui::app::State;
use crate::tui::theme::Theme;
use crate::tui::totals::before_after;
use crate::tui::view_model::{FrameRow, ReplayModel};
use crate::tui::widgets::chart::short;

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let replay = state.on_screen.replay.as_deref();
    let Some(fr) = replay.and_then(|r| r.frames.get(state.main.cursor)) else {
        let msg = match replay {
            Some(r) if r.frames.is_empty() => " no requests: no metrics to show",
            Some(_) => " no frame at the cursor",
            None if state.on_screen.pending => " replaying…",
            None => " no replay yet",
        };
        f.render_widget(Paragraph::new(msg).style(t.dim), area);
        return;
    };
    let Some(r) = replay else { return };
    let sep = Span::styled(" │ ", t.border);
    let width = usize::from(area.width);
    let totals = totals_groups(state, r, t);
    let at = state.main.cursor;
    if area.height >= 2 {
        let now = crate::tui::ui::fit_groups(request_groups(at, fr, t), sep.clone(), width);
        let run = crate::tui::ui::fit_groups(totals, sep, width);
        f.render_widget(Paragraph::new(vec![Line::from(now), Line::from(run)]), area);
    } else {
        let mut groups = request_groups(at, fr, t);
        // Short terminal: the totals right after the gauge, the rest where it fits.
        let rest = groups.split_off(1);
        groups.extend(totals);
        groups.extend(rest);
        let spans = crate::tui::ui::fit_groups(groups, sep, width);
        f.render_widget(Paragraph::new(Line::from(spans)), area);
    }
}

fn kv<'a>(t: &Theme, k: &str, v: String) -> Vec<Span<'a>> {
    vec![
        Span::styled(format!("{k} "), t.dim),
        Span::styled(v, t.base),
    ]
}

/// The request at the cursor (`r12`), most important first; a group that does not fit whole is
/// left out.
fn request_groups<'a>(at: usize, fr: &FrameRow, t: &Theme) -> Vec<Vec<Span<'a>>> {
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
    let mut groups = vec![
        vec![
            Span::styled(format!(" r{at} "), t.key),
            Span::styled("tok ", t.dim),
            Span::styled(
                format!("{}/{} ", short(fr.tokens as f64), short(fr.budget as f64)),
                t.base,
            ),
            Span::styled(gauge, gauge_style),
            Span::styled(format!(" {:.0}%", p * 100.0), gauge_style),
        ],
        // The context pane's words: the prefix kept from the previous request, the rest redone.
        [
            kv(t, "kept", short(fr.divergence as f64)),
            vec![Span::raw(" ")],
            kv(t, "redo", short(fr.radius as f64)),
        ]
        .concat(),
        [
            kv(t, "cache read", short(fr.cache_read as f64)),
            vec![Span::raw(" ")],
            kv(t, "write", short(fr.cache_write as f64)),
        ]
        .concat(),
    ];
    let mut moves = [
        kv(t, "chg", fr.changes.to_string()),
        vec![Span::raw(" ")],
        kv(t, "wait", fr.deferred.to_string()),
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
            Span::raw(" "),
            Span::styled("emerg ", t.dim),
            Span::styled(
                fr.emergencies.to_string(),
                if fr.emergencies > 0 { t.warn } else { t.base },
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
    groups.push(
        [
            kv(t, "$", format!("{:.4}", fr.cost)),
            vec![Span::raw(" ")],
            kv(t, "so far", format!("{:.4}", fr.cum_cost)),
        ]
        .concat(),
    );
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
    groups
}

/// The run's totals in groups by unit (changes; episode × request pairs, as the heatmap marks
/// them; requests), each `before→after` when it moved since the baseline (what was on screen
/// before the last edits, named with its budget); then the summary's cost and cache hit ratio.
fn totals_groups<'a>(state: &State, r: &ReplayModel, t: &Theme) -> Vec<Vec<Span<'a>>> {
    let base = state.on_screen.differing_baseline();
    let before = base.and_then(|b| b.totals);
    let was = before.map(|b| b.groups());
    let mut groups = Vec::new();
    for (g, (unit, items)) in r.totals.groups().iter().enumerate() {
        let mut run = Vec::new();
        if g == 0 {
            run.push(Span::styled(" run ", t.key));
        }
        for (i, (name, v)) in items.iter().enumerate() {
            let old = was.as_ref().map(|w| w[g].1[i].1);
            let moved = old.is_some_and(|o| o != *v);
            if i > 0 {
                run.push(Span::raw(" "));
            }
            run.push(Span::styled(format!("{name} "), t.dim));
            run.push(Span::styled(
                before_after(old, *v),
                if moved { t.key } else { t.base },
            ));
        }
        run.push(Span::styled(format!(" {unit}"), t.dim));
        groups.push(run);
    }
    if let Some(b) = base {
        if before.is_some_and(|b| b != r.totals) {
            groups.push(vec![Span::styled(
                format!("(baseline {} → now)", b.name()),
                t.dim,
            )]);
        }
    }
    for (k, v) in &r.summary {
        if k == "cost" || k == "cache hit" {
            groups.push(kv(t, k, v.clone()));
        }
    }
    groups
}
