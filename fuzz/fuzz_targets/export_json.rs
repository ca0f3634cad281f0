//! `opencode export` files: arbitrary bytes (cut, non-UTF-8, wrong shapes) through the export
//! parser and the trace derivation it runs. Errors are fine; a panic or abort is a bug.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tierscope_engine::formats::opencode::export::parse_export(data, Path::new("fuzz.json"));
});
