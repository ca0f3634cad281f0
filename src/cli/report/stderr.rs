//! The one writer of stderr: warnings, notes and the final error line, sanitized like stdout
//! (a sidecar's or a policy file's error text echoes what it failed on). A closed stderr is
//! ignored (there is no one left to tell).

use std::io::Write;

use tierscope_engine::text::sanitize_for_terminal;

/// One line (or several) on stderr, sanitized.
pub fn line(s: &str) {
    let clean = sanitize_for_terminal(s);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(clean.as_bytes());
    let _ = err.write_all(b"\n");
}

/// `warning: …`
pub fn warn(s: &str) {
    line(&format!("warning: {s}"));
}

/// `note: …`
pub fn note(s: &str) {
    line(&format!("note: {s}"));
}
