//! The system prompts an agent stored with its answers (OpenCode 0.1.x–0.5.x keep each turn's:
//! the project tree and the instruction files in it change as the session changes the project).
//! The load counts them, so the replay can follow how a request's system chunk differs from the
//! one it was estimated from, and, where a turn's prompt changed, how much of it the previous
//! request's cached prefix still covers.

use std::collections::HashMap;

use crate::tokens::Tokenizer;
use crate::trace::model::{Message, Trace};

/// Count every stored prompt (each distinct text once: most messages carry the texts of the one
/// before) and, where a message's texts differ from those of the previous assistant message of
/// the same agent and model, what the two share from their start.
pub(super) fn count(trace: &mut Trace, tokenizer: &Tokenizer) {
    let mut texts = Interner::default();
    let mut per_message: Vec<Prompt> = Vec::new();
    let mut previous: HashMap<PromptOwner<'_>, usize> = HashMap::new();
    for (mi, m) in trace.messages.iter().enumerate() {
        let Some(sys) = &m.system else { continue };
        let ids: Vec<usize> = sys.texts.iter().map(|t| texts.id(t)).collect();
        let before = previous
            .insert(PromptOwner::of(m), per_message.len())
            .map(|p| &per_message[p].texts)
            .filter(|before| **before != ids);
        let change = before.map(|before| {
            let same = before.iter().zip(&ids).take_while(|(a, b)| a == b).count();
            let head = match (before.get(same), sys.texts.get(same)) {
                (Some(&b), Some(cur)) => {
                    let n = crate::text::common_head(texts.all[b], cur).len();
                    Some(n).filter(|&n| n > 0).map(|n| &cur[..n])
                }
                _ => None,
            };
            (same, head)
        });
        let change = change.map(|(same, head)| (same, head.map(|h| texts.id(h))));
        per_message.push(Prompt {
            message: mi,
            texts: ids,
            change,
        });
    }
    let distinct = texts.all;
    if distinct.is_empty() {
        return;
    }
    let counts: Vec<u64> = tokenizer
        .count_many(&distinct)
        .into_iter()
        .map(u64::from)
        .collect();
    let sums: Vec<(usize, u64, Option<u64>)> = per_message
        .iter()
        .map(|p| {
            let total = p.texts.iter().map(|&i| counts[i]).sum();
            let shared = p.change.map(|(same, head)| {
                p.texts[..same].iter().map(|&i| counts[i]).sum::<u64>()
                    + head.map_or(0, |h| counts[h])
            });
            (p.message, total, shared)
        })
        .collect();
    for (mi, total, shared) in sums {
        if let Some(sys) = trace.messages.get_mut(mi).and_then(|m| m.system.as_mut()) {
            sys.tokens = Some(total);
            sys.shared_with_previous = shared;
        }
    }
}

/// A message's stored prompt, as interned texts.
struct Prompt {
    message: usize,
    texts: Vec<usize>,
    /// Where the texts changed from the previous prompt of the same owner: how many stayed the
    /// same, and the changed text's common beginning with the one before (interned).
    change: Option<(usize, Option<usize>)>,
}

/// Each distinct text once, by first appearance.
#[derive(Default)]
struct Interner<'a> {
    all: Vec<&'a str>,
    ids: HashMap<&'a str, usize>,
}

impl<'a> Interner<'a> {
    fn id(&mut self, t: &'a str) -> usize {
        *self.ids.entry(t).or_insert_with(|| {
            self.all.push(t);
            self.all.len() - 1
        })
    }
}

/// Whose prompt a message carries: requests of another agent or model (a summary call) send
/// another prompt, so a change is only a change against the same owner's previous one.
#[derive(PartialEq, Eq, Hash)]
struct PromptOwner<'a> {
    agent: Option<&'a str>,
    model: Option<(&'a str, &'a str)>,
    summary: bool,
}

impl<'a> PromptOwner<'a> {
    fn of(m: &'a Message) -> Self {
        PromptOwner {
            agent: m.agent.as_deref(),
            model: m
                .model
                .as_ref()
                .map(|r| (r.provider_id.as_str(), r.model_id.as_str())),
            summary: m.summary,
        }
    }
}
