//! The `tierscope` binary: parse arguments and hand over to [`tierscope::cli`].

use clap::Parser;

// mimalloc: a load is millions of small strings (every text, id and tool output of a session),
// the allocation pattern glibc's allocator handles worst (malloc/free and page faults).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = tierscope::cli::Cli::parse();
    match tierscope::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // `tierscope … | head`: the reader has what it wanted.
        Err(e) if is_broken_pipe(&e) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One clear line (with its causes), never a panic; sanitized, because a cause can
            // quote the file it failed on (a sidecar's serde error, a policy's TOML error).
            tierscope::cli::report::stderr::line(&format!("tierscope: {e:#}"));
            std::process::ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(tierscope::cli::report::stdout::is_closed_pipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
    })
}
