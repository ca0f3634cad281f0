//! `decay` against Magic Context, as read from its source (docs/decay.md): the tier function on
//! every case of Magic Context's own golden file, `context.db` files of several schema versions
//! built from its migrations (`tests/data/magic-context/schema.json`), and the worked examples
//! of the renderer's rules replayed end to end: loader → episodes → the `decay` replay.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};
use serde_json::Value;
use tierscope_engine::episode::options::TierSource;
use tierscope_engine::episode::segment::Segmentation;
use tierscope_engine::episode::Tier;
use tierscope_engine::formats::magic_context::estimate::{self, Estimator};
use tierscope_engine::formats::magic_context::{self as mc, render, rescore, HeadingDates};
use tierscope_engine::policy::kinds::decay::curve::Curve;
use tierscope_engine::policy::kinds::decay::fold::{self, BlockTokens, Costs, FoldRow, TIER_COST};
use tierscope_engine::policy::{self, Policy};
use tierscope_engine::replay::synth::{generate, SynthSpec};
use tierscope_engine::replay::{self, render_at, BoundaryKind, Cell, Input, Replay};
use tierscope_engine::session::EpisodeOptions;
use tierscope_engine::session::{from_trace, LoadedSession};
use tierscope_engine::trace::model::PartKind;
use tierscope_engine::trace::Trace;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/magic-context")
        .join(name)
}

