//! OpenCode's compaction prompt as data ([`CompactionPrompt`]): the texts of the session's
//! release (`data/compaction_prompts.json`, OpenCode's own, read from its tagged sources) in the
//! form its compaction call sends them, with the history and an earlier summary left as
//! placeholders, so a model can write the summary of a compaction the replay simulates with the
//! prompt OpenCode would have sent. Where the session has a recorded compaction call, the
//! provenance names the call whose request carries the same instruction.

use super::compaction_request::{message_prompt, prompts_for, text_prompt, CompactionRequest};
use super::dialect::{CompactionShape, Dialect};
use crate::trace::summary_call::{CompactionPrompt, HISTORY, PREVIOUS_SUMMARY};

/// The release's compaction prompt (`None` without texts for it).
pub fn agent_prompt(d: &Dialect, recorded: &[CompactionRequest]) -> Option<CompactionPrompt> {
    let p = prompts_for(d.version)?;
    let shape = d.compaction_shape();
    let (first, update) = match shape {
        CompactionShape::HeadAsText => (
            text_prompt(Some(&p), HISTORY, None),
            Some(text_prompt(Some(&p), HISTORY, Some(PREVIOUS_SUMMARY))),
        ),
        CompactionShape::HeadClipped if d.quotes_previous_summary() => (
            after_history(&message_prompt(Some(&p), shape, d, None)),
            Some(after_history(&message_prompt(
                Some(&p),
                shape,
                d,
                Some(PREVIOUS_SUMMARY),
            ))),
        ),
        _ => (
            after_history(&message_prompt(Some(&p), shape, d, None)),
            None,
        ),
    };
    // What follows the last placeholder is the instruction proper: a recorded call that holds
    // it sent this prompt.
    let tail = |t: &str| {
        t.rsplit_once(PREVIOUS_SUMMARY)
            .or_else(|| t.rsplit_once(HISTORY))
            .map_or(String::new(), |(_, after)| after.to_owned())
    };
    let tails: Vec<String> = std::iter::once(&first)
        .chain(update.as_ref())
        .map(|t| tail(t))
        .filter(|t| !t.trim().is_empty())
        .collect();
    let seen = recorded
        .iter()
        .find(|r| tails.iter().any(|t| r.text.contains(t.as_str())));
    let mut provenance = format!(
        "OpenCode {}–{}'s compaction prompt (its own texts, engine/src/formats/opencode/data/\
         compaction_prompts.json, read from its tagged sources)",
        p.from, p.to
    );
    if let Some(r) = seen {
        provenance.push_str(&format!(
            "; the session's recorded compaction call (request {}) sent the same instruction",
            r.request
        ));
    }
    Some(CompactionPrompt {
        system: Some(p.system),
        first,
        update,
        provenance,
    })
}

/// A message-shaped call's instruction after the history it follows.
fn after_history(instruction: &str) -> String {
    format!("{HISTORY}\n\n{instruction}")
}

#[cfg(test)]
mod tests {
    use super::super::dialect::{parse_version, Era};
    use super::*;

    fn dialect(version: &str) -> Dialect {
        let v = parse_version(version).expect("a version");
        Dialect {
            era: Era::of(v),
            version: Some(v),
            inferred: false,
        }
    }

    #[test]
    fn each_shape_puts_the_history_where_its_call_does() {
        let text = agent_prompt(&dialect("1.18.33"), &[]).expect("1.18.33 has texts");
        assert!(text
            .first
            .starts_with("Here is the conversation so far:\n\n<conversation>\n{{history}}\n"));
        assert!(text.first.contains("Create a new anchored summary"));
        let update = text.update.expect("quotes the earlier summary");
        assert!(update.contains("<prior-summary>\n{{previous_summary}}\n</prior-summary>"));
        assert!(text.system.is_some_and(|s| s.contains("summarization")));
        assert!(text.provenance.contains("1.18.25–1.18.33"));

        let old = agent_prompt(&dialect("1.0.61"), &[]).expect("1.0.61 has texts");
        assert!(old.first.starts_with("{{history}}\n\n"));
        assert!(old.update.is_none());
    }
}
