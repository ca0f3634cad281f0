//! A report written as it is produced (a long replay's frames), not built in memory first:
//! text and bytes are buffered and written to stdout a block at a time, escaped as the other
//! reporters escape them. A closed pipe ends it quietly ([`Stream::closed`] tells the producer
//! to stop).

use tierscope_engine::text::sanitize_for_terminal;

/// Buffered writes to stdout.
pub struct Stream {
    buf: Vec<u8>,
}

/// Written to stdout once this much is buffered.
const BLOCK: usize = 1 << 16;

impl Stream {
    pub fn stdout() -> Stream {
        Stream {
            buf: Vec::with_capacity(BLOCK * 2),
        }
    }

    /// Text for people (escaped like [`super::stdout::write_text`]).
    pub fn text(&mut self, s: &str) -> anyhow::Result<()> {
        self.buf
            .extend_from_slice(sanitize_for_terminal(s).as_bytes());
        self.maybe_flush()
    }

    /// The buffer, for a serializer that writes safe bytes (JSON from [`super::json`]); call
    /// [`Stream::wrote`] after.
    pub fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// After writing into [`Stream::bytes`].
    pub fn wrote(&mut self) -> anyhow::Result<()> {
        self.maybe_flush()
    }

    /// The reader closed stdout: nothing more will be written.
    pub fn closed(&self) -> bool {
        super::stdout::is_closed()
    }

    fn maybe_flush(&mut self) -> anyhow::Result<()> {
        if self.buf.len() >= BLOCK {
            self.flush()?;
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
