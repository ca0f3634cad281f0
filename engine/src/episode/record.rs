//! The canonical record of an episode (issue 20, the chapter's third generation strategy): a
//! typed structure extracted once from the episode's messages, from which `--tiers record`
//! renders its views deterministically ([`super::record_view`]). Every field cites where it came
//! from (message, part, tool call); nothing in it is written by a model, so a researcher can trust
//! it field by field.
//!
//! Extraction reuses what classification found ([`Classified`]: pins, decisions, failures,
//! rejections with their killing evidence, todos, files, identifiers) and adds what the views
//! need: rationales, the decision that followed a rejected alternative, locations (subsystems,
//! files, line references as their own field), exact identifiers, provenance, uncertainty and the
//! narrative steps. Only text the model was shown is kept (the full tier is the yardstick), so a
//! view can add nothing the source lacks.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::evidence::{step_text, steps_of};
use super::found::At;
use super::prose::{plain, prose};
use super::reading::{assistant_prose, sentences, tool_command};
use super::rules::Rules;
use super::segment::TodoChange;
use super::source::EpisodeSource;
use crate::text::{clip_chars, first_line};
use crate::trace::{Message, PartKind, Trace, UserKind};

/// Bumped when a field changes meaning.
pub const RECORD_VERSION: u32 = 1;

/// A message, part, call or session id in a record. A record names each of its messages, parts
/// and calls many times (every cite, and its provenance): shared, each is allocated once per
/// record ([`Ids`]), so a record's size follows what it says, not how often it cites.
pub type Id = Arc<str>;

/// The ids of one record being built, each allocated once.
#[derive(Default)]
struct Ids(RefCell<HashSet<Id>>);

impl Ids {
    fn of(&self, s: &str) -> Id {
        let mut set = self.0.borrow_mut();
        if let Some(id) = set.get(s) {
            return id.clone();
        }
        let id: Id = s.into();
        set.insert(id.clone());
        id
    }
}

/// Where a field came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cite {
    pub message_id: Id,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_id: Option<Id>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<Id>,
}

/// A piece of text and where it is, cited by id.
pub type Sourced = super::found::Sourced<Cite>;

/// A pinned span: verbatim, in every view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Constraint {
    pub text: String,
    /// Why it is pinned (the rule or the annotation).
    pub reason: String,
    pub cite: Cite,
}

pub use super::found::DecisionRule;

/// A choice stated in the conversation, cited by id.
pub type Decision = super::found::Decision<Cite>;

/// The tool result that killed a rejected alternative (see [`super::evidence`]), cited by id.
pub type Evidence = super::found::Evidence<Cite>;

pub use super::found::RejectionRule;

/// An approach that was given up, cited by id.
pub type Rejected = super::found::Rejected<Cite>;

/// A failed tool call, cited by id.
pub type Failure = super::found::Failure<Cite>;

/// A todo status change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusChange {
    pub item: String,
    pub from: String,
    pub to: String,
    pub cite: Cite,
}

/// A file the episode names, as the model saw it (relative to the session directory when under
/// it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    pub path: String,
    pub cite: Cite,
}

