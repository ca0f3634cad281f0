//! The three sidecar parsers (`*.probes.json`, `*.annotations.json`, `*.tiers.json`) on any text,
//! and the probes' needle matching (regex needles come from the file).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tierscope_engine::episode::sidecar::{parse_annotations, parse_probes, parse_tiers};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.sidecar.json");
    if let Ok(probes) = parse_probes(text, path) {
        for p in &probes {
            let _ = p.is_answered_by(text);
            let _ = p.is_due(3);
        }
    }
    let _ = parse_annotations(text, path);
    let _ = parse_tiers(text, path);
});
