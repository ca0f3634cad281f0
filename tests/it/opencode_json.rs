//! The one reader of OpenCode's message and part JSON (`formats::opencode::json`) against the
//! lenient expectations: odd and damaged rows, each read as a database row (from its text, the
//! damaged ones repaired) and as a parsed JSON value (the storage files and exports), with what
//! each reading reports. The snapshot was taken from the lenient `serde_json::Value` reading the
//! typed one replaced, so every field keeps its rules. Recorded rows: `typed_rows.rs`.

use std::fmt::Write;

use serde_json::Value;
use tierscope_engine::formats::opencode::db::{message_from_row, part_from_row};
use tierscope_engine::formats::opencode::parse::{parse_message, parse_part};
use tierscope_engine::trace::Diagnostics;

/// Odd part rows: every field of every part type with a type OpenCode does not write, unknown
/// types, missing ids and types, and damage the lenient parser repairs (or cannot).
const PARTS: &[&str] = &[
    r#"{"type":"step-finish","cost":"0.5","tokens":{"input":"12","output":-1}}"#,
    r#"{"type":"step-finish","cost":1e400,"tokens":{"input":1e30}}"#,
    r#"{"type":"step-finish","reason":"stop","cost":0.25,"tokens":{"input":1,"output":2,"reasoning":3,"cache":{"read":4,"write":5}}}"#,
    r#"{"type":"step-finish","tokens":{"input":1.0,"output":2.5,"reasoning":null,"cache":7}}"#,
    r#"{"type":"step-finish","tokens":{"input":[1],"output":{"a":1},"reasoning":true,"cache":{"read":"x","write":18446744073709551615}}}"#,
    r#"{"type":"step-finish","tokens":null,"cost":null,"reason":5}"#,
    r#"{"type":"step-finish","tokens":"many"}"#,
    r#"{"type":"step-start","snapshot":7}"#,
    r#"{"type":"step-start","snapshot":"abc"}"#,
    r#"{"type":"text","text":"hi","synthetic":1}"#,
    r#"{"type":"text","text":7}"#,
    r#"{"type":"text","text":null,"synthetic":true,"ignored":"yes"}"#,
    r#"{"type":"text","text":"x","metadata":{"compaction_continue":true}}"#,
    r#"{"type":"text","text":"x","metadata":{"compaction_continue":1}}"#,
    r#"{"type":"text","text":"x","metadata":"m"}"#,
    r#"{"type":"text","text":"x","metadata":null}"#,
    r#"{"type":"reasoning","text":"think"}"#,
    r#"{"type":"reasoning"}"#,
    r#"{"type":"retry","attempt":2,"error":null}"#,
    r#"{"type":"retry","attempt":2.7,"error":{"data":{"message":"boom"}}}"#,
    r#"{"type":"retry","attempt":-3,"error":{"name":"E","data":{"message":5}}}"#,
    r#"{"type":"retry","attempt":"2","error":"plain"}"#,
    r#"{"type":"retry"}"#,
    r#"{"type":"agent","name":"build"}"#,
    r#"{"type":"agent","name":3}"#,
    r#"{"type":"compaction","auto":true,"overflow":1,"tail_start_id":"msg_9"}"#,
    r#"{"type":"compaction","tail_start_id":null}"#,
    r#"{"type":"subtask","prompt":"p","description":"d","agent":"general"}"#,
    r#"{"type":"subtask","prompt":1,"description":null}"#,
    r#"{"type":"snapshot","snapshot":"s"}"#,
    r#"{"type":"snapshot","snapshot":false}"#,
    r#"{"type":"patch","hash":"h","files":["a",1,"b"]}"#,
    r#"{"type":"patch","hash":3,"files":"a"}"#,
    r#"{"type":"patch","files":[null,{"x":1},["y"],"z"]}"#,
    r#"{"type":"file","mime":"text/plain","url":"u","source":{"text":{"value":"v"}}}"#,
    r#"{"type":"file","mime":"m","url":"u","source":null,"filename":null}"#,
    r#"{"type":"file","mime":"m","url":"u","filename":"f.txt","source":{"text":"t","path":"p"}}"#,
    r#"{"type":"file","mime":1,"url":[],"source":{"text":{"value":5}}}"#,
    r#"{"type":"file","source":{"text":7}}"#,
    r#"{"type":"file","source":"s"}"#,
    r#"{"type":"tool","tool":"bash","state":"running"}"#,
    r#"{"type":"tool","tool":"bash","state":{"status":"completed","time":{"start":"x"}}}"#,
    r#"{"type":"tool","tool":"bash","state":{"status":"weird","output":"o"},"metadata":null}"#,
    r#"{"type":"tool","callID":"c","tool":"task","state":{"status":"completed","output":"o","metadata":null},"metadata":{"sessionId":"ses_x"}}"#,
    r#"{"type":"tool","callID":"c","tool":"task","state":{"status":"completed","output":"o","metadata":5},"metadata":{"sessionId":"ses_x"}}"#,
    r#"{"type":"tool","callID":"c","tool":"task","state":{"status":"completed","output":"o"},"metadata":"m"}"#,
    r#"{"type":"tool","callID":"c","tool":"read","state":{"status":"completed","output":"o","metadata":{"exit":1.5,"sessionId":3,"v2_structured_output":1}}}"#,
    r#"{"type":"tool","callID":"c","tool":"read","state":{"status":"completed","output":"o","metadata":{"exit":-2,"sessionId":"s","v2_structured_output":true}}}"#,
    r#"{"type":"tool","tool":"bash","state":{"status":"error","time":{"start":1.5,"end":2e3}}}"#,
    r#"{"type":"tool","tool":"bash","state":{"status":"error","error":"e","time":{"start":9223372036854775808,"end":-1,"compacted":null}}}"#,
    r#"{"type":"tool","tool":"bash","state":{"status":"error","time":"t"}}"#,
    r#"{"type":"tool","tool":"bash","state":{"status":null}}"#,
    r#"{"type":"tool","tool":"bash","state":{"status":"pending","input":null,"title":5}}"#,
    r#"{"type":"tool","tool":"bash","state":{"status":"running","input":{"command":"ls","n":[1,2]},"title":"t"}}"#,
    r#"{"type":"tool","tool":7,"callID":8,"state":{"status":"completed","output":9,"error":10}}"#,
    r#"{"type":"tool","tool":"bash"}"#,
    r#"{"type":"tool","tool":"bash","state":null}"#,
    r#"{"text":"no type"}"#,
    r#"{"type":5,"text":"type not a string"}"#,
    r#"{"type":"brand-new","x":1}"#,
    r#"{"type":"brand-new","id":"inner","messageID":"other","x":{"y":[1,2.5,"z"]}}"#,
    r#"{"id":5,"type":"text","text":"id not a string"}"#,
    r#"{"type":"text","text":"ok","junk":1e999}"#,
    r#"{"type":"text","text":"ok","junk":"\ud800"}"#,
    "{\"type\":\"text\",\"text\":\"raw\u{1}ctl\"}",
    r#"{"type":"text","text":"bad \x escape"}"#,
    r#"{"type":"text","text":"a","text":"last wins","t\u0065xt":"escaped key"}"#,
    r#"{"type":"text","text":"a","text":7}"#,
    r#"{"type":"text","type":"reasoning","text":"the last type"}"#,
    r#"[1,2]"#,
    r#"5"#,
    r#"{"type":"text","text":"x"} trailing"#,
    r#"{"type":"text","text":"cut"#,
    r#""#,
];

