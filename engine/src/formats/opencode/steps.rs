//! The model requests an assistant message records, by the release's rules.
//!
//! From OpenCode 0.8 every assistant message is one request. In 0.1–0.7 one assistant message
//! holds a whole turn: one request per `step-start` part, each step's usage in its own
//! `step-finish` (0.2.26–0.7), or only the last step's usage in `message.tokens` (0.1.x, which
//! writes no `step-finish`). A message whose `error` came after a complete last step made one
//! more request that failed before it could write a `step-start` (an HTTP error): in 0.2–0.7 the
//! last step has its `step-finish`; 0.1.x writes none, but its error says what failed, and an
//! `AI_APICallError` (the provider answered with an error status) is raised before any stream,
//! so every step the message holds was complete.

use super::dialect::{Dialect, InputSemantics};
use crate::trace::model::{Message, PartKind, RequestStatus, Usage};

/// One request of an assistant message (before numbering).
#[derive(Debug, Clone, PartialEq)]
pub struct StepRequest {
    /// `None` when the message is a single request.
    pub step: Option<u32>,
    pub usage: Usage,
    pub cost: f64,
    /// When the request was sent: the message's creation for the first step, the end of the
    /// previous step's last tool for the others.
    pub time: i64,
    pub status: RequestStatus,
    /// The usage is the request's own (false: none recorded for it).
    pub has_usage: bool,
    /// The failed request of a 0.2–0.7 message that never wrote a `step-start`.
    pub failed_before_step: bool,
}

/// The requests of assistant message `m`.
pub fn requests_of(m: &Message, status: RequestStatus) -> Vec<StepRequest> {
    let steps = m.step_count();
    let any_finish = m
        .parts
        .iter()
        .any(|p| matches!(p.kind, PartKind::StepFinish { .. }));
    // 0.1.x: an HTTP error after the message's last (complete) step.
    let refused_after_steps = !any_finish && steps > 0 && is_api_call_error(m);
    if m.summary || (steps <= 1 && !refused_after_steps) {
        let (usage, cost, has) = single_usage(m);
        return vec![StepRequest {
            step: None,
            usage,
            cost,
            time: m.time_created,
            status,
            has_usage: has,
            failed_before_step: false,
        }];
    }
    let part_steps = m.part_steps();
    let mut out: Vec<StepRequest> = Vec::with_capacity(steps + 1);
    // One pass over the parts: each step's usage (its step-finish) and when its tools ended.
    let mut finishes: Vec<Option<(Usage, f64)>> = vec![None; steps];
    let mut ends: Vec<Option<i64>> = vec![None; steps];
    for (p, &k) in m.parts.iter().zip(&part_steps) {
        let k = (k as usize).min(steps - 1);
        match &p.kind {
            PartKind::StepFinish { tokens, cost, .. } => {
                finishes[k] = Some((tokens.unwrap_or_default(), *cost));
            }
            PartKind::Tool(t) => {
                if let Some(e) = t.time_end.or(t.time_start) {
                    ends[k] = Some(ends[k].map_or(e, |x| x.max(e)));
                }
            }
            _ => {}
        }
    }
    let mut tools_end = m.time_created;
    for k in 0..steps as u32 {
        let finish = finishes[k as usize];
        let step_tools_end = ends[k as usize].map_or(tools_end, |e| tools_end.max(e));
        let last = k + 1 == steps as u32;
        let (usage, cost, has) = match finish {
            Some((u, c)) => (u, c, true),
            // Without any step-finish (0.1.x) the message keeps the last step's usage.
            None if last && !any_finish => match m.tokens {
                Some(u) => (u, m.cost, !u.is_zero()),
                None => (Usage::default(), 0.0, false),
            },
            None => (Usage::default(), 0.0, false),
        };
        let step_status = if !last {
            RequestStatus::Ok
        } else if (finish.is_some() && m.error.is_some()) || refused_after_steps {
            // The error belongs to the request after this complete step.
            RequestStatus::Ok
        } else {
            status
        };
        out.push(StepRequest {
            step: Some(k),
            usage,
            cost,
            time: tools_end,
            status: step_status,
            has_usage: has,
            failed_before_step: false,
        });
        tools_end = step_tools_end;
    }
    let last_complete = out.last().is_some_and(|r| r.has_usage) && any_finish;
    if (m.error.is_some() && last_complete) || refused_after_steps {
        out.push(StepRequest {
            step: Some(steps as u32),
            usage: Usage::default(),
            cost: 0.0,
            time: tools_end,
            status,
            has_usage: false,
            failed_before_step: true,
        });
    }
    out
}

/// An error the AI SDK raised for an HTTP error status (0.1.x stores it as `UnknownError` with the
/// SDK's `AI_APICallError: …` message), which comes before the request streams anything.
fn is_api_call_error(m: &Message) -> bool {
    m.error
        .as_ref()
        .and_then(|e| e.message.as_deref())
        .is_some_and(|t| t.starts_with("AI_APICallError"))
}

