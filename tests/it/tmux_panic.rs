//! A panic restores the terminal before its message prints: raw mode off, alternate screen left,
//! mouse capture off, cursor shown. The test runs this test binary again inside tmux as a child
//! that enters the explorer's terminal modes (the same `TerminalGuard` the explorer uses) and
//! panics; then it checks the pane. tmux must be installed (`.ci/run` installs it).

use crate::tmux_common;

use std::time::Duration;

use tmux_common::{have_tmux, Tmux};

const CHILD_ENV: &str = "TIERSCOPE_PANIC_CHILD";

/// Only does something as the child started by the test below.
#[test]
fn child_panics_inside_the_terminal() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let _guard = tierscope::tui::run::TerminalGuard::enter(true).unwrap_or_else(|e| panic!("{e}"));
    std::thread::sleep(Duration::from_millis(300));
    panic!("deliberate panic for the restore test");
}

#[test]
fn a_panic_restores_the_terminal_before_printing() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    if !have_tmux() {
        return;
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let t = Tmux::new("tierscope-panic");
    let cmd = format!(
        "env {CHILD_ENV}=1 {} --exact tmux_panic::child_panics_inside_the_terminal --nocapture --test-threads=1; echo __EXIT__ $?; stty -a; sleep 60",
        exe.display()
    );
    t.start(&cmd);
    let screen = t.wait("the child to finish and stty", |s| {
        s.contains("__EXIT__") && s.contains("echoke")
    });
    // The message is on the normal screen (it printed after the alternate screen was left).
    assert!(
        screen.contains("deliberate panic for the restore test"),
        "{screen}"
    );
    assert!(
        !screen.contains("__EXIT__ 0"),
        "the child should have failed:\n{screen}"
    );
    let flags = t.display("#{alternate_on} #{mouse_any_flag} #{cursor_flag}");
    assert_eq!(flags, "0 0 1", "alternate screen, mouse, cursor");
    assert!(
        screen.contains(" icanon") && screen.contains(" echo"),
        "tty left raw:\n{screen}"
    );
}
