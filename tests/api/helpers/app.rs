//! A running API server on a free port, and what every test does with one: URLs,
//! users, stopping, waiting for a condition, draining a queue.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use conveyor::app::{Application, Platform};
use conveyor::broker::settings::BrokerKind;
use tokio_util::sync::CancellationToken;

use super::*;

/// A running API server on a free port.
pub struct TestApp {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    pub platform: Platform,
    pub shutdown: CancellationToken,
    pub server: tokio::task::JoinHandle<anyhow::Result<()>>,
    /// The app's installed consumers and jobs, which `start_consumers` runs.
    workers: conveyor::app::InstalledWorkers,
    /// Consumers started beside the API (RabbitMQ backends): awaited by `stop`, so the
    /// clean-up that follows cannot race a subscription re-declaring its queue.
    consumers: std::sync::Mutex<Vec<tokio::task::JoinHandle<anyhow::Result<()>>>>,
    /// The app's admin key, made on first use.
    admin_key: tokio::sync::OnceCell<String>,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `GET path`, with the operators' token when given.
    async fn get_as_ops(&self, path: &str, ops_token: Option<&str>) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        if let Some(token) = ops_token {
            req = req.bearer_auth(token);
        }
        match req.send().await {
            Ok(r) => r,
            Err(e) if self.server.is_finished() => {
                panic!("GET {path}: the app is not running (see its error above): {e}")
            }
            Err(e) => panic!("GET {path}: {e}"),
        }
    }

    /// `/readyz`: its status and body, with the operators' token when given.
    pub async fn readyz(&self, ops_token: Option<&str>) -> (u16, serde_json::Value) {
        let r = self.get_as_ops("/readyz", ops_token).await;
        let status = r.status().as_u16();
        (status, r.json().await.expect("a JSON readiness body"))
    }

    /// `/metrics` as text (a 200 asserted), with the operators' token when given.
    pub async fn metrics(&self, ops_token: Option<&str>) -> String {
        let r = self.get_as_ops("/metrics", ops_token).await;
        assert_eq!(r.status(), 200, "/metrics");
        r.text().await.expect("metrics text")
    }

    pub async fn stop(self) -> Platform {
        self.shutdown.cancel();
        self.server
            .await
            .expect("server task")
            .expect("server stops cleanly");
        let consumers = std::mem::take(&mut *self.consumers.lock().expect("consumers"));
        for c in consumers {
            let _ = tokio::time::timeout(Duration::from_secs(30), c).await;
        }
        self.platform
    }
}

