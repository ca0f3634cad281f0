//! Prepares engine output as the view-models ([`crate::tui::view_model`]) the views read. Runs
//! on the worker thread, once per load or replay, so `draw` never walks the engine's structures
//! or sanitizes text.

use std::collections::HashMap;

use crate::tui::view_model::{
    cell, ChildRef, EpisodeRow, Grid, RequestRow, SessionEntry, SessionModel, TailSpan, TierText,
};
use crate::tui::{safe_line, safe_text};
use tierscope_engine::episode::model::Tier;
use tierscope_engine::session::LoadedSession;
use tierscope_engine::trace::load::SessionSummary;
use tierscope_engine::trace::model::UserKind;

/// Prepares a loaded session for display.
pub fn session_model(l: &LoadedSession) -> SessionModel {
    let trace = &l.trace;
    let info = &trace.session;
    let mut requests = Vec::with_capacity(trace.requests.len());
    let mut user_turns = Vec::new();
    let mut prev_user: Option<&str> = None;
    // Episode of each request by a walk in step (both are in time order).
    let mut ep = 0usize;
    for r in &trace.requests {
        while ep < l.episodes.len() && l.episodes[ep].last_message < r.message_index {
            ep += 1;
        }
        let episode = l
            .episodes
            .get(ep)
            .filter(|e| e.first_message <= r.message_index)
            .map(|_| ep);
        let user = r.user_message_id.as_deref();
        if user.is_some() && user != prev_user {
            let human = user
                .and_then(|id| trace.message(id))
                .is_some_and(|m| m.user_kind == Some(UserKind::Human));
            if human {
                user_turns.push(r.index);
            }
        }
        prev_user = user;
        requests.push(RequestRow {
            time: r.time_created,
            status: r.status.as_str(),
            synthetic: r.synthetic_call,
            recorded_prompt: r.recorded_prompt(),
            recorded_cost: r.cost,
            episode,
        });
    }
    let mut compactions: Vec<usize> = trace
        .compactions
        .iter()
        .filter_map(|c| c.summary_request)
        .collect();
    compactions.sort_unstable();
    compactions.dedup();
    let children: HashMap<&str, &LoadedSession> = l
        .children
        .iter()
        .map(|c| (c.trace.session.id.as_str(), c))
        .collect();
    let episodes = l
        .episodes
        .iter()
        .map(|e| episode_row(e, &children))
        .collect();
    let model = info
        .model
        .as_ref()
        .map(|m| format!("{}/{}", m.provider_id, m.model_id))
        .unwrap_or_default();
    let title = if info.title.trim().is_empty() {
        info.id.clone()
    } else {
        info.title.clone()
    };
    SessionModel {
        id: info.id.clone(),
        title: safe_line(&title),
        directory: safe_line(&info.directory),
        model: safe_line(&model),
        parent_id: info.parent_id.clone(),
        requests,
        episodes,
        user_turns,
        compactions,
        notes: l
            .warnings
            .iter()
            .map(|w| safe_line(w))
            .chain(
                l.calibration
                    .iter()
                    .filter(|c| c.applied)
                    .map(|c| safe_line(&c.describe())),
            )
            .collect(),
    }
}

