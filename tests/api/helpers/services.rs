//! The services a backend needs (RabbitMQ, Redis, MariaDB, PostgreSQL, OpenSearch) and
//! whether they answer.

use std::time::Duration;

pub fn amqp_url() -> String {
    std::env::var("CONVEYOR_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}
pub fn redis_url() -> String {
    std::env::var("CONVEYOR_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into())
}
pub fn mysql_admin_url() -> String {
    std::env::var("CONVEYOR_TEST_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into())
}
pub fn postgres_admin_url() -> String {
    std::env::var("CONVEYOR_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// Which implementations a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded broker, embedded dedupe, SQLite.
    Embedded,
    /// RabbitMQ, Redis, MariaDB.
    RabbitMariadb,
    /// RabbitMQ, Redis, PostgreSQL.
    RabbitPostgres,
}

impl Backend {
    pub fn is_real(self) -> bool {
        self != Backend::Embedded
    }
}

pub fn required() -> bool {
    std::env::var("CONVEYOR_REQUIRE_SERVICES").is_ok_and(|v| v == "1")
}

async fn reachable(addr: &str) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(addr)).await,
        Ok(Ok(_))
    )
}

/// Whether the services `backend` needs answer. Panics (fails the test) when they don't
/// and CONVEYOR_REQUIRE_SERVICES=1; otherwise prints the reason to skip.
pub async fn services_up(backend: Backend, test: &str) -> bool {
    let needed: &[(&str, &str)] = match backend {
        Backend::Embedded => &[],
        Backend::RabbitMariadb => &[
            ("RabbitMQ", "127.0.0.1:5672"),
            ("Redis", "127.0.0.1:6379"),
            ("MariaDB", "127.0.0.1:3306"),
        ],
        Backend::RabbitPostgres => &[
            ("RabbitMQ", "127.0.0.1:5672"),
            ("Redis", "127.0.0.1:6379"),
            ("PostgreSQL", "127.0.0.1:5432"),
        ],
    };
    for (name, addr) in needed {
        if !reachable(addr).await {
            assert!(
                !required(),
                "{test}: {name} at {addr} is unreachable and CONVEYOR_REQUIRE_SERVICES=1"
            );
            // Written past the test harness's capture, so a skip is always visible.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test} [{backend:?}]: {name} at {addr} is unreachable"
            );
            return false;
        }
    }
    true
}

/// The OpenSearch node (tools/opensearch-node): its URL, or `None` to skip (a failure
/// when CONVEYOR_REQUIRE_SERVICES=1).
pub async fn opensearch(test: &str) -> Option<String> {
    let addr = "127.0.0.1:9200";
    if reachable(addr).await {
        return Some(format!("http://{addr}"));
    }
    assert!(
        !required(),
        "{test}: OpenSearch at {addr} is unreachable and CONVEYOR_REQUIRE_SERVICES=1 (tools/opensearch-node/start.sh)"
    );
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: OpenSearch at {addr} is unreachable"
    );
    None
}

/// The S3-compatible server (tools/seaweedfs): its endpoint, or `None` to skip (a
/// failure when CONVEYOR_REQUIRE_SERVICES=1).
pub async fn s3(test: &str) -> Option<String> {
    let addr = std::env::var("CONVEYOR_TEST_S3_ADDR").unwrap_or_else(|_| "127.0.0.1:8333".into());
    if reachable(&addr).await {
        return Some(format!("http://{addr}"));
    }
    assert!(
        !required(),
        "{test}: the S3 server at {addr} is unreachable and CONVEYOR_REQUIRE_SERVICES=1 (tools/seaweedfs/start.sh)"
    );
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: the S3 server at {addr} is unreachable"
    );
    None
}

/// The Jaeger (tools/jaeger): (its OTLP/HTTP base URL, its query API), or `None` to skip
/// (a failure when CONVEYOR_REQUIRE_SERVICES=1).
pub async fn jaeger(test: &str) -> Option<(String, String)> {
    let (otlp, query) = ("127.0.0.1:4318", "127.0.0.1:16686");
    if reachable(otlp).await && reachable(query).await {
        return Some((format!("http://{otlp}"), format!("http://{query}")));
    }
    assert!(
        !required(),
        "{test}: Jaeger at {otlp}/{query} is unreachable and CONVEYOR_REQUIRE_SERVICES=1 (tools/jaeger/start.sh)"
    );
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: Jaeger at {otlp}/{query} is unreachable"
    );
    None
}
