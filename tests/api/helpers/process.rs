//! The `conveyor` binaries as child processes: a command with the test configuration,
//! a free port, a child killed if its test fails, SIGTERM, waiting for exit and for
//! readiness.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_conveyor");
pub const CONSUMER_BIN: &str = env!("CARGO_BIN_EXE_conveyor-consumer");

pub fn command(bin: &str, dir: &std::path::Path) -> Command {
    let mut c = Command::new(bin);
    c.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("CONVEYOR_ENV", "test")
        .env(
            "CONVEYOR_CONFIG_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config"),
        )
        .env("RUST_LOG", "info");
    c
}

/// Points a child at the test's RabbitMQ namespace, Redis prefix and database.
pub fn on_services<'a>(cmd: &'a mut Command, env: &super::TestEnv) -> &'a mut Command {
    cmd.env("CONVEYOR__BROKER__KIND", "rabbitmq")
        .env("CONVEYOR__BROKER__URL", &env.settings.broker.url)
        .env(
            "CONVEYOR__BROKER__NAMESPACE",
            &env.settings.broker.namespace,
        )
        .env("CONVEYOR__DEDUPE__KIND", "redis")
        .env("CONVEYOR__DEDUPE__URL", &env.settings.dedupe.url)
        .env(
            "CONVEYOR__DEDUPE__KEY_PREFIX",
            &env.settings.dedupe.key_prefix,
        )
        .env("CONVEYOR__DATABASE__URL", &env.settings.database.url)
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A spawned process that is killed if the test fails before it exits, so a failed
/// run leaves no server behind (holding ports and the test's output pipes).
pub struct Running(pub Child);

impl std::ops::Deref for Running {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

pub fn sigterm(child: &Child) {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Waits for exit; fails if it takes longer than `limit`.
pub fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("process did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub async fn wait_ready(port: u16) {
    let client = reqwest::Client::new();
    let start = Instant::now();
    loop {
        if let Ok(r) = client
            .get(format!("http://127.0.0.1:{port}/readyz"))
            .send()
            .await
            && r.status() == 200
        {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "server never became ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates a user with the CLI in `dir` (its embedded database); the new API key.
pub fn cli_user(dir: &std::path::Path, name: &str, credits: i64) -> String {
    let out = command(BIN, dir)
        .args([
            "users",
            "create",
            "--name",
            name,
            "--credits",
            &credits.to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .split_whitespace()
        .find(|w| w.starts_with("cvk_"))
        .unwrap_or_else(|| panic!("no key in {stdout}"))
        .to_owned()
}
