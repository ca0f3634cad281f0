//! The CSV reporter (RFC 4180): a header row, then one row per record; fields with a comma,
//! quote or line break are quoted. Cells are sanitized like the table's (line breaks kept).

use tierscope_engine::text::sanitize_for_terminal;

use super::Table;

pub fn field(f: &str) -> String {
    let f = sanitize_for_terminal(f);
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.into_owned()
    }
}

/// The table as CSV (every column, the CSV-only ones included; cells in their machine form).
pub fn render(t: &Table) -> String {
    let mut out = t
        .columns
        .iter()
        .map(|c| field(&c.name))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for r in &t.rows {
        out.push_str(
            &r.iter()
                .map(|c| field(&c.machine()))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::report::{Cell, Table};

    #[test]
    fn quotes_and_machine_cells() {
        let mut t = Table::aligned(&["a", "b", "c"]);
        t.push(vec![
            Cell::text("x,y"),
            Cell::text("q\""),
            Cell::Share(Some(0.5)),
        ]);
        t.push(vec![
            Cell::text("\u{1b}"),
            Cell::Tokens(1234),
            Cell::Mark(false),
        ]);
        assert_eq!(
            render(&t),
            "a,b,c\n\"x,y\",\"q\"\"\",0.5000\n\\x1b,1234,false\n"
        );
    }
}
