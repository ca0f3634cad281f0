//! The one reader of OpenCode's message and part JSON (`formats::opencode::json`) on every row of
//! every recording database: a row read from its text (the database load) gives what the same
//! JSON gives read as a parsed value (storage files and exports), diagnostics included, and the
//! listing's read of a message row is what the load reads of it. Odd and damaged rows against
//! the lenient expectations: `opencode_json.rs`.

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use tierscope_engine::formats::opencode::db::{message_from_row, part_from_row};
use tierscope_engine::formats::opencode::json;
use tierscope_engine::formats::opencode::listing::{self, ListedMessage};
use tierscope_engine::formats::opencode::parse::{parse_message, parse_part};
use tierscope_engine::trace::Diagnostics;

use crate::loader_support::recordings;

/// `sql` on a copy of every recording database (the originals keep their -wal untouched), each
/// row as its columns read as text.
fn each_recording_row(sql: &str, mut each: impl FnMut(Vec<Option<String>>)) {
    for rec in recordings() {
        let copy = tempfile::tempdir().expect("tempdir");
        for f in ["opencode.db", "opencode.db-wal", "opencode.db-shm"] {
            let src = rec.db.with_file_name(f);
            std::fs::copy(&src, copy.path().join(f))
                .unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        }
        let conn = Connection::open_with_flags(
            copy.path().join("opencode.db"),
            OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("open");
        let mut stmt = conn.prepare(sql).expect("query");
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..n)
                    .map(|i| r.get::<_, Option<String>>(i))
                    .collect::<Result<Vec<_>, _>>()
            })
            .expect("rows");
        for r in rows {
            each(r.expect("row"));
        }
    }
}

#[test]
fn every_part_row_of_every_recording_reads_from_its_text_as_from_its_value() {
    let mut rows = 0;
    each_recording_row("SELECT data FROM part", |r| {
        let data = r[0].clone().expect("data");
        let mut d = Diagnostics::new();
        let from_text = part_from_row("prt_1", "msg_1", "ses_1", Some(data.as_bytes()), &mut d);
        let text = (format!("{from_text:?}"), format!("{:?}", d.items()));
        // The JSON with the row's columns, as the database reading adds them.
        let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(&data) else {
            panic!("a recorded part row is JSON: {data}")
        };
        o.insert("sessionID".into(), "ses_1".into());
        o.insert("id".into(), "prt_1".into());
        o.insert("messageID".into(), "msg_1".into());
        let mut d = Diagnostics::new();
        let from_value = parse_part(&Value::Object(o), &mut d);
        assert_eq!(
            text,
            (format!("{from_value:?}"), format!("{:?}", d.items())),
            "{data}"
        );
        assert!(from_text.is_some(), "{data}");
        rows += 1;
    });
    assert!(rows > 100, "only {rows} part rows");
}

#[test]
fn every_message_row_of_every_recording_reads_from_its_text_as_from_its_value() {
    let mut rows = 0;
    each_recording_row(
        "SELECT data, CAST(time_created AS TEXT) FROM message",
        |r| {
            let data = r[0].clone().expect("data");
            let time: Option<i64> = r[1].as_deref().and_then(|t| t.parse().ok());
            let mut d = Diagnostics::new();
            let from_text = message_from_row("msg_1", "ses_1", Some(data.as_bytes()), time, &mut d);
            // Recorded rows are plain: nothing to report.
            assert_eq!(format!("{:?}", d.items()), "[]", "{data}");
            let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(&data) else {
                panic!("a recorded message row is JSON: {data}")
            };
            o.insert("id".into(), "msg_1".into());
            o.insert("sessionID".into(), "ses_1".into());
            // The time column fills in a missing `time.created`, as the database reading does.
            if let Some(t) = time {
                let at = o
                    .entry("time")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(at) = at.as_object_mut() {
                    at.entry("created").or_insert(t.into());
                }
            }
            let from_value = parse_message(&Value::Object(o), &mut d);
            assert_eq!(
                format!("{from_text:?}"),
                format!("{from_value:?}"),
                "{data}"
            );
            assert_eq!(format!("{:?}", d.items()), "[]", "{data}");
            assert!(from_text.is_some(), "{data}");
            rows += 1;
        },
    );
    assert!(rows > 50, "only {rows} message rows");
}

/// The listing's read of a message row (`None`: not taken), and the loader's, projected to what
/// a listing reads.
fn message_both(
    data: &str,
    time: Option<i64>,
) -> (Option<Option<ListedMessage>>, Option<ListedMessage>) {
    let typed = json::listed_from_text(data, "msg_1", time).ok();
    let lenient = message_from_row(
        "msg_1",
        "ses_1",
        Some(data.as_bytes()),
        time,
        &mut Diagnostics::new(),
    )
    .and_then(|m| listing::listed(&m));
    (typed, lenient)
}

#[test]
fn every_message_row_of_every_recording_is_listed_as_loaded() {
    let mut rows = 0;
    each_recording_row(
        "SELECT data, CAST(time_created AS TEXT) FROM message",
        |r| {
            let data = r[0].clone().expect("data");
            let time = r[1].as_deref().and_then(|t| t.parse().ok());
            let (typed, lenient) = message_both(&data, time);
            assert_eq!(typed, Some(lenient), "{data}");
            rows += 1;
        },
    );
    assert!(rows > 50, "only {rows} message rows");
}

#[test]
fn odd_message_rows_are_read_the_same_or_not_taken() {
    let cases = [
        (
            r#"{"role":"assistant","tokens":{"input":1,"output":2,"reasoning":3,"cache":{"read":4,"write":5}},"cost":0.5,"time":{"created":7},"path":{"cwd":"/w"}}"#,
            None,
        ),
        (
            r#"{"role":"assistant","tokens":{"input":1},"time":{}}"#,
            Some(9),
        ),
        (r#"{"role":"assistant"}"#, Some(9)),
        (
            r#"{"role":"user","summary":{"diffs":[1,2]},"path":"not an object"}"#,
            None,
        ),
        (
            r#"{"role":"assistant","path":{"cwd":""},"x":[{"y":null}]}"#,
            None,
        ),
        (r#"{"role":"assistant","path":{"cwd":5,"root":"/r"}}"#, None),
        (r#"{"role":"system"}"#, None),
        (r#"{"id":"other","role":"assistant","role":"user"}"#, None),
        (r#"{"role":"assistant","tokens":{"input":"12"}}"#, None),
        (r#"{"role":"assistant","tokens":{"input":-1}}"#, None),
        (r#"{"role":"assistant","tokens":{"input":1.5}}"#, None),
        (r#"{"role":"assistant","tokens":null,"cost":null}"#, None),
        (r#"{"role":"assistant","time":{"created":"x"}}"#, Some(1)),
        (r#"{"role":"assistant","time":null}"#, Some(1)),
        (r#"{"role":null}"#, None),
        (r#"{"role":"assistant","junk":1e999}"#, None),
        (r#"{"role":"assistant","junk":"\udc00"}"#, None),
        ("{\"role\":\"assistant\",\"junk\":\"raw\u{7}\"}", None),
        (r#"[]"#, None),
    ];
    let mut taken = 0;
    for (data, time) in cases {
        let (typed, lenient) = message_both(data, time);
        // Taken: the same reading; not taken: the session goes to a full load (always exact).
        if let Some(t) = typed {
            assert_eq!(t, lenient, "{data}");
            taken += 1;
        }
    }
    assert!(taken >= 7, "only {taken} of the plain rows taken");
}
