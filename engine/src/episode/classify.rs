//! Classification: for each segment its kinds, retention class, floor, the reasons for both
//! (quoting the evidence), pinned spans, relevance keys, and the facts the tier generators use.
//! Driven by `rules.toml` (embedded; `--rules FILE` replaces it). Deterministic: the same trace
//! and rules give the same result.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::evidence::{self, FailedCall};
use super::facts::{Attempt, Decision, Facts, Rejection};
use super::found::{At, DecisionRule, Failure, Rejected, RejectionRule, Sourced};
use super::model::{EpisodeKind, Pin, RetentionClass, Tier};
use super::prose::plain;
use super::reading::{
    assistant_prose, identifiers, path_like_tokens, push_unique, relative_to, sentence_spans,
    sentences, tool_command, tool_files,
};
use super::rules::Rules;
use super::segment::Segment;
use crate::text::clip_chars;
use crate::trace::{Message, PartKind, Trace, UserKind};

/// The classification of one segment.
#[derive(Debug, Clone, PartialEq)]
pub struct Classified {
    pub title: String,
    pub kinds: Vec<EpisodeKind>,
    pub class: RetentionClass,
    pub floor: Tier,
    pub class_reasons: Vec<String>,
    pub floor_reasons: Vec<String>,
    pub pins: Vec<Pin>,
    pub keys: Vec<String>,
    pub children: Vec<String>,
    pub facts: Facts,
}

/// Request index of each message (assistant messages only).
pub fn request_of_message(trace: &Trace) -> Vec<Option<usize>> {
    let mut v = vec![None; trace.messages.len()];
    for r in &trace.requests {
        if let Some(slot) = v.get_mut(r.message_index) {
            *slot = Some(r.index);
        }
    }
    v
}

