//! The one writer of stdout. A closed pipe (`tierscope … | head`) ends the output quietly: the
//! reader has what it wanted, so it is neither an error nor a panic (as `println!` would be).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use tierscope_engine::text::sanitize_for_terminal;

/// Set once the reader closed stdout; later writes are skipped.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether `e` is the reader going away.
pub fn is_closed_pipe(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::BrokenPipe
}

/// Whether the reader closed stdout (later writes are skipped).
pub fn is_closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// Write text for people. Everything is sanitized here, whatever the caller did, so no
/// control sequence can reach the terminal through stdout (the text reporters' own output has
/// none, so this changes nothing else).
pub fn write_text(s: &str) -> anyhow::Result<()> {
    write_bytes(sanitize_for_terminal(s).as_bytes())
}

/// Write bytes that are already safe (JSON from [`super::json`]).
pub(super) fn write_bytes(b: &[u8]) -> anyhow::Result<()> {
    with_stdout(|out| out.write_all(b))
}

/// Run `f` on the locked stdout and flush; a closed pipe is swallowed (and remembered).
pub(super) fn with_stdout(
    f: impl FnOnce(&mut std::io::BufWriter<std::io::StdoutLock<'static>>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match f(&mut out).and_then(|()| out.flush()) {
        Err(e) if is_closed_pipe(&e) => {
            CLOSED.store(true, Ordering::Relaxed);
            // Whatever is still buffered has nowhere to go.
            let _ = out.into_parts();
            Ok(())
        }
        Err(e) => Err(e.into()),
        Ok(()) => Ok(()),
    }
}
