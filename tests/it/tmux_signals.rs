//! A signal to the explorer (SIGTERM from `kill`, SIGINT from `kill -INT`, SIGHUP from a closed
//! terminal window) restores the terminal before the process ends — cooked mode, no alternate
//! screen, cursor shown, no mouse reporting — and the exit status is the conventional 128 + n.
//! The real binary runs inside tmux; the shell prints the status and `stty -a` after it.

use crate::tmux_common;

use std::time::{Duration, Instant};

use tmux_common::{have_tmux, Tmux};

fn signal_restores_the_terminal(name: &str, number: i32) {
    if !have_tmux() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_tierscope");
    let rec = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/M1.json");
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pid");
    let t = Tmux::new(&format!("tierscope-sig{number}"));
    // `exec` keeps the pid the shell wrote: the explorer's own.
    let cmd = format!(
        "sh -c 'echo $$ > {pid}; exec env TERM=xterm-256color {bin} {rec} --budget 9000'; echo __EXIT__ $?; stty -a; echo __STTY__; sleep 60",
        pid = pidfile.display()
    );
    t.start(&cmd);
    t.wait("the main screen", |s| {
        s.contains("Episodes") && s.contains("r0/23")
    });
    assert_eq!(t.display("#{alternate_on}"), "1");
    assert_eq!(
        t.display("#{mouse_any_flag}"),
        "1",
        "mouse reporting was on"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        if let Ok(p) = std::fs::read_to_string(&pidfile) {
            if !p.trim().is_empty() {
                break p.trim().to_owned();
            }
        }
        assert!(Instant::now() < deadline, "no pid file");
        std::thread::sleep(Duration::from_millis(50));
    };
    let sent = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid])
        .status()
        .expect("kill");
    assert!(sent.success());
    let screen = t.wait("the exit and the tty modes", |s| s.contains("__STTY__"));
    assert!(
        screen.contains(&format!("__EXIT__ {}", 128 + number)),
        "SIG{name}: exit status:\n{screen}"
    );
    let flags = t.display("#{alternate_on} #{mouse_any_flag} #{cursor_flag}");
    assert_eq!(flags, "0 0 1", "SIG{name}: alternate screen, mouse, cursor");
    // `stty -a` prints a mode that is off as `-mode`.
    let modes: Vec<&str> = screen.split_whitespace().collect();
    for mode in ["icanon", "echo", "isig", "opost", "icrnl"] {
        assert!(
            modes.contains(&mode),
            "SIG{name}: tty left without {mode}:\n{screen}"
        );
    }
}

#[test]
fn sigterm_restores_the_terminal_and_exits_143() {
    signal_restores_the_terminal("TERM", 15);
}

#[test]
fn sigint_restores_the_terminal_and_exits_130() {
    signal_restores_the_terminal("INT", 2);
}

#[test]
fn sighup_restores_the_terminal_and_exits_129() {
    signal_restores_the_terminal("HUP", 1);
}