/// Classify one segment by the rules (annotations are applied afterwards by the caller), with
/// the session's todo changes computed once by the caller (they cover the whole trace;
/// recomputing them per episode made classification quadratic).
pub fn classify_with_todos(
    trace: &Trace,
    seg: &Segment,
    rules: &Rules,
    req_of: &[Option<usize>],
    todos: &[super::segment::TodoChange],
) -> Classified {
    let msgs = &trace.messages[seg.first_message..=seg.last_message];
    let mut kinds: BTreeSet<EpisodeKind> = BTreeSet::new();
    let mut facts = Facts::default();

    // Structure.
    let first = opening_message(msgs);
    match first.user_kind {
        Some(UserKind::Human) => {
            kinds.insert(EpisodeKind::Turn);
        }
        Some(UserKind::ContinueAfterCompaction) | Some(UserKind::PromptReplayed) => {
            kinds.insert(EpisodeKind::Continuation);
        }
        _ => {}
    }
    let compaction_msg = msgs.iter().find(|m| m.compaction_part().is_some());
    if compaction_msg.is_some() {
        kinds.insert(EpisodeKind::Compaction);
    }
    let children: Vec<String> = trace
        .children
        .iter()
        .filter(|c| {
            trace
                .message_index(&c.message_id)
                .is_some_and(|i| i >= seg.first_message && i <= seg.last_message)
        })
        .map(|c| c.session_id.clone())
        .collect();
    let has_task = msgs
        .iter()
        .any(|m| m.tool_parts().any(|(_, t)| t.behaves_as() == "task"));
    if has_task || !children.is_empty() {
        kinds.insert(EpisodeKind::Subagent);
    }

    // Pins: sentences of human text that state a constraint.
    let mut pins = Vec::new();
    for m in msgs.iter().filter(|m| m.user_kind == Some(UserKind::Human)) {
        for p in &m.parts {
            if let PartKind::Text {
                text,
                ignored: false,
                synthetic: false,
                ..
            } = &p.kind
            {
                // Adjacent pinned sentences of one line form one span, so a constraint stated
                // in two sentences stays one verbatim piece.
                let mut spans: Vec<(usize, usize, usize, String)> = Vec::new(); // start, end, sentence no., rule
                for (k, (a, b)) in sentence_spans(text).into_iter().enumerate() {
                    let sent = &text[a..b];
                    if sent.chars().count() > rules.pin_max_chars {
                        continue;
                    }
                    let Some(re) = rules.pin_patterns.first_matching(sent) else {
                        continue;
                    };
                    match spans.last_mut() {
                        Some(last) if last.2 + 1 == k && !text[last.1..a].contains('\n') => {
                            last.1 = b;
                            last.2 = k;
                        }
                        _ => spans.push((a, b, k, re.as_str().to_owned())),
                    }
                }
                for (a, b, _, re) in spans {
                    let span = &text[a..b];
                    if span.chars().count() <= rules.pin_max_chars * 2 {
                        pins.push(Pin {
                            message_id: m.id.clone(),
                            text: span.to_owned(),
                            reason: format!("rule pins: matches /{re}/"),
                        });
                    }
                }
            }
        }
    }
    if !pins.is_empty() {
        kinds.insert(EpisodeKind::Constraint);
    }

    // Tools: investigation, edit, failures, files, commands.
    let mut tool_calls = 0usize;
    let mut keys = KeySet::new(rules.max_keys);
    for (off, m) in msgs.iter().enumerate() {
        let mi = seg.first_message + off;
        for p in &m.parts {
            // OpenCode does not send patch parts to the model: name their files the way the
            // model saw them, relative to the session directory.
            if let PartKind::FilesChanged { files, .. } = &p.kind {
                for f in files {
                    push_unique(&mut facts.files, relative_to(f, &trace.session.directory));
                }
            }
        }
        for (part_index, p, t) in m
            .parts
            .iter()
            .enumerate()
            .filter_map(|(k, p)| match &p.kind {
                PartKind::Tool(t) => Some((k, p, t)),
                _ => None,
            })
        {
            tool_calls += 1;
            let command = tool_command(t);
            if t.behaves_as() == "bash" {
                push_unique(
                    &mut facts.commands,
                    &clip_chars(first_line_of(&command), 160),
                );
                for tok in path_like_tokens(&command) {
                    keys.push(&tok);
                }
            }
            for f in tool_files(t) {
                keys.push(&f);
                if let Some(base) = Path::new(&f).file_name().and_then(|b| b.to_str()) {
                    if base != f {
                        keys.push(base);
                    }
                }
                push_unique(&mut facts.files, &f);
            }
            if rules
                .investigation_tools
                .iter()
                .any(|x| x == t.behaves_as())
                || (t.behaves_as() == "bash"
                    && rules
                        .investigation_commands
                        .iter()
                        .any(|r| r.is_match(&command)))
            {
                kinds.insert(EpisodeKind::Investigation);
            }
            if rules.edit_tools.iter().any(|x| x == t.behaves_as()) {
                kinds.insert(EpisodeKind::Edit);
            }
            if t.failed() {
                let d = evidence::decisive_line(evidence::result_text(t), rules);
                facts.failures.push(FailedCall {
                    failure: Failure {
                        tool: t.tool.clone(),
                        command: clip_chars(first_line_of(&command), 160),
                        exit: t.exit_code(),
                        kind: evidence::failure_kind(t, rules),
                        line: d.line,
                        cite: At {
                            message_index: mi,
                            part_id: p.id.clone(),
                            call_id: t.call_id.clone(),
                        },
                    },
                    part_index,
                    request: req_of.get(mi).copied().flatten(),
                    rank: d.rank,
                    reasons: d.reasons,
                });
            }
        }
    }
    if !facts.failures.is_empty() {
        kinds.insert(EpisodeKind::Failure);
    }

    // Rejections. A rejection event is an assistant step that reverts (a revert command) or
    // gives an approach up (a rejected phrase, in text or reasoning). It rejects the latest
    // failure before it that no earlier event claimed, if that failure is at most
    // `within_requests` requests back: that is detection. What killed the approach is chosen
    // among the results since the previous event by the evidence rule (`evidence`). The words
    // prefer what the assistant said (text over reasoning), plus the revert command.
    let steps = evidence::steps_of(msgs);
    let step_of = |f: &FailedCall| {
        evidence::step_of(&steps, f.message_index() - seg.first_message, f.part_index)
    };
    let mut claimed: Option<usize> = None; // failures in steps up to this one are spoken for
    for (si, st) in steps.iter().enumerate() {
        let m = &msgs[st.off];
        // A compaction summary restates earlier turns; its words give up nothing here.
        if m.summary {
            continue;
        }
        let mi = seg.first_message + st.off;
        let parts = &m.parts[st.parts.clone()];
        let revert = parts.iter().find_map(|p| {
            let PartKind::Tool(t) = &p.kind else {
                return None;
            };
            let c = tool_command(t);
            (t.behaves_as() == "bash" && rules.revert_commands.iter().any(|r| r.is_match(&c)))
                .then(|| (first_line_of(&c).to_owned(), t.call_id.clone()))
        });
        let phrase = |with_text: bool| {
            parts.iter().find_map(|p| {
                let text = match &p.kind {
                    PartKind::Text {
                        text,
                        ignored: false,
                        ..
                    } if with_text => text,
                    PartKind::Reasoning { text } if !with_text => text,
                    _ => return None,
                };
                sentences(text)
                    .into_iter()
                    .find(|s| rules.rejected_phrases.is_match(s))
                    .map(|s| (clip_chars(&plain(s), 200), p.id.clone()))
            })
        };
        let words = phrase(true).or_else(|| phrase(false));
        if revert.is_none() && words.is_none() {
            continue;
        }
        let here = req_of.get(mi).copied().flatten();
        let unclaimed = |f: &&FailedCall| {
            step_of(f).is_some_and(|fs| fs < si && claimed.is_none_or(|c| fs > c))
        };
        let killed =
            facts
                .failures
                .iter()
                .rev()
                .filter(unclaimed)
                .find(|f| match (f.request, here) {
                    (Some(a), Some(b)) => b.saturating_sub(a) <= rules.rejected_within_requests,
                    _ => true,
                });
        let Some(f) = killed.cloned() else { continue };
        let from = claimed.map_or(0, |c| c + 1);
        let candidates: Vec<&FailedCall> = facts.failures.iter().filter(unclaimed).collect();
        let killed_by = evidence::killing_evidence(
            msgs,
            seg.first_message,
            &steps,
            from,
            si,
            &candidates,
            rules,
        );
        let evidence_step = killed_by
            .as_ref()
            .and_then(|k| {
                let off = k.cite.message_index - seg.first_message;
                let part = msgs[off]
                    .parts
                    .iter()
                    .position(|p| p.id == k.cite.part_id)?;
                evidence::step_of(&steps, off, part)
            })
            .or_else(|| step_of(&f))
            .unwrap_or(si);
        let attempt = attempt(
            msgs,
            seg.first_message,
            &steps,
            (from, si, evidence_step),
            rules,
            &trace.session.directory,
        );
        let (reason_text, reason_part) = evidence::step_text(msgs, st);
        let reason = Some(super::prose::prose(&reason_text, 300))
            .filter(|r| !r.is_empty())
            .map(|r| (r, reason_part.unwrap_or_default().to_owned()));
        claimed = Some(si);
        let evidence = match (&words, &revert) {
            (Some((w, _)), Some((r, _))) => format!("\"{w}\"; reverted with `{r}`"),
            (Some((w, _)), None) => format!("\"{w}\""),
            (None, Some((r, _))) => format!("reverted with `{r}`"),
            (None, None) => continue,
        };
        let at = |part_id: &str, call_id: &str| At {
            message_index: mi,
            part_id: part_id.to_owned(),
            call_id: call_id.to_owned(),
        };
        facts.rejections.push(Rejection {
            found: Rejected {
                rule: RejectionRule::AfterFailure,
                approach: attempt.as_ref().and_then(|a| {
                    a.text.as_ref().map(|t| Sourced {
                        text: t.clone(),
                        cite: At {
                            message_index: a.message_index,
                            part_id: a.part_id.clone().unwrap_or_default(),
                            call_id: String::new(),
                        },
                    })
                }),
                files: attempt.map(|a| a.files).unwrap_or_default(),
                killed_by,
                reason: reason.map(|(text, part)| Sourced {
                    text,
                    cite: at(&part, ""),
                }),
                revert: revert.map(|(text, call)| Sourced {
                    text,
                    cite: at("", &call),
                }),
                cite: at("", ""),
            },
            failure: f,
            evidence,
            step: si,
            words,
        });
    }
    if !facts.rejections.is_empty() {
        kinds.insert(EpisodeKind::Rejected);
    }

    // Decisions: sentences of assistant text that state a choice (a compaction summary only
    // restates earlier ones).
    for (off, p, text) in assistant_prose(msgs) {
        for s in sentences(text) {
            if rules.decision_phrases.is_match(s) {
                let text = clip_chars(&plain(s), 300);
                if !facts.decisions.iter().any(|d| d.text == text) {
                    facts.decisions.push(Decision {
                        text,
                        rationale: None,
                        rule: DecisionRule::Phrase,
                        cite: At {
                            message_index: seg.first_message + off,
                            part_id: p.id.clone(),
                            call_id: String::new(),
                        },
                    });
                }
            }
        }
    }
    if !facts.decisions.is_empty() {
        kinds.insert(EpisodeKind::Decision);
    }

    // Chatter: talk only, short.
    let text_chars: usize = msgs.iter().map(|m| m.text().chars().count()).sum();
    if tool_calls == 0
        && pins.is_empty()
        && facts.failures.is_empty()
        && compaction_msg.is_none()
        && !kinds.contains(&EpisodeKind::Continuation)
        && text_chars <= rules.chatter_max_chars
    {
        kinds.insert(EpisodeKind::Chatter);
    }

    // Keys and identifiers from human text.
    for m in msgs.iter().filter(|m| m.user_kind == Some(UserKind::Human)) {
        for id in identifiers(&m.text()) {
            keys.push(&id);
        }
    }
    let mut ids = Vec::new();
    for m in msgs {
        let t = if m.is_user() && m.user_kind != Some(UserKind::Human) {
            String::new()
        } else {
            m.text()
        };
        for id in identifiers(&t) {
            push_unique(&mut ids, &id);
        }
    }
    for f in &facts.failures {
        for id in identifiers(&f.failure.line) {
            push_unique(&mut ids, &id);
        }
    }
    ids.truncate(24);
    facts.identifiers = ids;

    facts.todos = todos
        .iter()
        .filter(|c| c.message_index >= seg.first_message && c.message_index <= seg.last_message)
        .map(|c| format!("{}: {} → {}", c.content, c.from, c.to))
        .collect();
    facts.objective = in_text_part(objective(msgs, seg.first_message, compaction_msg.is_some()));
    facts.outcome = in_text_part(outcome(msgs, seg.first_message, &facts));
    let title = title(seg, msgs, compaction_msg, todos);

    let kinds: Vec<EpisodeKind> = kinds.into_iter().collect();
    let failed_request = msgs.iter().find_map(|m| {
        let e = m.error.as_ref()?;
        let r = req_of.get(trace.message_index(&m.id)?).copied().flatten()?;
        Some(format!("request {r} failed ({})", e.name))
    });
    let ev = Evidence {
        facts: &facts,
        req_of,
        pins: &pins,
        children: &children,
        compaction: compaction_msg,
        text_chars,
        failed_request,
    };
    let (class, floor, class_reasons, floor_reasons) = class_and_floor(&kinds, rules, &ev);

    Classified {
        title,
        kinds,
        class,
        floor,
        class_reasons,
        floor_reasons,
        pins,
        keys: keys.into_vec(),
        children,
        facts,
    }
}

