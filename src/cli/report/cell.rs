//! A typed table cell: the row says what a value is, each reporter how it reads — people get
//! thousands separators and percentages, CSV gets plain numbers a program can parse.

use tierscope_engine::research::report::{pct, thousands};

#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text as it is (sanitized by the reporter).
    Text(String),
    /// A plain count.
    Int(u64),
    /// A token count: `12,345` for people, `12345` in CSV.
    Tokens(i64),
    /// A number with this many decimals, the same everywhere.
    Fixed(f64, usize),
    /// A fraction: `12.3%` for people, `0.1234` in CSV; `-` when not measured.
    Share(Option<f64>),
    /// A flag: `*` or nothing for people, `true` / `false` in CSV.
    Mark(bool),
    /// No value: empty for people, `-` in CSV.
    Absent,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    /// How the table reporter shows it.
    pub fn human(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(n) => n.to_string(),
            Cell::Tokens(n) => thousands(*n),
            Cell::Fixed(x, d) => format!("{x:.d$}"),
            Cell::Share(x) => pct(*x),
            Cell::Mark(true) => "*".into(),
            Cell::Mark(false) | Cell::Absent => String::new(),
        }
    }

    /// How the CSV reporter writes it.
    pub fn machine(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(n) => n.to_string(),
            Cell::Tokens(n) => n.to_string(),
            Cell::Fixed(x, d) => format!("{x:.d$}"),
            Cell::Share(Some(x)) => format!("{x:.4}"),
            Cell::Share(None) | Cell::Absent => "-".into(),
            Cell::Mark(b) => b.to_string(),
        }
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_owned())
    }
}