/// Usage of a one-request message: the sum of its step-finish parts, else `message.tokens`.
fn single_usage(m: &Message) -> (Usage, f64, bool) {
    let mut usage = Usage::default();
    let mut cost = 0.0;
    let mut steps = 0;
    for p in &m.parts {
        if let PartKind::StepFinish {
            tokens, cost: c, ..
        } = &p.kind
        {
            steps += 1;
            cost += c;
            if let Some(t) = tokens {
                usage.add(t);
            }
        }
    }
    if steps == 0 {
        let u = m.tokens.unwrap_or_default();
        (u, m.cost, !u.is_zero())
    } else {
        (usage, cost, !usage.is_zero())
    }
}

/// The prompt the model received by the recorded usage and the release's semantics. `None` when
/// the semantics say input includes the cache but the numbers contradict it (input smaller than
/// the cache): then the prompt is the sum, and the caller reports it.
pub fn recorded_prompt(u: &Usage, semantics: InputSemantics) -> (u64, bool) {
    // Saturating: a damaged count (reported as `bad_token_count`) must not wrap the prompt.
    let cache = u.cache_read.saturating_add(u.cache_write);
    let sum = u.input.saturating_add(cache);
    match semantics {
        InputSemantics::ExcludesCache => (sum, true),
        InputSemantics::IncludesCache if u.input >= cache => (u.input, true),
        InputSemantics::IncludesCache => (sum, false),
    }
}

