//! The versioned prompt (`prompt-v1.md`, embedded) and the chat request built from it.
//!
//! The prompt file holds the system prompt (the survival contract of every tier) and the user
//! message templates, in sections that start with a line `@@ <name>`. Placeholders `{{name}}` are
//! filled in one pass over the template, so text from a trace that happens to contain `{{…}}` is
//! never substituted.

use once_cell::sync::Lazy;
use serde_json::{json, Value};

use super::input::EpisodeInput;
use super::HistorianStrategy;
use crate::episode::Tier;
use crate::text::fill_placeholders as fill;

/// The version every tier written with this prompt records (and every cache key holds).
pub const PROMPT_VERSION: &str = "historian-v1";
/// The prompt file itself.
pub const PROMPT_TEXT: &str = include_str!("prompt-v1.md");

struct Sections {
    system: String,
    user_source: String,
    user_cascade: String,
    pins: String,
    no_pins: String,
}

static SECTIONS: Lazy<Sections> = Lazy::new(|| {
    let get = |name: &str| section(PROMPT_TEXT, name).unwrap_or_default();
    Sections {
        system: get("system"),
        user_source: get("user-source"),
        user_cascade: get("user-cascade"),
        pins: get("pins"),
        no_pins: get("no-pins"),
    }
});

/// The text of section `name` (between its `@@ name` line and the next `@@` line), trimmed.
fn section(text: &str, name: &str) -> Option<String> {
    let mut out: Option<Vec<&str>> = None;
    for l in text.lines() {
        if let Some(n) = l.strip_prefix("@@ ") {
            if out.is_some() {
                break;
            }
            if n.trim() == name {
                out = Some(Vec::new());
            }
        } else if let Some(v) = &mut out {
            v.push(l);
        }
    }
    out.map(|v| v.join("\n").trim().to_owned())
}

/// One call of the historian: which tier it reads and which it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub from: Tier,
    pub targets: Vec<Tier>,
}

impl Step {
    /// A stable name for cache keys and messages: `full>dense+compact+anchor`, `dense>compact`.
    pub fn name(&self) -> String {
        let t: Vec<&str> = self.targets.iter().map(Tier::as_str).collect();
        format!("{}>{}", self.from, t.join("+"))
    }
}

/// The calls one episode takes: one for `source`, a chain of three for `cascade`.
pub fn steps(strategy: HistorianStrategy) -> Vec<Step> {
    match strategy {
        HistorianStrategy::Source => vec![Step {
            from: Tier::Full,
            targets: vec![Tier::Dense, Tier::Compact, Tier::Anchor],
        }],
        HistorianStrategy::Cascade => [Tier::Full, Tier::Dense, Tier::Compact]
            .into_iter()
            .filter_map(|from| {
                Some(Step {
                    from,
                    targets: vec![from.lower()?],
                })
            })
            .collect(),
    }
}

/// The JSON the model must answer with, as shown to it.
pub fn answer_shape(targets: &[Tier]) -> String {
    let fields: Vec<String> = targets.iter().map(|t| format!("\"{t}\": \"…\"")).collect();
    format!("{{\"tiers\": {{{}}}}}", fields.join(", "))
}

fn and_list(targets: &[Tier]) -> String {
    let names: Vec<&str> = targets.iter().map(Tier::as_str).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_owned(),
        None => String::new(),
    }
}

/// The system prompt (the survival contract).
pub fn system_prompt() -> &'static str {
    &SECTIONS.system
}

/// The user message of one step: the episode header, its pinned spans, what to write, the text
/// to read (`text`: the full text for the first step, the tier above for a cascade step).
pub fn user_message(input: &EpisodeInput, step: &Step, text: &str) -> String {
    let s = &*SECTIONS;
    let pins = if input.pins.is_empty() {
        s.no_pins.clone()
    } else {
        let list: Vec<String> = input.pins.iter().map(|p| format!("- {p}")).collect();
        fill(&s.pins, &[("list", &list.join("\n"))])
    };
    let template = if step.from == Tier::Full {
        &s.user_source
    } else {
        &s.user_cascade
    };
    fill(
        template,
        &[
            ("episode_id", &input.episode_id),
            ("title", &input.title),
            ("first_message_id", &input.first_message_id),
            ("last_message_id", &input.last_message_id),
            ("session_id", &input.session_id),
            ("pins", &pins),
            ("targets", &and_list(&step.targets)),
            ("shape", &answer_shape(&step.targets)),
            ("from", step.from.as_str()),
            ("input", text),
        ],
    )
}

/// Generation parameters sent with every request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestParams {
    pub model: String,
    /// Sent only when set: some models accept no temperature but their default.
    pub temperature: Option<f64>,
    /// `max_tokens`, sent only when set.
    pub max_tokens: Option<u32>,
}

/// The `/v1/chat/completions` body of one step. `json_mode` asks for
/// `response_format: {"type": "json_object"}` (dropped when the endpoint refuses it).
pub fn request_body(
    params: &RequestParams,
    input: &EpisodeInput,
    step: &Step,
    text: &str,
    json_mode: bool,
) -> String {
    let user = user_message(input, step, text);
    chat_body(
        params,
        &[("system", system_prompt()), ("user", &user)],
        json_mode,
    )
}