/// A `path:line[:col]` reference, as written. Its own field, so it can fade before the file and
/// the subsystem do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRef {
    pub path: String,
    pub line: u32,
    pub text: String,
    pub cite: Cite,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Locations {
    /// The first two directories of each file with at least two, else its first directory.
    pub subsystems: Vec<String>,
    pub files: Vec<FileRef>,
    pub lines: Vec<LineRef>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdentifierKind {
    /// An advisory or ticket (`RUSTSEC-2026-0042`).
    Ticket,
    Version,
    Hash,
    Path,
    /// An error code (`E0432`).
    Code,
    /// A name the conversation uses: a backticked span, a flag, a snake_case name.
    Name,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identifier {
    pub text: String,
    pub kind: IdentifierKind,
    /// Whether a human or assistant text names it (else only tool calls and outputs do): the
    /// names the conversation itself uses are the canonical ones.
    pub in_text: bool,
    /// The first message that shows it.
    pub cite: Cite,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRef {
    pub call_id: Id,
    pub tool: Id,
    pub part_id: Id,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageRef {
    pub message_id: Id,
    pub role: Id,
    pub parts: Vec<Id>,
    pub calls: Vec<CallRef>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub session_id: Id,
    pub first_message_id: Id,
    pub last_message_id: Id,
    pub messages: Vec<MessageRef>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Uncertainty {
    /// Questions the assistant asked and sentences that leave something open.
    pub open_questions: Vec<Sourced>,
    /// Hedged claims ("probably", "hypothesis (unconfirmed)").
    pub unverified: Vec<Sourced>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    User,
    Said,
    Call,
}

/// One step of the narrative (the blow-by-blow that fades first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub kind: StepKind,
    pub text: String,
    /// A call's result: `completed`, `exit N`, `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    pub cite: Cite,
}

/// The canonical record of one episode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    pub version: u32,
    pub episode_id: String,
    pub title: String,
    pub objective: Option<Sourced>,
    pub outcome: Option<Sourced>,
    pub constraints: Vec<Constraint>,
    pub decisions: Vec<Decision>,
    pub rejected: Vec<Rejected>,
    pub failures: Vec<Failure>,
    pub status: Vec<StatusChange>,
    pub locations: Locations,
    pub identifiers: Vec<Identifier>,
    pub provenance: Provenance,
    pub uncertainty: Uncertainty,
    pub steps: Vec<Step>,
}

/// A part id classification did not have is empty: none in the record.
fn id(s: &str) -> Option<&str> {
    Some(s).filter(|s| !s.is_empty())
}

/// Makes the [`Cite`] of (message index, part id, call id).
type CiteFn<'a> = dyn Fn(usize, Option<&str>, Option<&str>) -> Cite + 'a;

/// At most this many open questions and unverified claims each (the first ones).
const MAX_UNCERTAIN: usize = 12;

/// What [`build`] reads besides the episode: the full tier's text of each message of the
/// episode (index into `Trace::messages`, text) and the session's todo changes.
pub struct Inputs<'a> {
    pub episode: &'a EpisodeSource<'a>,
    pub todos: &'a [TodoChange],
    pub full: &'a [(usize, &'a str)],
    /// The same texts joined by newlines (the full tier's text).
    pub full_text: &'a str,
    /// The full tier's identifiers ([`super::needles::identifiers`]).
    pub identifiers: &'a BTreeSet<String>,
}

