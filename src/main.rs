//! The `tierscope` binary: parse arguments and hand over to [`tierscope::cli`].

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = tierscope::cli::Cli::parse();
    match tierscope::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // `tierscope … | head`: the reader has what it wanted.
        Err(e) if is_broken_pipe(&e) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One clear line (with its causes), never a panic.
            eprintln!("tierscope: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
