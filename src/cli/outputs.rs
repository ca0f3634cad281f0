//! The CLI's side of [`tierscope_engine::output_guard`]: the guard of a command, made of what it
//! reads (the loading flags' inputs and its policy files), checked before the load so that a
//! refused output fails at once, and again with what the load found when the file is written.

use std::path::Path;

use tierscope_engine::output_guard::OutputGuard;

use super::LoadArgs;

/// The inputs `load` names, and each of `policies` that is a file.
pub fn guard(load: &LoadArgs, policies: &[&str]) -> OutputGuard {
    let mut g = OutputGuard::for_load(&load.options());
    for p in policies {
        let p = Path::new(p);
        if p.is_file() {
            g.input_file(p, "policy file");
        }
    }
    g
}
