//! The header line: the request cursor (`r12/671`) and its time, policy (for `opencode`, the
//! trigger that ran and where it compacted) and its key knobs, budget (and where it came from:
//! set, the session's or the model's limit, or assumed), assumed prices (which ones), and the
//! session's title. Narrower, it says less (abbreviated knobs, no clock) before the title goes.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::tui::app::State;
use crate::tui::main::speed_label;
use crate::tui::ui::{clock, thousands};
use crate::tui::widgets::chart::short;

/// The knobs worth a place in the header for a policy: those overridden, then the kind's main ones.
pub fn key_knobs(state: &State) -> Vec<String> {
    let p = &state.on_screen.policy;
    let mut names: Vec<&str> = p.overridden.iter().map(String::as_str).collect();
    for m in p.headline_knobs() {
        if !names.contains(m) && p.knobs.contains_key(*m) {
            names.push(m);
        }
    }
    names
        .iter()
        .take(5)
        .filter_map(|n| p.knobs.get(*n).map(|v| format!("{n}={v}")))
        .collect()
}

/// How much the header says: the most on a wide terminal, then less until the session's
/// title keeps some room (lazygit and btop at 80×24 are the bar).
#[derive(Clone, Copy)]
struct Detail {
    brand: bool,
    time: bool,
    compaction: bool,
    /// At most this many knobs, abbreviated or not.
    knobs: usize,
    abbrev: bool,
    budget_src: bool,
}

const DETAILS: [Detail; 5] = [
    Detail {
        brand: true,
        time: true,
        compaction: true,
        knobs: 5,
        abbrev: false,
        budget_src: true,
    },
    Detail {
        brand: false,
        time: true,
        compaction: true,
        knobs: 4,
        abbrev: false,
        budget_src: true,
    },
    Detail {
        brand: false,
        time: false,
        compaction: true,
        knobs: 4,
        abbrev: true,
        budget_src: true,
    },
    Detail {
        brand: false,
        time: false,
        compaction: true,
        knobs: 4,
        abbrev: true,
        budget_src: false,
    },
    Detail {
        brand: false,
        time: false,
        compaction: false,
        knobs: 2,
        abbrev: true,
        budget_src: false,
    },
];

