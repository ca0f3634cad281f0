//! Replay throughput: a synthetic 10,000-request × 2,000-episode trace under `retention` and
//! `decay` (target: under 100 ms each on a 2-core machine), plus 2,500 and 5,000 requests to show
//! the growth is linear in requests. The `full` baseline for `divergence_cost` is included in
//! each replay, as the CLI runs it.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use tierscope_engine::policy;
use tierscope_engine::replay::synth::{generate, SynthSpec};
use tierscope_engine::replay::{self, Input};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    for requests in [2_500usize, 5_000, 10_000] {
        let s = generate(&SynthSpec {
            requests,
            episodes: 2_000,
            seed: 42,
            chunk_tokens: (40, 400),
            long_gap_every: 50,
            probes: false,
            recorded_system: 0,
        });
        let input: Input<'_> = s.input();
        let total: u64 = s
            .episodes
            .iter()
            .map(|e| u64::from(e.tokens(tierscope_engine::episode::Tier::Full)))
            .sum();
        // A budget that keeps the policies busy: a tenth of never-forget's final size.
        let budget = Some(total / 10);
        for name in ["retention", "decay", "full", "age"] {
            let Ok(p) = policy::load(name, &[]) else {
                continue;
            };
            group.bench_with_input(BenchmarkId::new(name, requests), &requests, |b, _| {
                b.iter(|| replay::replay(&input, &p, budget))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
