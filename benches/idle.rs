//! Idle memory: the resident set of `conveyor serve` on the embedded defaults, of `serve`
//! and `consume ai` on RabbitMQ + PostgreSQL + Redis, and of `conveyor-consumer ai` (the
//! consumer-only binary) on the same services, after each has sat with nothing to do
//! (the release binaries the bench profile builds, one process at a time).
//!
//!   cargo bench --bench idle            # IDLE_SECS=15 by default
//!   CONVEYOR_BIN=/tmp/conveyor-before cargo bench --bench idle   # another build's binary
//!                                       # (CONVEYOR_CONSUMER_BIN likewise)
//!
//! RSS splits into anonymous memory (heap, stacks: the process's own) and file pages (the
//! binary's code and data start-up touched, shared by every conveyor process of a host).

// Bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod common;

use common::memory::{Rss, rss};

/// The binary measured: this build's, or `CONVEYOR_BIN` (to compare two builds).
fn bin() -> String {
    std::env::var("CONVEYOR_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_conveyor").to_owned())
}

/// The consumer-only binary: this build's, or `CONVEYOR_CONSUMER_BIN`.
fn consumer_bin() -> String {
    std::env::var("CONVEYOR_CONSUMER_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_conveyor-consumer").to_owned())
}

/// Starts `bin args` with `env`, waits `idle`, and measures it (stopped afterwards).
fn measure(
    bin: &str,
    args: &[&str],
    env: &[(String, String)],
    dir: &std::path::Path,
    idle: Duration,
) -> Rss {
    let mut child: Child = Command::new(bin)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("CONVEYOR_ENV", "local")
        .env(
            "CONVEYOR_CONFIG_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config"),
        )
        .env("CONVEYOR__LOG__LEVEL", "error")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting the conveyor binary");
    std::thread::sleep(idle);
    if let Ok(Some(status)) = child.try_wait() {
        panic!("`{bin} {}` exited while idle: {status}", args.join(" "));
    }
    let got = rss(&child.id().to_string()).expect("reading /proc/<pid>/status");
    // SIGTERM, as an orchestrator would: the process drains and closes its connections.
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let _ = child.wait();
    got
}

fn row(name: &str, r: &Rss) {
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "{name:<38} {:>8.1} {:>8.1} {:>8.1}",
        mib(r.total),
        mib(r.anon),
        mib(r.file)
    );
}

#[tokio::main]
async fn main() {
    let idle = Duration::from_secs(
        std::env::var("IDLE_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(15),
    );
    println!("idle RSS of {} after {} s (MiB)", bin(), idle.as_secs());
    println!("{:<38} {:>8} {:>8} {:>8}", "process", "rss", "anon", "file");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let embedded = measure(
        &bin(),
        &["serve"],
        &[("CONVEYOR__SERVER__PORT".into(), "0".into())],
        dir.path(),
        idle,
    );
    row("serve, embedded", &embedded);

    let Some(stack) = common::Stack::start("idle").await else {
        return;
    };
    let s = &stack.settings;
    let env: Vec<(String, String)> = [
        ("CONVEYOR__BROKER__KIND", "rabbitmq".to_owned()),
        ("CONVEYOR__BROKER__URL", s.broker.url.clone()),
        ("CONVEYOR__BROKER__NAMESPACE", s.broker.namespace.clone()),
        ("CONVEYOR__DEDUPE__KIND", "redis".to_owned()),
        ("CONVEYOR__DEDUPE__URL", s.dedupe.url.clone()),
        ("CONVEYOR__DEDUPE__KEY_PREFIX", s.dedupe.key_prefix.clone()),
        ("CONVEYOR__DATABASE__URL", s.database.url.clone()),
        // Any free port: nothing connects to it.
        ("CONVEYOR__SERVER__PORT", "0".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let served = measure(&bin(), &["serve"], &env, dir.path(), idle);
    row("serve, RabbitMQ + PostgreSQL + Redis", &served);
    let consumer = measure(&bin(), &["consume", "ai"], &env, dir.path(), idle);
    row("consume ai, same services", &consumer);
    let alone = measure(&consumer_bin(), &["ai"], &env, dir.path(), idle);
    row("conveyor-consumer ai, same services", &alone);
    stack.teardown().await;
}
