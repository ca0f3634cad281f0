//! Issue 35 on the real binary in tmux: the evidence read whole (a long line's end is on screen
//! in the wrapped context at 80×24 and 160×45), the heatmap's thrash marks are the run's thrash
//! counter, one baseline with its budget in the strip and in diff mode after a budget edit, and
//! what the 80×24 layout keeps (floor column, legend marks, title and knobs, K and d, Detail's
//! position). tmux must be installed (see `tmux_common::have_tmux`).

use crate::tmux_common;
use crate::tui_common;

use ratatui::crossterm::event::KeyCode;
use tmux_common::{explorer, have_tmux, Tmux};

/// The last word of a context line at request 23 of M1 (expanded) that is longer than a pane
/// `inner` cells wide: where the line ends, as the wrapped pane must show it.
fn long_line_end(inner: usize) -> String {
    let mut app = tui_common::open_m1("dark", 160, 45);
    app.key(KeyCode::End);
    let c = app.context();
    let line = c
        .lines
        .iter()
        .map(|(_, l)| l.trim())
        .filter(|l| l.chars().count() > inner + 10)
        .filter_map(|l| l.split_whitespace().last())
        // A distinctive word, one a wrap cannot split (shorter than the pane), and whole (a
        // line the model cut ends in "…").
        .find(|w| {
            (6..20).contains(&w.chars().count())
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".,;:]})\"'`".contains(c))
        })
        .expect("a long line with a distinctive last word");
    line.to_owned()
}

/// Opens M1 at `w`×`h`, expands the context at the last request, maximises it, then pages
/// down until `word` is on screen.
fn end_of_long_line_is_shown(w: u16, h: u16) {
    let word = long_line_end(usize::from(w) - 2);
    let t = Tmux::new(&format!("tierscope-r3-wrap{w}"));
    t.start_sized(w, h, &explorer("M1.json", "--budget 9000"));
    t.wait("the main screen", |s| s.contains("r0/23"));
    t.keys(&["End"]);
    t.wait("the last request", |s| s.contains("r23/23"));
    t.keys(&["Tab", "Tab"]);
    t.keys(&["e"]);
    t.keys(&["+"]);
    t.wait("the context maximised", |s| {
        s.contains("Context r23") && !s.contains("rendering") && !s.contains("Episodes")
    });
    // From the top (the pane opens at the divergence).
    for _ in 0..80 {
        t.keys(&["PageUp"]);
    }
    t.wait("the top of the context", |s| !s.contains("▲ "));
    for _ in 0..200 {
        let s = t.screen();
        if s.contains(&word) {
            // Wrapped, not clipped: the pane does not say "clipped".
            assert!(!s.contains("clipped (E)"), "{s}");
            t.quit_and_check_restored();
            return;
        }
        t.keys(&["PageDown"]);
        std::thread::sleep(std::time::Duration::from_millis(60));
    }
    panic!(
        "the end of a long line ({word}) never showed:\n{}",
        t.screen()
    );
}

#[test]
fn a_long_lines_end_is_on_screen_at_80x24() {
    if !have_tmux() {
        return;
    }
    end_of_long_line_is_shown(80, 24);
}

#[test]
fn a_long_lines_end_is_on_screen_at_160x45() {
    if !have_tmux() {
        return;
    }
    end_of_long_line_is_shown(160, 45);
}

