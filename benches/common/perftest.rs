//! RabbitMQ's own PerfTest (the tool behind RabbitMQ's published throughput figures) run
//! as a child process on the workload of [`super::lapin::noop`]: one producer and one
//! consumer, `n` persistent mandatory messages of the same size to a durable queue of its
//! own on the default exchange, publisher confirms, manual acks, the same prefetch.
//! Installed by `tools/perftest/install.sh` (`$PERFTEST_HOME/perf-test`, default
//! /var/tmp/conveyor-perftest); `BENCH_PERFTEST_ARGS` appends arguments of one's own.
//!
//! Differences from the raw lapin run, all PerfTest's own way of working:
//! - confirms are a sliding window (`-c`: at most that many unconfirmed), where lapin
//!   publishes a window and waits for all of it before the next;
//! - each message is acked alone (`multi-ack-every` 0, PerfTest's default), as lapin
//!   does; conveyor folds runs of acks into `multiple` ones;
//! - the rate is PerfTest's summary, `receiving rate avg`: messages received over the
//!   time from the moment every producer and consumer had started to the end of the run
//!   (connections closed); the JVM's start and the declarations are outside it, its JIT
//!   warm-up inside;
//! - latencies are PerfTest's consumer latency (publish timestamp in the body to
//!   delivery), percentiles of its own histogram.
//!
//! CPU is sampled between PerfTest's "starting producer" line and its "test stopped"
//! line; `own` is the Java process's, the rest as for the other variants.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt as _, BufReader};

use super::cpu::{Ticks, cpu_ticks};

/// One PerfTest run, as PerfTest reports it.
pub struct Run {
    /// `n` over PerfTest's receiving rate.
    pub elapsed: Duration,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub ticks: Ticks,
    /// The command line it ran.
    pub command: String,
}

/// What to run: the same as the raw lapin baseline's.
pub struct Workload<'a> {
    pub uri: &'a str,
    pub n: usize,
    pub size: usize,
    /// Publisher confirms: at most this many unconfirmed.
    pub confirm_window: usize,
    pub prefetch: u16,
    /// A quorum queue (PerfTest's `--quorum-queue`) rather than a classic one.
    pub quorum: bool,
}

/// The launcher `tools/perftest/install.sh` writes, when it is there.
pub fn launcher() -> Option<PathBuf> {
    let home =
        std::env::var("PERFTEST_HOME").unwrap_or_else(|_| "/var/tmp/conveyor-perftest".into());
    let path = Path::new(&home).join("perf-test");
    path.is_file().then_some(path)
}

/// The arguments of one run (the queue is the caller's, deleted by [`run`] after).
pub fn args(w: &Workload, queue: &str) -> Vec<String> {
    let mut a = Vec::new();
    for (flag, v) in [
        ("-h", w.uri.to_owned()),
        ("-x", "1".into()), // one producer
        ("-y", "1".into()), // one consumer
        ("-u", queue.into()),
        ("-p", String::new()), // declares the queue only when it does not exist
        ("-e", "amq.default".into()), // the default exchange, as lapin
        ("-k", queue.into()),
        ("--auto-delete", "false".into()), // deleted after (a quorum queue cannot be)
        ("-f", "persistent".into()),       // durable queue, persistent messages
        ("-f", "mandatory".into()),
        ("-s", w.size.to_string()),
        ("-c", w.confirm_window.to_string()),
        ("-q", w.prefetch.to_string()),
        ("-C", w.n.to_string()),
        ("-D", w.n.to_string()),
    ] {
        a.push(flag.to_owned());
        if !v.is_empty() {
            a.push(v);
        }
    }
    if w.quorum {
        a.push("--quorum-queue".into());
    }
    if let Ok(extra) = std::env::var("BENCH_PERFTEST_ARGS") {
        a.extend(extra.split_whitespace().map(str::to_owned));
    }
    a
}

