//! The lenient message / part / session parsers on any JSON value: the shapes a database `data`
//! column or an export entry can hold, however wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tierscope_engine::formats::opencode::parse::{parse_message, parse_part, parse_session, parse_usage};
use tierscope_engine::trace::Diagnostics;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let mut diags = Diagnostics::new();
    let _ = parse_session(&v);
    let _ = parse_usage(&v, "fuzz", &mut diags);
    let _ = parse_message(&v, &mut diags);
    let _ = parse_part(&v, &mut diags);
    // An export entry `{info, parts}`: the parts are parsed against the info's id, as the loaders do.
    if let Some(info) = v.get("info") {
        let _ = parse_message(info, &mut diags);
    }
    if let Some(parts) = v.get("parts").and_then(Value::as_array) {
        for p in parts {
            let _ = parse_part(p, &mut diags);
        }
    }
});
