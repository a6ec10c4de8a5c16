//! A 3-node RabbitMQ cluster on loopback for the chaos harness and the delivery bench,
//! started with scripts/rabbitmq-cluster beside the machine's broker: own node names,
//! ports, cookie and data directory. Stopped and removed when dropped, even when the run
//! panics.
// Each includer uses part of it (the bench starts and stops; the harness faults nodes).
#![allow(dead_code)]
// Test code: a failed unwrap is a failed run.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Nodes `rabbit-<prefix>a@localhost`… on AMQP ports `port0 + 1`…
pub struct Cluster {
    base: String,
    port0: u16,
    /// Node suffixes (`rabbit-<x>@localhost`).
    pub nodes: Vec<String>,
}

const CLUSTER_SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/rabbitmq-cluster");

impl Cluster {
    /// A fresh cluster named `<prefix>`: nodes `<prefix>a`, `<prefix>b`, `<prefix>c`,
    /// AMQP on `port0 + 1..=3` (`port0` from `port_var` when set).
    pub fn start(prefix: &str, port_var: &str, port0: u16) -> Cluster {
        let port0 = std::env::var(port_var)
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(port0);
        let at = |base: String| Cluster {
            base,
            port0,
            nodes: ["a", "b", "c"].map(|n| format!("{prefix}{n}")).to_vec(),
        };
        // A run killed before its clean-up (a CI timeout) leaves nodes holding these
        // names and ports: dropping a handle on its directory stops them.
        let stale = format!("conveyor-{prefix}-cluster-");
        for dir in std::fs::read_dir("/tmp").into_iter().flatten().flatten() {
            if dir.file_name().to_string_lossy().starts_with(&stale) {
                drop(at(dir.path().display().to_string()));
            }
        }
        let cluster = at(format!("/tmp/{stale}{}", std::process::id()));
        let t = Instant::now();
        cluster.script("start-cluster.sh", &[]);
        println!(
            "cluster of {} nodes on 127.0.0.1:{}-{} in {:.1}s",
            cluster.nodes.len(),
            port0 + 1,
            port0 + cluster.nodes.len() as u16,
            t.elapsed().as_secs_f64()
        );
        cluster
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("RMQ_BASE", &self.base)
            .env("RMQ_PORT0", self.port0.to_string())
            .env("RMQ_NODES", self.nodes.join(" "));
        c
    }

    /// Runs one of the cluster scripts; a failure fails the run with its output.
    fn script(&self, name: &str, args: &[&str]) {
        let out = self
            .command("bash")
            .arg(format!("{CLUSTER_SCRIPTS}/{name}"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `rabbitmqctl` against node `i`; its stdout, or None when the node does not answer.
    fn ctl(&self, i: usize, args: &[&str]) -> Option<String> {
        let out = self
            .command("bash")
            .arg("-c")
            .arg(format!(
                ". {CLUSTER_SCRIPTS}/cluster-env.sh; rmq_ctl \"$@\""
            ))
            .arg("ctl")
            .arg(&self.nodes[i])
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `host:port` of node `i`, as readiness names it.
    pub fn label(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.port0 as usize + i + 1)
    }

    pub fn urls(&self) -> Vec<String> {
        (0..self.nodes.len())
            .map(|i| format!("amqp://guest:guest@{}/%2f", self.label(i)))
            .collect()
    }

    /// The index of the node leading quorum queue `queue`.
    pub fn leader(&self, queue: &str) -> usize {
        for i in 0..self.nodes.len() {
            let Some(out) = self.ctl(i, &["-q", "list_queues", "name", "leader"]) else {
                continue;
            };
            let leader = out
                .lines()
                .filter_map(|l| l.split_once('\t'))
                .find(|(name, _)| *name == queue)
                .map(|(_, leader)| leader.trim().to_owned());
            if let Some(leader) = leader {
                let idx = self
                    .nodes
                    .iter()
                    .position(|n| leader.starts_with(&format!("rabbit-{n}@")))
                    .unwrap_or_else(|| panic!("leader {leader} is not a node of the cluster"));
                println!("cluster: {queue} is led by {leader}");
                return idx;
            }
        }
        panic!("no node lists {queue}");
    }

    pub fn kill(&self, i: usize) {
        self.script("stop-cluster.sh", &["kill", &self.nodes[i]]);
    }

    pub fn stop(&self, i: usize) {
        self.script("stop-cluster.sh", &["node", &self.nodes[i]]);
    }

    /// Starts node `i` again and waits until it has booted.
    pub fn restart(&self, i: usize) {
        self.script("start-cluster.sh", &["restart", &self.nodes[i]]);
    }

    pub fn partition(&self, args: &[&str]) {
        self.script("partition.sh", args);
    }

    /// Waits until every node runs the broker and sees the others.
    pub fn await_all_running(&self, limit: Duration) {
        let t = Instant::now();
        let want = self.nodes.len().to_string();
        loop {
            let all = (0..self.nodes.len()).all(|i| {
                self.ctl(i, &["eval", "length(rabbit_nodes:all_running())."])
                    .is_some_and(|o| o.trim() == want)
            });
            if all {
                return;
            }
            assert!(
                t.elapsed() < limit,
                "the cluster did not come back whole within {limit:?}"
            );
            // A short pause: each round already runs rabbitmqctl on every node.
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .command("bash")
            .arg(format!("{CLUSTER_SCRIPTS}/stop-cluster.sh"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