/// A chat request of `messages` ((role, content) pairs) with `params`, asking for
/// `response_format: json_object` when `json_mode`.
pub fn chat_body(params: &RequestParams, messages: &[(&str, &str)], json_mode: bool) -> String {
    let messages: Vec<Value> = messages
        .iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    with_params(
        json!({"model": params.model, "messages": messages, "stream": false}),
        params,
        json_mode,
    )
}

/// `body` with the optional parameters that are set, as JSON text.
fn with_params(mut body: Value, params: &RequestParams, json_mode: bool) -> String {
    if let Value::Object(m) = &mut body {
        if json_mode {
            m.insert("response_format".into(), json!({"type": "json_object"}));
        }
        if let Some(t) = params.temperature {
            m.insert("temperature".into(), json!(t));
        }
        if let Some(n) = params.max_tokens {
            m.insert("max_tokens".into(), json!(n));
        }
    }
    body.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xxh3-64 of `prompt-v1.md`. Editing the prompt changes what every cached tier means: write
    /// a `prompt-v2.md` with a new `PROMPT_VERSION` instead (this test says so when it fails).
    const PROMPT_V1_HASH: u64 = 0x7b9c_9c2c_3a69_3ff2;

    #[test]
    fn the_prompt_file_is_pinned_to_its_version() {
        let h = xxhash_rust::xxh3::xxh3_64(PROMPT_TEXT.as_bytes());
        assert_eq!(
            h, PROMPT_V1_HASH,
            "prompt-v1.md changed (xxh3 {h:#x}): give the new text a new file and PROMPT_VERSION"
        );
    }

    #[test]
    fn every_section_is_present_and_states_the_contract() {
        let s = &*SECTIONS;
        for (name, text) in [
            ("system", &s.system),
            ("user-source", &s.user_source),
            ("user-cascade", &s.user_cascade),
            ("pins", &s.pins),
            ("no-pins", &s.no_pins),
        ] {
            assert!(!text.is_empty(), "section {name} is missing");
        }
        for needle in [
            "character for character",
            "verbatim",
            "rationale",
            "rejected",
            "Status",
            "Provenance",
            "never pretend to hold detail it lacks",
            "JSON",
        ] {
            assert!(s.system.contains(needle), "system prompt lacks {needle:?}");
        }
    }

    #[test]
    fn a_user_message_has_the_episode_pins_shape_and_text_and_no_placeholders() {
        let mut input = super::super::input::sample("E3", "user: pin {{title}} please");
        input.title = "bump {{input}}".into();
        let step = &steps(HistorianStrategy::Source)[0];
        let m = user_message(&input, step, &input.source);
        assert!(m.starts_with("Episode E3: bump {{input}}"), "{m}");
        assert!(m.contains("- no bash-isms at all"));
        assert!(m.contains(r#"{"tiers": {"dense": "…", "compact": "…", "anchor": "…"}}"#));
        assert!(m.contains("Write the tiers dense, compact and anchor of this episode"));
        // Trace text is inserted once, never expanded.
        assert!(m.contains("user: pin {{title}} please"));
        let cascade = &steps(HistorianStrategy::Cascade)[1];
        let m = user_message(&input, cascade, "the dense text");
        assert!(m.contains("Below is the dense tier"));
        assert!(m.contains(r#"{"tiers": {"compact": "…"}}"#));
        assert!(m.contains("<source tier=\"dense\">\nthe dense text\n</source>"));
    }

    #[test]
    fn steps_and_their_names() {
        let s: Vec<String> = steps(HistorianStrategy::Source)
            .iter()
            .map(Step::name)
            .collect();
        assert_eq!(s, ["full>dense+compact+anchor"]);
        let c: Vec<String> = steps(HistorianStrategy::Cascade)
            .iter()
            .map(Step::name)
            .collect();
        assert_eq!(c, ["full>dense", "dense>compact", "compact>anchor"]);
    }

    #[test]
    fn the_body_asks_for_json_only_when_told_and_sends_only_set_parameters() {
        let input = super::super::input::sample("E0", "user: go");
        let step = &steps(HistorianStrategy::Source)[0];
        let p = RequestParams {
            model: "m".into(),
            ..RequestParams::default()
        };
        let v: Value = serde_json::from_str(&request_body(&p, &input, step, "x", true)).unwrap();
        assert_eq!(v["response_format"]["type"], "json_object");
        assert!(v.get("temperature").is_none() && v.get("max_tokens").is_none());
        assert_eq!(v["messages"][0]["role"], "system");
        let p = RequestParams {
            temperature: Some(0.0),
            max_tokens: Some(900),
            ..p
        };
        let v: Value = serde_json::from_str(&request_body(&p, &input, step, "x", false)).unwrap();
        assert!(v.get("response_format").is_none());
        assert_eq!(v["temperature"], 0.0);
        assert_eq!(v["max_tokens"], 900);
    }
}
