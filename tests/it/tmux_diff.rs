//! Drives the real `tierscope` binary inside tmux into diff mode: `d`, choose `age` against
//! `retention` on the migration recording at a tight budget, see the disagreement heatmap, the
//! tiers at the cursor (the rejected approach's episode below its floor in B) and the context
//! diff, jump a hunk, edit a knob of B (both replays rerun), close, quit cleanly. tmux must be
//! installed (`.ci/run` installs it); without it the test fails under CI and is skipped elsewhere.

use crate::tmux_common;

use tmux_common::{have_tmux, knob_row, Tmux};

#[test]
fn real_binary_in_tmux_opens_diff_mode_and_edits_b() {
    if !have_tmux() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_tierscope");
    let rec = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/M1.json");
    let t = Tmux::new("tierscope-diff-test");
    let cmd = format!(
        "env TERM=xterm-256color NO_COLOR= {bin} {rec} --policy retention --budget 9000; echo __EXIT__ $?; stty -a; sleep 60"
    );
    t.start(&cmd);
    t.wait("the main screen", |s| {
        s.contains("Episodes") && s.contains("r0/23")
    });

    // `d` opens the chooser with `age` preselected (the current policy is retention).
    t.keys(&["d"]);
    t.wait("the chooser", |s| s.contains("compare with policy B"));
    t.keys(&["Enter"]);
    let s = t.wait("the diff screen", |s| {
        s.contains("A retention vs B age")
            && s.contains("where A and B disagree")
            && s.contains("context at r0")
    });
    assert!(s.contains("13 of 24 requests differ"), "{s}");

    // Request 18: E0 (the rejected approach) is below its floor in B; its context differs.
    for _ in 0..18 {
        t.keys(&["l"]);
    }
    let s = t.wait("request 18 with its context diff", |s| {
        s.contains("r18/23") && s.contains("context at r18") && s.contains("hunk 1/")
    });
    assert!(s.contains("anchor!"), "E0 below its floor in B:\n{s}");
    assert!(s.contains("floor-viol +1"), "{s}");
    assert!(
        s.contains("── E0 compact") && s.contains("── E0 anchor"),
        "{s}"
    );
    t.keys(&["n"]);
    t.wait("the second hunk", |s| s.contains("hunk 2/"));

    // B's knobs: raise anchor_after far enough that age stops taking E0 to anchor by request 18.
    t.keys(&["b"]);
    t.wait("B's knobs panel", |s| s.contains("knobs of B (age)"));
    let row = knob_row("age", "anchor_after");
    for _ in 0..row {
        t.keys(&["Down"]);
    }
    t.keys(&["L"]);
    t.keys(&["Escape"]);
    let s = t.wait("both replays rerun", |s| {
        s.contains("B age anchor_after=")
            && !s.contains("replaying")
            && s.contains("context at r18")
    });
    assert!(
        !s.contains("anchor!"),
        "E0 should stay above anchor now:\n{s}"
    );

    // Esc back to the main screen, then quit and check the terminal is restored.
    t.keys(&["Escape"]);
    t.wait("the main screen again", |s| {
        s.contains("Episodes") && !s.contains("where A and B disagree")
    });
    t.quit_and_check_restored();
}