/// Extract the record of one episode.
pub fn build(i: &Inputs<'_>) -> EpisodeRecord {
    let trace = i.episode.trace;
    let msgs = &trace.messages[i.episode.seg.first_message..=i.episode.seg.last_message];
    let f = &i.episode.classified.facts;
    let full_text = i.full_text;
    let ids = Ids::default();
    let cite = |mi: usize, part: Option<&str>, call: Option<&str>| Cite {
        message_id: ids.of(&trace.messages[mi].id),
        part_id: part.map(|p| ids.of(p)),
        call_id: call.map(|c| ids.of(c)),
    };
    // What classification found in a text part, and in a tool call, cited by id.
    let in_text = |at: &At| cite(at.message_index, Some(&at.part_id), None);
    let in_call = |at: &At| cite(at.message_index, Some(&at.part_id), Some(&at.call_id));
    // The first message whose full text shows `s`.
    let home = |s: &str| {
        i.full
            .iter()
            .find(|(_, t)| t.contains(s))
            .map_or(i.episode.seg.first_message, |(mi, _)| *mi)
    };
    let shown = |s: &str| full_text.contains(s);
    let sourced = |s: &super::found::Sourced<Option<At>>| {
        s.cite
            .as_ref()
            .filter(|_| !s.text.is_empty())
            .map(|at| Sourced {
                text: s.text.clone(),
                cite: in_text(at),
            })
    };

    let constraints = i
        .episode
        .classified
        .pins
        .iter()
        .map(|p| {
            let mi = trace
                .message_index(&p.message_id)
                .unwrap_or(i.episode.seg.first_message);
            let part = text_part_with(&trace.messages[mi], &p.text);
            Constraint {
                text: p.text.clone(),
                reason: p.reason.clone(),
                cite: cite(mi, part, None),
            }
        })
        .collect();

    let mut decisions: Vec<Decision> = f
        .decisions
        .iter()
        .map(|d| Decision {
            rationale: rationale(
                &d.text,
                &trace.messages[d.cite.message_index],
                &d.cite.part_id,
                i.episode.rules,
            )
            .map(|text| Sourced {
                text,
                cite: in_text(&d.cite),
            }),
            text: d.text.clone(),
            rule: d.rule,
            cite: in_text(&d.cite),
        })
        .collect();
    decisions.extend(follows_rejection(i, msgs, &cite));

    let rejected = f
        .rejections
        .iter()
        .map(|r| &r.found)
        .map(|r| Rejected {
            rule: r.rule,
            approach: r.approach.as_ref().map(|a| Sourced {
                text: a.text.clone(),
                cite: cite(a.cite.message_index, id(&a.cite.part_id), None),
            }),
            files: r.files.iter().filter(|p| shown(p)).cloned().collect(),
            killed_by: r.killed_by.as_ref().map(|k| k.cite_as(in_call)),
            reason: r.reason.as_ref().map(|s| Sourced {
                text: s.text.clone(),
                cite: cite(s.cite.message_index, id(&s.cite.part_id), None),
            }),
            revert: r.revert.as_ref().map(|s| Sourced {
                text: s.text.clone(),
                cite: cite(s.cite.message_index, None, Some(&s.cite.call_id)),
            }),
            cite: cite(r.cite.message_index, None, None),
        })
        .collect::<Vec<_>>();
    let mut rejected = rejected;
    rejected.extend(stated_rejections(i, msgs, &cite));

    let failures = f
        .failures
        .iter()
        .map(|x| x.failure.cite_as(in_call))
        .collect();

    let status = i
        .todos
        .iter()
        .filter(|c| {
            c.message_index >= i.episode.seg.first_message
                && c.message_index <= i.episode.seg.last_message
        })
        .map(|c| {
            let call = trace.messages[c.message_index]
                .tool_parts()
                .find(|(_, t)| t.behaves_as() == "todowrite")
                .map(|(p, t)| (p.id.as_str(), t.call_id.as_str()));
            StatusChange {
                item: c.content.clone(),
                from: c.from.clone(),
                to: c.to.clone(),
                cite: cite(c.message_index, call.map(|x| x.0), call.map(|x| x.1)),
            }
        })
        .collect();

    let exact = exact_identifiers(i.identifiers, full_text);
    let locations = locations(i, &f.files, &exact, &home, &cite);
    // Named in a human or assistant text (not only by a tool).
    let said = |id: &str| {
        msgs.iter()
            .filter(|m| m.is_assistant() || m.user_kind == Some(UserKind::Human))
            .flat_map(|m| &m.parts)
            .any(|p| matches!(&p.kind, PartKind::Text { text, ignored: false, .. } if text.contains(id)))
    };
    let identifiers = identifiers(f, &exact, full_text, &said, &home, &cite);

    let mut record = EpisodeRecord {
        version: RECORD_VERSION,
        episode_id: i.episode.episode_id.to_owned(),
        title: i.episode.classified.title.clone(),
        objective: sourced(&f.objective),
        outcome: sourced(&f.outcome),
        constraints,
        decisions,
        rejected,
        failures,
        status,
        locations,
        identifiers,
        provenance: provenance(trace, msgs, &ids),
        uncertainty: uncertainty(msgs, i.episode.seg.first_message, i.episode.rules, &cite),
        steps: steps(msgs, i.episode.seg.first_message, &cite),
    };
    record.shrink();
    record
}

