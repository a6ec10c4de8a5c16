//! FFmpeg's processes: each runs in a scratch directory of its own, is killed when its
//! future is dropped (a cancel, the step's deadline, a shutdown), and on failure its
//! stderr is cut to a line for the log while the tenant reads a stable code.

use std::path::{Path, PathBuf};

use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::domains::ai_tasks::executor::ExecError;

/// Where scratch directories go: `<tmp>/conveyor-ffmpeg/<pid>-<task>-<random>`.
pub fn scratch_root() -> PathBuf {
    std::env::temp_dir().join("conveyor-ffmpeg")
}

/// A scratch directory for `task`'s step, removed when dropped (a crash leaves it to
/// [`sweep_orphans`]).
pub fn scratch(task: &str) -> Result<tempfile::TempDir, ExecError> {
    let root = scratch_root();
    std::fs::create_dir_all(&root)
        .map_err(|e| ExecError::Transient(format!("making {}: {e}", root.display())))?;
    tempfile::Builder::new()
        .prefix(&format!("{}-{task}-", std::process::id()))
        .tempdir_in(&root)
        .map_err(|e| ExecError::Transient(format!("a scratch directory: {e}")))
}

/// Removes the scratch directories of processes that are gone (a crash, a kill -9): their
/// names start with the pid that made them. What it removed.
pub fn sweep_orphans(root: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let alive = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
        if !alive && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Runs `program` with `args` to its end; its stdout. A failure is permanent when the
/// input is at fault (FFmpeg could not read it), transient otherwise.
pub async fn run(
    program: &str,
    args: &[&str],
    cancel: &CancellationToken,
) -> Result<Vec<u8>, ExecError> {
    let child = Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // A dropped future (cancel, deadline, shutdown) kills the process: no orphan.
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ExecError::Transient(format!("starting {program}: {e}")))?;
    metrics::gauge!("conveyor_ffmpeg_running").increment(1.0);
    let out = tokio::select! {
        _ = cancel.cancelled() => None,
        out = child.wait_with_output() => Some(out),
    };
    metrics::gauge!("conveyor_ffmpeg_running").decrement(1.0);
    let out = out
        .ok_or(ExecError::Canceled)?
        .map_err(|e| ExecError::Transient(format!("waiting for {program}: {e}")))?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let detail = format!(
        "{program} exited {}: {}",
        out.status,
        last.chars().take(300).collect::<String>()
    );
    let unreadable = [
        "Invalid data found",
        "moov atom not found",
        "does not contain any stream",
        "Invalid argument",
    ]
    .iter()
    .any(|p| stderr.contains(p));
    Err(if unreadable {
        ExecError::Permanent(format!("media_unreadable: {detail}"))
    } else {
        ExecError::Transient(detail)
    })
}
