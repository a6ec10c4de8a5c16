//! The yardsticks of the submit bench's end-to-end figure, run on the same broker right
//! after it: a bare lapin no-op consumer (the broker's practical limit), Celery running a
//! no-op task (`benches/peers/celery_noop.py`) and Dramatiq running a no-op actor and an
//! actor doing one INSERT + commit into PostgreSQL (`benches/peers/dramatiq_noop.py`).
//!
//! The Python peers run with the Python in `BENCH_CELERY_PYTHON` (default
//! `/var/tmp/conveyor-celery/bin/python`, one venv for both; see each script's
//! docstring for the install), and are skipped with a note when it is absent.

/// What the peers did, in tasks/s (`None`: skipped or failed).
#[derive(Default)]
pub struct Peers {
    pub celery: Option<f64>,
    pub dramatiq: Option<f64>,
    pub dramatiq_db: Option<f64>,
}

/// Runs every peer. `pg_admin` (`postgres://user@host:port`, no database) and
/// `pg_params` are the PostgreSQL server and connection parameters of the bench's own
/// runs: Dramatiq's db mode makes its scratch database there.
pub async fn run(total: usize, pg_admin: &str, pg_params: &str) -> Peers {
    let amqp = "amqp://guest:guest@127.0.0.1:5672/%2f";
    match super::lapin::noop(amqp, total.max(10_000), 128, 500, false).await {
        Ok(run) => println!(
            "[peers] bare lapin no-op consumer (persistent, confirms, manual ack, prefetch 128): {:.0} msgs/s",
            run.rate(total.max(10_000))
        ),
        Err(e) => println!("[peers] bare lapin run failed: {e}"),
    }
    let python = std::env::var("BENCH_CELERY_PYTHON")
        .unwrap_or_else(|_| "/var/tmp/conveyor-celery/bin/python".into());
    if !std::path::Path::new(&python).exists() {
        println!(
            "[peers] Celery and Dramatiq skipped: no {python} (see benches/peers/celery_noop.py)"
        );
        return Peers::default();
    }
    let celery = python_peer(
        &python,
        "celery_noop.py",
        &["10000"],
        &[],
        "celery-noop",
        "Celery no-op (worker -c 2 prefork, acks_late, 10,000 .delay())",
    )
    .await;
    let pg = [("BENCH_PG_ADMIN", pg_admin), ("BENCH_PG_PARAMS", pg_params)];
    let dramatiq = python_peer(
        &python,
        "dramatiq_noop.py",
        &["10000", "noop"],
        &pg,
        "dramatiq-noop",
        "Dramatiq no-op (2 processes x 8 threads, acks after the actor, 10,000 .send())",
    )
    .await;
    let dramatiq_db = python_peer(
        &python,
        "dramatiq_noop.py",
        &["10000", "db"],
        &pg,
        "dramatiq-db",
        "Dramatiq + one INSERT and commit on PostgreSQL (same worker, 10,000 .send())",
    )
    .await;
    Peers {
        celery,
        dramatiq,
        dramatiq_db,
    }
}

/// Runs `benches/peers/<script> <args>` and reads the rate from its `<tag> <rate>` line.
async fn python_peer(
    python: &str,
    script: &str,
    args: &[&str],
    env: &[(&str, &str)],
    tag: &str,
    what: &str,
) -> Option<f64> {
    let path = format!("{}/benches/peers/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::process::Command::new(python)
        .arg(&path)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .await;
    match out {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            let rate = text
                .lines()
                .find_map(|l| l.strip_prefix(tag)?.strip_prefix(' '))
                .unwrap_or("?");
            println!("[peers] {what}: {rate} tasks/s");
            rate.trim().parse().ok()
        }
        Ok(o) => {
            println!(
                "[peers] {tag} run failed: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            );
            None
        }
        Err(e) => {
            println!("[peers] {tag} run failed: {e}");
            None
        }
    }
}

/// conveyor's rate over each peer's, one round at a time, for the summary.
#[derive(Default)]
pub struct Ratios {
    celery: Vec<f64>,
    dramatiq: Vec<f64>,
    dramatiq_db: Vec<f64>,
}

impl Ratios {
    /// Records a round (conveyor's tasks/s and its peers') and prints its ratios.
    pub fn push(&mut self, conveyor: f64, peers: &Peers) {
        let mut shown = Vec::new();
        for (name, peer, all) in [
            ("Celery", peers.celery, &mut self.celery),
            ("Dramatiq no-op", peers.dramatiq, &mut self.dramatiq),
            (
                "Dramatiq + DB write",
                peers.dramatiq_db,
                &mut self.dramatiq_db,
            ),
        ] {
            if let Some(rate) = peer {
                all.push(conveyor / rate);
                shown.push(format!("/ {name} {:.2}", conveyor / rate));
            }
        }
        if !shown.is_empty() {
            println!("[end to end] conveyor {}", shown.join(", "));
        }
    }

    /// Each peer's ratio per round and their median, when there was more than one round.
    pub fn summary(self) {
        for (name, mut ratios) in [
            ("Celery", self.celery),
            ("Dramatiq no-op", self.dramatiq),
            ("Dramatiq + DB write", self.dramatiq_db),
        ] {
            if ratios.len() > 1 {
                let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
                ratios.sort_by(f64::total_cmp);
                println!(
                    "[end to end] conveyor / {name} per round: {}; median {:.2}",
                    shown.join(", "),
                    ratios[ratios.len() / 2]
                );
            }
        }
    }
}
