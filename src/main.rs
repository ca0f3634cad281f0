//! The `tierscope` binary: parse arguments and hand over to [`tierscope::cli`].

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = tierscope::cli::Cli::parse();
    match tierscope::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One clear line (with its causes), never a panic.
            eprintln!("tierscope: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
