//! The views of a canonical record (`--tiers record`), rendered deterministically: the same record
//! gives the same bytes, and no view holds a word the record lacks.
//!
//! - **dense**: every field: objective, outcome, constraints, decisions with rationale, rejected
//!   alternatives with the approach, the killing evidence (its rule), the reason and the revert,
//!   failures, status changes, open questions and unverified claims, subsystems, files, line
//!   references, identifiers, the narrative steps; each fact cites its message and tool call.
//! - **compact**: the outcome, constraints, decisions with rationale, rejected alternatives with
//!   their killing evidence, the other conclusive failures, status changes, open questions and
//!   unverified claims (uncertainty rides with its claim), canonical names (subsystems, files
//!   without line numbers, the names the texts use); each fact cites its message.
//! - **anchor**: one line: episode id, title, a short outcome, the critical invariant (the
//!   pinned spans verbatim and the first rejected alternative with what killed it; else the first
//!   decision), a few canonical names, the source message, and which fields it leaves out.
//!
//! Fading follows MODEL §5: the narrative goes first (dense only), line numbers go before files
//! and subsystems (compact keeps files), provenance rides with its fact (a fact shown cites its
//! message; call ids fade with the detail). Each view shows a subset of the fields of the one
//! above, each item as a substring of its rendering there, so the views nest by construction.
//! Citations are written `[@id …]`; the tier audit checks that each names a message, part or call
//! of the episode.

use super::evidence::FailureKind;
use super::model::Tier;
use super::record::{Cite, EpisodeRecord, Evidence, RejectionRule, StepKind};
use super::tiers::{episode_chunk, Draft};
use crate::text::clip_chars;

pub use super::tiers::RECORD_GENERATOR;

/// At most this many canonical names in compact and anchor (the same ordered list: a prefix).
const COMPACT_NAMES: usize = 24;
const ANCHOR_NAMES: usize = 6;
const ANCHOR_OUTCOME: usize = 100;
const ANCHOR_APPROACH: usize = 80;

