//! The explorer's text fields are bounded: a paste (bracketed: one event) or a flood of typed
//! keys stops at what the field holds and says so, control characters never enter it, and the
//! search and its highlighting stay linear in the text, so a 100k-character paste cannot freeze
//! the UI.

use crate::tui_common;

use ratatui::crossterm::event::KeyCode;
use ratatui::style::Style;
use tierscope::tui::app::{InputPurpose, Msg};
use tierscope::tui::ui::highlight;
use tui_common::*;

#[test]
fn a_huge_paste_into_search_is_cut_to_the_field_and_still_searches() {
    let mut app = open_m1("dark", 120, 40);
    app.key(KeyCode::Char('/'));
    let paste = format!("tomlette\u{1b}[31m{}", "x".repeat(100_000));
    app.msg(Msg::Paste(paste));
    let input = app
        .state
        .input
        .clone()
        .expect("the search field stays open");
    assert_eq!(input.purpose, InputPurpose::Search);
    let max = input.max_chars();
    assert_eq!(input.text.chars().count(), max);
    assert!(
        input.text.starts_with("tomlette[31m"),
        "{:?}",
        &input.text[..20]
    );
    assert!(!input.text.contains('\u{1b}'));
    assert_eq!(
        input.error.as_deref(),
        Some(format!("the field holds at most {max} characters").as_str())
    );
    assert_eq!(app.state.main.search.query, input.text);
    // Typing past the bound changes nothing; Backspace still edits.
    app.keys("yyy");
    assert_eq!(app.state.input.as_ref().unwrap().text, input.text);
    app.key(KeyCode::Backspace);
    assert_eq!(
        app.state.input.as_ref().unwrap().text.chars().count(),
        max - 1
    );
    // The screen draws with the field full.
    let _ = app.draw();
}

#[test]
fn a_paste_outside_a_field_does_nothing() {
    let mut app = open_m1("dark", 120, 40);
    let cursor = app.state.main.cursor;
    // As keys these would quit, step and open panels.
    app.msg(Msg::Paste("lllqK".into()));
    assert!(!app.state.quit);
    assert_eq!(app.state.main.cursor, cursor);
    assert!(app.state.input.is_none());
}

#[test]
fn a_pasted_search_finds_what_typing_finds() {
    let mut typed = open_m1("dark", 120, 40);
    typed.key(KeyCode::Char('/'));
    typed.keys("cargo");
    let mut pasted = open_m1("dark", 120, 40);
    pasted.key(KeyCode::Char('/'));
    pasted.msg(Msg::Paste("cargo".into()));
    assert!(!typed.state.main.search.hits.is_empty());
    assert_eq!(typed.state.main.search.hits, pasted.state.main.search.hits);
}

#[test]
fn highlighting_finds_every_match_and_is_linear_on_a_worst_case_text() {
    let (b, h) = (Style::default(), Style::default().bold());
    let spans = highlight("Parse the PARSER; parse", Some("pars"), b, h);
    let hits: Vec<String> = spans
        .iter()
        .filter(|s| s.style == h)
        .map(|s| s.content.to_string())
        .collect();
    assert_eq!(hits, ["Pars", "PARS", "pars"]);
    let whole: String = spans.iter().map(|s| s.content.to_string()).collect();
    assert_eq!(whole, "Parse the PARSER; parse");
    // A case the naive scan makes quadratic (every position almost matches): 200k × 256 char
    // comparisons there; one pass here.
    let text = "a".repeat(200_000);
    let needle = format!("{}b", "a".repeat(255));
    let spans = highlight(&text, Some(&needle), b, h);
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].content.len(), 200_000);
}
