//! Tables: typed rows under named columns, rendered for people by [`Table::render`] and for
//! programs by [`super::csv::render`]. Cells are sanitized to one line before they are measured,
//! so an escape shown as `\x1b` is never cut in half and columns stay aligned.

use tierscope_engine::text::{clip_chars, sanitize_line};

use super::Cell;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One column: its header, how it is laid out, and which outputs have it.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub align: Align,
    /// The least width; `None`: as wide as its widest cell (see [`Table::aligned`]).
    pub width: Option<usize>,
    /// Cut longer cells to this many characters (with `…`).
    pub clip: Option<usize>,
    /// What stands before the column (ignored for the first).
    pub sep: &'static str,
    /// Only in CSV (a machine-readable column people do not need).
    pub csv_only: bool,
}

impl Column {
    pub fn left(name: impl Into<String>) -> Column {
        Column {
            name: name.into(),
            align: Align::Left,
            width: None,
            clip: None,
            sep: " ",
            csv_only: false,
        }
    }
    pub fn right(name: impl Into<String>) -> Column {
        Column {
            align: Align::Right,
            ..Column::left(name)
        }
    }
    /// At least `w` characters wide.
    pub fn width(mut self, w: usize) -> Column {
        self.width = Some(w);
        self
    }
    /// At most `n` characters of each cell.
    pub fn clip(mut self, n: usize) -> Column {
        self.clip = Some(n);
        self
    }
    pub fn sep(mut self, sep: &'static str) -> Column {
        self.sep = sep;
        self
    }
    pub fn csv_only(mut self) -> Column {
        self.csv_only = true;
        self
    }
}

/// How the table reporter lays a table out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Each column as its [`Column`] says; lines kept as they are.
    Columns,
    /// The research tables: every column as wide as its widest cell (header included), the
    /// first left-aligned and the rest right-aligned, two spaces apart, lines trimmed.
    Aligned,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
    layout: Layout,
    header: bool,
}

