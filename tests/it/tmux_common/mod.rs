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
        self.start_sized(120, 40, cmd);
    }

    /// Starts session `t` at `w`×`h` running `cmd` in a shell.
    pub fn start_sized(&self, w: u16, h: u16, cmd: &str) {
        let (w, h) = (w.to_string(), h.to_string());
        self.run(&["new-session", "-d", "-s", "t", "-x", &w, "-y", &h, cmd]);
    }

    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }

    /// The screen with its colours and attributes as escape sequences (`capture-pane -e`).
    pub fn screen_styled(&self) -> String {
        self.run(&["capture-pane", "-p", "-e", "-t", "t"])
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
        self.quit_with_and_check_restored(&["q"]);
    }

    /// [`Tmux::quit_and_check_restored`] with the keys that quit (`q`, then `y` to a question).
    pub fn quit_with_and_check_restored(&self, keys: &[&str]) {
        for k in keys {
            self.keys(&[k]);
            std::thread::sleep(Duration::from_millis(200));
        }
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

/// The command that runs the explorer on `recording` (a file of sample-traces) with `args`, then
/// prints its exit code and the tty modes and waits (for [`Tmux::quit_and_check_restored`]).
pub fn explorer(recording: &str, args: &str) -> String {
    let bin = env!("CARGO_BIN_EXE_tierscope");
    let rec = format!("{}/sample-traces/{recording}", env!("CARGO_MANIFEST_DIR"));
    format!(
        "env TERM=xterm-256color NO_COLOR= {bin} {rec} {args}; echo __EXIT__ $?; stty -a; sleep 60"
    )
}

/// The rows of the bordered box whose top border holds `title`: the text between its left and
/// right borders, one entry per row inside the box.
pub fn box_rows(screen: &str, title: &str) -> Vec<String> {
    let lines: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let Some((top, col)) = lines.iter().enumerate().find_map(|(i, l)| {
        let s: String = l.iter().collect();
        s.find(title)
            .map(|b| (i, s[..b].chars().count().saturating_sub(2)))
    }) else {
        return Vec::new();
    };
    let right = (col + 1..lines[top].len())
        .find(|&x| matches!(lines[top][x], '┐' | '┓'))
        .unwrap_or(lines[top].len());
    let mut out = Vec::new();
    for l in &lines[top + 1..] {
        if matches!(l.get(col), Some('└' | '┗')) || l.len() <= col {
            break;
        }
        out.push(l[col + 1..right.min(l.len())].iter().collect());
    }
    out
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
