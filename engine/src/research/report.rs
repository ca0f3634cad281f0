//! Plain-text tables and CSV for the research commands (one header row, then rows of cells).

/// Left-align the first column, right-align the rest; two spaces between columns.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let n = headers.len();
    let mut width: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = width[i].saturating_sub(c.chars().count());
            if i == 0 {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(headers.to_vec());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

/// RFC 4180 CSV: fields with a comma, quote or newline are quoted.
pub fn csv(headers: &[&str], rows: &[Vec<String>]) -> String {
    let field = |f: &str| {
        if f.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", f.replace('"', "\"\""))
        } else {
            f.to_string()
        }
    };
    let mut out = headers
        .iter()
        .map(|h| field(h))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for r in rows {
        out.push_str(&r.iter().map(|c| field(c)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

/// A share as a percentage with one decimal, or `-`.
pub fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{:.1}%", v * 100.0))
}

/// Thousands separated by commas (for token counts in tables).
pub fn thousands(n: i64) -> String {
    let out = thousands_u64(n.unsigned_abs());
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// [`thousands`] of an unsigned count, whole to `u64::MAX` (a cast to `i64` would print it
/// negative).
pub fn thousands_u64(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_group_every_count() {
        assert_eq!(thousands(-1_234_567), "-1,234,567");
        assert_eq!(thousands(i64::MIN), "-9,223,372,036,854,775,808");
        assert_eq!(thousands_u64(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(thousands_u64(999), "999");
    }

    #[test]
    fn tables_align_and_csv_quotes() {
        let t = table(&["a", "bb"], &[vec!["xyz".into(), "1".into()]]);
        assert_eq!(t, "a    bb\nxyz   1\n");
        let c = csv(&["a", "b"], &[vec!["x,y".into(), "q\"".into()]]);
        assert_eq!(c, "a,b\n\"x,y\",\"q\"\"\"\n");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(-999), "-999");
        assert_eq!(pct(Some(0.5)), "50.0%");
    }
}