fn episode_row(
    e: &tierscope_engine::episode::model::Episode,
    sessions: &HashMap<&str, &LoadedSession>,
) -> EpisodeRow {
    let mut haystack = e.title.to_lowercase();
    let tiers: Vec<TierText> = Tier::TIERS
        .iter()
        .filter_map(|t| {
            let rep = e.representation(*t)?;
            let text = safe_text(&rep.text());
            haystack.push('\n');
            haystack.push_str(&text.to_lowercase());
            Some(TierText {
                tier: *t,
                tokens: u64::from(rep.tokens),
                lines: text.lines().map(str::to_owned).collect(),
            })
        })
        .collect();
    EpisodeRow {
        id: e.id.clone(),
        title: safe_line(&e.title),
        kinds: e
            .kinds
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(","),
        class: e.class.as_str(),
        floor: e.floor,
        class_reasons: e.class_reasons.iter().map(|r| safe_line(r)).collect(),
        floor_reasons: e.floor_reasons.iter().map(|r| safe_line(r)).collect(),
        pins: e
            .pins
            .iter()
            .map(|p| (safe_line(&p.reason), safe_line(&p.text)))
            .collect(),
        tiers,
        tier_notes: e.tier_notes.iter().map(|n| safe_line(n)).collect(),
        children: e
            .children
            .iter()
            .map(|id| {
                let s = sessions.get(id.as_str());
                let title = s
                    .map(|s| s.trace.session.title.trim())
                    .filter(|t| !t.is_empty())
                    .unwrap_or(id);
                ChildRef {
                    id: id.clone(),
                    title: safe_line(title),
                    requests: s.map(|s| s.trace.requests.len()),
                }
            })
            .collect(),
        first_request: e.first_request,
        last_request: e.last_request,
        haystack,
    }
}

/// The picker's rows: sessions newest first, each followed by its sub-agent sessions (indented).
pub fn session_entries(list: &[SessionSummary]) -> Vec<SessionEntry> {
    let by_id: HashMap<&str, &SessionSummary> = list.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut parent_of: HashMap<&str, &str> = HashMap::new();
    for s in list {
        if let Some(p) = s.parent_id.as_deref().filter(|p| by_id.contains_key(p)) {
            parent_of.insert(s.id.as_str(), p);
        }
        for c in &s.children {
            if by_id.contains_key(c.as_str()) && c != &s.id {
                parent_of.entry(c.as_str()).or_insert(s.id.as_str());
            }
        }
    }
    let mut out = Vec::with_capacity(list.len());
    let mut seen = std::collections::HashSet::new();
    fn push<'a>(
        s: &'a SessionSummary,
        depth: usize,
        list: &'a [SessionSummary],
        parent_of: &HashMap<&'a str, &'a str>,
        seen: &mut std::collections::HashSet<&'a str>,
        out: &mut Vec<SessionEntry>,
    ) {
        if !seen.insert(s.id.as_str()) || depth > 8 {
            return;
        }
        let u = &s.tokens;
        out.push(SessionEntry {
            agent: s.agent,
            id: s.id.clone(),
            title: safe_line(if s.title.trim().is_empty() {
                &s.id
            } else {
                &s.title
            }),
            directory: safe_line(&s.directory),
            updated: s.updated,
            requests: s.requests,
            tokens: u
                .input
                .saturating_add(u.output)
                .saturating_add(u.cache_read)
                .saturating_add(u.cache_write),
            parent_id: s.parent_id.clone(),
            depth,
        });
        for c in list
            .iter()
            .filter(|c| parent_of.get(c.id.as_str()) == Some(&s.id.as_str()))
        {
            push(c, depth + 1, list, parent_of, seen, out);
        }
    }
    for s in list
        .iter()
        .filter(|s| !parent_of.contains_key(s.id.as_str()))
    {
        push(s, 0, list, &parent_of, &mut seen, &mut out);
    }
    // Anything left (a cycle in bad data) still shows, flat.
    for s in list {
        push(s, 0, list, &parent_of, &mut seen, &mut out);
    }
    out
}

/// A replay's applied tiers, `rows` episodes × `cols` requests, without marks; a closed episode
/// shown at `full` from a chunk on is [`cell::TAIL_ONLY`].
pub fn applied_grid(r: &tierscope_engine::replay::Replay, rows: usize, cols: usize) -> Grid {
    applied_grid_with(r, rows, cols, &tail_spans(r, rows))
}

