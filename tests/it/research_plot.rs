//! Figures: the replay figure and the sweep map are written as SVG with the expected pieces.

use tierscope_engine::fixture::{write_fixture, FixtureConfig};
use tierscope_engine::research::plot::{replay_figure, sweep_figure, SweepMetric};
use tierscope_engine::session::LoadOptions;
use tierscope_engine::sweep::{self, Axis};

#[test]
fn replay_and_sweep_figures_are_svg() {
    let dir = tempfile::tempdir().unwrap();
    let report = write_fixture(
        &FixtureConfig {
            seed: 4,
            requests: 200,
            ..FixtureConfig::default()
        },
        dir.path(),
    )
    .unwrap();
    let s = tierscope_engine::session::load(&LoadOptions {
        path: report.export_path.clone(),
        ..LoadOptions::default()
    })
    .unwrap();
    let policy = tierscope_engine::policy::load("retention", &[]).unwrap();
    let r = tierscope_engine::replay::replay_session(&s, &policy, Some(20_000));
    let fig = dir.path().join("fig.svg");
    std::fs::write(&fig, replay_figure(&r, (1400, 900)).unwrap()).unwrap();
    let svg = std::fs::read_to_string(&fig).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.trim_end().ends_with("</svg>"));
    for word in [
        "applied tier",
        "context size per request",
        "budget",
        "anchor",
        "request",
    ] {
        assert!(svg.contains(word), "{word} missing from the figure");
    }
    // Heatmap cells (runs of equal cells per episode): at least one per episode.
    assert!(
        svg.matches("<rect").count() > s.episodes.len(),
        "heatmap cells are drawn"
    );
    // Some episode was demoted to anchor (its colour is drawn).
    assert!(
        svg.matches("fill=\"#C6DBEF\"").count() >= 2,
        "anchor cells drawn beside the legend"
    );

    let axes = vec![
        Axis::parse("demote_at=0.7:0.95:0.05").unwrap(),
        Axis::parse("promote_at=0.4:0.6:0.1").unwrap(),
    ];
    let res = sweep::run_with(&s, &policy, &axes, Some(20_000), &|| {}).unwrap();
    let map = dir.path().join("sweep.svg");
    std::fs::write(
        &map,
        sweep_figure(&res, SweepMetric::Survival, (1000, 700)).unwrap(),
    )
    .unwrap();
    let svg = std::fs::read_to_string(&map).unwrap();
    assert!(svg.contains("demote_at") && svg.contains("promote_at") && svg.contains("Pareto"));
    // Three axes are refused.
    let three = sweep::SweepResult {
        axes: vec![axes[0].clone(), axes[1].clone(), axes[1].clone()],
        ..res
    };
    assert!(sweep_figure(&three, SweepMetric::Cost, (800, 600)).is_err());
}

/// A session title with a terminal escape (as an attacker-controlled trace may hold) must not
/// end up raw in the SVG: ESC and BEL are not allowed in XML, so one would break the whole file.
#[test]
fn control_characters_in_a_title_keep_the_svg_well_formed() {
    let export = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/B1.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(export).unwrap()).unwrap();
    v["info"]["title"] = "evil <b> & \u{1b}]0;owned\u{7}\u{1b}[2J".into();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.json");
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let s = tierscope_engine::session::load(&LoadOptions {
        path: Some(path),
        ..LoadOptions::default()
    })
    .unwrap();
    let policy = tierscope_engine::policy::load("retention", &[]).unwrap();
    let r = tierscope_engine::replay::replay_session(&s, &policy, None);
    let fig = dir.path().join("fig.svg");
    std::fs::write(&fig, replay_figure(&r, (1400, 900)).unwrap()).unwrap();
    let svg = std::fs::read_to_string(&fig).unwrap();
    assert!(!svg.contains('\u{1b}') && !svg.contains('\u{7}'));
    assert!(svg.contains("\\x1b]0;owned"), "the escape is shown as text");
    assert!(svg.contains("&lt;b&gt;"));
}

/// `opencode` compacting M1 at 9,000 tokens: the episode whose head is in the summary is drawn
/// in its own colour (full, tail only), with a legend entry; `retention` draws none.
#[test]
fn a_tail_only_episode_has_its_own_colour() {
    let s = tierscope_engine::session::load(&LoadOptions {
        path: Some(concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/M1.json").into()),
        ..LoadOptions::default()
    })
    .unwrap();
    let draw = |name: &str| {
        let policy = tierscope_engine::policy::load(name, &[]).unwrap();
        let r = tierscope_engine::replay::replay_session(&s, &policy, Some(9_000));
        replay_figure(&r, (1400, 900)).unwrap()
    };
    let svg = draw("opencode");
    assert!(svg.contains("full, tail only"), "legend entry");
    // The cells and the legend swatch.
    assert!(
        svg.matches("fill=\"#6A3D9A\"").count() >= 2,
        "tail-only cells"
    );
    let svg = draw("retention");
    assert!(!svg.contains("tail only") && !svg.contains("#6A3D9A"));
}
