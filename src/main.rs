//! The `conveyor` binary: parse, run, and turn any failure into one line on stderr and
//! a non-zero exit code.

// The CLI's async main holds every command's future; in an optimized build its layout
// goes deeper than rustc's default query depth (128).
#![recursion_limit = "256"]

use std::process::ExitCode;

// glibc malloc (arena locks, consolidation) was about a fifth of the CPU the server
// spent on a submission; mimalloc's thread-local free lists make that a few percent.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    // One TLS provider for every rustls user in the process (lapin, reqwest, sqlx).
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    // The chaos harness's fail points, configured by FAILPOINTS, for the whole process.
    #[cfg(feature = "failpoints")]
    std::mem::forget(fail::FailScenario::setup());
    match conveyor::cli::main().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