/// [`applied_grid`] with the replay's tail spans already found.
fn applied_grid_with(
    r: &tierscope_engine::replay::Replay,
    rows: usize,
    cols: usize,
    tails: &[Vec<TailSpan>],
) -> Grid {
    use tierscope_engine::replay::Cell as RCell;
    let mut grid = Grid::new(rows, cols);
    // Span by span: the matrix keeps runs, and so does the grid.
    for ep in 0..rows.min(r.applied.episodes) {
        let spans: Vec<_> = r.applied.spans(ep).collect();
        for &(from, to, c) in &spans {
            let v = match c {
                RCell::Tier(t) => cell::TIER0 + t.depth() as u8,
                RCell::Active => cell::ACTIVE,
                RCell::Future => cell::NONE,
            };
            grid.set_state(ep, from, to, v);
        }
        // Where it is closed at `full` and shown from a chunk on (the active episode keeps
        // its own mark).
        for t in tails.get(ep).map(Vec::as_slice).unwrap_or(&[]) {
            let first = spans.partition_point(|s| s.1 < t.first);
            for &(from, to, c) in spans[first..].iter().take_while(|s| s.0 <= t.last) {
                if c == RCell::Tier(Tier::Full) {
                    grid.set_state(ep, from.max(t.first), to.min(t.last), cell::TAIL_ONLY);
                }
            }
        }
    }
    grid
}

/// Per episode: the spans of requests where a replay showed it (closed at `full`, or active)
/// only from a chunk on, one span per cut.
pub fn tail_spans(r: &tierscope_engine::replay::Replay, rows: usize) -> Vec<Vec<TailSpan>> {
    let mut out: Vec<Vec<TailSpan>> = vec![Vec::new(); rows];
    for req in 0..r.render_states.len() {
        for c in r.tail_only_cuts(req) {
            let Some(spans) = out.get_mut(c.episode) else {
                continue;
            };
            match spans.last_mut() {
                Some(l) if l.last + 1 == req && l.hidden == c.from && l.by == c.by => l.last = req,
                _ => spans.push(TailSpan {
                    first: req,
                    last: req,
                    hidden: c.from,
                    chunks: c.chunks,
                    hidden_tokens: c.hidden_tokens,
                    by: c.by,
                }),
            }
        }
    }
    out
}

