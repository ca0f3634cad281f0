//! The JSON Lines reporter: one compact record per line, each with `context` fields (which
//! session, which policy …) merged in so every line stands on its own.

use serde::Serialize;
use serde_json::Value;

/// Collects records and writes them to stdout (escaped like [`super::json`]).
pub struct JsonLines<'a> {
    context: Vec<(&'a str, Value)>,
    buf: Vec<u8>,
}

impl<'a> JsonLines<'a> {
    pub fn stdout() -> Self {
        Self {
            context: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// Merge these fields into every record written from now on (a record's own key wins).
    pub fn with_context(&mut self, context: Vec<(&'a str, Value)>) -> &mut Self {
        self.context = context;
        self
    }

    /// One record.
    pub fn record<T: Serialize + ?Sized>(&mut self, v: &T) -> anyhow::Result<()> {
        if self.context.is_empty() {
            super::json::to_writer(&mut self.buf, v)?;
        } else {
            let mut v = serde_json::to_value(v)?;
            if let Value::Object(m) = &mut v {
                for (k, c) in &self.context {
                    m.entry(k.to_string()).or_insert_with(|| c.clone());
                }
            }
            super::json::to_writer(&mut self.buf, &v)?;
        }
        self.buf.push(b'\n');
        // Stream big outputs instead of holding them.
        if self.buf.len() > 1 << 20 {
            self.flush()?;
        }
        Ok(())
    }

    /// Records, one per line.
    pub fn records<'r, T: Serialize + 'r>(
        &mut self,
        rows: impl IntoIterator<Item = &'r T>,
    ) -> anyhow::Result<()> {
        for r in rows {
            self.record(r)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        super::stdout::write_bytes(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Write what is left.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.flush()
    }
}
