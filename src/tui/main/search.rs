//! Search (`/`) and goto (`:`). A search filters the episode table to the episodes whose title
//! or tier texts hold the query (case-insensitive, or an exact id), highlights the matches in
//! the table, the heatmap labels and the detail text, and `n` / `N` walk them; `C-u` in the
//! field clears it, Esc clears the search. Goto takes a request number (`42`, `t42`, `r42`) or an
//! episode id (`E3`).

use super::{Env, MainState, Out};
use crate::tui::app::Level;
use crate::tui::view_model::SessionModel;

/// The search as typed and the episodes it matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Search {
    /// Empty: no search.
    pub query: String,
    /// Matching episodes, in order (kept up to date by `update`: views do not search).
    pub hits: Vec<usize>,
}

impl Search {
    /// Whether the table shows only the matches.
    pub fn filters(&self) -> bool {
        !self.query.is_empty()
    }

    /// The lower-cased query, for highlighting.
    pub fn needle(&self) -> Option<String> {
        (!self.query.is_empty()).then(|| self.query.to_lowercase())
    }
}

/// Episodes of `s` matching `query`, in order.
pub fn matches(s: &SessionModel, query: &str) -> Vec<usize> {
    let q = query.to_lowercase();
    if q.is_empty() {
        return Vec::new();
    }
    s.episodes
        .iter()
        .enumerate()
        .filter(|(_, e)| e.haystack.contains(&q) || e.id.to_lowercase() == q)
        .map(|(i, _)| i)
        .collect()
}

impl MainState {
    /// Sets the query (as typed: incremental), recomputes the matches and selects the first
    /// match at or after the selection.
    pub fn set_query(&mut self, env: &Env<'_>, query: &str) {
        self.search.query = query.to_owned();
        self.refresh_search(env);
        let hits = &self.search.hits;
        let first = hits.iter().find(|&&i| i >= self.selected).or(hits.first());
        if let Some(to) = first.copied() {
            self.select(env, to);
        }
        self.table_top = 0;
        self.follow_selection(env);
    }

    /// Recomputes the matches (a new session, or a new state of it).
    pub fn refresh_search(&mut self, env: &Env<'_>) {
        self.search.hits = match env.session {
            Some(s) => matches(&s.model, &self.search.query),
            None => Vec::new(),
        };
    }

    pub fn clear_search(&mut self, env: &Env<'_>) {
        self.search = Search::default();
        self.follow_selection(env);
    }

    /// The search field's Enter: keep the search (and say how many matched).
    pub fn accept_search(&mut self, env: &Env<'_>, text: &str, out: &mut Out) {
        self.set_query(env, text);
        if !text.is_empty() {
            let n = self.search.hits.len();
            let msg = format!("{n} episodes match {text:?} (n / N walk them, Esc clears)");
            out.flash(msg, Level::Info);
        }
    }

    /// `n` / `N`: the next or previous match, wrapping.
    pub fn next_match(&mut self, env: &Env<'_>, forward: bool, out: &mut Out) {
        let m = self.search.hits.clone();
        if m.is_empty() {
            out.flash("no search matches", Level::Info);
            return;
        }
        let s = self.selected;
        let next = if forward {
            m.iter().copied().find(|&i| i > s).unwrap_or(m[0])
        } else {
            m.iter()
                .rev()
                .copied()
                .find(|&i| i < s)
                .unwrap_or(m[m.len() - 1])
        };
        self.select(env, next);
    }

    /// The goto field's Enter. A request past the end goes to the last one and says so.
    pub fn goto(&mut self, env: &Env<'_>, text: &str, out: &mut Out) -> Result<(), String> {
        let Some(s) = env.session else {
            return Ok(());
        };
        match parse_goto(&s.model, text)? {
            Target::Episode(i) => {
                self.select(env, i);
                let e = &s.model.episodes[i];
                let msg = match (e.first_request, e.last_request) {
                    (Some(a), Some(b)) => format!("{}: requests {a}–{b}", e.id),
                    _ => format!("{}: no requests", e.id),
                };
                out.flash(msg, Level::Info);
            }
            Target::Request(r) => {
                let n = env.requests();
                if n == 0 {
                    return Err("this session has no requests yet".to_owned());
                }
                self.move_cursor(env, r, out);
                if r >= n {
                    let msg = format!("request {r} is past the end: at {} (the last)", n - 1);
                    out.flash(msg, Level::Warn);
                }
            }
        }
        Ok(())
    }
}

/// Where a goto leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Request(usize),
    Episode(usize),
}

/// Parses what was typed into the goto field against session `s`.
pub fn parse_goto(s: &SessionModel, text: &str) -> Result<Target, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("type a request number (42, t42) or an episode id (E3)".to_owned());
    }
    if let Some(i) = s.episodes.iter().position(|e| e.id.eq_ignore_ascii_case(t)) {
        return Ok(Target::Episode(i));
    }
    let last = s.episodes.len().saturating_sub(1);
    if t.len() > 1 && t.starts_with(['e', 'E']) && t[1..].chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("no episode {} (E0–E{last})", t.to_uppercase()));
    }
    let digits = t
        .strip_prefix(['t', 'T', 'r', 'R', '#'])
        .unwrap_or(t)
        .replace([',', '_'], "");
    match digits.parse::<usize>() {
        Ok(n) => Ok(Target::Request(n)),
        Err(_) => Err(format!(
            "{t:?} is neither a request number nor an episode id (E0–E{last})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::view_model::EpisodeRow;

    fn session() -> SessionModel {
        let ep = |id: &str, text: &str| EpisodeRow {
            id: id.to_owned(),
            haystack: text.to_owned(),
            ..EpisodeRow::default()
        };
        SessionModel {
            episodes: vec![
                ep("E0", "fix the parser"),
                ep("E1", "docs"),
                ep("E10", "parser tests"),
            ],
            ..SessionModel::default()
        }
    }

    #[test]
    fn goto_takes_requests_and_episode_ids() {
        let s = session();
        assert_eq!(parse_goto(&s, "42"), Ok(Target::Request(42)));
        assert_eq!(parse_goto(&s, " t7 "), Ok(Target::Request(7)));
        assert_eq!(parse_goto(&s, "r1,200"), Ok(Target::Request(1200)));
        assert_eq!(parse_goto(&s, "e10"), Ok(Target::Episode(2)));
        assert!(parse_goto(&s, "E99").is_err());
        assert!(parse_goto(&s, "").is_err());
    }

    #[test]
    fn search_matches_text_or_an_exact_id() {
        let s = session();
        assert_eq!(matches(&s, "PARSER"), vec![0, 2]);
        assert_eq!(matches(&s, "e1"), vec![1]);
        assert!(matches(&s, "").is_empty());
    }
}
