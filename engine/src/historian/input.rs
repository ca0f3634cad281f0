//! What one episode gives the historian: its ids, title, pinned spans and full text (the messages
//! as the model was sent them, the `full` tier), with a content hash over everything that enters
//! the prompt, so that a cached answer is reused only for the same question.

use serde::Serialize;

use crate::episode::Tier;
use crate::session::LoadedSession;

/// One episode as the historian reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EpisodeInput {
    /// Index in the session's episodes.
    pub index: usize,
    pub episode_id: String,
    pub title: String,
    pub session_id: String,
    pub first_message_id: String,
    pub last_message_id: String,
    /// Pinned spans: verbatim in every tier.
    pub pins: Vec<String>,
    /// The `full` tier's text.
    pub source: String,
    /// Its tokens (our tokenizer), for the dry run's estimate.
    pub source_tokens: u32,
}

impl EpisodeInput {
    /// xxh3-128 (hex) over every field that enters the prompt, length-prefixed so that no two
    /// different inputs concatenate to the same bytes.
    pub fn content_hash(&self) -> String {
        let mut bytes: Vec<u8> = Vec::with_capacity(self.source.len() + 256);
        let mut put = |s: &str| {
            bytes.extend_from_slice(&(s.len() as u64).to_le_bytes());
            bytes.extend_from_slice(s.as_bytes());
        };
        put(&self.episode_id);
        put(&self.title);
        put(&self.session_id);
        put(&self.first_message_id);
        put(&self.last_message_id);
        put(&self.pins.len().to_string());
        for p in &self.pins {
            put(p);
        }
        put(&self.source);
        format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes))
    }
}

/// Every episode of a loaded session that has a full tier, in order.
pub fn episode_inputs(s: &LoadedSession) -> Vec<EpisodeInput> {
    s.episodes
        .iter()
        .filter_map(|e| {
            let full = e.representation(Tier::Full)?;
            Some(EpisodeInput {
                index: e.index,
                episode_id: e.id.clone(),
                title: e.title.clone(),
                session_id: s.trace.session.id.clone(),
                first_message_id: s.trace.messages.get(e.first_message)?.id.clone(),
                last_message_id: s.trace.messages.get(e.last_message)?.id.clone(),
                pins: e.pins.iter().map(|p| p.text.clone()).collect(),
                source: full.text(),
                source_tokens: full.tokens,
            })
        })
        .collect()
}

#[cfg(test)]
pub(crate) fn sample(id: &str, source: &str) -> EpisodeInput {
    EpisodeInput {
        index: id.trim_start_matches('E').parse().unwrap_or(0),
        episode_id: id.to_owned(),
        title: "bump tomlette".to_owned(),
        session_id: "ses_test".to_owned(),
        first_message_id: format!("msg_{id}_a"),
        last_message_id: format!("msg_{id}_z"),
        pins: vec!["no bash-isms at all".to_owned()],
        source: source.to_owned(),
        source_tokens: 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_covers_every_prompt_field_and_is_stable() {
        let a = sample("E1", "user: go");
        assert_eq!(a.content_hash(), a.clone().content_hash());
        assert_eq!(a.content_hash().len(), 32);
        let mut b = a.clone();
        b.pins.clear();
        assert_ne!(a.content_hash(), b.content_hash());
        let mut c = a.clone();
        c.title.push('!');
        assert_ne!(a.content_hash(), c.content_hash());
        // The token estimate does not enter the prompt, so it does not change the key.
        let mut d = a.clone();
        d.source_tokens = 99;
        assert_eq!(a.content_hash(), d.content_hash());
    }
}