impl Table {
    /// A table laid out by its columns.
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            columns,
            rows: Vec::new(),
            layout: Layout::Columns,
            header: true,
        }
    }

    /// A research table (see [`Layout::Aligned`]): columns named by `headers`.
    pub fn aligned<S: AsRef<str>>(headers: &[S]) -> Table {
        let columns = headers
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let c = if i == 0 {
                    Column::left(h.as_ref())
                } else {
                    Column::right(h.as_ref())
                };
                c.sep("  ")
            })
            .collect();
        Table {
            layout: Layout::Aligned,
            ..Table::new(columns)
        }
    }

    /// Rows only, no header line (a key–value listing).
    pub fn without_header(mut self) -> Table {
        self.header = false;
        self
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
    }

    /// The columns shown to people (not the CSV-only ones).
    fn shown(&self) -> Vec<usize> {
        (0..self.columns.len())
            .filter(|&i| !self.columns[i].csv_only)
            .collect()
    }

    /// A row's shown cells as text, sanitized to one line and clipped.
    fn cells(&self, shown: &[usize], row: &[Cell]) -> Vec<String> {
        shown
            .iter()
            .map(|&i| {
                row.get(i).map_or_else(String::new, |c| {
                    let col = &self.columns[i];
                    let s = sanitize_line(&c.human()).into_owned();
                    match col.clip {
                        Some(n) => clip_chars(&s, n),
                        None => s,
                    }
                })
            })
            .collect()
    }

    fn headers(&self, shown: &[usize]) -> Vec<String> {
        shown
            .iter()
            .map(|&i| sanitize_line(&self.columns[i].name).into_owned())
            .collect()
    }

    /// One line of shown cells at `widths`.
    fn line(&self, shown: &[usize], widths: &[usize], cells: &[String]) -> String {
        let mut s = String::new();
        for (k, c) in cells.iter().enumerate() {
            let col = &self.columns[shown[k]];
            if k > 0 {
                s.push_str(col.sep);
            }
            let pad = widths[k].saturating_sub(c.chars().count());
            match col.align {
                Align::Left => {
                    s.push_str(c);
                    // The last column of a column layout is not padded when it has no
                    // width of its own (free text such as a change list).
                    if !(k + 1 == cells.len()
                        && col.width.is_none()
                        && self.layout == Layout::Columns)
                    {
                        s.push_str(&" ".repeat(pad));
                    }
                }
                Align::Right => {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                }
            }
        }
        if self.layout == Layout::Aligned {
            s.truncate(s.trim_end().len());
        }
        s.push('\n');
        s
    }

    /// The column widths when no row can change them (every shown column has a width of its
    /// own, but a last left-aligned one, which is not padded): such a table can be written a
    /// row at a time, as [`Table::render`] would write it.
    pub fn fixed_widths(&self) -> Option<Vec<usize>> {
        if self.layout != Layout::Columns {
            return None;
        }
        let shown = self.shown();
        shown
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let col = &self.columns[i];
                match col.width {
                    Some(w) => Some(w),
                    None if k + 1 == shown.len() && col.align == Align::Left => Some(0),
                    None => None,
                }
            })
            .collect()
    }

    /// The header line of a table with [`Table::fixed_widths`] (empty without a header).
    pub fn header_line(&self, widths: &[usize]) -> String {
        let shown = self.shown();
        if self.header {
            self.line(&shown, widths, &self.headers(&shown))
        } else {
            String::new()
        }
    }

    /// One row's line of a table with [`Table::fixed_widths`].
    pub fn row_line(&self, widths: &[usize], row: &[Cell]) -> String {
        let shown = self.shown();
        self.line(&shown, widths, &self.cells(&shown, row))
    }

    /// The text for people.
    pub fn render(&self) -> String {
        let shown = self.shown();
        let body: Vec<Vec<String>> = self.rows.iter().map(|r| self.cells(&shown, r)).collect();
        let headers = self.headers(&shown);
        let widths: Vec<usize> = shown
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let col = &self.columns[i];
                let widest = || {
                    body.iter()
                        .map(|r| r[k].chars().count())
                        .chain(self.header.then(|| headers[k].chars().count()))
                        .max()
                        .unwrap_or(0)
                };
                match (self.layout, col.width) {
                    (Layout::Aligned, _) => widest(),
                    (Layout::Columns, Some(w)) => w,
                    (Layout::Columns, None) => widest(),
                }
            })
            .collect();
        let mut out = String::new();
        if self.header {
            out.push_str(&self.line(&shown, &widths, &headers));
        }
        for r in &body {
            out.push_str(&self.line(&shown, &widths, r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_tables_match_the_research_layout() {
        let mut t = Table::aligned(&["a", "bb"]);
        t.push(vec![Cell::text("xyz"), Cell::Int(1)]);
        assert_eq!(t.render(), "a    bb\nxyz   1\n");
    }

    #[test]
    fn a_table_of_fixed_widths_reads_the_same_a_row_at_a_time() {
        let mut t = Table::new(vec![
            Column::right("n").width(3),
            Column::left("s").width(2).sep("/"),
            Column::left("free").sep("  "),
        ]);
        t.push(vec![Cell::Int(7), Cell::text("ab\ncd"), Cell::text("x")]);
        t.push(vec![
            Cell::Int(12345),
            Cell::text(""),
            Cell::text("a much longer text"),
        ]);
        let w = t.fixed_widths().expect("fixed widths");
        let mut rows = t.header_line(&w);
        for r in &t.rows {
            rows.push_str(&t.row_line(&w, r));
        }
        assert_eq!(rows, t.render());
        assert!(Table::aligned(&["a"]).fixed_widths().is_none());
        assert!(
            Table::new(vec![Column::left("a"), Column::left("b").width(1)])
                .fixed_widths()
                .is_none()
        );
    }

    #[test]
    fn cells_are_sanitized_before_they_are_measured() {
        let mut t = Table::new(vec![
            Column::left("id").width(2),
            Column::right("n").width(3),
        ]);
        t.push(vec![Cell::text("a\u{1b}b\nc"), Cell::Tokens(1234)]);
        assert_eq!(t.render(), "id   n\na\\x1bb ⏎ c 1,234\n");
    }
}