/// Votes → class, floor and their reasons.
/// What the reasons quote.
struct Evidence<'a> {
    facts: &'a Facts,
    req_of: &'a [Option<usize>],
    pins: &'a [Pin],
    children: &'a [String],
    compaction: Option<&'a Message>,
    text_chars: usize,
    /// "request 9 failed (APIError)" for the first request with a recorded error.
    failed_request: Option<String>,
}

fn class_and_floor(
    kinds: &[EpisodeKind],
    rules: &Rules,
    ev: &Evidence<'_>,
) -> (RetentionClass, Tier, Vec<String>, Vec<String>) {
    let mut class: Option<RetentionClass> = None;
    let mut floor: Option<Tier> = None;
    let mut class_reasons = Vec::new();
    let mut floor_reasons = Vec::new();
    for k in kinds {
        let Some(v) = rules.vote(*k) else { continue };
        let ev = evidence(*k, ev);
        if let Some(c) = v.class {
            class_reasons.push(format!("class {}: {} — {ev}", c.as_str(), k.as_str()));
            // Most protective wins: pin < compressible < discardable in the enum order.
            class = Some(class.map_or(c, |x| x.min(c)));
        }
        if let Some(f) = v.floor {
            floor_reasons.push(format!("floor {}: {} — {ev}", f.as_str(), k.as_str()));
            floor = Some(floor.map_or(f, |x| x.min(f)));
        }
    }
    // A floor above `dropped` means the content is worth keeping: not discardable.
    if class == Some(RetentionClass::Discardable) {
        if let Some(f) = floor.filter(|f| *f < Tier::Dropped) {
            class_reasons.push(format!(
                "class compressible: a floor of {} outranks the discardable vote",
                f.as_str()
            ));
            class = Some(RetentionClass::Compressible);
        }
    }
    let class = class.unwrap_or_else(|| {
        class_reasons.push(format!(
            "class {}: default (no rule voted)",
            rules.default_class.as_str()
        ));
        rules.default_class
    });
    let class_floor = match class {
        RetentionClass::Pin => Tier::Full,
        RetentionClass::Compressible => Tier::Anchor,
        RetentionClass::Discardable => Tier::Dropped,
    };
    let floor = match floor {
        // A class-based floor above the votes (pin) wins; a vote never reaches `dropped` unless
        // the class is discardable.
        Some(f) => {
            if class_floor < f {
                floor_reasons.push(format!(
                    "floor {}: class {} allows nothing lower",
                    class_floor.as_str(),
                    class.as_str()
                ));
                class_floor
            } else if f == Tier::Dropped && class != RetentionClass::Discardable {
                floor_reasons.push(format!(
                    "floor anchor: class {} may not be dropped",
                    class.as_str()
                ));
                Tier::Anchor
            } else {
                f
            }
        }
        None => {
            floor_reasons.push(format!(
                "floor {}: default for class {}",
                class_floor.as_str(),
                class.as_str()
            ));
            class_floor
        }
    };
    (class, floor, class_reasons, floor_reasons)
}