impl EpisodeRecord {
    /// Give back the spare room its lists grew by: a load keeps one record per episode (20k on
    /// a 100k-request session), and their lists' doubling left about a third of them empty.
    fn shrink(&mut self) {
        self.constraints.shrink_to_fit();
        self.decisions.shrink_to_fit();
        self.rejected.shrink_to_fit();
        self.failures.shrink_to_fit();
        self.status.shrink_to_fit();
        self.locations.subsystems.shrink_to_fit();
        self.locations.files.shrink_to_fit();
        self.locations.lines.shrink_to_fit();
        self.identifiers.shrink_to_fit();
        self.provenance.messages.shrink_to_fit();
        for m in &mut self.provenance.messages {
            m.parts.shrink_to_fit();
            m.calls.shrink_to_fit();
        }
        self.uncertainty.open_questions.shrink_to_fit();
        self.uncertainty.unverified.shrink_to_fit();
        self.steps.shrink_to_fit();
    }
}

/// The text part of `m` that holds `s`.
fn text_part_with<'a>(m: &'a Message, s: &str) -> Option<&'a str> {
    m.parts.iter().find_map(|p| match &p.kind {
        PartKind::Text { text, .. } if text.contains(s) => Some(p.id.as_str()),
        _ => None,
    })
}

/// A decision's rationale: from the first causal connective in `decision` to its end, else the
/// next sentence of the same text part when that one starts with a connective.
fn rationale(decision: &str, m: &Message, part_id: &str, rules: &Rules) -> Option<String> {
    if let Some(k) = rules.rationale_start(decision).filter(|k| *k > 0) {
        let r = decision[k..].trim_start_matches([',', ';', ':', ' ']);
        if !r.is_empty() {
            return Some(r.to_owned());
        }
    }
    let text = m.parts.iter().find_map(|p| match &p.kind {
        PartKind::Text { text, .. } if p.id == part_id => Some(text.as_str()),
        _ => None,
    })?;
    let ss: Vec<String> = sentences(text).into_iter().map(plain).collect();
    let k = ss
        .iter()
        .position(|s| decision.starts_with(s.as_str()) || s == decision)?;
    ss.get(k + 1)
        .filter(|n| rules.rationale_start(n) == Some(0))
        .map(|n| clip_chars(n, 300))
}

/// The attempt that follows each rejected alternative, when nothing rejects it in turn: the first
/// later assistant step of the episode that edits a file, its prose as the decision.
fn follows_rejection(i: &Inputs<'_>, msgs: &[Message], cite: &CiteFn<'_>) -> Vec<Decision> {
    let f = &i.episode.classified.facts;
    let first = i.episode.seg.first_message;
    let steps = steps_of(msgs);
    let mut out = Vec::new();
    for (k, r) in f.rejections.iter().enumerate() {
        let next = steps.iter().enumerate().skip(r.step + 1).find(|(_, st)| {
            msgs[st.off].parts[st.parts.clone()].iter().any(
                |p| matches!(&p.kind, PartKind::Tool(t) if i.episode.rules.is_edit_tool(t.behaves_as())),
            )
        });
        let Some((si, st)) = next else { continue };
        // A later rejection in the episode gave this one up as well.
        if f.rejections[k + 1..].iter().any(|x| x.step > si) {
            continue;
        }
        let (said, part) = step_text(msgs, st);
        let text = prose(&said, 300);
        if text.is_empty() || f.decisions.iter().any(|d| text.contains(&d.text)) {
            continue;
        }
        let mi = first + st.off;
        let rationale = sentences(&text)
            .into_iter()
            .find_map(|s| {
                i.episode
                    .rules
                    .rationale_start(s)
                    .map(|k| s[k..].to_owned())
            })
            .map(|r| r.trim_start_matches([',', ';', ':', ' ']).to_owned())
            .filter(|r| !r.is_empty())
            .map(|r| Sourced {
                text: r,
                cite: cite(mi, part, None),
            });
        out.push(Decision {
            text,
            rationale,
            rule: DecisionRule::FollowsRejection,
            cite: cite(mi, part, None),
        });
    }
    out
}