/// The release's input semantics for the provider of `m`.
pub fn semantics_for(d: &Dialect, m: &Message) -> InputSemantics {
    let provider = m.model.as_ref().map_or("", |r| r.provider_id.as_str());
    d.input_semantics(provider)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{Part, Role, ToolPart, ToolStatus};
    use serde_json::Value;

    fn part(id: &str, kind: PartKind) -> Part {
        Part {
            id: id.into(),
            kind,
        }
    }
    fn finish(input: u64, read: u64) -> PartKind {
        PartKind::StepFinish {
            reason: None,
            cost: 0.0,
            tokens: Some(Usage {
                input,
                cache_read: read,
                ..Usage::default()
            }),
        }
    }
    fn tool(end: i64) -> PartKind {
        PartKind::Tool(Box::new(ToolPart {
            call_id: "c".into(),
            alias: None,
            tool: "bash".into(),
            status: ToolStatus::Completed,
            input: Value::Null,
            output: Some("ok".into()),
            error: None,
            title: None,
            metadata: Default::default(),
            time_start: Some(end - 5),
            time_end: Some(end),
            time_compacted: None,
        }))
    }
    fn msg(parts: Vec<Part>) -> Message {
        Message {
            id: "m".into(),
            session_id: "s".into(),
            role: Role::Assistant,
            time_created: 100,
            time_completed: None,
            agent: None,
            model: None,
            parent_id: None,
            finish: None,
            error: None,
            summary: false,
            tokens: Some(Usage {
                input: 30,
                ..Usage::default()
            }),
            cost: 0.0,
            parts,
            user_kind: None,
            own_history: false,
            cwd: None,
            dropped_after_own_requests: false,
            system: None,
        }
    }

    #[test]
    fn a_multi_step_message_is_one_request_per_step_with_its_own_usage() {
        let m = msg(vec![
            part("p1", PartKind::StepStart { snapshot: None }),
            part("p2", tool(150)),
            part("p3", finish(10, 0)),
            part("p4", PartKind::StepStart { snapshot: None }),
            part("p5", tool(190)),
            part("p6", finish(20, 8)),
            part("p7", PartKind::StepStart { snapshot: None }),
            part("p8", finish(30, 16)),
        ]);
        let r = requests_of(&m, RequestStatus::Ok);
        assert_eq!(r.len(), 3);
        assert_eq!(
            r.iter().map(|x| x.usage.input).collect::<Vec<_>>(),
            [10, 20, 30]
        );
        assert_eq!(
            r.iter().map(|x| x.time).collect::<Vec<_>>(),
            [100, 150, 190]
        );
        assert_eq!(r[2].step, Some(2));
    }

    #[test]
    fn without_step_finish_only_the_last_step_has_usage() {
        let m = msg(vec![
            part("p1", PartKind::StepStart { snapshot: None }),
            part("p2", PartKind::StepStart { snapshot: None }),
        ]);
        let r = requests_of(&m, RequestStatus::Ok);
        assert!(!r[0].has_usage && r[1].has_usage);
        assert_eq!(r[1].usage.input, 30);
    }

    #[test]
    fn an_error_after_a_complete_step_is_one_more_request() {
        let mut m = msg(vec![
            part("p1", PartKind::StepStart { snapshot: None }),
            part("p2", finish(10, 0)),
            part("p3", PartKind::StepStart { snapshot: None }),
            part("p4", finish(20, 0)),
        ]);
        m.error = Some(crate::trace::MessageError {
            name: "APIError".into(),
            message: None,
        });
        let r = requests_of(&m, RequestStatus::Error);
        assert_eq!(r.len(), 3);
        assert_eq!(r[1].status, RequestStatus::Ok);
        assert!(r[2].failed_before_step && r[2].status == RequestStatus::Error);
    }

    /// OpenCode 0.1.174 (long recordings): a step, its tool's result, then a request the
    /// provider refused (HTTP 400). The message keeps the step's usage and the error; the model
    /// received two requests.
    #[test]
    fn a_refused_request_after_a_0_1_step_is_one_more_request() {
        let mut m = msg(vec![
            part("p1", PartKind::StepStart { snapshot: None }),
            part("p2", tool(5)),
        ]);
        m.tokens = Some(Usage {
            input: 14_309,
            ..Usage::default()
        });
        m.error = Some(crate::trace::MessageError {
            name: "UnknownError".into(),
            message: Some("AI_APICallError: This model's maximum context length is 20000".into()),
        });
        let r = requests_of(&m, RequestStatus::Error);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].status, r[0].usage.input), (RequestStatus::Ok, 14_309));
        assert!(r[1].failed_before_step && r[1].status == RequestStatus::Error);
        // An error raised while the step streamed (a tool call the SDK could not parse) is the
        // step's own.
        m.error = Some(crate::trace::MessageError {
            name: "UnknownError".into(),
            message: Some("AI_InvalidToolArgumentsError: Invalid arguments for tool write".into()),
        });
        let r = requests_of(&m, RequestStatus::Error);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].status, RequestStatus::Error);
    }

    /// 0.1.174 rebuilt a stored answer in the AI SDK v4's blocks (the layouts the model received
    /// in the recordings R1 and L3 of `tests/recordings/opencode-0.1.174*`).
    #[test]
    fn a_0_1_answer_is_rebuilt_in_the_sdks_blocks() {
        use crate::trace::model::CompletedAnswer;
        let text = |id: &str| {
            part(
                id,
                PartKind::Text {
                    text: id.into(),
                    synthetic: false,
                    ignored: false,
                    compaction_continue: false,
                },
            )
        };
        let step = |id: &str| part(id, PartKind::StepStart { snapshot: None });
        // R1: four steps of one call each, then the answer: the calls become one message.
        let r1 = msg(vec![
            step("s0"),
            part("c1", tool(1)),
            step("s1"),
            part("c2", tool(2)),
            step("s2"),
            part("c3", tool(3)),
            step("s3"),
            part("c4", tool(4)),
            step("s4"),
            text("answer"),
        ]);
        let merged = CompletedAnswer::ToolCallsMerged;
        assert_eq!(
            CompletedAnswer::rebuilt_blocks(&r1),
            vec![vec![1, 3, 5, 7], vec![9]]
        );
        assert_eq!(merged.resent_from(&r1), Some(0));
        // L3: steps with a text before their calls: the first block is as sent, then each text
        // and each call is a message of its own, so the prefix breaks in the second step.
        let l3 = msg(vec![
            step("s0"),
            text("read it"),
            part("c1", tool(1)),
            step("s1"),
            text("point 0"),
            part("c2", tool(2)),
            step("s2"),
            text("two checks"),
            part("c3", tool(3)),
            part("c4", tool(4)),
            step("s3"),
            text("file first"),
            text("then env"),
        ]);
        assert_eq!(
            CompletedAnswer::rebuilt_blocks(&l3),
            vec![
                vec![1, 2],
                vec![4],
                vec![5],
                vec![7],
                vec![8],
                vec![9],
                vec![11, 12]
            ]
        );
        assert_eq!(merged.resent_from(&l3), Some(1));
        // One step of calls before the answer: rebuilt as it was sent.
        let one = msg(vec![
            step("s0"),
            text("look"),
            part("c1", tool(1)),
            part("c2", tool(2)),
            step("s1"),
            text("done"),
        ]);
        assert_eq!(merged.resent_from(&one), None);
        assert_eq!(CompletedAnswer::AsSent.resent_from(&l3), None);
    }

    #[test]
    fn prompt_follows_the_semantics_and_says_when_the_numbers_disagree() {
        let u = Usage {
            input: 100,
            cache_read: 80,
            ..Usage::default()
        };
        assert_eq!(
            recorded_prompt(&u, InputSemantics::IncludesCache),
            (100, true)
        );
        assert_eq!(
            recorded_prompt(&u, InputSemantics::ExcludesCache),
            (180, true)
        );
        let u = Usage {
            input: 20,
            cache_read: 80,
            ..Usage::default()
        };
        assert_eq!(
            recorded_prompt(&u, InputSemantics::IncludesCache),
            (100, false)
        );
    }
}
