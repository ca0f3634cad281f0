//! Job control, as `less` and `vim` do it: SIGTSTP (`kill -TSTP`, or Ctrl-Z, which in raw mode
//! is a key) gives the terminal back to the shell as it was — no alternate screen, no mouse
//! reporting, cursor shown — and stops the explorer; `fg` takes the terminal again (raw mode: one
//! key acts, no Enter needed) and redraws the whole screen. The real binary runs as a job of an
//! interactive bash inside tmux.

use crate::tmux_common;

use std::time::{Duration, Instant};

use tmux_common::{have_tmux, Tmux};

const PROMPT: &str = "__PROMPT__$";

/// An interactive bash in tmux running the explorer on M1 as its foreground job; the explorer's
/// pid.
fn explorer_as_a_job(t: &Tmux, dir: &std::path::Path) -> String {
    let bin = env!("CARGO_BIN_EXE_tierscope");
    let rec = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/M1.json");
    let pidfile = dir.join("pid");
    t.start("env PS1='__PROMPT__$ ' bash --norc --noprofile -i");
    t.wait("the shell's prompt", |s| s.contains(PROMPT));
    // `exec` keeps the pid the shell wrote: the explorer's own.
    let cmd = format!(
        "sh -c 'echo $$ > {pid}; exec env TERM=xterm-256color NO_COLOR= {bin} {rec} --budget 9000'",
        pid = pidfile.display()
    );
    t.keys(&[&cmd, "Enter"]);
    t.wait("the main screen", |s| {
        s.contains("Episodes") && s.contains("r0/23")
    });
    assert_eq!(
        t.display("#{alternate_on} #{mouse_any_flag}"),
        "1 1",
        "the explorer's modes were on"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(p) = std::fs::read_to_string(&pidfile) {
            if !p.trim().is_empty() {
                return p.trim().to_owned();
            }
        }
        assert!(Instant::now() < deadline, "no pid file");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The explorer is stopped and the shell has the terminal as it was.
fn check_suspended(t: &Tmux, how: &str) {
    let screen = t.wait("the job stopped and the prompt back", |s| {
        s.contains("Stopped") && s.trim_end().ends_with(PROMPT)
    });
    assert_eq!(
        t.display("#{alternate_on} #{mouse_any_flag} #{cursor_flag}"),
        "0 0 1",
        "{how}: alternate screen, mouse, cursor while stopped:\n{screen}"
    );
}

/// `fg`: the explorer redraws its whole screen (none of the shell's lines stay), and a single
/// key, without Enter, acts.
fn check_resumed(t: &Tmux, how: &str, at: usize) {
    t.keys(&["fg", "Enter"]);
    let screen = t.wait("the explorer redrawn", |s| {
        s.contains("Episodes") && s.contains(&format!("r{at}/23")) && !s.contains("Stopped")
    });
    assert!(
        !screen.contains(PROMPT),
        "{how}: the shell's lines are still on screen:\n{screen}"
    );
    assert_eq!(
        t.display("#{alternate_on} #{mouse_any_flag}"),
        "1 1",
        "{how}: the explorer's modes are back"
    );
    t.keys(&["Right"]);
    t.wait("one key stepping (raw mode)", |s| {
        s.contains(&format!("r{}/23", at + 1))
    });
}

/// `q`, then the job's exit status and the terminal as the shell left it.
fn quit(t: &Tmux) {
    t.keys(&["q"]);
    t.wait("the prompt after quitting", |s| {
        s.trim_end().ends_with(PROMPT) && !s.contains("Episodes")
    });
    t.keys(&["echo __EXIT__ $?", "Enter"]);
    let screen = t.wait("the exit status", |s| s.contains("__EXIT__ "));
    assert!(screen.contains("__EXIT__ 0"), "{screen}");
    assert_eq!(
        t.display("#{alternate_on} #{mouse_any_flag} #{cursor_flag}"),
        "0 0 1"
    );
}

#[test]
fn sigtstp_gives_the_terminal_back_and_fg_takes_it_again() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Tmux::new("tierscope-tstp");
    let pid = explorer_as_a_job(&t, dir.path());
    for (round, at) in [(1, 0), (2, 1)] {
        let sent = std::process::Command::new("kill")
            .args(["-TSTP", &pid])
            .status()
            .expect("kill");
        assert!(sent.success());
        check_suspended(&t, &format!("kill -TSTP, round {round}"));
        check_resumed(&t, &format!("fg, round {round}"), at);
    }
    quit(&t);
}

#[test]
fn ctrl_z_suspends_like_sigtstp() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Tmux::new("tierscope-ctrlz");
    explorer_as_a_job(&t, dir.path());
    t.keys(&["C-z"]);
    check_suspended(&t, "Ctrl-Z");
    check_resumed(&t, "fg after Ctrl-Z", 0);
    quit(&t);
}

#[test]
fn ctrl_z_without_job_control_does_not_stop_the_explorer() {
    if !have_tmux() {
        return;
    }
    // tmux runs the command with `sh -c`: no job control, so nothing could continue a stopped
    // explorer.
    let t = Tmux::new("tierscope-nojobs");
    t.start(&tmux_common::explorer("M1.json", "--budget 9000"));
    t.wait("the main screen", |s| {
        s.contains("Episodes") && s.contains("r0/23")
    });
    t.keys(&["C-z"]);
    t.keys(&["Right"]);
    t.wait("the explorer still stepping", |s| s.contains("r1/23"));
    assert_eq!(t.display("#{alternate_on} #{mouse_any_flag}"), "1 1");
    t.quit_and_check_restored();
}