fn evidence(k: EpisodeKind, ev: &Evidence<'_>) -> String {
    let Evidence {
        facts,
        req_of,
        pins,
        children,
        compaction,
        text_chars,
        ref failed_request,
    } = *ev;
    match k {
        EpisodeKind::Failure => {
            // Every failure is named: the first few quoted, the rest by where they are.
            const QUOTED: usize = 3;
            let mut s = facts
                .failures
                .iter()
                .take(QUOTED)
                .map(FailedCall::describe)
                .collect::<Vec<_>>()
                .join("; ");
            let rest = &facts.failures[QUOTED.min(facts.failures.len())..];
            if !rest.is_empty() {
                let at: Vec<String> = rest
                    .iter()
                    .map(|f| {
                        let what = f.failure.what();
                        f.request
                            .map_or_else(|| what.clone(), |r| format!("{what} in request {r}"))
                    })
                    .collect();
                s.push_str(&format!("; and {} more: {}", rest.len(), at.join(", ")));
            }
            s
        }
        EpisodeKind::Rejected => facts
            .rejections
            .first()
            .map(|r| {
                let req = |mi: usize| req_of.get(mi).copied().flatten();
                format!("{}; then {}", r.describe(req), r.evidence)
            })
            .unwrap_or_default(),
        EpisodeKind::Decision => facts
            .decisions
            .first()
            .map(|d| format!("\"{}\"", clip_chars(&d.text, 200)))
            .unwrap_or_default(),
        EpisodeKind::Constraint => pins
            .first()
            .map(|p| format!("pinned \"{}\"", clip_chars(&p.text, 200)))
            .unwrap_or_default(),
        EpisodeKind::Compaction => compaction
            .and_then(|m| m.compaction_part())
            .map(|c| {
                format!(
                    "compaction request {}{}",
                    if c.auto { "(auto" } else { "(manual" },
                    if c.overflow { ", overflow)" } else { ")" }
                )
            })
            .unwrap_or_else(|| "compaction".to_owned()),
        EpisodeKind::Subagent => {
            if children.is_empty() {
                "task call".to_owned()
            } else {
                format!("task call spawned {}", children.join(", "))
            }
        }
        EpisodeKind::Chatter => {
            let mut s = format!("no tool calls, {text_chars} chars of text");
            if let Some(f) = failed_request {
                s.push_str(&format!("; {f}"));
            }
            s
        }
        other => other.as_str().to_owned(),
    }
}

