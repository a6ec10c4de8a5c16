//! Test harness: per-test settings with a unique namespace (queues, Redis keys,
//! database, files), the backends to run against, `spawn_app`, and small helpers.
//!
//! Real-service tests run when RabbitMQ, Redis, MariaDB and PostgreSQL answer on
//! localhost; otherwise they print why they were skipped, unless
//! `CONVEYOR_REQUIRE_SERVICES=1` (CI), where an unreachable service fails the test.
//!
//! Files: [`services`], [`env`], [`app`], [`handler`], [`harness`] (a consumer test's
//! set-up and clean-up), [`proxy`]; [`tasks`] holds the AI tasks' own helpers (free
//! functions: the shared app knows no domain).

mod app;
pub mod direct;
mod env;
mod handler;
mod harness;
pub mod process;
mod proxy;
mod services;
pub mod tasks;
pub mod videos;

pub use app::*;
pub use direct::Direct;
pub use env::*;
pub use handler::*;
pub use harness::*;
pub use proxy::*;
pub use services::*;

/// Generates one `#[tokio::test]` per backend for an `async fn(Backend)`.
#[macro_export]
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use $crate::helpers::Backend;
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn embedded() { super::$name(Backend::Embedded).await }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn rabbitmq_mariadb() { super::$name(Backend::RabbitMariadb).await }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn rabbitmq_postgres() { super::$name(Backend::RabbitPostgres).await }
            }
        )*
    };
}