/// At most this many stated rejections per episode (the first ones).
const MAX_STATED: usize = 8;

/// Sentences of assistant prose (not a compaction summary's, not in a step classification
/// already read as a rejection) that reject an alternative in words.
fn stated_rejections(i: &Inputs<'_>, msgs: &[Message], cite: &CiteFn<'_>) -> Vec<Rejected> {
    let steps = steps_of(msgs);
    let claimed: Vec<usize> = i
        .episode
        .classified
        .facts
        .rejections
        .iter()
        .map(|r| r.step)
        .collect();
    let mut out: Vec<Rejected> = Vec::new();
    for (si, st) in steps.iter().enumerate() {
        let m = &msgs[st.off];
        if m.summary || claimed.contains(&si) {
            continue;
        }
        for p in &m.parts[st.parts.clone()] {
            let PartKind::Text {
                text,
                ignored: false,
                ..
            } = &p.kind
            else {
                continue;
            };
            for l in text.lines().filter(|l| !is_code_line(l)) {
                for s in sentences(l)
                    .into_iter()
                    .filter(|s| i.episode.rules.is_rejection(s))
                {
                    let s = clip_chars(&plain(s), 300);
                    if out.len() >= MAX_STATED
                        || out
                            .iter()
                            .any(|x| x.approach.as_ref().is_some_and(|a| a.text == s))
                    {
                        continue;
                    }
                    let c = cite(i.episode.seg.first_message + st.off, Some(&p.id), None);
                    out.push(Rejected {
                        rule: RejectionRule::Stated,
                        approach: Some(Sourced {
                            text: s,
                            cite: c.clone(),
                        }),
                        files: Vec::new(),
                        killed_by: None,
                        reason: None,
                        revert: None,
                        cite: c,
                    });
                }
            }
        }
    }
    out
}

/// The identifiers a tier is judged by (`ids`, [`super::needles::identifiers`] of `full`), in
/// order of first appearance in `full`.
fn exact_identifiers(ids: &BTreeSet<String>, full: &str) -> Vec<String> {
    let mut v: Vec<(usize, String)> = ids
        .iter()
        .map(|s| (full.find(s.as_str()).unwrap_or(usize::MAX), s.clone()))
        .collect();
    v.sort();
    v.into_iter().map(|(_, s)| s).collect()
}

