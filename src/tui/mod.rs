//! The explorer: an Elm-style terminal UI over the engine.
//!
//! `Msg` (key, mouse, resize, tick, job done, session loaded, geometry) →
//! [`app::update`]`(&mut State, Msg) -> Vec<Effect>` → [`ui::view`]`(&State, &mut Frame) ->
//! Geometry`. Views only read the state and report what `update` needs of the frame (page sizes,
//! hit-test rectangles) as [`geometry::Geometry`]; loading and replays run on a worker thread
//! ([`jobs`]), latest-wins per [`app::JobKey`], and come back as a `Msg`. [`run`] owns the
//! terminal: it redraws only when something changed and blocks on events (with a timeout only
//! while playing or loading), so an idle explorer uses no CPU.
//!
//! The state is split by feature: [`main`] (the main screen), [`knobs`], [`picker`], [`diff`],
//! [`sweep`] (each a folder with its state, updates, view and keys; the last two registered in
//! [`panels`]) and [`follow`];
//! [`on_screen`] is what they share (policy, budget, replay). [`ui`] draws the shell around
//! them (status line, help, questions, text fields).

pub mod geometry;
pub mod grid;
pub mod keymap;
pub mod theme;
pub mod view_model;

/// Trace text made safe and single-width-friendly for a buffer: control characters and escape
/// sequences visible and inert ([`tierscope_engine::text::sanitize_for_terminal`]), tabs expanded (a raw
/// tab would move the terminal's cursor), bidi overrides and line/paragraph separators shown as
/// `<U+XXXX>`.
pub fn safe_text(s: &str) -> String {
    let clean = tierscope_engine::text::sanitize_for_terminal(s);
    let mut out = String::with_capacity(clean.len());
    for c in clean.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
                out.push_str(&format!("<U+{:04X}>", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// [`safe_text`] for one display line: newlines become `⏎`.
pub fn safe_line(s: &str) -> String {
    safe_text(s).replace('\n', " ⏎ ")
}
pub mod app;
pub mod component;
pub mod diff;
pub mod follow;
pub mod jobs;
pub mod knobs;
pub mod main;
pub mod on_screen;
pub mod panels;
pub mod picker;
pub mod presenter;
pub mod run;
pub mod sweep;
pub mod totals;
pub mod ui;
pub mod widgets;

#[cfg(test)]
mod tests {
    use super::{safe_line, safe_text};

    #[test]
    fn trace_text_is_inert() {
        let s = safe_text("a\x1b]0;owned\x07b\tc\u{202e}d\u{2028}e\nf");
        assert_eq!(s, "a\\x1b]0;owned\\x07b    c<U+202E>d<U+2028>e\nf");
        assert!(!s.chars().any(|c| c.is_control() && c != '\n'));
        assert_eq!(safe_line("x\ny"), "x ⏎ y");
    }
}