/// What each view promises (the representation's survival contract).
pub fn contract(tier: Tier) -> &'static str {
    match tier {
        Tier::Full => "every message as sent; pinned spans verbatim",
        Tier::Dense => "every field of the canonical record, each fact with its message and call ids; pinned spans verbatim",
        Tier::Compact => "outcome, constraints verbatim, decisions with rationale, rejected alternatives with their killing evidence, conclusive failures, status, uncertainty, canonical names (no line numbers); each fact with its message id",
        Tier::Anchor => "one line: episode id, title, short outcome, critical invariant (pinned spans verbatim, the first rejected alternative and what killed it), canonical names, source message, what it leaves out",
        Tier::Dropped => "nothing",
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum View {
    Dense,
    Compact,
}

/// `[@message]`, or `[@message @call]` in dense when the fact is a tool call's.
fn cite(c: &Cite, v: View) -> String {
    match (&c.call_id, v) {
        (Some(call), View::Dense) => format!("[@{} @{call}]", c.message_id),
        _ => format!("[@{}]", c.message_id),
    }
}

fn push(out: &mut String, s: &str) {
    out.push('\n');
    out.push_str(s);
}

/// A section of facts: `label:` and one `- item` line each. When every item has the same
/// citation it is written once, on the label (`status [@msg_…]:`), else on each item.
fn section(out: &mut String, label: &str, items: &[(String, &Cite)], v: View) {
    let Some((_, first)) = items.first() else {
        return;
    };
    let shared = items.iter().all(|(_, c)| cite(c, v) == cite(first, v));
    if shared && items.len() > 1 {
        push(out, &format!("{label} {}:", cite(first, v)));
        for (t, _) in items {
            push(out, &format!("- {t}"));
        }
    } else {
        push(out, &format!("{label}:"));
        for (t, c) in items {
            push(out, &format!("- {t} {}", cite(c, v)));
        }
    }
}

fn evidence_core(e: &Evidence) -> String {
    let what = match e.exit {
        Some(c) => format!("{} exit {c}", e.tool),
        None if e.failed => format!("{} error", e.tool),
        None => e.tool.clone(),
    };
    format!(
        "killed by `{}` ({what}): {}",
        e.command,
        super::evidence::quote_with_reasons(&e.line, &e.reasons)
    )
}

/// The canonical names, most telling first: the subsystems, the files (no line numbers), then
/// the names and exact identifiers the texts use, without whitespace.
fn canonical_names(r: &EpisodeRecord) -> Vec<&str> {
    // A file as a tool was called with it (absolute) is listed once, relative.
    let is_a_file = |t: &str| {
        t.starts_with('/')
            && r.locations
                .files
                .iter()
                .any(|f| t.len() > f.path.len() && t.ends_with(&format!("/{}", f.path)))
    };
    let all = r
        .locations
        .subsystems
        .iter()
        .chain(r.locations.files.iter().map(|f| &f.path))
        .chain(
            r.identifiers
                .iter()
                .filter(|i| i.in_text && !is_a_file(&i.text))
                .map(|i| &i.text),
        );
    let mut v: Vec<&str> = Vec::new();
    for s in all {
        if !s.is_empty() && !s.contains(char::is_whitespace) && !v.contains(&s.as_str()) {
            v.push(s);
        }
    }
    v
}

fn list(out: &mut String, label: &str, items: &[&str]) {
    if !items.is_empty() {
        push(out, &format!("{label}: {}", items.join(", ")));
    }
}

/// The dense or compact view.
fn body(r: &EpisodeRecord, v: View) -> String {
    let dense = v == View::Dense;
    let mut out = format!(
        "[{} record {}] {}",
        r.episode_id,
        if dense { "dense" } else { "compact" },
        r.title
    );
    if dense {
        if let Some(o) = &r.objective {
            push(
                &mut out,
                &format!("objective: {} {}", o.text, cite(&o.cite, v)),
            );
        }
    }
    if let Some(o) = &r.outcome {
        push(
            &mut out,
            &format!("outcome: {} {}", o.text, cite(&o.cite, v)),
        );
    }
    let items: Vec<(String, &Cite)> = r
        .constraints
        .iter()
        .map(|c| (c.text.clone(), &c.cite))
        .collect();
    section(&mut out, "constraints (verbatim)", &items, v);
    let items: Vec<(String, &Cite)> = r
        .decisions
        .iter()
        .map(|d| {
            // A rationale inside the decision's sentence is not repeated.
            let why = d
                .rationale
                .as_ref()
                .filter(|x| !d.text.contains(x.text.as_str()))
                .map_or_else(String::new, |x| format!(" — rationale: {}", x.text));
            (format!("{}{why}", d.text), &d.cite)
        })
        .collect();
    section(&mut out, "decisions", &items, v);
    if !r.rejected.is_empty() {
        push(&mut out, "rejected:");
        for x in &r.rejected {
            let approach =
                super::facts::approach_name(x.approach.as_ref().map(|a| a.text.as_str()), &x.files);
            let at = x.approach.as_ref().map_or(&x.cite, |a| &a.cite);
            push(&mut out, &format!("- {approach} {}", cite(at, v)));
            if dense && !x.files.is_empty() {
                push(&mut out, &format!("  edited: {}", x.files.join(", ")));
            }
            if x.rule == RejectionRule::Stated {
                push(&mut out, "  stated in words, no failing command");
                continue;
            }
            match &x.killed_by {
                Some(e) if dense => push(
                    &mut out,
                    &format!(
                        "  {} (rule: {}) {}",
                        evidence_core(e),
                        e.rule.as_str(),
                        cite(&e.cite, v)
                    ),
                ),
                Some(e) => push(
                    &mut out,
                    &format!("  {} {}", evidence_core(e), cite(&e.cite, v)),
                ),
                None => push(
                    &mut out,
                    "  killed by: no failing command (the reason below is the assistant's)",
                ),
            }
            // Without killing evidence the reason is all there is: compact keeps it.
            if let Some(why) = x.reason.as_ref().filter(|_| dense || x.killed_by.is_none()) {
                push(
                    &mut out,
                    &format!("  reason: {} {}", why.text, cite(&why.cite, v)),
                );
            }
            if let Some(rv) = x.revert.as_ref().filter(|_| dense) {
                push(
                    &mut out,
                    &format!("  reverted with `{}` {}", rv.text, cite(&rv.cite, v)),
                );
            }
        }
    }
    let killing: Vec<&Cite> = r
        .rejected
        .iter()
        .filter_map(|x| x.killed_by.as_ref().map(|e| &e.cite))
        .collect();
    let failures: Vec<_> = r
        .failures
        .iter()
        .filter(|f| dense || (f.kind == FailureKind::Verdict && !killing.contains(&&f.cite)))
        .collect();
    let items: Vec<(String, &Cite)> = failures
        .iter()
        .map(|f| {
            let what = match f.exit {
                Some(c) => format!("{} exit {c}", f.tool),
                None => format!("{} error", f.tool),
            };
            // Compact's line is a prefix of dense's: the views nest line by line.
            let kind = if dense {
                format!(" ({})", f.kind.as_str())
            } else {
                String::new()
            };
            (
                format!("`{}` ({what}): \"{}\"{kind}", f.command, f.line),
                &f.cite,
            )
        })
        .collect();
    section(&mut out, "failures", &items, v);
    let items: Vec<(String, &Cite)> = r
        .status
        .iter()
        .map(|s| (format!("{}: {} → {}", s.item, s.from, s.to), &s.cite))
        .collect();
    section(&mut out, "status", &items, v);
    for (label, list) in [
        ("open", &r.uncertainty.open_questions),
        ("unverified", &r.uncertainty.unverified),
    ] {
        let items: Vec<(String, &Cite)> = list.iter().map(|s| (s.text.clone(), &s.cite)).collect();
        section(&mut out, label, &items, v);
    }
    if dense {
        let subs: Vec<&str> = r.locations.subsystems.iter().map(String::as_str).collect();
        list(&mut out, "subsystems", &subs);
        let files: Vec<&str> = r.locations.files.iter().map(|f| f.path.as_str()).collect();
        list(&mut out, "files", &files);
        let lines: Vec<&str> = r.locations.lines.iter().map(|l| l.text.as_str()).collect();
        list(&mut out, "lines", &lines);
        let ids: Vec<&str> = r.identifiers.iter().map(|i| i.text.as_str()).collect();
        list(&mut out, "identifiers", &ids);
        // The narrative: one line per message, its steps in order; the facts above carry the
        // call ids.
        if !r.steps.is_empty() {
            push(&mut out, "steps:");
            let mut k = 0;
            while k < r.steps.len() {
                let id = &r.steps[k].cite.message_id;
                let n = r.steps[k..]
                    .iter()
                    .take_while(|s| &s.cite.message_id == id)
                    .count();
                let parts: Vec<String> = r.steps[k..k + n]
                    .iter()
                    .map(|s| match (&s.kind, &s.result) {
                        (StepKind::User, _) => format!("user: {}", s.text),
                        (_, Some(res)) => format!("{} → {res}", s.text),
                        (_, None) => s.text.clone(),
                    })
                    .collect();
                push(&mut out, &format!("- [@{id}] {}", parts.join("; ")));
                k += n;
            }
        }
    } else {
        let names = canonical_names(r);
        let n = names.len().min(COMPACT_NAMES);
        let mut shown: Vec<&str> = names[..n].to_vec();
        if names.len() > n {
            // No count: a number the source does not hold would read as a claim about it.
            shown.push("…");
        }
        list(&mut out, "names", &shown);
        let mut omitted = vec!["objective", "steps"];
        if !r.locations.lines.is_empty() {
            omitted.push("line numbers");
        }
        if r.rejected
            .iter()
            .any(|x| x.reason.is_some() && x.killed_by.is_some())
        {
            omitted.push("rejection reasons");
        }
        omitted.push("call ids");
        push(&mut out, &format!("omitted: {}", omitted.join(", ")));
    }
    push(&mut out, &source_line(r));
    out
}

fn source_line(r: &EpisodeRecord) -> String {
    let p = &r.provenance;
    if p.first_message_id == p.last_message_id {
        format!("source: [@{}]", p.first_message_id)
    } else {
        format!(
            "source: [@{}] .. [@{}]",
            p.first_message_id, p.last_message_id
        )
    }
}

/// A prefix of `s` of at most `max` chars, cut at a space, with "…" when cut.
fn clip_words(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let c = clip_chars(s, max);
    let head = c.trim_end_matches('…');
    match head.rfind(' ') {
        Some(k) if k > max / 2 => format!("{}…", &head[..k]),
        _ => c,
    }
}

/// The anchor: one line (plus the pinned spans, which are its invariant).
fn anchor(r: &EpisodeRecord) -> String {
    let mut s = format!("[{} record anchor] {}", r.episode_id, r.title);
    if let Some(o) = &r.outcome {
        s.push_str(&format!(" — {}", clip_words(&o.text, ANCHOR_OUTCOME)));
    }
    // The critical invariant is every pinned span, and the first rejected alternative with what
    // killed it: both are what a later step must not undo or retry (the source anchor keeps
    // both too). Without either, the first decision stands in.
    let constraints = (!r.constraints.is_empty()).then(|| {
        r.constraints
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join(" / ")
    });
    let rejected = r.rejected.first().map(|x| {
        let approach = clip_words(
            &super::facts::approach_name(x.approach.as_ref().map(|a| a.text.as_str()), &x.files),
            ANCHOR_APPROACH,
        );
        match &x.killed_by {
            Some(e) => format!("not: {approach} — {}", evidence_core(e)),
            None => format!("not: {approach}"),
        }
    });
    let parts: Vec<String> = constraints.into_iter().chain(rejected).collect();
    let invariant = if parts.is_empty() {
        r.decisions.first().map(|d| clip_words(&d.text, 160))
    } else {
        Some(parts.join(" / "))
    };
    if let Some(i) = invariant {
        s.push_str(&format!(" · invariant: {i}"));
    }
    let names = canonical_names(r);
    if !names.is_empty() {
        let n = names.len().min(ANCHOR_NAMES);
        s.push_str(&format!(" · names: {}", names[..n].join(", ")));
        if names.len() > n {
            s.push_str(", …");
        }
    }
    s.push_str(&format!(" · source: [@{}]", r.provenance.first_message_id));
    let mut omitted: Vec<&str> = Vec::new();
    let mut has = |present: bool, name: &'static str| {
        if present {
            omitted.push(name);
        }
    };
    has(!r.decisions.is_empty(), "decisions");
    // The first rejected alternative is the invariant's; the others are left out.
    has(r.rejected.len() > 1, "other rejected");
    has(!r.failures.is_empty(), "failures");
    has(!r.status.is_empty(), "status");
    has(
        !r.uncertainty.open_questions.is_empty() || !r.uncertainty.unverified.is_empty(),
        "uncertainty",
    );
    has(
        !r.locations.files.is_empty() || !r.locations.lines.is_empty(),
        "locations",
    );
    has(!r.steps.is_empty(), "steps");
    if !omitted.is_empty() {
        s.push_str(&format!(" · omitted: {}", omitted.join(", ")));
    }
    s
}

/// The text of one view (`Full` has none: it is the messages).
pub fn render(r: &EpisodeRecord, tier: Tier) -> Option<String> {
    match tier {
        Tier::Dense => Some(body(r, View::Dense)),
        Tier::Compact => Some(body(r, View::Compact)),
        Tier::Anchor => Some(anchor(r)),
        Tier::Full | Tier::Dropped => None,
    }
}

/// `full` (the episode's full tier, strategy `Record`) and the record's three views, one chunk
/// each. Neither pins nor needles are patched in afterwards: the views hold them by construction
/// (the tests check it).
pub fn drafts(full: Draft, r: &EpisodeRecord) -> Vec<Draft> {
    let mut v = Vec::with_capacity(4);
    let views: Vec<Draft> = [Tier::Dense, Tier::Compact, Tier::Anchor]
        .into_iter()
        .filter_map(|t| render(r, t).map(|text| episode_chunk(&full, t, text, contract(t))))
        .collect();
    v.push(full);
    v.extend(views);
    v
}