/// Stops the app and removes what its test created.
pub async fn done(env: TestEnv, app: TestApp) {
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

pub async fn spawn_app(env: &TestEnv) -> TestApp {
    spawn_app_with(env, &[]).await
}

/// An app with every domain of the build plus `extra` (domains of the test suite).
pub async fn spawn_app_with(
    env: &TestEnv,
    extra: &[&'static conveyor::domains::Domain],
) -> TestApp {
    let domains: Vec<_> = conveyor::domains::ALL
        .iter()
        .chain(extra)
        .copied()
        .collect();
    let app = Application::build_with(env.settings.clone(), &domains)
        .await
        .expect("app builds");
    let addr = app.addr();
    let platform = app.platform().clone();
    let workers = app.workers();
    let shutdown = CancellationToken::new();
    let shutdown_of_app = shutdown.clone();
    // An app that stops on its own says why, in the failing test's output.
    let server = tokio::spawn(async move {
        let ran = app.run_until(shutdown_of_app).await;
        if let Err(e) = &ran {
            eprintln!("the app stopped with an error: {e:#}");
        }
        ran
    });
    TestApp {
        addr,
        // A hung request fails its test instead of hanging the suite.
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client"),
        platform,
        shutdown,
        server,
        workers,
        consumers: Default::default(),
        admin_key: Default::default(),
    }
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes.
pub async fn wait_until<F, Fut>(timeout: Duration, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    while !cond().await {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl TestApp {
    /// With RabbitMQ, consumers are separate processes: run them beside the API.
    pub fn start_consumers(&self) {
        if self.platform.settings.broker.kind != BrokerKind::Rabbitmq {
            return; // `serve` already runs them in-process
        }
        // The app's own installation (one set of services per process, as in
        // production: the same in-memory search index, the same stock store).
        let (workers, token) = (self.workers.clone(), self.shutdown.clone());
        let handle = tokio::spawn(async move { workers.run(None, token).await });
        self.consumers.lock().expect("consumers").push(handle);
    }

    /// An admin's key (the same one for the app's life).
    pub async fn admin(&self) -> String {
        self.admin_key
            .get_or_init(|| async {
                conveyor::users::create(&self.platform.db, "root", 0, true)
                    .await
                    .expect("admin")
                    .1
            })
            .await
            .clone()
    }

    /// A user with `credits` and its API key.
    pub async fn user(&self, name: &str, credits: i64) -> (conveyor::users::User, String) {
        conveyor::users::create(&self.platform.db, name, credits, false)
            .await
            .expect("user")
    }

    pub async fn credits(&self, user_id: &str) -> i64 {
        use sea_orm::EntityTrait;
        conveyor::users::entity::user::Entity::find_by_id(user_id.to_owned())
            .one(&self.platform.db)
            .await
            .unwrap()
            .unwrap()
            .credits
    }

    /// GET `path` as the owner of `key`; the JSON answer (any status).
    pub async fn get_json(&self, key: &str, path: &str) -> serde_json::Value {
        self.client
            .get(self.url(path))
            .bearer_auth(key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Waits until `queue` has settled everything it was given (see [`drain`]).
    pub async fn drain(&self, queue: &'static conveyor::broker::QueueSpec) {
        drain(&self.platform, queue).await
    }

    /// [`drain`] of the queue with this key (`webhooks.deliver`): the tests name a queue
    /// by its key, wherever the domain that declares it keeps its spec.
    pub async fn drain_key(&self, key: &str) {
        drain(&self.platform, self.queue_spec(key)).await
    }

    /// The spec of the queue with this key, which the app's topology must know.
    pub fn queue_spec(&self, key: &str) -> &'static conveyor::broker::QueueSpec {
        self.platform
            .broker
            .topology()
            .queue_spec(key)
            .unwrap_or_else(|| panic!("no queue {key} in the topology"))
    }
}

/// Messages of `queue` ready for a consumer, and held back: in its retry tiers or in a
/// delay that lands in it (a parked job's next check, the unpaid-order cancel).
pub async fn waiting_in(
    platform: &Platform,
    queue: &'static conveyor::broker::QueueSpec,
) -> (u64, u64) {
    let resolved = platform.broker.topology().queue(queue);
    let (ready, mut held) = conveyor::broker::waiting(platform.broker.as_ref(), &resolved)
        .await
        .unwrap_or((u64::MAX, 0));
    for delay in conveyor::domains::ALL
        .iter()
        .flat_map(|d| d.delays.iter())
        .filter(|d| d.target.key == queue.key)
    {
        let name = platform.broker.topology().delay(delay).name;
        held += platform.broker.depth(&name).await.unwrap_or(1);
    }
    (ready, held)
}

/// Waits until `queue` has settled everything it was given: nothing waits in the
/// outbox, nothing is ready or parked in a retry tier or a business delay, nothing is being handled (the
/// consumers' in-flight count), three polls in a row (a delivery travelling from the
/// broker to a consumer's buffer is seen by the next poll). What a test asserts
/// afterwards ("granted once", "no second effect") no longer depends on how long it
/// slept.
pub async fn drain(platform: &Platform, queue: &'static conveyor::broker::QueueSpec) {
    settle(platform, queue, true).await
}

/// [`drain`], but what waits in `queue`'s retry tiers and delays may stay there: nothing
/// is in the outbox, ready or being handled, three polls in a row. A message published
/// before a moment (a check a callback would have woken) has been handled by then, while
/// a parked job's next check keeps waiting out its delay.
pub async fn drain_ready(platform: &Platform, queue: &'static conveyor::broker::QueueSpec) {
    settle(platform, queue, false).await
}

async fn settle(platform: &Platform, queue: &'static conveyor::broker::QueueSpec, held: bool) {
    use sea_orm::{ColumnTrait as _, EntityTrait as _, PaginatorTrait as _, QueryFilter as _};
    let start = Instant::now();
    let mut quiet = 0;
    while quiet < 3 {
        let unsent = conveyor::outbox::entity::Entity::find()
            .filter(conveyor::outbox::entity::Column::PublishedAt.is_null())
            .count(&platform.db)
            .await
            .unwrap();
        // Business timers that land in this queue (the unpaid-order cancel) wait too.
        let (ready, mut retrying) = waiting_in(platform, queue).await;
        if !held {
            retrying = 0;
        }
        let busy = platform.tally.in_flight(queue.key);
        quiet = if [unsent, ready, retrying, busy].iter().all(|n| *n == 0) {
            quiet + 1
        } else {
            0
        };
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} never drained: {unsent} unsent, {ready} ready, {retrying} retrying, {busy} in flight",
            queue.key
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
