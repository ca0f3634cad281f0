//! The output layer. A subcommand builds one typed report (its rows and its document) and hands
//! it to [`emit`]; the reporter of the chosen format writes it: [`table`] (text for people),
//! [`json`] (one document), [`jsonl`] (one record per line), [`csv`] (one row per record).
//! Nothing else writes to stdout or stderr, so nothing from a trace reaches the terminal
//! unescaped: text goes through [`tierscope_engine::text::sanitize_for_terminal`], JSON through
//! a formatter that also escapes C1 and bidi characters (see [`json`]).

pub mod cell;
pub mod csv;
pub mod json;
pub mod jsonl;
pub mod stderr;
pub mod stdout;
pub mod stream;
pub mod table;
pub mod text;

use clap::ValueEnum;

pub use cell::Cell;
pub use jsonl::JsonLines;
pub use stream::Stream;
pub use table::{Align, Column, Table};
pub use text::Text;

/// `--format`: which reporter writes the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
    Csv,
    Jsonl,
}

impl Format {
    /// `--json` flags of the commands with two forms.
    pub fn json_if(json: bool) -> Format {
        if json {
            Format::Json
        } else {
            Format::Table
        }
    }
}

/// What a subcommand prints, in every form it has. Each method describes the output once; the
/// reporters decide how it is written and escaped.
pub trait Report {
    /// `--format json`: the one document (the commands' stable JSON interface).
    fn document(&self) -> impl serde::Serialize + '_;

    /// `--format jsonl`: one record per line (default: the document on one line).
    fn records(&self, out: &mut JsonLines<'_>) -> anyhow::Result<()> {
        out.record(&self.document())
    }

    /// `--format csv`: the rows (`None`: this output has no CSV form).
    fn rows(&self) -> Option<Table> {
        None
    }

    /// `--format table`: the text for people.
    fn text(&self) -> Text;

    /// The name `--format csv` refusals use.
    fn name(&self) -> &'static str;
}

/// Write `report` with the reporter of `format`.
pub fn emit<R: Report>(format: Format, report: &R) -> anyhow::Result<()> {
    match format {
        Format::Table => stdout::write_text(&report.text().render()),
        Format::Json => json::write_document(&report.document()),
        Format::Jsonl => {
            let mut out = JsonLines::stdout();
            report.records(&mut out)?;
            out.finish()
        }
        Format::Csv => match report.rows() {
            Some(t) => stdout::write_text(&csv::render(&t)),
            None => anyhow::bail!(
                "{} has no CSV form (use --format table, json or jsonl)",
                report.name()
            ),
        },
    }
}

/// `1 episode`, `3 episodes`: a count with its noun (regular plurals only).
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `--budget N`: a positive token count (a budget of 0 would demote everything on every request).
pub fn budget_value(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("a budget must be at least 1 token".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("expected a token count: {e}")),
    }
}
