//! A panic restores the terminal before its message prints: raw mode off, alternate screen left,
//! mouse capture off, cursor shown. The test runs this test binary again inside tmux as a child
//! that enters the explorer's terminal modes (the same `TerminalGuard` the explorer uses) and
//! panics; then it checks the pane. tmux must be installed (`.ci/run` installs it).

use std::process::Command;
use std::time::{Duration, Instant};

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

fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .env("TERM", "xterm-256color")
        .arg("-L")
        .arg(socket)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("tmux {args:?}: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

struct Server(String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .output();
    }
}

#[test]
fn a_panic_restores_the_terminal_before_printing() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    if !Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("tmux not installed: skipped");
        return;
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let server = Server(format!("tierscope-panic-{}", std::process::id()));
    let cmd = format!(
        "env {CHILD_ENV}=1 {} --exact child_panics_inside_the_terminal --nocapture --test-threads=1; echo __EXIT__ $?; stty -a; sleep 60",
        exe.display()
    );
    tmux(
        &server.0,
        &[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "120",
            "-y",
            "40",
            &cmd,
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let screen = loop {
        let s = tmux(&server.0, &["capture-pane", "-p", "-t", "t"]);
        if s.contains("__EXIT__") {
            break s;
        }
        assert!(Instant::now() < deadline, "the child did not finish:\n{s}");
        std::thread::sleep(Duration::from_millis(100));
    };
    // The message is on the normal screen (it printed after the alternate screen was left).
    assert!(
        screen.contains("deliberate panic for the restore test"),
        "{screen}"
    );
    assert!(
        !screen.contains("__EXIT__ 0"),
        "the child should have failed:\n{screen}"
    );
    let flags = tmux(
        &server.0,
        &[
            "display",
            "-p",
            "-t",
            "t",
            "#{alternate_on} #{mouse_any_flag} #{cursor_flag}",
        ],
    );
    assert_eq!(flags.trim(), "0 0 1", "alternate screen, mouse, cursor");
    assert!(
        screen.contains(" icanon") && screen.contains(" echo"),
        "tty left raw:\n{screen}"
    );
}