fn json(name: &str) -> Value {
    let text = std::fs::read_to_string(data(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The tier function and the pressure: Magic Context's golden file
// ---------------------------------------------------------------------------------------------

/// Blocks that never make the guard act (the golden file is about the curve alone).
struct Tiny;
impl BlockTokens for Tiny {
    fn row(&mut self, _: usize, tier: u8) -> u64 {
        u64::from(tier < 5)
    }
    fn body(&mut self, tiers: &[u8]) -> u64 {
        tiers.iter().filter(|t| **t < 5).count() as u64
    }
    fn slice(&mut self, tiers: &[u8]) -> u64 {
        self.body(tiers)
    }
}

#[test]
fn tier_function_matches_magic_contexts_golden_file() {
    let g = json("decay-golden.json");
    let curve = Curve::default();
    let cases = g["tier_cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1008);
    for c in cases {
        let (index, imp, p) = (
            c["index"].as_u64().unwrap() as usize,
            c["importance"].as_f64().unwrap(),
            c["pressure"].as_f64().unwrap(),
        );
        let tier = curve.tier(index, imp, p);
        assert_eq!(u64::from(tier.min(5)), c["tier"].as_u64().unwrap(), "{c}");
        assert_eq!(tier == 5, c["archived"].as_bool().unwrap(), "{c}");
        assert_eq!(u64::from(tier), c["rendered"].as_u64().unwrap(), "{c}");
    }
    let pressures = g["pressure_cases"].as_array().unwrap();
    assert_eq!(pressures.len(), 15);
    for c in pressures {
        // The golden file lists importances newest first (index 1 first); rows are oldest first.
        let rows: Vec<FoldRow> = c["importances"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .map(|i| FoldRow::new(&curve, None, i.as_f64().unwrap()))
            .collect();
        let budget = c["budget"].as_f64().unwrap();
        let p = fold::pressure(
            &curve,
            &rows,
            budget,
            Costs::Constants(TIER_COST),
            &mut Tiny,
        );
        assert_eq!(p, c["one_pass"].as_f64().unwrap(), "{c}");
    }
}

// ---------------------------------------------------------------------------------------------
// context.db files of several schema versions, built from Magic Context's migrations
// ---------------------------------------------------------------------------------------------

/// A `context.db` at schema `version`: the v17 base, then each migration's DDL in order
/// (ADD COLUMN as an ensure-column), with `schema_migrations` rows as Magic Context records them.
pub(crate) fn build_db(path: &Path, version: i64) -> Connection {
    let schema = json("schema.json");
    let c = Connection::open(path).unwrap();
    let add_column = regex::Regex::new(r"(?i)^\s*ALTER TABLE (\w+) ADD COLUMN (\w+)").unwrap();
    for v in schema["versions"].as_array().unwrap() {
        let n = v["version"].as_i64().unwrap();
        if n > version {
            break;
        }
        apply(&c, v, &add_column);
    }
    c
}

fn apply(c: &Connection, v: &Value, add_column: &regex::Regex) {
    let n = v["version"].as_i64().unwrap();
    for ddl in v["ddl"].as_array().unwrap() {
        let ddl = ddl.as_str().unwrap();
        if let Some(m) = add_column.captures(ddl) {
            if columns(c, &m[1]).contains(&m[2].to_owned()) {
                continue;
            }
        }
        c.execute_batch(ddl)
            .unwrap_or_else(|e| panic!("v{n}: {e}: {ddl}"));
    }
    let first = if n == 17 { 1 } else { n };
    for m in first..=n {
        c.execute(
            "INSERT INTO schema_migrations(version, description, applied_at) VALUES (?1, ?2, 0)",
            params![m, v["description"].as_str().unwrap_or("")],
        )
        .unwrap();
    }
}

/// Apply migrations `from..=to` to an existing database (with v22's data transform).
fn migrate(c: &Connection, from: i64, to: i64) {
    let schema = json("schema.json");
    let add_column = regex::Regex::new(r"(?i)^\s*ALTER TABLE (\w+) ADD COLUMN (\w+)").unwrap();
    for v in schema["versions"].as_array().unwrap() {
        let n = v["version"].as_i64().unwrap();
        if n < from || n > to {
            continue;
        }
        apply(c, v, &add_column);
        if n == 22 {
            // v22 marks every row that existed when it ran as legacy.
            c.execute_batch(
                "INSERT OR IGNORE INTO schema_migrations_meta(key, value)
                   SELECT 'v22_legacy_compartment_boundary', CAST(COALESCE(MAX(id), 0) AS TEXT) FROM compartments;
                 UPDATE compartments SET legacy = 1 WHERE legacy = 0 AND id <= (
                   SELECT CAST(value AS INTEGER) FROM schema_migrations_meta
                   WHERE key = 'v22_legacy_compartment_boundary');",
            )
            .unwrap();
        }
    }
}

fn columns(c: &Connection, table: &str) -> Vec<String> {
    let mut st = c.prepare("SELECT name FROM pragma_table_info(?1)").unwrap();
    st.query_map([table], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// A compartment to insert: only the columns the schema has are written.
#[derive(Clone)]
struct Row {
    seq: i64,
    range: (i64, i64),
    ids: (String, String),
    title: &'static str,
    content: String,
    p: [Option<&'static str>; 4],
    importance: i64,
    legacy: Option<i64>,
}

fn row(seq: i64, title: &'static str) -> Row {
    Row {
        seq,
        range: (seq * 10 - 9, seq * 10),
        ids: (String::new(), String::new()),
        title,
        content: String::new(),
        p: [None; 4],
        importance: 50,
        legacy: None,
    }
}

fn insert(c: &Connection, session: &str, r: &Row) {
    let cols = columns(c, "compartments");
    let has = |n: &str| cols.iter().any(|c| c == n);
    let mut names = vec![
        "session_id",
        "sequence",
        "start_message",
        "end_message",
        "start_message_id",
        "end_message_id",
        "title",
        "content",
        "created_at",
    ];
    let mut values: Vec<rusqlite::types::Value> = vec![
        session.to_owned().into(),
        r.seq.into(),
        r.range.0.into(),
        r.range.1.into(),
        r.ids.0.clone().into(),
        r.ids.1.clone().into(),
        r.title.to_owned().into(),
        r.content.clone().into(),
        (1_700_000_000_000i64 + r.seq).into(),
    ];
    if has("p1") {
        for (i, name) in ["p1", "p2", "p3", "p4"].into_iter().enumerate() {
            names.push(name);
            values.push(r.p[i].map(str::to_owned).into());
        }
        names.push("importance");
        values.push(r.importance.into());
    }
    if let (true, Some(l)) = (has("legacy"), r.legacy) {
        names.push("legacy");
        values.push(l.into());
    }
    let sql = format!(
        "INSERT INTO compartments ({}) VALUES ({})",
        names.join(", "),
        (1..=names.len())
            .map(|i| format!("?{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    c.execute(&sql, rusqlite::params_from_iter(values)).unwrap();
}

#[test]
fn every_schema_version_reads_as_magic_context_does() {
    let dir = tempfile::tempdir().unwrap();
    let flat = |seq, title, content: &str| Row {
        content: content.to_owned(),
        ..row(seq, title)
    };
    // v17 (v0.21.0) and v21 (just before v22): flat rows, no legacy column: all legacy.
    for v in [17, 21] {
        let path = dir.path().join(format!("v{v}.db"));
        let c = build_db(&path, v);
        insert(&c, "s", &flat(1, "Old turn", "U: fix it\nA: fixed"));
        insert(&c, "s", &flat(2, "Old note", "Refactored the loader."));
        drop(c);
        let s = mc::read_session(&path, "s").unwrap();
        assert_eq!(s.meta.schema_version, Some(v));
        assert!(s.meta.notes.iter().any(|n| n.contains("predates v22")));
        assert_eq!(s.rows.len(), 2);
        for r in &s.rows {
            assert_eq!(
                r.legacy, 1,
                "v{v}: every row of a pre-v22 database is legacy"
            );
            assert_eq!(r.p, [None, None, None, None]);
            assert_eq!(r.importance, 50.0);
        }
        assert_eq!(s.rows[0].legacy_tier(), Some(3), "a U: line");
        assert_eq!(s.rows[1].legacy_tier(), Some(4));
        let t = render::render(&s.rows[0].row_text(None), 3);
        assert_eq!(t, "## 1-10 · Old turn\nU: fix it\nA: fixed");
        assert_eq!(
            render::render(&s.rows[1].row_text(None), 4),
            "## 11-20 · Old note"
        );
    }
    // v22 on a v21 database: the rows that existed are marked legacy, new rows are v2.
    let path = dir.path().join("v22.db");
    let c = build_db(&path, 21);
    insert(&c, "s", &flat(1, "Before v22", "old flat body"));
    migrate(&c, 22, 22);
    insert(
        &c,
        "s",
        &Row {
            p: [Some("new P1"), Some("new P2"), Some("new P3"), Some("")],
            importance: 57,
            ..row(2, "After v22")
        },
    );
    drop(c);
    let s = mc::read_session(&path, "s").unwrap();
    assert_eq!(s.meta.schema_version, Some(22));
    assert_eq!((s.rows[0].legacy, s.rows[1].legacy), (1, 0));
    // Importance is the stored integer, never rounded through ÷100·×100 (57 is one that would).
    assert_eq!(s.rows[1].importance, 57.0);
    assert_eq!(
        render::render(&s.rows[1].row_text(None), 4),
        "## 11-20 · After v22"
    );
    // v50, a middle version: NULL tiers, an empty tier, a pseudo-v2 row, an all-empty row.
    let path = dir.path().join("v50.db");
    let c = build_db(&path, 50);
    insert(
        &c,
        "s",
        &Row {
            p: [Some("B-P1"), None, Some(""), None],
            content: "B-P1".into(),
            legacy: Some(0),
            ..row(1, "Tiered B")
        },
    );
    insert(
        &c,
        "s",
        &Row {
            content: "flat body".into(),
            legacy: Some(0),
            ..row(2, "Pseudo")
        },
    );
    insert(
        &c,
        "s",
        &Row {
            p: [Some(""), Some(""), Some(""), Some("")],
            legacy: Some(0),
            ..row(3, "")
        },
    );
    drop(c);
    let s = mc::read_session(&path, "s").unwrap();
    assert_eq!(s.rows.len(), 2, "the all-empty row is dropped");
    assert_eq!(s.meta.dropped_empty, 1);
    assert_eq!(s.rows[0].p[1], None);
    assert_eq!(s.rows[0].p[2].as_deref(), Some(""));
    assert!(!s.rows[1].is_curve_legacy() && !s.rows[1].is_tiered());
    // v98: rebase_status (v88) and a re-scored importance.
    let path = dir.path().join("v98.db");
    let c = build_db(&path, 98);
    insert(
        &c,
        "s",
        &Row {
            p: [Some("a"), Some("b"), Some("c"), Some("d")],
            importance: 30,
            ..row(1, "Rescored")
        },
    );
    c.execute(
        "UPDATE compartments SET rebase_status = 'unresolved' WHERE sequence = 1",
        [],
    )
    .unwrap();
    drop(c);
    let before = mc::read_session(&path, "s").unwrap();
    assert!(before
        .meta
        .notes
        .iter()
        .any(|n| n.contains("rebase_status")));
    assert_eq!(before.rows[0].rebase_status.as_deref(), Some("unresolved"));
    let c = Connection::open(&path).unwrap();
    rescore_to(&c, "s", &before.rows[0], 90, 1);
    drop(c);
    let after = mc::read_session(&path, "s").unwrap();
    assert_eq!(
        (after.rows[0].importance, after.rows[0].base_importance),
        (90.0, 30.0)
    );
    assert_eq!(after.meta.rescored, 1);
}

/// Publish a re-score of compartment `c` to `importance` as selection `seq` (its revision made
/// against the row as it is).
fn rescore_to(conn: &Connection, session: &str, c: &mc::Compartment, importance: i64, seq: i64) {
    let identity = rescore::source_identity(c, session).unwrap();
    publish(
        conn,
        session,
        c.id,
        &identity,
        (c.base_importance as i64).clamp(1, 100),
        importance,
        seq,
    );
}

/// A revision of compartment `id` (made against `identity`) and its publication as selection
/// `seq`, with the job columns Magic Context's constraints require.
fn publish(
    conn: &Connection,
    session: &str,
    id: Option<i64>,
    identity: &str,
    old: i64,
    new: i64,
    seq: i64,
) {
    conn.execute(
        "INSERT INTO compartment_score_revisions (compartment_id, session_id, source_identity, old_importance, new_importance, rubric_version, prompt_hash, model, seed_ids, job_id, batch_id, attempt_id, completed_at, reason)
         VALUES (?1, ?2, ?3, ?4, ?5, 1, 'h', 'm', '[]', 'job', ?6, ?6, 0, 'test')",
        params![id, session, identity, old, new, format!("b{seq}")],
    )
    .unwrap_or_else(|e| panic!("revision: {e}"));
    let rev = conn.last_insert_rowid();
    conn.execute(
        "INSERT INTO compartment_score_selections (session_id, compartment_id, sequence, revision_id, origin, job_id, batch_id, attempt_id) VALUES (?1, ?2, ?3, ?4, 'publication', 'job', ?5, ?5)",
        params![session, id, seq, rev, format!("b{seq}")],
    )
    .unwrap_or_else(|e| panic!("selection: {e}"));
}

fn undo(conn: &Connection, session: &str, c: &mc::Compartment, seq: i64) {
    conn.execute(
        "INSERT INTO compartment_score_selections (session_id, compartment_id, sequence, revision_id, origin) VALUES (?1, ?2, ?3, NULL, 'undo')",
        params![session, c.id, seq],
    )
    .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Worked examples, replayed end to end
// ---------------------------------------------------------------------------------------------

/// A session of `n` one-request turns; the last request comes an hour after the others, so
/// Magic Context's `ttl_idle` folds there with the first `n − 1` turns as compartments.
fn session(n: usize) -> Trace {
    let mut t = generate(&SynthSpec {
        requests: n,
        episodes: n,
        seed: 3,
        chunk_tokens: (20, 40),
        long_gap_every: 0,
        probes: false,
        recorded_system: 0,
    })
    .trace;
    let hour = 3_600_000;
    let last = t.requests.len() - 1;
    let mi = t.requests[last].message_index;
    for m in &mut t.messages[mi - 1..] {
        m.time_created += hour;
        m.time_completed = m.time_completed.map(|x| x + hour);
    }
    t.requests[last].time_created += hour;
    t.requests[last].time_completed = t.requests[last].time_completed.map(|x| x + hour);
    t
}

/// Rows covering turns `0..rows.len()` of [`session`] by message id.
fn write_rows(path: &Path, version: i64, t: &Trace, rows: &[Row]) {
    let c = build_db(path, version);
    for (i, r) in rows.iter().enumerate() {
        let mut r = r.clone();
        r.ids = (
            t.messages[2 * i].id.clone(),
            t.messages[2 * i + 1].id.clone(),
        );
        insert(&c, &t.session.id, &r);
    }
}

fn load(t: &Trace, db: &Path) -> LoadedSession {
    let read = mc::read_session(db, &t.session.id).unwrap();
    from_trace(
        t.clone(),
        &EpisodeOptions {
            segmentation: Segmentation::MagicContext,
            tiers: TierSource::External,
            compartments: read.rows,
            magic_context_meta: read.meta,
            magic_context_db: Some(db.to_owned()),
            magic_context_dates: HeadingDates::Off,
            ..EpisodeOptions::default()
        },
    )
}

/// `decay` with a history budget of exactly `hb` (context limit 2·hb × 0.5 × 1.0) and the
/// backstop out of the way, so the only folds are the first render and `ttl_idle`.
fn decay_at(hb: u64) -> Policy {
    let sets: Vec<(String, String)> = [
        ("context_limit", (2 * hb).to_string()),
        ("execute_threshold", "0.5".into()),
        ("history_budget_percentage", "1".into()),
        ("backstop_m1_m0", "10".into()),
        ("backstop_m1_budget", "10".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    policy::load("decay", &sets).unwrap()
}

/// The Magic Context tier (1..=5) of each compartment episode at the last request.
fn final_tiers(l: &LoadedSession, r: &Replay, rows: usize) -> Vec<u8> {
    let last = r.frames.len() - 1;
    assert!(
        r.frames[last].boundaries.contains(&BoundaryKind::Fold),
        "no fold at the last request: {:?} ({:?})",
        r.frames[last].boundaries,
        r.policy.note
    );
    (0..rows)
        .map(|e| match r.applied.get(last, e) {
            Cell::Tier(t) => t.depth() as u8 + 1,
            other => panic!("{} is {other:?}", l.episodes[e].id),
        })
        .collect()
}

/// Spec E6: four rows; the guard demotes the oldest row all the way before the next.
fn e6_rows() -> Vec<Row> {
    let r = |seq, range, title, p: [&'static str; 4]| Row {
        range,
        p: p.map(Some),
        ..row(seq, title)
    };
    vec![
        r(1, (1, 12), "Repo setup", [
            "Created the workspace, pinned rustc 1.85 and added the CI job.",
            "Workspace created; rustc 1.85 pinned; CI added.",
            "Repo bootstrapped.",
            "",
        ]),
        r(2, (13, 30), "Parser bug", [
            "Traced the panic to parse_header in src/parse.rs:88; fixed the off-by-one and added a regression test.",
            "Fixed off-by-one in parse_header (src/parse.rs).",
            "Parser panic fixed.",
            "parse_header fix",
        ]),
        r(3, (31, 44), "Cache layer", [
            "Added an LRU cache in front of the resolver; hit rate 92% on the bench; commit 1a2b3c4.",
            "LRU cache before resolver (92% hits), 1a2b3c4.",
            "Resolver cache added.",
            "cache 1a2b3c4",
        ]),
        r(4, (45, 60), "Docs pass", [
            "Rewrote README usage and documented the --budget flag.",
            "README usage + --budget documented.",
            "Docs updated.",
            "",
        ]),
    ]
}

#[test]
fn e6_budget_guard_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let t = session(5);
    let db = dir.path().join("context.db");
    write_rows(&db, 98, &t, &e6_rows());
    let l = load(&t, &db);
    // The rendered lengths of the spec's table (characters, heading included).
    let lengths: Vec<Vec<usize>> = (0..4)
        .map(|e| {
            Tier::TIERS
                .iter()
                .map(|&tier| {
                    l.episodes[e]
                        .representation(tier)
                        .unwrap()
                        .text()
                        .chars()
                        .count()
                })
                .collect()
        })
        .collect();
    assert_eq!(
        lengths,
        vec![
            vec![83, 68, 39, 20],
            vec![124, 70, 41, 38],
            vec![110, 69, 44, 36],
            vec![75, 56, 34, 20]
        ]
    );
    // One render at budget B (the spec's table), with the blocks as loaded: the same tiers with
    // either estimator (its heur and claude columns agree).
    let curve = Curve::default();
    let rows: Vec<FoldRow> = (0..4).map(|_| FoldRow::new(&curve, None, 50.0)).collect();
    let mut estimators = vec![Estimator::Chars];
    if let Ok(bpe) = estimate::claude() {
        estimators.push(Estimator::Claude(bpe));
    }
    for est in estimators {
        let mut blocks = Rendered { l: &l, est };
        for (b, expected) in [
            (1e7, vec![1, 1, 1, 1]),
            (120.0, vec![4, 3, 2, 1]),
            (60.0, vec![5, 4, 3, 1]),
            (30.0, vec![5, 5, 5, 1]),
        ] {
            let r =
                fold::render_decayed(&curve, &rows, b, Costs::Constants(TIER_COST), &mut blocks);
            assert_eq!(r.tiers, expected, "B = {b} with {est:?}");
        }
    }
    // The whole fold, replayed at history budget hb: the same, except that at 30 the retry goes
    // on (the `<session-history>` slice of [5, 5, 5, 1] is 32 tokens > 1.05 × 30) and at
    // 30 ÷ 1.15³ = 19.7 the guard moves the newest row to P2.
    for (hb, expected) in [
        (1_000_000, vec![1, 1, 1, 1]),
        (120, vec![4, 3, 2, 1]),
        (60, vec![5, 4, 3, 1]),
        (30, vec![5, 5, 5, 2]),
    ] {
        let r = replay::replay(&Input::from(&l), &decay_at(hb), None);
        assert_eq!(final_tiers(&l, &r, 4), expected, "history budget {hb}");
        let note = r.policy.note.clone().unwrap_or_default();
        assert!(note.contains(&format!("history budget {hb} ")), "{note}");
        assert!(
            note.contains("ttl_idle 1") && note.contains("first_render 1"),
            "{note}"
        );
    }
}

/// The loaded blocks of the first episodes, counted with one estimator, joined as Magic Context
/// joins them.
struct Rendered<'a> {
    l: &'a LoadedSession,
    est: Estimator,
}

impl Rendered<'_> {
    fn text(&self, i: usize, tier: u8) -> String {
        if tier >= 5 {
            return String::new();
        }
        self.l.episodes[i]
            .representation(Tier::TIERS[usize::from(tier) - 1])
            .unwrap()
            .text()
    }
    fn joined(&self, tiers: &[u8]) -> String {
        tiers
            .iter()
            .enumerate()
            .map(|(i, t)| self.text(i, *t))
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

impl BlockTokens for Rendered<'_> {
    fn row(&mut self, i: usize, tier: u8) -> u64 {
        self.est.count(&self.text(i, tier))
    }
    fn body(&mut self, tiers: &[u8]) -> u64 {
        self.est.count(&self.joined(tiers))
    }
    fn slice(&mut self, tiers: &[u8]) -> u64 {
        self.est
            .count(&render::session_history(&self.joined(tiers)))
    }
}

/// Spec E5: legacy rows outside the curve at their fixed tiers, NULL and empty tiers, a
/// pseudo-v2 row rendered flat; the body Magic Context renders, block for block.
#[test]
fn e5_rendering_rules_in_one_session() {
    let dir = tempfile::tempdir().unwrap();
    let t = session(6);
    let db = dir.path().join("context.db");
    let l1 = format!(
        "U: Please fix the flaky test.\n{}",
        "alpha beta gamma delta ".repeat(20)
    );
    let rows = vec![
        Row {
            range: (1, 20),
            content: l1,
            legacy: Some(1),
            ..row(1, "Old flaky test")
        },
        Row {
            range: (21, 40),
            content: "Refactored the loader into three modules.".into(),
            legacy: Some(1),
            ..row(2, "Old refactor")
        },
        Row {
            range: (41, 50),
            p: [Some("A-P1"), Some("A-P2"), Some("A-P3"), Some("A-P4")],
            importance: 80,
            legacy: Some(0),
            ..row(3, "Tiered A")
        },
        Row {
            range: (51, 60),
            p: [Some("B-P1"), None, Some(""), None],
            importance: 30,
            legacy: Some(0),
            ..row(4, "Tiered B")
        },
        Row {
            range: (61, 70),
            content: "flat body of a pseudo-v2 row".into(),
            legacy: Some(0),
            ..row(5, "Interrupted upgrade")
        },
    ];
    write_rows(&db, 50, &t, &rows);
    let l = load(&t, &db);
    let mcs = l.magic_context.as_ref().unwrap();
    let legacy: Vec<Option<u8>> = mcs.episodes[..5]
        .iter()
        .map(|c| c.as_ref().unwrap().legacy_tier)
        .collect();
    assert_eq!(legacy, vec![Some(3), Some(4), None, None, None]);
    let p = decay_at(1_000_000);
    let r = replay::replay(&Input::from(&l), &p, None);
    assert_eq!(final_tiers(&l, &r, 5), vec![3, 4, 1, 1, 1]);
    let last = r.frames.len() - 1;
    let ctx = render_at(&Input::from(&l), &p, None, last).unwrap();
    let body: Vec<&str> = ctx
        .chunks
        .iter()
        .filter(|c| c.kind == "episode")
        .map(|c| c.text.as_str())
        .collect();
    let expected = format!(
        "## 1-20 · Old flaky test\nU: Please fix the flaky test.\n{}alpha beta gamma delta…\n\n## 21-40 · Old refactor\n\n## 41-50 · Tiered A\nA-P1\n\n## 51-60 · Tiered B\nB-P1\n\n## 61-70 · Interrupted upgrade\nflat body of a pseudo-v2 row",
        "alpha beta gamma delta ".repeat(16)
    );
    assert_eq!(body.join("\n\n"), expected);
    // B at each tier: P1, P1 (NULL p2), the heading alone (empty p3), P1 (NULL p4 falls back
    // past the empty p3 and the NULL p2).
    let b = &l.episodes[3];
    let at = |tier| b.representation(tier).unwrap().text();
    assert_eq!(at(Tier::Dense), "## 51-60 · Tiered B\nB-P1");
    assert_eq!(at(Tier::Compact), "## 51-60 · Tiered B");
    assert_eq!(at(Tier::Anchor), "## 51-60 · Tiered B\nB-P1");
}

/// Spec E2 (score-projection-parity) on a v98 database: re-scoring the oldest row to 100
/// demotes another row through the pressure; an undo restores the stored importance.
#[test]
fn e2_rescored_importance_moves_other_rows() {
    let dir = tempfile::tempdir().unwrap();
    let t = session(9);
    let db = dir.path().join("context.db");
    let rows: Vec<Row> = (0..8)
        .map(|i| Row {
            p: [Some("p1"), Some("p2"), Some("p3"), Some("p4")],
            importance: if i == 0 { 1 } else { 50 },
            ..row(i + 1, "r")
        })
        .collect();
    write_rows(&db, 98, &t, &rows);
    let tiers = |l: &LoadedSession| {
        final_tiers(
            l,
            &replay::replay(&Input::from(l), &decay_at(1250), None),
            8,
        )
    };
    assert_eq!(tiers(&load(&t, &db)), vec![4, 2, 2, 2, 1, 1, 1, 1]);
    let base = mc::read_compartments(&db, &t.session.id).unwrap();
    let c = Connection::open(&db).unwrap();
    rescore_to(&c, &t.session.id, &base[0], 100, 1);
    assert_eq!(tiers(&load(&t, &db)), vec![1, 2, 2, 2, 2, 1, 1, 1]);
    undo(&c, &t.session.id, &base[0], 2);
    assert_eq!(tiers(&load(&t, &db)), vec![4, 2, 2, 2, 1, 1, 1, 1]);
    // A revision made against another version of the row does not apply.
    let mut changed = base[0].clone();
    changed.title = "edited since".into();
    let identity = rescore::source_identity(&changed, &t.session.id).unwrap();
    publish(&c, &t.session.id, base[0].id, &identity, 1, 100, 3);
    assert_eq!(tiers(&load(&t, &db)), vec![4, 2, 2, 2, 1, 1, 1, 1]);
}

/// Spec E9: with a 5-minute cache TTL, exactly 300 s after the last response is not idle;
/// one millisecond more folds, and only once per idle gap.
#[test]
fn e9_ttl_folds_once_per_idle_gap() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = session(4);
    let db = dir.path().join("context.db");
    write_rows(&db, 98, &t, &[row(1, "a"), row(2, "b")]);
    // Request 3's predecessor ended at `end`; request 3 comes exactly 300 s later.
    let end = t.requests[2].time_completed.unwrap();
    let last = t.requests.len() - 1;
    let mi = t.requests[last].message_index;
    let shift = |t: &mut Trace, at: i64| {
        t.requests[last].time_created = at;
        t.requests[last].time_completed = Some(at + 500);
        t.messages[mi].time_created = at;
        t.messages[mi - 1].time_created = at - 1;
    };
    let p = decay_at(10_000);
    shift(&mut t, end + 300_000);
    let r = replay::replay(&Input::from(&load(&t, &db)), &p, None);
    assert!(!r.frames[last].boundaries.contains(&BoundaryKind::Fold));
    shift(&mut t, end + 300_001);
    let r = replay::replay(&Input::from(&load(&t, &db)), &p, None);
    assert!(r.frames[last].boundaries.contains(&BoundaryKind::Fold));
    let folds = r
        .frames
        .iter()
        .filter(|f| f.boundaries.contains(&BoundaryKind::Fold))
        .count();
    assert_eq!(folds, 2, "the first render and one ttl_idle fold");
}

/// The backstop refolds only on cache-busting passes: with usage far below the execute
/// threshold nothing busts the cache, so m[1] grows without a refold; with usage above it, the
/// same m[1] refolds.
#[test]
fn backstop_only_on_cache_busting_passes() {
    let dir = tempfile::tempdir().unwrap();
    let t = session(12);
    let db = dir.path().join("context.db");
    let rows: Vec<Row> = (0..11)
        .map(|i| Row {
            p: [
                Some("a long enough first tier to weigh in m[1]"),
                Some("b"),
                Some("c"),
                Some("d"),
            ],
            ..row(i + 1, "r")
        })
        .collect();
    write_rows(&db, 98, &t, &rows);
    let l = load(&t, &db);
    let run = |context_limit: u64| {
        let sets = vec![
            ("context_limit".to_owned(), context_limit.to_string()),
            ("history_budget_percentage".to_owned(), "0.05".to_owned()),
        ];
        let r = replay::replay(
            &Input::from(&l),
            &policy::load("decay", &sets).unwrap(),
            None,
        );
        r.policy.note.unwrap_or_default()
    };
    // Usage ≈ a few hundred tokens of a 10M window: no busting pass, no backstop.
    let quiet = run(10_000_000);
    assert!(!quiet.contains("backstop"), "{quiet}");
    // A small window: usage is above the execute threshold, the backstop fires (m[1] > 20 % of
    // the history budget).
    let busy = run(100);
    assert!(busy.contains("backstop"), "{busy}");
}

/// Turns after the last compartment are Magic Context's raw live tail: no fold tiers them and
/// m[1] does not count them. With two compartments and a history budget of 3 tokens, the first
/// cache-busting pass (request 5) refolds for those two, and the nine uncovered turns stay full
/// through it and the `ttl_idle` fold at the end.
#[test]
fn turns_after_the_last_compartment_are_not_history() {
    let dir = tempfile::tempdir().unwrap();
    let t = session(12);
    let db = dir.path().join("context.db");
    write_rows(&db, 98, &t, &[row(1, "a"), row(2, "b")]);
    let l = load(&t, &db);
    let sets = vec![
        ("context_limit".to_owned(), "100".to_owned()),
        ("history_budget_percentage".to_owned(), "0.05".to_owned()),
    ];
    let r = replay::replay(
        &Input::from(&l),
        &policy::load("decay", &sets).unwrap(),
        None,
    );
    let note = r.policy.note.clone().unwrap_or_default();
    assert!(note.contains("backstop 1,"), "{note}");
    assert_eq!(fold_requests(&r), vec![0, 5, 11], "{note}");
    let last = r.frames.len() - 1;
    for e in 2..11 {
        assert_eq!(
            r.applied.get(last, e),
            Cell::Tier(Tier::Full),
            "{}",
            l.episodes[e].id
        );
    }
}

/// A sub-agent session gets no history from Magic Context: nothing is decayed.
#[test]
fn sub_agent_sessions_are_not_decayed() {
    let mut t = session(6);
    t.session.parent_id = Some("ses_parent".into());
    let l = from_trace(t, &EpisodeOptions::default());
    let r = replay::replay(&Input::from(&l), &decay_at(30), None);
    assert_eq!(r.summary.changes, 0);
    assert!(r.policy.note.unwrap_or_default().contains("sub-agent"));
}

// ---------------------------------------------------------------------------------------------
// A model missing from the limits table
// ---------------------------------------------------------------------------------------------

/// Folds of a replay, by request.
fn fold_requests(r: &Replay) -> Vec<usize> {
    r.frames
        .iter()
        .filter(|f| f.boundaries.contains(&BoundaryKind::Fold))
        .map(|f| f.request)
        .collect()
}

/// A long session of a model the limits table does not know, at the default budget. Magic
/// Context measures usage against its default context limit (`resolveContextLimit`: 128,000)
/// and, once the model has reported usage, trusts that limit for the history budget
/// (`resolveTrustedContextLimit`, the usage-reported limit of the same model): 60,000 at the
/// first request, floor(128,000 × 0.65 × 0.15) = 12,480 from the second (a `render_config`
/// fold). Under pressure the execute passes come, the backstop refolds and the old episodes
/// are demoted. (With usage counted as 0 it folded once, at the first request, and kept every
/// episode at `full`.)
#[test]
fn unknown_model_folds_and_demotes_under_pressure_at_the_default_budget() {
    let mut t = generate(&SynthSpec {
        requests: 120,
        episodes: 40,
        seed: 7,
        chunk_tokens: (1_500, 3_000),
        long_gap_every: 0,
        probes: false,
        recorded_system: 0,
    })
    .trace;
    // Generated texts are short placeholders: give every human message ~4,000 tokens, so the
    // session outgrows the 128,000-token window Magic Context assumes.
    for m in &mut t.messages {
        for part in &mut m.parts {
            if let PartKind::Text { text, .. } = &mut part.kind {
                for w in 0..2_000 {
                    text.push_str(&format!(" note{w}"));
                }
            }
        }
    }
    let l = from_trace(t, &EpisodeOptions::default());
    let r = replay::replay(&Input::from(&l), &policy::load("decay", &[]).unwrap(), None);
    let note = r.policy.note.clone().unwrap_or_default();
    assert!(
        note.contains(
            "60000 (Magic Context's default: synthetic/model is not in the limits table and has reported no usage yet)"
        ),
        "{note}"
    );
    assert!(
        note.contains("12480 (context limit 128000: synthetic/model is not in the limits table"),
        "{note}"
    );
    assert!(note.contains("first_render 1"), "{note}");
    assert!(note.contains("render_config 1"), "{note}");
    assert!(note.contains("backstop"), "{note}");
    let folds = fold_requests(&r);
    assert_eq!(
        folds[..2],
        [0, 1],
        "first render, then the budget from the usage"
    );
    assert!(folds.len() > 2, "refolds under pressure: {folds:?}");
    // Demotions happen at folds after the first two, and the last frame shows tiers below full.
    let demoted: Vec<&str> = r
        .frames
        .iter()
        .flat_map(|f| &f.changes)
        .filter(|c| c.to > c.from)
        .map(|c| c.episode.as_str())
        .collect();
    assert!(!demoted.is_empty(), "no demotion: {note}");
    let last = &r.frames[r.frames.len() - 1].tiers;
    let below_full = last.dense.count + last.compact.count + last.anchor.count + last.dropped.count;
    assert!(below_full > 0, "still all full at the end: {last:?}");
    // Usage is the request's replayed input: folding keeps the context far below the
    // 128,000 window the session's full rendering would exceed.
    let full = replay::replay(&Input::from(&l), &policy::load("full", &[]).unwrap(), None);
    assert!(r.summary.max_overflow < full.summary.max_overflow);
}

/// The same on a real recording: an OpenCode 0.5.29 session of a model the limits table does
/// not know (the recorder's mock), 54 requests whose context outgrows the default budget. At
/// the default budget `decay` refolds through the backstop and demotes the old episodes.
#[test]
fn unknown_model_recording_refolds_under_pressure() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/recordings/opencode-0.5.29/data");
    let src = tierscope_engine::trace::load::open(Some(&dir)).unwrap();
    let t = src
        .load_session(Some("ses_dcf7253b5ffe5pSuStCKf2oJoR"))
        .unwrap();
    let l = from_trace(t, &EpisodeOptions::default());
    let r = replay::replay(&Input::from(&l), &policy::load("decay", &[]).unwrap(), None);
    let note = r.policy.note.clone().unwrap_or_default();
    assert!(note.contains("(context limit 128000: "), "{note}");
    assert!(note.contains("backstop"), "{note}");
    let folds = fold_requests(&r);
    assert!(folds.len() > 2, "{folds:?} {note}");
    let demotions = r
        .frames
        .iter()
        .flat_map(|f| &f.changes)
        .filter(|c| c.to > c.from)
        .count();
    assert!(demotions > 0, "{note}");
    let full = replay::replay(&Input::from(&l), &policy::load("full", &[]).unwrap(), None);
    assert!(
        r.summary.max_overflow < full.summary.max_overflow,
        "{} vs full {}",
        r.summary.max_overflow,
        full.summary.max_overflow
    );
}

/// A model switch clears the usage Magic Context recorded (`transform.ts` model-change reset):
/// the new unknown model starts at the default budget again and adopts 128,000 after its own
/// first usage, each change a `render_config` fold.
#[test]
fn unknown_model_switch_starts_from_the_default_budget_again() {
    let mut t = session(8);
    for r in &mut t.requests[4..] {
        if let Some(m) = &mut r.model {
            m.model_id = "other".into();
        }
    }
    let l = from_trace(t, &EpisodeOptions::default());
    let r = replay::replay(&Input::from(&l), &policy::load("decay", &[]).unwrap(), None);
    let note = r.policy.note.clone().unwrap_or_default();
    assert!(
        note.contains("60000 (Magic Context's default: synthetic/other is not in the limits table and has reported no usage yet)"),
        "{note}"
    );
    assert!(
        note.contains("12480 (context limit 128000: synthetic/other is not in the limits table"),
        "{note}"
    );
    let folds = fold_requests(&r);
    // 0 first render, 1 the adopted limit, 4 the switch (model_change; 60,000 again), 5 the
    // new model's adopted limit, and the last (an hour idle).
    assert!(folds.starts_with(&[0, 1, 4, 5]), "{folds:?} {note}");
}

// ---------------------------------------------------------------------------------------------
// Magic Context's token counting
// ---------------------------------------------------------------------------------------------

/// With the Claude vocabulary installed (`.ci/run` installs it; set
/// `TIERSCOPE_REQUIRE_CLAUDE_VOCAB=1` to make its absence a failure), the rendered blocks of
/// spec E6 count as the spec's claude column; without it, the fallback as its heur column.
#[test]
fn e6_blocks_count_as_magic_context_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let t = session(5);
    let db = dir.path().join("context.db");
    write_rows(&db, 98, &t, &e6_rows());
    let l = load(&t, &db);
    let count = |e: Estimator| -> Vec<Vec<u64>> {
        (0..4)
            .map(|i| {
                Tier::TIERS
                    .iter()
                    .map(|&tier| e.count(&l.episodes[i].representation(tier).unwrap().text()))
                    .collect()
            })
            .collect()
    };
    assert_eq!(
        count(Estimator::Chars),
        vec![
            vec![24, 20, 12, 6],
            vec![36, 20, 12, 11],
            vec![32, 20, 13, 11],
            vec![22, 16, 10, 6]
        ]
    );
    match estimate::claude() {
        Ok(bpe) => {
            assert!(
                bpe.verified,
                "{} is not Magic Context's vocabulary",
                bpe.path.display()
            );
            assert_eq!(
                count(Estimator::Claude(bpe)),
                vec![
                    vec![24, 21, 13, 7],
                    vec![38, 25, 12, 12],
                    vec![36, 26, 12, 16],
                    vec![20, 16, 12, 8]
                ]
            );
            // JavaScript's whitespace set: U+0085 is not a space for the pre-tokenizer.
            assert_eq!(bpe.encode("p  \u{85}q"), vec![84, 225, 2455, 232, 85]);
        }
        Err(why) => {
            assert!(
                std::env::var_os("TIERSCOPE_REQUIRE_CLAUDE_VOCAB").is_none(),
                "the Claude vocabulary is required here: {why}"
            );
            eprintln!("skipping the Claude BPE counts: {why}");
        }
    }
}

/// Magic Context keeps its database in WAL mode; after its clean exit (neither `-wal` nor
/// `-shm`) reading it creates neither beside the user's file.
#[test]
fn reading_a_wal_database_after_a_clean_exit_creates_no_side_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("context.db");
    let c = build_db(&path, 22);
    c.pragma_update(None, "journal_mode", "wal").unwrap();
    insert(&c, "s", &row(1, "A turn"));
    c.close().map_err(|(_, e)| e).unwrap();
    let side = |s: &str| dir.path().join(format!("context.db{s}"));
    assert!(!side("-wal").exists() && !side("-shm").exists());
    let s = mc::read_session(&path, "s").unwrap();
    assert_eq!(s.rows.len(), 1);
    assert!(
        !side("-wal").exists() && !side("-shm").exists(),
        "reading created a side file"
    );
}
