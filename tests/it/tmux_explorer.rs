//! Drives the real `tierscope` binary inside tmux: open a recording, step forward, change a knob
//! and see the screen change, quit, and check the terminal was restored (no alternate screen, no
//! mouse reporting, cooked mode). tmux must be installed (`.ci/run` installs it); without it the
//! test fails under CI and is skipped elsewhere.

use crate::tmux_common;

use tmux_common::{have_tmux, knob_row, Tmux};

#[test]
fn real_binary_in_tmux_steps_changes_a_knob_and_restores_the_terminal() {
    if !have_tmux() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_tierscope");
    let rec = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/M1.json");
    let t = Tmux::new("tierscope-test");
    // After the app exits the shell prints its exit code and the tty modes, then waits.
    let cmd = format!(
        "env TERM=xterm-256color NO_COLOR= {bin} {rec} --budget 9000; echo __EXIT__ $?; stty -a; sleep 60"
    );
    t.start(&cmd);
    let first = t.wait("the main screen", |s| {
        s.contains("Episodes") && s.contains("r0/23")
    });
    assert!(first.contains("Migrate confmerge"), "{first}");
    assert_eq!(t.display("#{alternate_on}"), "1");

    // Step forward twice.
    t.keys(&["l", "l"]);
    t.wait("the cursor at request 2", |s| s.contains("r2/23"));
    t.keys(&["End"]);
    let before = t.wait("the cursor at the end", |s| {
        s.contains("r23/23") && s.contains("Context r23")
    });

    // Change a knob: demote_at typed as 1.5 in the knobs panel.
    let row = knob_row("retention", "demote_at");
    t.keys(&["K"]);
    t.wait("the knobs panel", |s| s.contains("Knobs: retention"));
    for _ in 0..row {
        t.keys(&["Down"]);
    }
    t.keys(&["Enter"]);
    t.wait("the value field", |s| s.contains("demote_at = 0.9"));
    t.keys(&["BSpace", "BSpace", "BSpace", "1", ".", "5", "Enter"]);
    t.keys(&["Escape"]);
    // The schedule changed: the heatmap, chart and table differ (demote_at above the budget
    // means no demotions at all).
    let body = |s: &str| s.lines().skip(1).take(20).collect::<Vec<_>>().join("\n");
    let after = t.wait("the replayed screen", |s| {
        !s.contains("Knobs:") && !s.contains("replaying") && body(s) != body(&before)
    });
    let heat_rows = after.lines().filter(|l| l.starts_with('E')).take(4);
    assert!(
        heat_rows.into_iter().all(|l| !l.contains('▼')),
        "demotions left:\n{after}"
    );
    t.keys(&["K"]);
    t.wait("the knob's new value", |s| {
        s.lines()
            .any(|l| l.contains("demote_at *") && l.contains("1.5"))
    });
    // Esc and the next key must not arrive together (that reads as Alt+key).
    t.keys(&["Escape"]);
    t.wait("the panel closed", |s| !s.contains("Knobs:"));

    // Quit: the edit is unsaved, so q asks first; y quits. The terminal is back to normal.
    t.keys(&["q"]);
    t.wait("the question", |s| {
        s.contains("Quit?") && s.contains("not saved")
    });
    t.quit_with_and_check_restored(&["y"]);
}
