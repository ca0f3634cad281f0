//! The typed reads of database rows (issue 17) give exactly what the lenient `Value` reading
//! gives, on every row of every recording database and on rows shaped to trip them; where they
//! would differ they do not take the row. `part.data` (the load's hot rows): the part and its
//! diagnostics; `message.data` for the load: the message and its diagnostics; `message.data` for the
//! listing: what a listing line reads of the message.

use rusqlite::{Connection, OpenFlags};
use tierscope_engine::formats::opencode::db::{
    message_from_row, message_from_row_lenient, part_from_row, part_from_row_lenient,
};
use tierscope_engine::formats::opencode::listing::{self, ListedMessage};
use tierscope_engine::formats::opencode::{message_full, message_row};
use tierscope_engine::trace::Diagnostics;

use crate::loader_support::recordings;

/// Both readings of one part row: (part, diagnostics as text).
fn both(data: &str) -> [(Option<String>, String); 2] {
    let read = |typed: bool| {
        let mut d = Diagnostics::new();
        let p = if typed {
            part_from_row("prt_1", "msg_1", "ses_1", Some(data.as_bytes()), &mut d)
        } else {
            part_from_row_lenient("prt_1", "msg_1", "ses_1", Some(data.as_bytes()), &mut d)
        };
        (p.map(|p| format!("{p:?}")), format!("{:?}", d.items()))
    };
    [read(true), read(false)]
}

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
fn every_part_row_of_every_recording_reads_the_same_both_ways() {
    let mut rows = 0;
    each_recording_row("SELECT data FROM part", |r| {
        let data = r[0].clone().expect("data");
        let [typed, lenient] = both(&data);
        assert_eq!(typed, lenient, "{data}");
        rows += 1;
    });
    assert!(rows > 100, "only {rows} part rows");
}

#[test]
fn odd_part_rows_read_the_same_both_ways() {
    for data in [
        // Types the lenient reading reads its own way: a string count, a number for a flag, a
        // null error, a state that is not an object, a missing type, an unknown type.
        r#"{"type":"step-finish","cost":"0.5","tokens":{"input":"12","output":-1}}"#,
        r#"{"type":"step-finish","cost":1e400,"tokens":{"input":1e30}}"#,
        r#"{"type":"text","text":"hi","synthetic":1}"#,
        r#"{"type":"text","text":7}"#,
        r#"{"type":"retry","attempt":2,"error":null}"#,
        r#"{"type":"tool","tool":"bash","state":"running"}"#,
        r#"{"type":"tool","tool":"bash","state":{"status":"completed","time":{"start":"x"}}}"#,
        r#"{"type":"tool","tool":"bash","state":{"status":"weird","output":"o"},"metadata":null}"#,
        r#"{"type":"tool","callID":"c","tool":"task","state":{"status":"completed","output":"o","metadata":null},"metadata":{"sessionId":"ses_x"}}"#,
        r#"{"type":"tool","tool":"bash","state":{"status":"error","time":{"start":1.5,"end":2e3}}}"#,
        r#"{"text":"no type"}"#,
        r#"{"type":"brand-new","x":1}"#,
        // Damage the lenient parser repairs (and reports) in a field the part does not keep.
        r#"{"type":"text","text":"ok","junk":1e999}"#,
        r#"{"type":"text","text":"ok","junk":"\ud800"}"#,
        "{\"type\":\"text\",\"text\":\"raw\u{1}ctl\"}",
        r#"{"type":"text","text":"a","text":"last wins","t\u0065xt":"escaped key"}"#,
        r#"{"type":"patch","hash":"h","files":["a",1,"b"]}"#,
        r#"{"type":"file","mime":"text/plain","url":"u","source":{"text":{"value":"v"}}}"#,
        r#"{"type":"file","mime":"m","url":"u","source":null,"filename":null}"#,
        r#"{"type":"text","text":"x","metadata":{"compaction_continue":true}}"#,
        r#"[1,2]"#,
        r#"{"type":"text","text":"x"} trailing"#,
    ] {
        let [typed, lenient] = both(data);
        assert_eq!(typed, lenient, "{data}");
    }
}

