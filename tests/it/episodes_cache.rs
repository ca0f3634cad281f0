//! The token cache: the second load of the largest recording tokenizes nothing (checked on the
//! tokenizer's counter, not on time), in a cache directory of its own.

use std::path::{Path, PathBuf};

use tierscope_engine::session::LoadOptions;

const REC_118: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/opencode-1.18.33"
);
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");

fn largest_recording() -> PathBuf {
    let mut files: Vec<PathBuf> = vec![
        Path::new(REC_118).join("exports/E1.json"),
        Path::new(REC_118).join("exports/E2.json"),
    ];
    let rd = std::fs::read_dir(SAMPLES).unwrap_or_else(|e| panic!("{SAMPLES}: {e}"));
    files.extend(rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        crate::loader_support::is_export_name(n) && !n.contains(".child")
    }));
    // E1, E2, M1, B1, C1.
    assert_eq!(files.len(), 5, "recordings: {files:?}");
    files
        .into_iter()
        .max_by_key(|p| {
            std::fs::metadata(p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                .len()
        })
        .expect("five recordings")
}

#[test]
fn second_load_of_the_largest_recording_does_no_tokenization() {
    let dir = tempfile::tempdir().unwrap();
    let args = LoadOptions {
        path: Some(largest_recording()),
        token_cache_dir: Some(dir.path().to_owned()),
        ..LoadOptions::default()
    };
    let first = tierscope_engine::session::load(&args).unwrap();
    assert!(first.token_stats.tokenized > 0);
    assert!(dir
        .path()
        .join(tierscope_engine::tokens::cache_file_name(Default::default()))
        .is_file());
    let second = tierscope_engine::session::load(&args).unwrap();
    assert_eq!(second.token_stats.tokenized, 0, "{:?}", second.token_stats);
    assert!(second.token_stats.disk_entries > 0);
    // Same counts either way.
    assert_eq!(first.episodes, second.episodes);

    // A corrupt cache file is ignored: the load still works and counts the same.
    let path = dir
        .path()
        .join(tierscope_engine::tokens::cache_file_name(Default::default()));
    std::fs::write(&path, b"not a cache").unwrap();
    let third = tierscope_engine::session::load(&args).unwrap();
    assert!(third.token_stats.tokenized > 0);
    assert_eq!(first.episodes, third.episodes);
}