/// Prepares one replay for display: the heatmap grid with its marks, per-request figures,
/// per-episode change histories and the jump lists.
pub fn replay_model(
    l: &LoadedSession,
    r: &tierscope_engine::replay::Replay,
    knobs: &tierscope_engine::policy::Policy,
) -> crate::tui::view_model::ReplayModel {
    use crate::tui::view_model::{ChangeRow, FrameRow, ReplayModel};
    use tierscope_engine::replay::Cell as RCell;

    let n_req = r.frames.len();
    let n_ep = l.episodes.len();
    let index: HashMap<&str, usize> = l
        .episodes
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let tail_only = tail_spans(r, n_ep);
    let mut grid = applied_grid_with(r, n_ep, n_req, &tail_only);
    let mut desired: Vec<Vec<(usize, usize, Tier)>> = vec![Vec::new(); n_ep];
    // Where the desired tier differs from the applied one: walk both episodes' spans together.
    for (ep, waits) in desired.iter_mut().enumerate().take(r.applied.episodes) {
        let applied: Vec<_> = r.applied.spans(ep).collect();
        for (from, to, dc) in r.desired.spans(ep) {
            let RCell::Tier(d) = dc else { continue };
            // The applied spans overlapping this one, each overlap marked where they differ.
            let first = applied.partition_point(|s| s.1 < from);
            for &(af, at, ac) in applied[first..].iter().take_while(|s| s.0 <= to) {
                let RCell::Tier(a) = ac else { continue };
                if a == d {
                    continue;
                }
                let (a, b) = (af.max(from), at.min(to).min(n_req.saturating_sub(1)));
                if a <= b {
                    grid.defer(ep, a, b);
                    waits.push((a, b, d));
                }
            }
        }
    }
    let price = &r.trace.pricing.price;
    let mut frames = Vec::with_capacity(n_req);
    let mut history: Vec<Vec<ChangeRow>> = vec![Vec::new(); n_ep];
    let mut holds_of: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n_ep];
    // Per episode: the request its current hold began at, while one runs.
    let mut hold_open: Vec<Option<usize>> = vec![None; n_ep];
    let (mut change_requests, mut hold_requests, mut thrash_requests) =
        (Vec::new(), Vec::new(), Vec::new());
    let (mut cum, mut rec_cum) = (0.0f64, 0.0f64);
    let (mut tokens_max, mut recorded_max) = (0u64, 0u64);
    let mut prev_tokens: Option<u64> = None;
    for (i, f) in r.frames.iter().enumerate() {
        cum += f.cost;
        let rc = &f.recorded;
        rec_cum += (rc.input as f64 * price.input
            + rc.cache_read as f64 * price.input * price.read_multiplier
            + rc.cache_write as f64 * price.input * price.write_multiplier
            + rc.output as f64 * price.output)
            / 1e6;
        tokens_max = tokens_max.max(f.tokens);
        recorded_max = recorded_max.max(rc.prompt);
        let cache_break = !f.synthetic_call && prev_tokens.is_some_and(|p| f.divergence < p);
        if !f.synthetic_call {
            prev_tokens = Some(f.tokens);
        }
        for c in &f.changes {
            let Some(&ep) = index.get(c.episode.as_str()) else {
                continue;
            };
            let mut bits = cell::CHANGE;
            if c.to < c.from {
                bits |= cell::PROMOTE;
            }
            // Thrash as the engine counted it (any reversal within the window), so the marks
            // and the counter are the same fact.
            if c.thrash {
                bits |= cell::THRASH;
            }
            grid.or(ep, i, bits);
            history[ep].push(ChangeRow {
                request: i,
                episode: ep,
                from: c.from,
                to: c.to,
                reason: c.reason.as_str().to_owned(),
                applied: c.applied.to_string(),
                thrash: c.thrash,
            });
        }
        // Holds as runs, from where each begins to where it ends (every held request is one
        // `holds` counts).
        for &ep in &f.hold_ends {
            if let Some(from) = hold_open.get_mut(ep).and_then(Option::take) {
                holds_of[ep].push((from, i.saturating_sub(1)));
            }
        }
        for &ep in &f.hold_starts {
            if let Some(open) = hold_open.get_mut(ep) {
                *open = Some(i);
            }
        }
        if !f.changes.is_empty() {
            change_requests.push(i);
        }
        if f.holds > 0 {
            hold_requests.push(i);
        }
        if f.thrash > 0 {
            thrash_requests.push(i);
        }
        frames.push(FrameRow {
            tokens: f.tokens,
            budget: f.budget,
            pressure: f.pressure,
            divergence: f.divergence,
            radius: f.radius,
            cache_read: f.cache_read,
            cache_write: f.cache_write,
            cost: f.cost,
            cum_cost: cum,
            recorded_cum_cost: rec_cum,
            changes: f.changes.len(),
            deferred: (f.deferred + f.dwell_blocks) as usize,
            holds: f.holds as usize,
            thrash: f.thrash as usize,
            emergencies: f.emergencies as usize,
            floor_violations: f.floor_violations as usize,
            pin_violations: f.pin_violations as usize,
            probes_ok: f.probes_ok as usize,
            probes_due: f.probes_due as usize,
            status: f.status.clone(),
            cache_break,
        });
    }
    for (ep, open) in hold_open.into_iter().enumerate() {
        if let Some(from) = open {
            holds_of[ep].push((from, n_req.saturating_sub(1)));
        }
    }
    for (ep, runs) in holds_of.iter().enumerate() {
        for &(a, b) in runs {
            grid.hold(ep, a, b);
        }
    }
    let thresholds = knobs.thresholds();
    let y_max = chart_top(r.policy.budget, tokens_max, recorded_max);
    let s = &r.summary;
    let mut summary = vec![
        ("cost".to_owned(), format!("${:.4}", s.cost)),
        (
            "cache hit".to_owned(),
            format!("{:.1}%", s.cache_hit_ratio * 100.0),
        ),
        ("changes".to_owned(), s.changes.to_string()),
        ("holds".to_owned(), s.holds.to_string()),
        ("thrash".to_owned(), s.thrash.to_string()),
        ("max overflow".to_owned(), s.max_overflow.to_string()),
    ];
    if let Some(p) = s.probe_survival {
        summary.push(("probe survival".to_owned(), format!("{:.1}%", p * 100.0)));
    }
    let pricing_note = r.trace.pricing.note.as_deref().map(safe_line);
    let mut notes: Vec<String> = pricing_note.iter().cloned().collect();
    let compaction = r.policy.compaction.as_ref().map(|c| safe_line(&c.short()));
    if let Some(c) = &r.policy.compaction {
        notes.push(safe_line(&format!("compaction: {}", c.describe())));
        let calls: f64 = r
            .frames
            .iter()
            .filter_map(|f| f.compaction_call.as_ref())
            .map(|c| c.cost)
            .sum();
        summary.push((
            "compactions".to_owned(),
            format!("{} (${calls:.4})", c.compactions.len()),
        ));
    }
    let peak_pressure = r.frames.iter().map(|f| f.pressure).fold(0.0, f64::max);
    let price = &r.trace.pricing.price;
    let prices = format!(
        "${} in, ${} out per M tok",
        tidy_price(price.input),
        tidy_price(price.output)
    );
    let (budget_warning, budget_warning_short) = match budget_warning(r) {
        Some((long, short)) => (Some(long), Some(short)),
        None => (None, None),
    };
    ReplayModel {
        policy: r.policy.name.clone(),
        budget: r.policy.budget,
        budget_source: safe_line(&r.policy.budget_source),
        frames,
        grid,
        desired,
        history,
        holds_of,
        any_tail_only: tail_only.iter().any(|s| !s.is_empty()),
        tail_only,
        change_requests,
        hold_requests,
        thrash_requests,
        y_max,
        data_max: tokens_max.max(recorded_max),
        cost_max: cum.max(rec_cum),
        demote_at: thresholds.map(|t| t.demote_at),
        promote_at: thresholds.map(|t| t.promote_at),
        target: thresholds.map(|t| t.target),
        summary,
        totals: crate::tui::totals::RunTotals::of(r),
        peak_pressure,
        pricing_note,
        prices,
        budget_warning,
        budget_warning_short,
        notes,
        compaction,
    }
}

