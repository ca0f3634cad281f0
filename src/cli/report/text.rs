//! The text a `--format table` report prints: lines, tables and verbatim text, in order.

use tierscope_engine::text::{sanitize_for_terminal, sanitize_line};

use super::Table;

#[derive(Debug, Clone)]
enum Block {
    /// One line (a newline inside is shown as ` ⏎ `, never printed).
    Line(String),
    Table(Table),
    /// Text of several lines (a rendered context, a representation), kept as it is.
    Verbatim(String),
}

/// A document for people; [`Text::render`] sanitizes every block.
#[derive(Debug, Clone, Default)]
pub struct Text {
    blocks: Vec<Block>,
}

impl Text {
    pub fn new() -> Text {
        Text::default()
    }
    pub fn line(&mut self, s: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Line(s.into()));
        self
    }
    pub fn blank(&mut self) -> &mut Self {
        self.line("")
    }
    pub fn table(&mut self, t: Table) -> &mut Self {
        self.blocks.push(Block::Table(t));
        self
    }
    /// Several lines as they are (each ends with a newline in the output).
    pub fn verbatim(&mut self, s: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Verbatim(s.into()));
        self
    }
    pub fn append(&mut self, other: Text) -> &mut Self {
        self.blocks.extend(other.blocks);
        self
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for b in &self.blocks {
            match b {
                Block::Line(s) => {
                    out.push_str(&sanitize_line(s));
                    out.push('\n');
                }
                Block::Table(t) => out.push_str(&t.render()),
                Block::Verbatim(s) => {
                    out.push_str(&sanitize_for_terminal(s));
                    if !s.is_empty() && !s.ends_with('\n') {
                        out.push('\n');
                    }
                }
            }
        }
        out
    }
}

impl From<Table> for Text {
    fn from(t: Table) -> Text {
        let mut x = Text::new();
        x.table(t);
        x
    }
}
