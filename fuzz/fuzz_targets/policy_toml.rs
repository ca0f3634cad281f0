//! Policy files: any text through the TOML policy parser; an optional `\n--\n` section holds
//! `KEY=VALUE` lines applied as overrides (the `--set` path), so knob parsing is fuzzed too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tierscope_engine::policy::{parse_overrides, parse_policy, PolicySource};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (policy_text, overrides) = match text.split_once("\n--\n") {
        Some((p, o)) => (p, Some(o)),
        None => (text, None),
    };
    let Ok(policy) = parse_policy(policy_text, "fuzz", "fuzz.toml", PolicySource::Builtin) else {
        return;
    };
    if let Some(o) = overrides {
        let lines: Vec<String> = o.lines().map(str::to_owned).collect();
        if let Ok(pairs) = parse_overrides(&lines) {
            let _ = policy.with_overrides(&pairs);
        }
    }
});