/// A price as the header prints it: `1.25`, `10`.
fn tidy_price(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Why no schedule can keep `r` within its budget, if none can: the system chunk (which no
/// tier shrinks) alone is over it, or else every request went over it. In full and in a few
/// words.
pub fn budget_warning(r: &tierscope_engine::replay::Replay) -> Option<(String, String)> {
    use crate::tui::widgets::chart::short;
    let budget = r.policy.budget;
    if budget == 0 || r.frames.is_empty() {
        return None;
    }
    let system = r.trace.system_segments.iter().map(|s| s.tokens).max();
    if let Some(sys) = system.filter(|s| *s >= budget) {
        return Some((
            format!(
                "budget unmeetable: the system chunk alone is {} tok, over the budget {}: every request overflows (K raises it)",
                crate::tui::ui::thousands(sys),
                crate::tui::ui::thousands(budget)
            ),
            format!(
                "budget unmeetable: system {} > {}",
                short(sys as f64),
                short(budget as f64)
            ),
        ));
    }
    if r.frames.iter().all(|f| f.overflow > 0) {
        return Some((
            format!(
                "budget unmeetable: every request is over the budget {} (K raises it)",
                crate::tui::ui::thousands(budget)
            ),
            format!("budget unmeetable: all over {}", short(budget as f64)),
        ));
    }
    None
}

/// Replays the session and prepares the result.
pub fn run_replay(
    l: &LoadedSession,
    policy: &tierscope_engine::policy::Policy,
    budget: Option<u64>,
) -> (
    std::sync::Arc<tierscope_engine::replay::Replay>,
    crate::tui::view_model::ReplayModel,
) {
    let input = tierscope_engine::replay::Input::from(l);
    let r = tierscope_engine::replay::replay(&input, policy, budget);
    let model = replay_model(l, &r, policy);
    (std::sync::Arc::new(r), model)
}

/// The pressure chart's top: the budget band when the replayed context comes near the budget
/// (what the policy is judged against: the budget and its thresholds keep their rows however
/// large the recorded prompt was; bars and dots above the top are drawn as off the scale), else
/// the replayed context (a budget 20× the context would flatten every bar). The recorded prompt
/// sets the scale only when there is no budget.
pub fn chart_top(budget: u64, tokens_max: u64, recorded_max: u64) -> u64 {
    if budget > 0 && budget <= tokens_max.saturating_mul(2) {
        // Up to half the budget over it: an overflow (or a recorded prompt over the budget)
        // still reads as one.
        let top = tokens_max
            .max(recorded_max)
            .clamp(budget, budget + budget / 2);
        top + top / 20
    } else if budget > 0 {
        tokens_max + tokens_max / 7
    } else {
        let m = tokens_max.max(recorded_max);
        m + m / 7
    }
}

/// Longest chunk preview kept (the pane shows one line per chunk).
const PREVIEW_CHARS: usize = 400;

/// The rendered context at request `at` of `replay` (a replay of `policy` at `budget`), chunk
/// by chunk: read from the replay, not replayed again.
pub fn context_model(
    l: &LoadedSession,
    policy: &tierscope_engine::policy::Policy,
    budget: Option<u64>,
    replay: &tierscope_engine::replay::Replay,
    at: usize,
) -> Result<crate::tui::view_model::ContextModel, String> {
    use crate::tui::view_model::{ChunkRow, ContextModel};
    let input = tierscope_engine::replay::Input::from(l);
    let ctx = tierscope_engine::replay::render_replayed(&input, policy, budget, replay, &[at])
        .map_err(|e| e.to_string())?
        .pop()
        .ok_or_else(|| format!("request {at}: nothing rendered"))?;
    let chunks: Vec<ChunkRow> = ctx
        .chunks
        .iter()
        .map(|c| {
            let head: String = c.text.chars().take(PREVIEW_CHARS).collect();
            ChunkRow {
                label: c.episode.clone().unwrap_or_else(|| c.kind.clone()),
                tier: match (&c.tier, c.kind.as_str()) {
                    (_, "active") => "active".to_owned(),
                    (Some(t), _) => t.as_str().to_owned(),
                    (None, k) => k.to_owned(),
                },
                tokens: c.tokens,
                changed: c.changed_since_prev,
                preview: safe_line(head.trim_start()),
            }
        })
        .collect();
    let divergence_chunk = ctx.divergence_index.filter(|&d| d < chunks.len());
    let mut lines = Vec::new();
    let mut chunk_start = Vec::with_capacity(ctx.chunks.len());
    for (i, c) in ctx.chunks.iter().enumerate() {
        chunk_start.push(lines.len());
        for l in safe_text(&c.text).lines() {
            lines.push((i, l.to_owned()));
        }
    }
    Ok(ContextModel {
        request: ctx.request,
        divergence_chunk,
        divergence_tokens: ctx.divergence,
        total_tokens: ctx.tokens,
        note: ctx.note.as_deref().map(safe_line),
        chunks,
        lines,
        chunk_start,
        collapsed: Vec::new(),
        expanded: Vec::new(),
    }
    .with_rows())
}
