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
        .map_err(|e| {
            // Retried through the tiers, then dead-lettered: an operator's to fix.
            let hint = if e.kind() == std::io::ErrorKind::NotFound {
                " (FFmpeg is not installed on this consumer's machine; Debian: apt-get install ffmpeg)"
            } else {
                ""
            };
            ExecError::Transient(format!("starting {program}: {e}{hint}"))
        })?;
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn alive(pid: u32) -> bool {
        // A killed child not yet reaped is a zombie: gone for our purposes.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
    }

    /// The pid of the FFmpeg process whose command line holds `marker`.
    fn pid_of(marker: &str) -> Option<u32> {
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|p| {
            let cmd = std::fs::read(p.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd);
            (cmd.starts_with("ffmpeg") && cmd.contains(marker))
                .then(|| p.file_name().to_string_lossy().parse().ok())
                .flatten()
        })
    }

    /// A cancel kills the process at once (no orphan left running), and so does
    /// dropping the future (a deadline, a shutdown); scratch directories go with their
    /// step and a dead process's are swept.
    #[tokio::test]
    async fn a_cancel_or_a_drop_kills_ffmpeg_and_scratch_is_cleaned() {
        if std::process::Command::new("ffmpeg")
            .arg("-version")
            .output()
            .is_err()
        {
            assert!(
                std::env::var("CONVEYOR_REQUIRE_SERVICES").as_deref() != Ok("1"),
                "FFmpeg is not installed"
            );
            eprintln!("SKIPPED: FFmpeg is not installed");
            return;
        }
        for drop_it in [false, true] {
            let dir = scratch("kill-test").unwrap();
            let out = dir.path().join("out.wav").display().to_string();
            // A minute of tone read in real time: it runs until stopped.
            let args = [
                "-nostdin",
                "-v",
                "error",
                "-re",
                "-f",
                "lavfi",
                "-i",
                "sine=duration=60",
                "-y",
                out.as_str(),
            ];
            let cancel = CancellationToken::new();
            let started = Instant::now();
            let run = run("ffmpeg", &args, &cancel);
            let watch = async {
                let mut pid = None;
                while pid.is_none() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    pid = pid_of(&out);
                }
                pid.unwrap()
            };
            let pid = if drop_it {
                tokio::select! {
                    _ = run => panic!("it ran to its end"),
                    pid = watch => pid,
                }
            } else {
                let (result, pid) = tokio::join!(run, async {
                    let pid = watch.await;
                    cancel.cancel();
                    pid
                });
                assert_eq!(result, Err(ExecError::Canceled));
                pid
            };
            let gone = Instant::now();
            while alive(pid) {
                assert!(
                    gone.elapsed() < Duration::from_secs(5),
                    "ffmpeg {pid} still runs"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(started.elapsed() < Duration::from_secs(30));
            let path = dir.path().to_owned();
            drop(dir);
            assert!(!path.exists(), "the scratch directory went with its step");
        }
        // What a process that died left behind is swept; the living's stays.
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("999999999-task-x")).unwrap();
        std::fs::create_dir(root.path().join(format!("{}-task-y", std::process::id()))).unwrap();
        assert_eq!(sweep_orphans(root.path()), 1);
        assert!(
            root.path()
                .join(format!("{}-task-y", std::process::id()))
                .exists()
        );
    }
}