/// The listing's read of a message row (`None`: not taken), and the loader's, projected to what
/// a listing reads.
fn message_both(
    data: &str,
    time: Option<i64>,
) -> (Option<Option<ListedMessage>>, Option<ListedMessage>) {
    let typed = message_row::read(data, "msg_1", time).ok();
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
fn every_message_row_of_every_recording_reads_the_same_both_ways() {
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

/// The load's typed read of a message row (`None`: not taken) and the lenient reading, both with
/// what they report, as text.
fn full_message_both(data: &str, time: Option<i64>) -> (Option<String>, (Option<String>, String)) {
    let typed = message_full::read(data, "msg_1", "ses_1", time)
        .ok()
        .map(|m| format!("{m:?}"));
    let mut d = Diagnostics::new();
    let lenient = message_from_row_lenient("msg_1", "ses_1", Some(data.as_bytes()), time, &mut d)
        .map(|m| format!("{m:?}"));
    (typed, (lenient, format!("{:?}", d.items())))
}

#[test]
fn every_message_row_of_every_recording_loads_the_same_both_ways() {
    let (mut rows, mut taken) = (0, 0);
    each_recording_row(
        "SELECT data, CAST(time_created AS TEXT) FROM message",
        |r| {
            let data = r[0].clone().expect("data");
            let time = r[1].as_deref().and_then(|t| t.parse().ok());
            let (typed, (lenient, said)) = full_message_both(&data, time);
            if let Some(t) = typed {
                assert_eq!(Some(t), lenient, "{data}");
                assert_eq!(said, "[]", "a taken row reports nothing: {data}");
                taken += 1;
            }
            rows += 1;
        },
    );
    // Recorded rows are plain: the typed read must take them all, or it is no faster.
    assert_eq!(taken, rows, "typed read declined recorded rows");
    assert!(rows > 50, "only {rows} message rows");
}

#[test]
fn odd_message_rows_load_the_same_or_are_not_taken() {
    let cases = [
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
            r#"{"role":"assistant","error":{"name":"APIError","data":{"message":"boom"}}}"#,
            None,
        ),
        (
            r#"{"role":"assistant","error":{"message":"plain"},"finish":null}"#,
            None,
        ),
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
        // Odd types: read by the lenient rules (with a diagnostic), so not taken.
        (r#"{"role":"assistant","tokens":{"input":"12"}}"#, None),
        (r#"{"role":"assistant","tokens":{"input":-1}}"#, None),
        (r#"{"role":"assistant","tokens":{"input":1.5}}"#, None),
        (r#"{"role":"assistant","tokens":"many"}"#, None),
        (r#"{"role":"assistant","time":{"created":"x"}}"#, Some(1)),
        (r#"{"role":"assistant","time":{"created":null}}"#, Some(1)),
        (r#"{"role":"assistant","time":null}"#, Some(1)),
        (r#"{"role":"assistant","time":5}"#, Some(1)),
        (r#"{"role":"assistant","agent":5}"#, None),
        (r#"{"role":"assistant","summary":"yes"}"#, None),
        (r#"{"role":null}"#, None),
        (r#"{"role":"system"}"#, None),
        (r#"{"time":{"created":1}}"#, None),
        (r#"{"role":"assistant","junk":1e999}"#, None),
        (r#"{"role":"assistant","junk":"\udc00"}"#, None),
        ("{\"role\":\"assistant\",\"junk\":\"raw\u{7}\"}", None),
        (r#"{"role":"assistant"} trailing"#, None),
        (r#"[]"#, None),
    ];
    let mut taken = 0;
    for (data, time) in cases {
        let (typed, (lenient, said)) = full_message_both(data, time);
        if let Some(t) = typed {
            assert_eq!(Some(t), lenient, "{data}");
            assert_eq!(said, "[]", "{data}");
            taken += 1;
        }
    }
    assert!(taken >= 13, "only {taken} of the plain rows taken");
}