fn locations(
    i: &Inputs<'_>,
    files: &[String],
    exact: &[String],
    home: &dyn Fn(&str) -> usize,
    cite: &CiteFn<'_>,
) -> Locations {
    let dir = &i.episode.trace.session.directory;
    let rel = |p: &str| super::reading::relative_to(p, dir).to_owned();
    let full_has = |s: &str| i.full.iter().any(|(_, t)| t.contains(s));
    let mut seen = BTreeSet::new();
    let mut out = Locations::default();
    // Files the tools were called on, then the files shell commands name (paths with an
    // extension, e.g. `diff -u vendor/a/src/lib.rs …`).
    let msgs = &i.episode.trace.messages[i.episode.seg.first_message..=i.episode.seg.last_message];
    let in_commands: Vec<String> = msgs
        .iter()
        .flat_map(|m| m.tool_parts())
        .filter(|(_, t)| t.behaves_as() == "bash")
        .flat_map(|(_, t)| super::needles::identifiers(&tool_command(t)))
        .filter(|id| id.contains('/') && !id.contains(':'))
        .collect();
    for p in files.iter().chain(&in_commands).filter(|p| full_has(p)) {
        let r = rel(p);
        if !full_has(&r) || !seen.insert(r.clone()) {
            continue;
        }
        out.files.push(FileRef {
            cite: cite(home(p), None, None),
            path: r,
        });
    }
    for f in &out.files {
        if let Some(s) = subsystem(&f.path) {
            if !out.subsystems.iter().any(|x| x == s) && full_has(s) {
                out.subsystems.push(s.to_owned());
            }
        }
    }
    for id in exact {
        let mut parts = id.split(':');
        let (Some(path), Some(line)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(line) = line.parse::<u32>() else {
            continue;
        };
        out.lines.push(LineRef {
            path: rel(path),
            line,
            text: id.clone(),
            cite: cite(home(id), None, None),
        });
    }
    out
}

/// `crates/auth/src/lease.rs` → `crates/auth`; `src/lib.rs` → `src`; `Cargo.toml` → none.
/// Absolute paths (outside the session directory) have none either.
pub fn subsystem(path: &str) -> Option<&str> {
    if path.starts_with('/') || path.starts_with("..") {
        return None;
    }
    let dirs: Vec<&str> = path.split('/').collect();
    let n = dirs.len().saturating_sub(1); // directories before the file name
    let take = match n {
        0 => return None,
        1 => 1,
        _ => 2,
    };
    let len: usize = dirs[..take].iter().map(|d| d.len()).sum::<usize>() + take - 1;
    Some(&path[..len])
}

fn kind_of(id: &str) -> IdentifierKind {
    let b = id.as_bytes();
    if id.contains('/') {
        IdentifierKind::Path
    } else if b.first() == Some(&b'E') && id.len() == 5 && b[1..].iter().all(u8::is_ascii_digit) {
        IdentifierKind::Code
    } else if id.contains('-') && b.first().is_some_and(u8::is_ascii_uppercase) {
        IdentifierKind::Ticket
    } else if id.contains('.') {
        IdentifierKind::Version
    } else if b.iter().all(u8::is_ascii_hexdigit) {
        IdentifierKind::Hash
    } else {
        IdentifierKind::Name
    }
}

/// The exact identifiers (without line references, which are locations), then the names the
/// texts use (classification's identifiers) the exact ones do not already hold.
fn identifiers(
    f: &super::facts::Facts,
    exact: &[String],
    full: &str,
    said: &dyn Fn(&str) -> bool,
    home: &dyn Fn(&str) -> usize,
    cite: &CiteFn<'_>,
) -> Vec<Identifier> {
    let mut out: Vec<Identifier> = Vec::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for id in exact {
        let is_line_ref = id
            .split_once(':')
            .is_some_and(|(_, rest)| rest.split(':').all(|n| n.parse::<u32>().is_ok()));
        if is_line_ref || !seen.insert(id) {
            continue;
        }
        out.push(Identifier {
            text: id.clone(),
            kind: kind_of(id),
            in_text: said(id),
            cite: cite(home(id), None, None),
        });
    }
    for n in &f.identifiers {
        if full.contains(n.as_str()) && seen.insert(n) {
            out.push(Identifier {
                text: n.clone(),
                kind: IdentifierKind::Name,
                in_text: said(n),
                cite: cite(home(n), None, None),
            });
        }
    }
    out
}

fn provenance(trace: &Trace, msgs: &[Message], ids: &Ids) -> Provenance {
    let id = |m: Option<&Message>| ids.of(m.map_or("", |m| m.id.as_str()));
    Provenance {
        session_id: ids.of(&trace.session.id),
        first_message_id: id(msgs.first()),
        last_message_id: id(msgs.last()),
        messages: msgs
            .iter()
            .map(|m| MessageRef {
                message_id: ids.of(&m.id),
                role: ids.of(if m.is_user() { "user" } else { "assistant" }),
                // The parts the model is shown; step, snapshot and patch parts are bookkeeping.
                parts: m
                    .parts
                    .iter()
                    .filter(|p| {
                        !matches!(
                            p.kind,
                            PartKind::StepStart { .. }
                                | PartKind::StepFinish { .. }
                                | PartKind::WorkspaceSnapshot { .. }
                                | PartKind::FilesChanged { .. }
                                | PartKind::Retry { .. }
                        )
                    })
                    .map(|p| ids.of(&p.id))
                    .collect(),
                calls: m
                    .tool_parts()
                    .map(|(p, t)| CallRef {
                        call_id: ids.of(&t.call_id),
                        tool: ids.of(&t.tool),
                        part_id: ids.of(&p.id),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Sentences of assistant prose (not a compaction summary's) that ask or leave something open,
/// and those that hedge.
fn uncertainty(msgs: &[Message], first: usize, rules: &Rules, cite: &CiteFn<'_>) -> Uncertainty {
    let mut u = Uncertainty::default();
    for (off, p, text) in assistant_prose(msgs) {
        for l in text.lines().filter(|l| !is_code_line(l)) {
            for s in sentences(l) {
                let open = s.trim_end_matches(['*', '_']).ends_with('?') || rules.is_open(s);
                let list = if open {
                    &mut u.open_questions
                } else if rules.is_uncertain(s) {
                    &mut u.unverified
                } else {
                    continue;
                };
                let s = clip_chars(&plain(s), 300);
                if list.len() < MAX_UNCERTAIN && !list.iter().any(|x| x.text == s) {
                    list.push(Sourced {
                        text: s,
                        cite: cite(first + off, Some(&p.id), None),
                    });
                }
            }
        }
    }
    u
}

fn is_code_line(l: &str) -> bool {
    l.starts_with("    ") || l.starts_with('\t') || l.trim_start().starts_with("```")
}

/// The narrative: each human turn's first sentence, each assistant text's prose (up to 300
/// chars of whole sentences), each tool call with its main input and result.
fn steps(msgs: &[Message], first: usize, cite: &CiteFn<'_>) -> Vec<Step> {
    let mut out = Vec::new();
    for (off, m) in msgs.iter().enumerate() {
        let mi = first + off;
        if m.is_user() && m.user_kind != Some(UserKind::Human) {
            continue;
        }
        for p in &m.parts {
            match &p.kind {
                PartKind::Text {
                    text,
                    ignored: false,
                    ..
                } => {
                    // A human turn's first sentence (the objective holds the rest); an
                    // assistant text's prose, whole sentences up to 300 chars.
                    let s = if m.is_user() {
                        let p = prose(text, 100);
                        sentences(&p).first().map_or(p.clone(), |x| (*x).to_owned())
                    } else {
                        prose(text, 300)
                    };
                    if !s.is_empty() {
                        out.push(Step {
                            kind: if m.is_user() {
                                StepKind::User
                            } else {
                                StepKind::Said
                            },
                            text: s,
                            result: None,
                            cite: cite(mi, Some(&p.id), None),
                        });
                    }
                }
                PartKind::Tool(t) => {
                    let input = clip_chars(first_line(&tool_command(t)), 80);
                    let result = match t.exit_code() {
                        Some(c) => format!("exit {c}"),
                        None if t.failed() => "error".to_owned(),
                        None => format!("{:?}", t.status).to_ascii_lowercase(),
                    };
                    out.push(Step {
                        kind: StepKind::Call,
                        text: if input.is_empty() {
                            t.tool.clone()
                        } else {
                            format!("{} `{input}`", t.tool)
                        },
                        result: Some(result),
                        cite: cite(mi, Some(&p.id), Some(&t.call_id)),
                    });
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsystems_of_paths() {
        assert_eq!(subsystem("crates/auth/src/lease.rs"), Some("crates/auth"));
        assert_eq!(subsystem("src/lib.rs"), Some("src"));
        assert_eq!(subsystem("Cargo.toml"), None);
        assert_eq!(subsystem("/abs/x.rs"), None);
        assert_eq!(
            subsystem("vendor/cfgkit-0.3.0/Cargo.toml"),
            Some("vendor/cfgkit-0.3.0")
        );
    }

    #[test]
    fn identifier_kinds() {
        assert_eq!(kind_of("RUSTSEC-2026-0042"), IdentifierKind::Ticket);
        assert_eq!(kind_of("0.4.1"), IdentifierKind::Version);
        assert_eq!(kind_of("aeb1821"), IdentifierKind::Hash);
        assert_eq!(kind_of("src/lib.rs"), IdentifierKind::Path);
        assert_eq!(kind_of("E0432"), IdentifierKind::Code);
    }
}
