//! What one variant of the delivery bench measured, and the table of all of them, each
//! against the baselines (raw lapin, PerfTest) of its own broker set.

use std::time::Duration;

use crate::common::cpu::{Ticks, ms_per};

/// The broker a variant ran on: baselines are only compared within one set.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Set {
    /// The local node with classic queues (and the embedded broker, which has no
    /// baseline of its own).
    Classic,
    /// The local node with quorum queues.
    Quorum,
    /// The 3-node cluster, quorum queues.
    Cluster,
}

/// A baseline, or conveyor.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    RawLapin,
    PerfTest,
    Conveyor,
}

pub struct Report {
    pub name: String,
    pub set: Set,
    pub kind: Kind,
    pub n: usize,
    pub elapsed: Duration,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// CPU spent during the run, by process.
    pub ticks: Ticks,
}

impl Report {
    /// A run whose every message's latency (µs) is known.
    pub fn measured(
        name: &str,
        set: Set,
        kind: Kind,
        n: usize,
        elapsed: Duration,
        mut latencies_us: Vec<u64>,
        ticks: Ticks,
    ) -> Report {
        latencies_us.sort_unstable();
        let pct = |p: f64| {
            let i = ((latencies_us.len().max(1) - 1) as f64 * p) as usize;
            latencies_us.get(i).map_or(0.0, |&v| v as f64 / 1000.0)
        };
        Report {
            name: name.into(),
            set,
            kind,
            n,
            elapsed,
            p50_ms: pct(0.5),
            p99_ms: pct(0.99),
            ticks,
        }
    }

    pub fn rate(&self) -> f64 {
        self.n as f64 / self.elapsed.as_secs_f64()
    }
}

/// The table: rates, latencies, ratios against the mean of each baseline's runs in the
/// variant's set, and CPU per 1,000 messages by process.
pub fn print(reports: &[Report], n: usize, prefetch: u16, window: usize) {
    let mean = |set: Set, kind: Kind| {
        let rates: Vec<f64> = reports
            .iter()
            .filter(|r| r.set == set && r.kind == kind)
            .map(Report::rate)
            .collect();
        (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64)
    };
    println!(
        "\n{n} messages, prefetch {prefetch}, publish window {window}, persistent + confirms + manual ack"
    );
    println!(
        "x raw / x pt: rate over the mean of raw lapin's / PerfTest's runs on the same broker and queue type"
    );
    println!(
        "CPU: ms of CPU per 1,000 messages (machine: every process; own: the publisher and consumer, this bench or PerfTest's JVM)"
    );
    println!(
        "{:<36} {:>8} {:>8} {:>8} {:>6} {:>6} | {:>7} {:>6} {:>6} {:>6} {:>6}",
        "variant",
        "msgs/s",
        "p50 ms",
        "p99 ms",
        "x raw",
        "x pt",
        "machine",
        "own",
        "rabbit",
        "redis",
        "db"
    );
    for r in reports {
        let ratio = |kind| {
            mean(r.set, kind)
                .map(|base| format!("{:.2}", r.rate() / base))
                .unwrap_or_else(|| "-".into())
        };
        let cpu = |t: u64| ms_per(t, r.n, 1000);
        println!(
            "{:<36} {:>8.0} {:>8.1} {:>8.1} {:>6} {:>6} | {:>7.0} {:>6.0} {:>6.0} {:>6.0} {:>6.0}",
            r.name,
            r.rate(),
            r.p50_ms,
            r.p99_ms,
            ratio(Kind::RawLapin),
            ratio(Kind::PerfTest),
            cpu(r.ticks.machine),
            cpu(r.ticks.own),
            cpu(r.ticks.broker),
            cpu(r.ticks.redis),
            cpu(r.ticks.db),
        );
    }
}
