//! FFmpeg's processes: each runs in a scratch directory of its own, is killed when its
//! future is dropped (a cancel, the step's deadline, a shutdown) or when what it wrote
//! passes its bound ([`Watch`]), and on failure its stderr is cut to a line for the log
//! while the tenant reads a stable code.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::providers::ExecError;

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

/// A bound on what a run writes: the files of `dir` together (FFmpeg's own `-fs` is not
/// kept by the segment and image muxers, which write files of their own).
#[derive(Debug, Clone, Copy)]
pub struct Watch<'a> {
    pub dir: &'a Path,
    pub limit: u64,
}

/// How often a watched run's output is measured. A fast decoder writes WAV at over
/// 100 MB a second (measured: 38 MB in 0.26 s), so a run may pass its bound by what it
/// writes in this long, on scratch only; the audio's `-t` keeps it within the budget in
/// the first place, and nothing is stored unreserved.
const MEASURE_EVERY: Duration = Duration::from_millis(100);

/// Why a watched run stopped short.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// Its output passed the watch's limit (this many bytes); the process was killed.
    #[error("the output passed its bound ({0} bytes)")]
    Overflow(u64),
}

/// Runs `program` with `args` to its end; its stdout. A failure is permanent when the
/// input is at fault (FFmpeg could not read it), transient otherwise.
pub async fn run<S: AsRef<OsStr>>(
    program: &str,
    args: &[S],
    cancel: &CancellationToken,
) -> Result<Vec<u8>, ExecError> {
    run_within(program, args, cancel, None)
        .await
        .map_err(|e| match e {
            RunError::Exec(e) => e,
            // No watch, no overflow; kept total rather than assumed away.
            RunError::Overflow(n) => ExecError::Transient(format!("{program} wrote {n} bytes")),
        })
}

/// [`run`], killed when what it wrote in `watch`'s directory passes its limit.
pub async fn run_within<S: AsRef<OsStr>>(
    program: &str,
    args: &[S],
    cancel: &CancellationToken,
    watch: Option<Watch<'_>>,
) -> Result<Vec<u8>, RunError> {
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
    // Whichever comes first; the others' futures are dropped, and with them the child
    // (killed: `kill_on_drop`).
    let out = tokio::select! {
        _ = cancel.cancelled() => Err(RunError::Exec(ExecError::Canceled)),
        written = overflow(watch) => Err(RunError::Overflow(written)),
        out = child.wait_with_output() => Ok(out),
    };
    metrics::gauge!("conveyor_ffmpeg_running").decrement(1.0);
    let out = out?.map_err(|e| ExecError::Transient(format!("waiting for {program}: {e}")))?;
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
        // A demuxer or protocol outside the allow-lists (a playlist, a concat list).
        "not on whitelist",
    ]
    .iter()
    .any(|p| stderr.contains(p));
    Err(RunError::Exec(if unreadable {
        ExecError::Permanent(format!("media_unreadable: {detail}"))
    } else {
        ExecError::Transient(detail)
    }))
}

/// Resolves with the bytes written once the files of `watch`'s directory pass its limit;
/// never without a watch.
async fn overflow(watch: Option<Watch<'_>>) -> u64 {
    let Some(w) = watch else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(MEASURE_EVERY).await;
        let written = bytes_in(w.dir).await;
        if written > w.limit {
            return written;
        }
    }
}

/// The bytes of the files directly in `dir` (0 for what cannot be read).
pub async fn bytes_in(dir: &Path) -> u64 {
    let Ok(mut entries) = tokio::fs::read_dir(dir).await else {
        return 0;
    };
    let mut total = 0;
    while let Ok(Some(e)) = entries.next_entry().await {
        if let Ok(m) = e.metadata().await
            && m.is_file()
        {
            total += m.len();
        }
    }
    total
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

    /// A watched run that writes past its bound is killed there, and says how much it
    /// wrote (`-fs` is not kept by the segment muxer: a 20-minute WAV is 38 MB).
    #[tokio::test]
    async fn a_run_writing_past_its_bound_is_killed() {
        if !super::super::ffmpeg_here("a_run_writing_past_its_bound_is_killed") {
            return;
        }
        let dir = scratch("watch-test").unwrap();
        let pattern = dir.path().join("audio-%03d.wav").display().to_string();
        let args = [
            "-nostdin",
            "-v",
            "error",
            "-re",
            "-f",
            "lavfi",
            "-i",
            "anullsrc=r=16000:cl=mono",
            "-t",
            "1200",
            "-f",
            "segment",
            "-segment_time",
            "600",
            pattern.as_str(),
        ];
        // Read in real time: 32 kB a second, past 64 kB in about two seconds.
        let watch = Watch {
            dir: dir.path(),
            limit: 64 * 1024,
        };
        let started = Instant::now();
        let cancel = CancellationToken::new();
        let (r, pid) = tokio::join!(run_within("ffmpeg", &args, &cancel, Some(watch)), async {
            loop {
                if let Some(pid) = pid_of(&pattern) {
                    return pid;
                }
                assert!(started.elapsed() < Duration::from_secs(30), "no ffmpeg");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let Err(RunError::Overflow(written)) = r else {
            panic!("{r:?}");
        };
        assert!(written > 64 * 1024 && written < 1024 * 1024, "{written}");
        assert!(started.elapsed() < Duration::from_secs(30));
        // Nothing more is written once it was stopped: the process is gone.
        let gone = Instant::now();
        while alive(pid) {
            assert!(
                gone.elapsed() < Duration::from_secs(5),
                "ffmpeg {pid} still runs"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let after = bytes_in(dir.path()).await;
        assert_eq!(bytes_in(dir.path()).await, after, "it still writes");
    }

    /// A cancel kills the process at once (no orphan left running), and so does
    /// dropping the future (a deadline, a shutdown); scratch directories go with their
    /// step and a dead process's are swept.
    #[tokio::test]
    async fn a_cancel_or_a_drop_kills_ffmpeg_and_scratch_is_cleaned() {
        if !super::super::ffmpeg_here("a_cancel_or_a_drop_kills_ffmpeg_and_scratch_is_cleaned") {
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
