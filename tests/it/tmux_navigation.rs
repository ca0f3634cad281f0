//! The real `tierscope` binary in tmux, on the migration recording (sample-traces/M1) at a tight
//! budget: the detail pane scrolls to the change history, the context pane opens filled with
//! the divergence in view, Esc does not quit, `:` goes to a request and to an episode, and `/`
//! highlights, filters and clears. tmux must be installed (`.ci/run` installs it); without it the
//! tests fail under CI and are skipped elsewhere.

use crate::tmux_common;

use tmux_common::{box_rows, explorer, have_tmux, Tmux};

fn open(prefix: &str, w: u16, h: u16) -> Tmux {
    let t = Tmux::new(prefix);
    t.start_sized(w, h, &explorer("M1.json", "--budget 9000"));
    t.wait("the main screen", |s| {
        s.contains("Episodes") && s.contains("r0/23") && s.contains(" run ")
    });
    t
}

#[test]
fn detail_scrolls_to_the_change_history() {
    if !have_tmux() {
        return;
    }
    // 80×24: the detail pane holds a few lines; E0's history is below them.
    let t = open("tierscope-nav-detail", 80, 24);
    t.keys(&["End"]);
    t.wait("the last request", |s| s.contains("r23/23"));
    let first = t.screen();
    assert!(!first.contains("full→compact  pressure"), "{first}");
    // Focus the detail pane (heatmap → episodes → detail at this width).
    t.keys(&["Tab", "Tab", "Tab"]);
    t.wait("the detail pane focused", |s| s.contains("┏ Detail E0"));
    let mut found = false;
    for _ in 0..10 {
        t.keys(&["PageDown"]);
        std::thread::sleep(std::time::Duration::from_millis(150));
        if t.screen().contains("r10   full→compact  pressure") {
            found = true;
            break;
        }
    }
    let s = t.screen();
    assert!(found, "the change history never came into view:\n{s}");
    // The title says where the pane is, the border how much more there is.
    assert!(s.contains("Detail E0: lines") && s.contains("more"), "{s}");
    // And the end of the page (E0's tier text) is reachable too: "lines a–n of n".
    for _ in 0..60 {
        t.keys(&["PageDown"]);
    }
    let at_end = |s: &str| {
        let re = regex::Regex::new(r"Detail E0: lines \d+–(\d+) of (\d+)").expect("regex");
        re.captures(s).is_some_and(|c| c[1] == c[2])
    };
    t.wait("the end of the page", at_end);
    t.quit_and_check_restored();
}

#[test]
fn context_opens_filled_with_the_divergence_in_view() {
    if !have_tmux() {
        return;
    }
    let t = open("tierscope-nav-context", 120, 40);
    t.keys(&["End"]);
    // Settled: rendered and scrolled to the divergence (under load a frame can come between).
    let s = t.wait("the context at the last request, scrolled", |s| {
        s.contains("Context r23:") && !s.contains("rendering") && s.contains("▲ ")
    });
    let rows = box_rows(&s, "Context r23:");
    assert!(rows.len() >= 5, "{s}");
    // Every row of the pane holds something: 14 chunks in 12 rows, no empty tail.
    let empty: Vec<&String> = rows.iter().filter(|r| r.trim().is_empty()).collect();
    assert!(empty.is_empty(), "empty rows in the context pane:\n{s}");
    assert!(
        rows.iter().any(|r| r.contains("divergence")),
        "the divergence line is not in view:\n{s}"
    );
    // What is out of view is said: rows above it.
    assert!(s.contains("▲ "), "{s}");
    t.quit_and_check_restored();
}

#[test]
fn esc_does_not_quit() {
    if !have_tmux() {
        return;
    }
    let t = open("tierscope-nav-esc", 120, 40);
    t.keys(&["Escape"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    t.keys(&["Escape"]);
    let s = t.wait("the hint", |s| s.contains("nothing to close (q quits)"));
    assert!(!s.contains("__EXIT__"), "{s}");
    assert_eq!(t.display("#{alternate_on}"), "1");
    // Esc closes what is open: the maximised pane first.
    t.keys(&["+"]);
    t.wait("the heatmap alone", |s| {
        s.contains("heatmap fills the screen") && !s.contains("Episodes 1/4")
    });
    t.keys(&["Escape"]);
    t.wait("every pane back", |s| s.contains("Episodes 1/4"));
    assert_eq!(t.display("#{alternate_on}"), "1");
    t.quit_and_check_restored();
}

#[test]
fn goto_moves_to_a_request_and_an_episode() {
    if !have_tmux() {
        return;
    }
    let t = open("tierscope-nav-goto", 120, 40);
    t.keys(&[":"]);
    t.wait("the goto field", |s| {
        s.contains("go to request or episode:")
    });
    t.keys(&["1", "2", "Enter"]);
    t.wait("request 12", |s| {
        s.contains("r12/23") && s.contains("Context r12")
    });
    t.keys(&[":", "E", "2", "Enter"]);
    t.wait("episode E2", |s| {
        s.contains("Detail E2") && s.contains("E2: requests")
    });
    t.keys(&[":", "9", "9", "Enter"]);
    t.wait("the end, said", |s| {
        s.contains("r23/23") && s.contains("past the end")
    });
    t.quit_and_check_restored();
}

#[test]
fn search_highlights_filters_and_clears() {
    if !have_tmux() {
        return;
    }
    let t = open("tierscope-nav-search", 120, 40);
    t.keys(&["/"]);
    t.wait("the search field", |s| s.contains("search episodes:"));
    t.keys(&["c", "f", "g", "k", "i", "t"]);
    let s = t.wait("the table filtered", |s| s.contains("match \"cfgkit\""));
    let highlighted = |styled: &str| {
        regex::Regex::new(r"48;2;227;179;65m(\x1b\[[0-9;]*m)*[Cc]fgkit")
            .expect("regex")
            .is_match(styled)
    };
    // Filtered: three of the four episodes mention cfgkit; E2 (the new test) does not.
    assert!(s.contains("Episodes: 3 of 4 match"), "{s}");
    let table = box_rows(&s, "Episodes:");
    assert!(table.iter().any(|r| r.contains("E3")), "{s}");
    assert!(!table.iter().any(|r| r.starts_with("E2 ")), "{s}");
    // Highlighted: the match is painted in the theme's match colours (black on amber).
    let styled = t.screen_styled();
    assert!(highlighted(&styled), "no highlighted match:\n{styled}");
    // C-u empties the field: every episode is listed again.
    t.keys(&["C-u"]);
    let s = t.wait("the field cleared", |s| {
        s.contains("search episodes: ▏") && s.contains("Episodes 1/4")
    });
    assert!(!s.contains("match \"cfgkit\""), "{s}");
    // Typed again and kept; Esc on the main screen clears it (and does not quit).
    t.keys(&["c", "f", "g", "k", "i", "t", "Enter"]);
    t.wait("the search kept", |s| {
        s.contains("match \"cfgkit\"") && !s.contains("search episodes:")
    });
    t.keys(&["Escape"]);
    t.wait("the search cleared", |s| {
        s.contains("search cleared") && s.contains("Episodes 1/4")
    });
    t.quit_and_check_restored();
}
