//! Export-shaped inputs: the share feed's flat array loads to the same trace as the export.

use crate::loader_support;

use std::path::Path;

use loader_support::*;
use serde_json::{json, Value};
use tierscope_engine::formats::opencode::export::{load_export, parse_export};
use tierscope_engine::trace::load::open;

/// `{info, messages:[{info, parts}]}` → `[{type, data}]` as OpenCode's share sync sends it.
fn to_share(export: &Value) -> Vec<Value> {
    let mut out = vec![json!({"type": "session", "data": export["info"]})];
    for m in export["messages"].as_array().expect("messages") {
        out.push(json!({"type": "message", "data": m["info"]}));
        for p in m["parts"].as_array().expect("parts") {
            out.push(json!({"type": "part", "data": p}));
        }
    }
    out.push(json!({"type": "model", "data": [{"id": "scripted"}]}));
    out
}

#[test]
fn a_share_feed_loads_to_the_same_trace_as_the_export() {
    for rec in recordings() {
        for export in &rec.exports {
            let v: Value = serde_json::from_slice(&bytes(export)).expect("json");
            let share = serde_json::to_vec(&to_share(&v)).expect("share");
            let a = load_export(export).expect("export");
            let b = parse_export(&share, Path::new("share.json")).expect("share feed");
            assert_eq!(comparable(&a), comparable(&b), "{}", export.display());
        }
    }
}

#[test]
fn a_later_share_item_updates_an_earlier_one() {
    let rec = &recordings()[0];
    let v: Value = serde_json::from_slice(&bytes(&rec.exports[0])).expect("json");
    let mut items = to_share(&v);
    // A text part first synced half-written, then complete (the sync sends updates by key).
    let pos = items
        .iter()
        .position(|i| i["type"] == "part" && i["data"]["type"] == "text")
        .expect("a text part");
    let mut early = items[pos].clone();
    early["data"]["text"] = "half".into();
    items.insert(pos, early);
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("feed.json");
    std::fs::write(&p, serde_json::to_vec(&items).expect("json")).expect("write");
    let from_feed = open(Some(&p))
        .expect("open")
        .load_session(None)
        .expect("load");
    let from_export = load_export(&rec.exports[0]).expect("export");
    assert_eq!(comparable(&from_feed), comparable(&from_export));
}
