//! Shared by the tmux tests: a private tmux server per test (killed when dropped), one session
//! `t` in it, keys sent to it and its screen polled until a condition holds.
#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    pub socket: String,
}

impl Tmux {
    /// A server of its own (`prefix-PID`), so parallel tests and a user's tmux do not meet.
    pub fn new(prefix: &str) -> Self {
        Self {
            socket: format!("{prefix}-{}", std::process::id()),
        }
    }

    pub fn run(&self, args: &[&str]) -> String {
        // CI may run without a TERM; tmux needs one to describe its panes.
        let out = Command::new("tmux")
            .env("TERM", "xterm-256color")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("tmux {args:?}: {e}"));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts session `t` at 120×40 running `cmd` in a shell.
    pub fn start(&self, cmd: &str) {
        self.run(&["new-session", "-d", "-s", "t", "-x", "120", "-y", "40", cmd]);
    }

    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// A pane flag or format (`#{alternate_on}`), trimmed.
    pub fn display(&self, format: &str) -> String {
        self.run(&["display", "-p", "-t", "t", format])
            .trim()
            .to_owned()
    }

    /// Sends `q` and checks the explorer exited with 0 and left the terminal as it found it:
    /// no alternate screen, no mouse reporting, cooked mode (the command must end in
    /// `echo __EXIT__ $?; stty -a; sleep 60`).
    pub fn quit_and_check_restored(&self) {
        self.keys(&["q"]);
        // `echoke` is in the last line `stty -a` prints (as `echoke` or `-echoke`): waiting
        // for `__EXIT__` alone raced the rest of its output on a loaded machine.
        let done = self.wait("the exit and the tty modes", |s| {
            s.contains("__EXIT__") && s.contains("echoke")
        });
        assert!(done.contains("__EXIT__ 0"), "{done}");
        assert_eq!(self.display("#{alternate_on}"), "0");
        assert_eq!(self.display("#{mouse_any_flag}"), "0");
        assert!(
            done.contains(" icanon") && done.contains(" echo"),
            "tty left raw:\n{done}"
        );
    }

    /// Polls the screen until `pred` holds (the app works off the UI thread, so no fixed
    /// sleeps).
    pub fn wait(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// The row of `knob` in the knobs panel of built-in policy `policy` (row 0 is the budget).
pub fn knob_row(policy: &str, knob: &str) -> usize {
    let p = tierscope_engine::policy::load(policy, &[]).unwrap_or_else(|e| panic!("{e}"));
    1 + p
        .specs
        .iter()
        .position(|s| s.name == knob)
        .unwrap_or_else(|| panic!("no {knob} in {policy}"))
}

/// Whether tmux can run here. Without it a test is skipped, except under CI (which installs
/// it), where that is a failure.
pub fn have_tmux() -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("tmux not installed: skipped");
    }
    ok
}