/// Odd message rows, each with the row's `time_created` column.
const MESSAGES: &[(&str, Option<i64>)] = &[
    (
        r#"{"role":"assistant","tokens":{"input":1,"output":2,"reasoning":3,"cache":{"read":4,"write":5}},"cost":0.5,"time":{"created":7,"completed":9},"path":{"cwd":"/w"},"modelID":"m","providerID":"p","finish":"stop","parentID":"msg_0","mode":"build"}"#,
        None,
    ),
    (
        r#"{"role":"assistant","tokens":{"input":1},"time":{}}"#,
        Some(9),
    ),
    (r#"{"role":"assistant"}"#, Some(9)),
    (
        r#"{"role":"assistant","summary":true,"agent":null,"mode":"plan"}"#,
        None,
    ),
    (
        r#"{"role":"user","summary":{"diffs":[1,2]},"model":{"providerID":"p","modelID":"m"},"agent":"build"}"#,
        Some(3),
    ),
    (
        r#"{"role":"user","model":{"providerID":"p","id":"m2"},"providerID":"q","modelID":"n"}"#,
        None,
    ),
    (
        r#"{"role":"user","model":null,"providerID":"q","modelID":"n"}"#,
        None,
    ),
    (
        r#"{"role":"user","model":{"providerID":"p"},"providerID":"q","modelID":"n"}"#,
        None,
    ),
    (r#"{"role":"user","model":"m","providerID":"q"}"#, None),
    (
        r#"{"role":"assistant","error":{"name":"APIError","data":{"message":"boom"}}}"#,
        None,
    ),
    (
        r#"{"role":"assistant","error":{"message":"plain"},"finish":null}"#,
        None,
    ),
    (
        r#"{"role":"assistant","error":{"name":5,"data":"d","message":"m"}}"#,
        None,
    ),
    (r#"{"role":"assistant","error":"a string"}"#, None),
    (r#"{"role":"assistant","error":[]}"#, None),
    (
        r#"{"role":"assistant","error":null,"cost":null,"tokens":null}"#,
        None,
    ),
    (
        r#"{"id":"other","sessionID":"ses_x","role":"assistant","role":"user"}"#,
        None,
    ),
    (r#"{"role":"assistant","x":1,"y":{"z":[null]},"x":2}"#, None),
    (
        r#"{"role":"assistant","time":{"created":1.9e3,"completed":null}}"#,
        Some(4),
    ),
    (
        r#"{"role":"assistant","time":{"created":-5,"completed":"x"}}"#,
        Some(4),
    ),
    (
        r#"{"role":"assistant","time":{"created":18446744073709551615}}"#,
        None,
    ),
    (r#"{"role":"assistant","tokens":{"input":"12"}}"#, None),
    (r#"{"role":"assistant","tokens":{"input":-1}}"#, None),
    (r#"{"role":"assistant","tokens":{"input":1.5}}"#, None),
    (
        r#"{"role":"assistant","tokens":{"input":2000000000000}}"#,
        None,
    ),
    (
        r#"{"role":"assistant","tokens":{"input":1,"cache":null}}"#,
        None,
    ),
    (
        r#"{"role":"assistant","tokens":{"cache":{"read":-1,"write":"3"}}}"#,
        None,
    ),
    (r#"{"role":"assistant","tokens":"many"}"#, None),
    (r#"{"role":"assistant","cost":"0.5"}"#, None),
    (r#"{"role":"assistant","cost":2}"#, None),
    (r#"{"role":"assistant","time":{"created":"x"}}"#, Some(1)),
    (r#"{"role":"assistant","time":{"created":null}}"#, Some(1)),
    (r#"{"role":"assistant","time":null}"#, Some(1)),
    (r#"{"role":"assistant","time":5}"#, Some(1)),
    (r#"{"role":"assistant","agent":5}"#, None),
    (r#"{"role":"assistant","agent":5,"mode":"plan"}"#, None),
    (r#"{"role":"assistant","summary":"yes"}"#, None),
    (r#"{"role":"assistant","path":{"cwd":""}}"#, None),
    (r#"{"role":"assistant","path":{"cwd":5,"root":"/r"}}"#, None),
    (r#"{"role":"user","path":"not an object"}"#, None),
    (r#"{"role":null}"#, None),
    (r#"{"role":5}"#, None),
    (r#"{"role":"system"}"#, None),
    (r#"{"time":{"created":1}}"#, None),
    (r#"{"role":"assistant","junk":1e999}"#, None),
    (r#"{"role":"assistant","junk":"\udc00"}"#, None),
    ("{\"role\":\"assistant\",\"junk\":\"raw\u{7}\"}", None),
    (r#"{"role":"assistant","tokens":{"input":1e999}}"#, None),
    (r#"{"role":"assistant"} trailing"#, None),
    (r#"[]"#, None),
    (r#"{"role":"#, None),
];

fn said(d: &Diagnostics) -> String {
    format!("{:?}", d.items())
}

/// A part row read as the database reads it, and the same JSON (when it parses) read as a
/// storage file or an export holds it, the ids in the object.
fn part_readings(data: &str) -> String {
    let mut out = String::new();
    let mut d = Diagnostics::new();
    let p = part_from_row("prt_1", "msg_1", "ses_1", Some(data.as_bytes()), &mut d);
    writeln!(out, "row: {p:?}\n  said: {}", said(&d)).ok();
    if let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(data) {
        o.entry("id").or_insert("prt_1".into());
        let mut d = Diagnostics::new();
        let p = parse_part(&Value::Object(o), &mut d);
        writeln!(out, "value: {p:?}\n  said: {}", said(&d)).ok();
    }
    out
}

fn message_readings(data: &str, time: Option<i64>) -> String {
    let mut out = String::new();
    let mut d = Diagnostics::new();
    let m = message_from_row("msg_1", "ses_1", Some(data.as_bytes()), time, &mut d);
    writeln!(out, "row: {m:?}\n  said: {}", said(&d)).ok();
    let listed = listing_read(data, time);
    writeln!(out, "listing: {listed}").ok();
    if let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(data) {
        o.entry("id").or_insert("msg_1".into());
        let mut d = Diagnostics::new();
        let m = parse_message(&Value::Object(o), &mut d);
        writeln!(out, "value: {m:?}\n  said: {}", said(&d)).ok();
    }
    out
}

/// The listing's read of a message row: what a listing line takes of it, or that its session
/// is loaded in full.
fn listing_read(data: &str, time: Option<i64>) -> String {
    match tierscope_engine::formats::opencode::json::listed_from_text(data, "msg_1", time) {
        Ok(m) => format!("{m:?}"),
        Err(_) => "full load".into(),
    }
}

#[test]
fn odd_and_damaged_parts_read_by_the_lenient_rules() {
    let mut out = String::new();
    for data in PARTS {
        writeln!(out, "== {data:?}\n{}", part_readings(data)).ok();
    }
    insta::with_settings!({snapshot_path => "snapshots/opencode_json", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("parts", out);
    });
}

#[test]
fn odd_and_damaged_messages_read_by_the_lenient_rules() {
    let mut out = String::new();
    for (data, time) in MESSAGES {
        writeln!(
            out,
            "== {data:?} time {time:?}\n{}",
            message_readings(data, *time)
        )
        .ok();
    }
    insta::with_settings!({snapshot_path => "snapshots/opencode_json", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("messages", out);
    });
}
