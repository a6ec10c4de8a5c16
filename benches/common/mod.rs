//! What the HTTP benchmarks share: a stretch of load's latencies, its summary, and the
//! check that a service listens.

#![allow(dead_code)] // each bench uses what it needs

use std::time::Duration;

/// Latencies (ms) and wall time of one stretch of load.
pub struct Round {
    pub latencies: Vec<f64>,
    pub secs: f64,
}

/// (req/s, p50 ms, p99 ms) over several rounds.
pub fn summary(rounds: Vec<Round>) -> (f64, f64, f64) {
    let secs: f64 = rounds.iter().map(|r| r.secs).sum();
    let mut all: Vec<f64> = rounds.into_iter().flat_map(|r| r.latencies).collect();
    all.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| all[((all.len() - 1) as f64 * p) as usize];
    (all.len() as f64 / secs, pct(0.5), pct(0.99))
}

/// Whether something accepts TCP connections at `addr`.
pub async fn up(addr: &str) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr)).await,
        Ok(Ok(_))
    )
}