/// Runs PerfTest once and deletes its queue.
pub async fn run(launcher: &Path, w: &Workload<'_>) -> anyhow::Result<Run> {
    let queue = format!("bench{}.perftest", std::process::id());
    let args = args(w, &queue);
    let command = format!("{} {}", launcher.display(), args.join(" "));
    let mut child = tokio::process::Command::new(launcher)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().unwrap_or(0);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = child.stderr.take().unwrap();
    let errors = tokio::spawn(async move {
        let mut s = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut s).await;
        s
    });
    let mut out = Vec::new();
    let (mut before, mut after) = (None, None);
    // A stuck run (nothing received, a lost confirm) must not hold the bench forever.
    let limit = Duration::from_secs(120 + (w.n / 200) as u64);
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = tokio::time::timeout(left, lines.next_line()).await else {
            anyhow::bail!("PerfTest still running after {limit:?}: {command}");
        };
        let Some(line) = line? else { break };
        if before.is_none() && line.contains("starting producer") {
            before = Some((cpu_ticks(), process_ticks(pid)));
        }
        if line.starts_with("test stopped") {
            after = Some((cpu_ticks(), process_ticks(pid)));
        }
        out.push(line);
    }
    let status = child.wait().await?;
    let errors = errors.await.unwrap_or_default();
    delete_queue(w.uri, &queue).await;
    let text = out.join("\n");
    anyhow::ensure!(
        status.success() && text.contains("Consumer reached message limit"),
        "PerfTest failed ({status}): {command}\n{}\n{}",
        tail(&text),
        tail(&errors)
    );
    let rate = number_after(&text, "receiving rate avg:")
        .ok_or_else(|| anyhow::anyhow!("no receiving rate in PerfTest's output:\n{text}"))?;
    let (p50_ms, p99_ms) = latency_ms(&text).unwrap_or((0.0, 0.0));
    let ticks = match (before, after) {
        (Some((b, own_b)), Some((a, own_a))) => Ticks {
            own: own_a.saturating_sub(own_b),
            ..a.since(b)
        },
        _ => Ticks::default(),
    };
    Ok(Run {
        elapsed: Duration::from_secs_f64(w.n as f64 / rate),
        p50_ms,
        p99_ms,
        ticks,
        command,
    })
}

/// utime + stime of every thread of process `pid` (0 once it is gone).
fn process_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let f: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, s)| s.split_whitespace().collect())
        .unwrap_or_default();
    let field = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    // Fields 14 and 15 (utime, stime) are 11 and 12 after the name.
    field(11) + field(12)
}

/// The number after `label` on the first line that has it (`… receiving rate avg: 9900 msg/s`).
fn number_after(text: &str, label: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.contains(label))?;
    let rest = line.split_once(label)?.1;
    rest.split_whitespace().next()?.parse().ok()
}

/// Median and 99th percentile of the summary's consumer latency, in ms:
/// `consumer latency min/median/75th/95th/99th 307/31999/56955/113006/129940 µs`.
fn latency_ms(text: &str) -> Option<(f64, f64)> {
    let line = text.lines().find(|l| l.contains("consumer latency min/"))?;
    let rest = line.split_once("consumer latency ")?.1;
    let mut parts = rest.split_whitespace();
    let (names, values, unit) = (parts.next()?, parts.next()?, parts.next()?);
    let scale = match unit {
        "ms" => 1.0,
        "ns" => 1e-6,
        _ => 1e-3, // µs
    };
    let values: Vec<f64> = values.split('/').filter_map(|v| v.parse().ok()).collect();
    let at = |name: &str| {
        let i = names.split('/').position(|n| n == name)?;
        values.get(i).map(|v| v * scale)
    };
    Some((at("median")?, at("99th")?))
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

async fn delete_queue(uri: &str, queue: &str) {
    use lapin::options::QueueDeleteOptions;
    let Ok(conn) = lapin::Connection::connect(uri, lapin::ConnectionProperties::default()).await
    else {
        return;
    };
    if let Ok(ch) = conn.create_channel().await {
        let _ = ch
            .queue_delete(queue.into(), QueueDeleteOptions::default())
            .await;
    }
    let _ = conn.close(200, "done".into()).await;
}