/// The header's spans before the title, at detail `d` (`title` cells kept for the title), and
/// whether they say which prices were assumed (when the costs use assumed prices).
fn lead<'a>(state: &State, d: Detail, width: usize, title: usize) -> (Vec<Span<'a>>, bool) {
    let t = &state.theme;
    let sep = || Span::styled(" │ ", t.header);
    let mut spans = Vec::new();
    if d.brand {
        spans.push(Span::styled(" tierscope", t.header));
        spans.push(sep());
    } else {
        spans.push(Span::styled(" ", t.header));
    }
    let n = state.requests();
    let cursor = state.main.cursor;
    let time = state
        .session
        .as_ref()
        .and_then(|s| s.model.requests.get(cursor))
        .map(|r| clock(r.time))
        .unwrap_or_default();
    let at = if n == 0 && state.session.is_some() {
        "no requests yet".to_owned()
    } else if d.time {
        format!("r{cursor}/{} {time}", n.saturating_sub(1))
    } else {
        format!("r{cursor}/{}", n.saturating_sub(1))
    };
    spans.push(Span::styled(at, t.header));
    if state.main.playing {
        let speed = speed_label(state.main.speed);
        spans.push(Span::styled(format!(" ▶ {speed}"), t.header));
    }
    if state.on_screen.pending {
        spans.push(Span::styled(" replaying…", t.header));
    }
    spans.push(sep());
    let policy = &state.on_screen.policy.name;
    let policy = if d.time {
        format!("policy {policy}")
    } else {
        policy.clone()
    };
    spans.push(Span::styled(policy, t.header));
    // `opencode`: which trigger ran (with `auto`, the budget decides) and where it compacted,
    // before the knobs: it says what the replay on screen is.
    if let Some(c) = state
        .on_screen
        .replay
        .as_deref()
        .and_then(|r| r.compaction.as_deref())
        .filter(|_| d.compaction)
    {
        spans.push(Span::styled(format!(" [{c}]"), t.header));
    }
    let knobs: Vec<String> = key_knobs(state)
        .into_iter()
        .take(d.knobs)
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if d.abbrev => {
                // 0.9 → .9: the values stay whole, only their zeros go.
                let v = v
                    .strip_prefix("0.")
                    .map_or(v.to_owned(), |f| format!(".{f}"));
                let p = &state.on_screen.policy;
                let short = p.spec(k).map_or(k, |s| s.short_name());
                format!("{short}={v}")
            }
            _ => kv,
        })
        .collect();
    if !knobs.is_empty() {
        spans.push(Span::styled(format!(" ({})", knobs.join(" ")), t.header));
    }
    let b = state.on_screen.effective_budget();
    let replay = state.on_screen.replay.as_deref();
    let src = match (&state.on_screen.budget, replay) {
        (Some(_), _) => "set",
        (None, Some(r)) => r.budget_origin(),
        (None, None) => "…",
    };
    spans.push(sep());
    let st = if src == "assumed" { t.warn } else { t.header };
    let budget = if d.budget_src {
        format!("budget {} ({src})", thousands(b))
    } else {
        format!("budget {}", short(b as f64))
    };
    spans.push(Span::styled(budget, st));
    // Prices the pricing table does not know are an assumption: say so, and which prices (the
    // CLI does too).
    let mut which = true;
    if let Some(r) = replay.filter(|r| r.pricing_note.is_some()) {
        let used: usize = spans.iter().map(|s| s.width()).sum();
        let long = format!("prices assumed: {} (model not in the table)", r.prices);
        let mid = format!("prices assumed: {}", r.prices);
        // A warning: at least its short form (less detail elsewhere makes room for it).
        let text = [long, mid]
            .into_iter()
            .find(|p| used + 3 + p.chars().count() + 3 + title <= width);
        which = text.is_some();
        let text = text.unwrap_or_else(|| "prices assumed".to_owned());
        spans.push(sep());
        spans.push(Span::styled(text, t.warn));
    }
    (spans, which)
}

pub fn render(state: &State, f: &mut Frame, area: Rect) {
    let t = &state.theme;
    let width = usize::from(area.width);
    // Inside a sub-agent: the parents' titles first, shortened to "… › " before the shown
    // session's own title is.
    let own = state
        .session
        .as_ref()
        .map_or(String::new(), |s| s.model.title.clone());
    let parents: String = state
        .main
        .stack
        .iter()
        .map(|c| format!("{} › ", c.title))
        .collect();
    let full_title = (parents.chars().count() + own.chars().count()).min(40);
    // The title keeps at least this much room (all of a short one).
    let title_min = full_title.min(16);
    let used = |spans: &[Span]| spans.iter().map(|s| s.width()).sum::<usize>();
    // Which prices were assumed matters more than the clock or the brand: a level that says
    // them first, else the first that fits.
    let mut spans = Vec::new();
    'fit: for need_which in [true, false] {
        for d in DETAILS {
            let (s, which) = lead(state, d, width, title_min);
            spans = s;
            if used(&spans) + 3 + title_min <= width && (which || !need_which) {
                break 'fit;
            }
        }
    }
    let room = width.saturating_sub(used(&spans) + 3);
    let title = if parents.chars().count() + own.chars().count() <= room || parents.is_empty() {
        parents + &own
    } else {
        format!("… › {own}")
    };
    if !title.is_empty() && room >= 8 {
        spans.push(Span::styled(" │ ", t.header));
        spans.push(Span::styled(
            tierscope_engine::text::clip_chars(&title, room),
            t.header,
        ));
    }
    let line = Line::from(spans).style(t.header);
    f.render_widget(Paragraph::new(line).style(t.header), area);
}