/// The number after `name ` on the line starting with ` run ` (the run's totals).
fn run_total(screen: &str, name: &str) -> Option<u64> {
    let line = screen.lines().find(|l| l.starts_with(" run "))?;
    let rest = &line[line.find(&format!(" {name} "))? + name.len() + 2..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[test]
fn the_heatmaps_thrash_marks_are_the_thrash_counter() {
    if !have_tmux() {
        return;
    }
    let t = Tmux::new("tierscope-r3-thrash");
    let args = "--budget 12000 --set boundary=request --set min_dwell=0 \
                --set demote_at=0.76 --set promote_at=0.74 --set promote_after=0";
    t.start_sized(160, 45, &explorer("M1.json", args));
    let s = t.wait("the replayed screen", |s| {
        s.contains("r0/23") && run_total(s, "thrash").is_some() && !s.contains("replaying")
    });
    let thrash = run_total(&s, "thrash").unwrap_or_default();
    assert!(thrash >= 2, "the knobs make the schedule reverse:\n{s}");
    // The heatmap alone, every episode row in view.
    t.keys(&["+"]);
    let s = t.wait("the heatmap maximised", |s| !s.contains("Episodes "));
    let lines: Vec<&str> = s.lines().collect();
    let axis = lines
        .iter()
        .position(|l| l.starts_with("req") && l.contains('┊'))
        .unwrap_or_else(|| panic!("no axis:\n{s}"));
    // The cells start at the axis's first tick; labels (titles) left of it are not counted.
    let x0 = lines[axis].chars().position(|c| c == '┊').unwrap_or(0);
    let marks: usize = lines[axis + 1..]
        .iter()
        .take_while(|l| l.starts_with('E'))
        .map(|l| l.chars().skip(x0).filter(|c| *c == '!').count())
        .sum();
    assert_eq!(marks as u64, thrash, "marks vs the run's thrash:\n{s}");
    t.quit_and_check_restored();
}

#[test]
fn after_a_budget_edit_the_strip_and_diff_mode_name_one_baseline() {
    if !have_tmux() {
        return;
    }
    let t = Tmux::new("tierscope-r3-baseline");
    t.start_sized(160, 45, &explorer("M1.json", "--budget 9000"));
    t.wait("the main screen", |s| s.contains("r0/23"));
    // The budget, typed in the knobs panel (row 0).
    t.keys(&["K"]);
    t.wait("the knobs panel", |s| s.contains("Knobs: retention"));
    t.keys(&["Enter"]);
    t.wait("the budget field", |s| s.contains("budget (tokens) ="));
    t.keys(&["C-u"]);
    t.keys(&["1", "2", "0", "0", "0", "Enter"]);
    t.wait("the replay at 12,000", |s| {
        s.contains("budget 12,000") && !s.contains("replaying")
    });
    t.keys(&["Escape"]);
    t.wait(
        "the strip's baseline beside the budget it was edited to",
        |s| {
            !s.contains("Knobs:")
                && s.contains("baseline retention @ 9,000")
                && s.contains("budget 12,000 (set)")
        },
    );
    // Diff mode offers that baseline first and runs it at its own budget.
    t.keys(&["d"]);
    t.wait("the list of B", |s| {
        s.contains("baseline: retention @ 9,000")
    });
    t.keys(&["Enter"]);
    let s = t.wait("the diff header", |s| {
        s.contains("budget A 12,000 · B 9,000") && !s.contains("replaying")
    });
    assert!(
        s.lines().next().unwrap_or_default().contains(" diff "),
        "{s}"
    );
    t.keys(&["Escape"]);
    t.wait("the main screen again", |s| {
        s.contains("baseline retention @ 9,000")
    });
    t.quit_with_and_check_restored(&["q", "y"]);
}

#[test]
fn at_80x24_the_layout_keeps_what_matters() {
    if !have_tmux() {
        return;
    }
    let t = Tmux::new("tierscope-r3-80x24");
    t.start_sized(80, 24, &explorer("M1.json", "--budget 9000"));
    let s = t.wait("the main screen", |s| {
        s.contains("r0/23") && s.contains("Episodes") && !s.contains("replaying")
    });
    let lines: Vec<&str> = s.lines().collect();
    // Header: the cursor, the policy's headline knobs abbreviated, the session's title.
    assert!(lines[0].contains("retention (dem=.9"), "{}", lines[0]);
    assert!(lines[0].contains("Migrate"), "{}", lines[0]);
    // Legend: the marks in short words or glyphs.
    for mark in ["▼▲", "⊥", "…", "!"] {
        assert!(lines[1].contains(mark), "{mark}: {}", lines[1]);
    }
    // Table: the floor column.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("floor") && l.contains("tier")),
        "{s}"
    );
    // Footer: K and d, help and quit.
    let footer = lines.last().copied().unwrap_or_default();
    for k in ["K knobs", "d diff", "? help", "q quit"] {
        assert!(footer.contains(k), "{k}: {footer}");
    }
    // Detail: its position, a page per PgDn, and the whole screen with +.
    t.keys(&["Tab", "Tab", "Tab"]);
    // The Detail pane's title (right of the table's on the same row).
    let detail_title = |s: &str| {
        s.lines()
            .find_map(|l| l.find("┏ Detail E").map(|i| l[i..].to_owned()))
            .unwrap_or_default()
    };
    let s = t.wait("the detail focused", |s| s.contains("┏ Detail E"));
    let title = detail_title(&s);
    assert!(
        title.contains("lines 1–7 of ") || title.contains(" 1/"),
        "{title}"
    );
    t.keys(&["PageDown"]);
    t.wait("the next page, the lines above it counted", |s| {
        detail_title(s).contains("lines 7–13 of ") && s.contains("▲ 6 ·")
    });
    t.keys(&["+"]);
    let s = t.wait("the detail maximised", |s| !s.contains("Episodes"));
    let rows = s.lines().filter(|l| l.starts_with('┃')).count();
    assert!(rows >= 16, "{s}");
    // The context only behind Tab: its name and key in the shared pane's border.
    t.keys(&["+"]);
    // Waited for together: the screen may be caught between two draws.
    t.wait("every pane again, the context named behind Tab", |s| {
        s.contains("Episodes") && s.contains("context: S-Tab")
    });
    t.quit_and_check_restored();
}
