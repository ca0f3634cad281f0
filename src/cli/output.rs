//! Output formats shared by the subcommands.

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
    Csv,
    Jsonl,
}

/// Print a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    let s = serde_json::to_string_pretty(v)?;
    write_stdout(&(s + "\n"))
}

/// Print records as JSON Lines: one compact object per line, each with `context` fields (which
/// session, which policy …) merged in so every line stands on its own.
pub fn print_jsonl<'a, T, I>(rows: I, context: &[(&str, serde_json::Value)]) -> anyhow::Result<()>
where
    T: serde::Serialize + 'a,
    I: IntoIterator<Item = &'a T>,
{
    let mut out = String::new();
    for row in rows {
        let mut v = serde_json::to_value(row)?;
        if let serde_json::Value::Object(m) = &mut v {
            for (k, c) in context {
                m.entry(k.to_string()).or_insert_with(|| c.clone());
            }
        }
        out.push_str(&serde_json::to_string(&v)?);
        out.push('\n');
    }
    write_stdout(&out)
}

/// `1 episode`, `3 episodes`: a count with its noun (regular plurals only).
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Write to stdout; a closed pipe (`tierscope … | head`) ends the output quietly instead of
/// panicking the way `println!` does.
pub fn write_stdout(s: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// `print!` through [`write_stdout`]; use inside a function returning `anyhow::Result`.
macro_rules! out {
    ($($t:tt)*) => {
        $crate::cli::output::write_stdout(&format!($($t)*))?
    };
}

/// `println!` through [`write_stdout`]; use inside a function returning `anyhow::Result`.
macro_rules! outln {
    () => {
        $crate::cli::output::write_stdout("\n")?
    };
    ($($t:tt)*) => {
        $crate::cli::output::write_stdout(&format!("{}\n", format_args!($($t)*)))?
    };
}

pub(crate) use {out, outln};

/// `--budget N`: a positive token count (a budget of 0 would demote everything on every request).
pub fn budget_value(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("a budget must be at least 1 token".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("expected a token count: {e}")),
    }
}