/// The message an episode opens with, text the agent injected ahead of it skipped (a turn's
/// kind and title are its prompt's).
fn opening_message(msgs: &[Message]) -> &Message {
    msgs.iter()
        .find(|m| m.user_kind != Some(UserKind::Injected))
        .unwrap_or(&msgs[0])
}

fn first_line_of(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// Ordered, deduplicated, capped.
struct KeySet {
    v: Vec<String>,
    max: usize,
}

impl KeySet {
    fn new(max: usize) -> Self {
        KeySet { v: Vec::new(), max }
    }
    fn push(&mut self, s: &str) {
        let s = s.trim_matches(|c: char| "`'\",;:()[]{}".contains(c));
        if s.len() >= 3 && self.v.len() < self.max && !self.v.iter().any(|x| x == s) {
            self.v.push(s.to_owned());
        }
    }
    fn into_vec(self) -> Vec<String> {
        self.v
    }
}

/// A text and where it is, (message index, part id), as what classification found.
fn in_text_part((text, at): (String, Option<(usize, String)>)) -> Sourced<Option<At>> {
    let cite = at.map(|(message_index, part_id)| At {
        message_index,
        part_id,
        call_id: String::new(),
    });
    Sourced { text, cite }
}

/// The human ask (clipped), and where it is: (message index, first text part id).
fn objective(
    msgs: &[Message],
    first: usize,
    is_compaction: bool,
) -> (String, Option<(usize, String)>) {
    if is_compaction {
        return (
            "summarize the conversation so far (compaction)".to_owned(),
            None,
        );
    }
    let Some((off, m)) = msgs
        .iter()
        .enumerate()
        .find(|(_, m)| m.user_kind == Some(UserKind::Human))
    else {
        return (String::new(), None);
    };
    let part = m.parts.iter().find_map(|p| match &p.kind {
        PartKind::Text { ignored: false, .. } => Some(p.id.clone()),
        _ => None,
    });
    (
        clip_chars(&m.text().replace('\n', " "), 300),
        part.map(|p| (first + off, p)),
    )
}

/// The first real sentence of the episode's last assistant text (not a markdown heading, at
/// least three words if there is one, emphasis removed), else the last failure or error; and
/// where it is.
fn outcome(msgs: &[Message], first: usize, facts: &Facts) -> (String, Option<(usize, String)>) {
    let last_text = msgs
        .iter()
        .enumerate()
        .rev()
        // A compaction summary restates earlier turns: not this episode's outcome.
        .filter(|(_, m)| m.is_assistant() && !m.summary)
        .find(|(_, m)| !m.text().trim().is_empty());
    match last_text {
        Some((off, m)) => {
            let ss: Vec<(&str, &str)> = m
                .parts
                .iter()
                .filter_map(|p| match &p.kind {
                    PartKind::Text {
                        text,
                        ignored: false,
                        ..
                    } => Some((p.id.as_str(), text.as_str())),
                    _ => None,
                })
                .flat_map(|(id, t)| sentences(t).into_iter().map(move |s| (id, s)))
                .filter(|(_, s)| !s.starts_with('#'))
                .collect();
            let pick = ss
                .iter()
                .find(|(_, s)| s.split_whitespace().count() >= 3)
                .or(ss.first());
            match pick {
                Some((id, s)) => (
                    clip_chars(&plain(s), 200),
                    Some((first + off, (*id).to_owned())),
                ),
                None => (String::new(), None),
            }
        }
        None => match (
            facts.failures.last(),
            msgs.iter().rev().find(|m| m.is_assistant()),
        ) {
            (Some(f), _) => (
                format!("failed: {}", f.failure.line),
                Some((f.message_index(), f.failure.cite.part_id.clone())),
            ),
            (None, Some(m)) => match &m.error {
                Some(e) => (format!("error: {}", e.name), None),
                None => ("no answer text".to_owned(), None),
            },
            (None, None) => ("no answer".to_owned(), None),
        },
    }
}

/// What was tried before a rejection: `(from, at, evidence)` are step indices (the window
/// start, the rejecting step, the evidence's step). The latest step in `from..=evidence` (before
/// `at`) that edits a file, else the latest with text; its prose (emphasis removed, at most 240
/// chars, cut at a sentence), or the latest text before it when it says nothing; and every file
/// edited in `from..at`.
fn attempt(
    msgs: &[Message],
    first: usize,
    steps: &[evidence::StepSpan],
    (from, at, evidence_step): (usize, usize, usize),
    rules: &Rules,
    dir: &str,
) -> Option<Attempt> {
    let upto = evidence_step.min(at.saturating_sub(1));
    let tools = |st: &evidence::StepSpan| {
        msgs[st.off].parts[st.parts.clone()]
            .iter()
            .filter_map(|p| match &p.kind {
                PartKind::Tool(t) => Some(t),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let edits =
        |st: &evidence::StepSpan| tools(st).iter().any(|t| rules.is_edit_tool(t.behaves_as()));
    let has_text = |st: &evidence::StepSpan| !evidence::step_text(msgs, st).0.trim().is_empty();
    let window = || steps.iter().enumerate().take(upto + 1).skip(from).rev();
    let (k, _) = window()
        .find(|(_, st)| edits(st))
        .or_else(|| window().find(|(_, st)| has_text(st)))?;
    // The step that edited may say nothing: then the latest text before it.
    let (_, said) = steps
        .iter()
        .enumerate()
        .take(k + 1)
        .skip(from)
        .rev()
        .find(|(_, st)| has_text(st))
        .unwrap_or((k, &steps[k]));
    let (text, part) = evidence::step_text(msgs, said);
    let text = Some(super::prose::prose(&text, 240)).filter(|t| !t.is_empty());
    let mut files = Vec::new();
    for st in steps.iter().take(at).skip(from) {
        for t in tools(st) {
            if rules.is_edit_tool(t.behaves_as()) {
                for f in tool_files(t) {
                    push_unique(&mut files, relative_to(&f, dir));
                }
            }
        }
    }
    Some(Attempt {
        message_index: first + said.off,
        part_id: part.map(str::to_owned),
        text,
        files,
    })
}

/// Whether `m` shows `s` to the model: in a text, a tool input or a tool output.
fn shows(m: &Message, s: &str) -> bool {
    m.parts.iter().any(|p| match &p.kind {
        PartKind::Text { text, .. } => text.contains(s),
        PartKind::Tool(t) => {
            t.output.as_deref().is_some_and(|o| o.contains(s)) || json_has_string(&t.input, s)
        }
        _ => false,
    })
}

fn json_has_string(v: &Value, s: &str) -> bool {
    match v {
        Value::String(x) => x.contains(s),
        Value::Array(a) => a.iter().any(|x| json_has_string(x, s)),
        Value::Object(o) => o.values().any(|x| json_has_string(x, s)),
        _ => false,
    }
}

/// The first sentence of at least three words ("Good." is not a title), else the first two
/// sentences together; clipped.
fn title_sentence(text: &str) -> Option<String> {
    let ss = sentences(text);
    let t = ss
        .iter()
        .find(|s| s.split_whitespace().count() >= 3)
        .map(|s| (*s).to_owned())
        .or_else(|| {
            (!ss.is_empty()).then(|| ss.iter().take(2).copied().collect::<Vec<_>>().join(" "))
        })?;
    Some(clip_chars(&plain(&t), 72))
}

fn title(
    seg: &Segment,
    msgs: &[Message],
    compaction: Option<&Message>,
    todos: &[super::segment::TodoChange],
) -> String {
    if let Some(c) = compaction.and_then(|m| m.compaction_part()) {
        return format!(
            "compaction ({}{})",
            if c.auto { "auto" } else { "manual" },
            if c.overflow { ", overflow" } else { "" }
        );
    }
    let first = opening_message(msgs);
    match first.user_kind {
        Some(UserKind::ContinueAfterCompaction) => return "continue after compaction".to_owned(),
        Some(UserKind::PromptReplayed) => {
            return format!(
                "replayed after overflow: {}",
                clip_chars(sentences(&first.text()).first().copied().unwrap_or(""), 60)
            )
        }
        Some(UserKind::Human) => {
            if let Some(s) = title_sentence(&first.text()) {
                return s;
            }
        }
        _ => {}
    }
    // A split inside a turn: the todo that started, else the first words of the episode. The
    // todowrite that started it ends the episode before, so its words name this one only if
    // this one shows them too (a later todowrite, a text): tiers quote the title, and a tier
    // holds nothing its episode does not.
    let started = todos
        .iter()
        .filter(|c| c.message_index + 1 == seg.first_message && c.to == "in_progress")
        .map(|c| c.content.clone())
        .find(|c| msgs.iter().any(|m| shows(m, c)));
    if let Some(s) = started {
        return clip_chars(&s, 72);
    }
    for m in msgs {
        if let Some(s) = title_sentence(&m.text()) {
            return s;
        }
    }
    // No text at all: the first tool call.
    msgs.iter()
        .flat_map(|m| m.tool_parts())
        .next()
        .map(|(_, t)| {
            let c = first_line_of(&tool_command(t)).to_owned();
            let s = match t.behaves_as() {
                "bash" => format!("$ {c}"),
                _ if c.is_empty() => t.tool.clone(),
                _ => format!("{} {c}", t.tool),
            };
            clip_chars(&s, 72)
        })
        .unwrap_or_else(|| "(no text)".to_owned())
}
