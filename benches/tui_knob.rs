//! Knob change → next drawn frame, on a synthetic session of 2,000 requests (or
//! `TIERSCOPE_BENCH_REQUESTS`, e.g. 10000 or 100000: `bench/run.sh` runs those; the fixture
//! generator's export, loaded like any recording). One iteration is what the explorer does for a slider step:
//! `update` (the key) → the replay job → `update` (result) → draw; and, for the second figure,
//! also the context job → `update` → draw. The worker runs inline here, so thread hand-off (a
//! channel send, microseconds) is not included. Results are in BENCHMARKS.md.

use criterion::{criterion_group, criterion_main, Criterion};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use tierscope::tui::app::{update, Effect, Msg, StartOptions, State};
use tierscope::tui::jobs::{run_sync, Worker};
use tierscope::tui::theme::Theme;

/// Requests of the session: 2,000 unless `TIERSCOPE_BENCH_REQUESTS` says otherwise.
fn requests() -> usize {
    std::env::var("TIERSCOPE_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn setup() -> (State, Worker) {
    let cfg = tierscope_engine::fixture::FixtureConfig {
        requests: requests(),
        ..Default::default()
    };
    let (bytes, _, _) =
        tierscope_engine::fixture::generate_in_memory(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join(format!("bench-{}.json", requests()));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
    let args = tierscope_engine::session::LoadOptions {
        path: Some(path),
        ..Default::default()
    };
    let loaded = tierscope_engine::session::load(&args).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.trace.requests.len() >= requests());
    let policy = tierscope_engine::policy::load("retention", &[]).unwrap_or_else(|e| panic!("{e}"));
    let theme = Theme::builtin("dark").unwrap_or_else(|| panic!("no theme"));
    let mut state = State::new(theme, policy, Some(60_000), StartOptions::default());
    state.width = 160;
    state.height = 48;
    // By id: `None` would load the newest session of the default location instead (the bundled
    // sample on a machine without agent data), and the bench would time that.
    let id = loaded.trace.session.id.clone();
    let mut worker = Worker::with_session(loaded);
    run_sync(
        &mut state,
        &mut worker,
        vec![Effect::LoadSession { id: Some(id) }],
    );
    assert!(
        worker
            .current()
            .is_some_and(|l| l.trace.requests.len() >= requests()),
        "the bench runs on the generated session"
    );
    let fx = update(&mut state, Msg::Key(key(KeyCode::Char('G'))));
    run_sync(&mut state, &mut worker, fx);
    // Knobs panel on demote_at.
    let row = 1 + state
        .on_screen
        .policy
        .specs
        .iter()
        .position(|s| s.name == "demote_at")
        .unwrap_or(0);
    state.knobs.panel = Some(row);
    (state, worker)
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn bench(c: &mut Criterion) {
    let (mut state, mut worker) = setup();
    let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap_or_else(|e| panic!("{e}"));
    let mut up = true;
    let n = requests();
    let mut g = c.benchmark_group(format!("tui_knob_{n}_requests"));
    g.sample_size(if n > 20_000 { 10 } else { 30 });
    g.bench_function("knob_step_to_replayed_frame", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let k = if up { KeyCode::Right } else { KeyCode::Left };
                up = !up;
                let t0 = std::time::Instant::now();
                let fx = update(&mut state, Msg::Key(key(k)));
                // A step that replays nothing would time a draw: refuse it.
                assert!(
                    fx.iter().any(|e| matches!(e, Effect::Replay { .. })),
                    "the knob step asked for no replay: {fx:?}"
                );
                let mut follow = Vec::new();
                for e in fx {
                    if matches!(e, Effect::Replay { .. }) {
                        if let Some(m) = worker.run(e, &|_| {}) {
                            if let Msg::Replayed { result: Err(e), .. } = &m {
                                panic!("the replay failed: {e}");
                            }
                            follow.extend(update(&mut state, m));
                        }
                    }
                }
                // The frame drawn when the replay's result arrives.
                term.draw(|f| {
                    tierscope::tui::ui::view(&state, f);
                })
                .unwrap_or_else(|e| panic!("{e}"));
                total += t0.elapsed();
                // The context render that follows (untimed here, measured below).
                run_sync(&mut state, &mut worker, follow);
            }
            total
        })
    });
    g.bench_function("knob_step_to_context_frame", |b| {
        b.iter(|| {
            let k = if up { KeyCode::Right } else { KeyCode::Left };
            up = !up;
            let fx = update(&mut state, Msg::Key(key(k)));
            run_sync(&mut state, &mut worker, fx);
            term.draw(|f| {
                tierscope::tui::ui::view(&state, f);
            })
            .unwrap_or_else(|e| panic!("{e}"));
        })
    });
    g.bench_function("draw_only", |b| {
        b.iter(|| {
            term.draw(|f| {
                tierscope::tui::ui::view(&state, f);
            })
            .unwrap_or_else(|e| panic!("{e}"));
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
