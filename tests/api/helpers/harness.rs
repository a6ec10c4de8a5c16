//! What a consumer test starts from and ends with: its own settings (a namespace of its
//! own), a platform connected on them (broker, dedupe store and database, every queue
//! of the build and [`WORK`] declared), consumers of a handler with their shutdown
//! token, and the clean-up.

use std::sync::Arc;

use conveyor::app::Platform;
use conveyor::broker::QueueSpec;
use conveyor::consumer::Handler;
use tokio_util::sync::CancellationToken;

use super::*;

/// A test's settings and the platform connected on them.
pub struct Harness {
    pub env: TestEnv,
    pub platform: Platform,
}

impl Harness {
    /// `None` when the backend's services are unreachable (and not required).
    pub async fn new(backend: Backend, test: &str) -> Option<Harness> {
        Harness::configured(backend, test, |_| {}).await
    }

    /// [`Harness::new`], the settings changed by `configure` before the platform
    /// connects.
    pub async fn configured(
        backend: Backend,
        test: &str,
        configure: impl FnOnce(&mut TestEnv),
    ) -> Option<Harness> {
        let mut env = TestEnv::new(backend, test).await?;
        configure(&mut env);
        let platform = env.platform().await;
        Some(Harness { env, platform })
    }

    /// A [`TestHandler`] consuming [`WORK`] into a new [`Recorder`].
    pub fn record(&self) -> (Arc<Recorder>, Consumer) {
        let rec = Arc::new(Recorder::default());
        let consumer = consume(&self.platform, &WORK, Arc::new(TestHandler(rec.clone())));
        (rec, consumer)
    }

    /// `handler` consuming `queue` until [`Consumer::stop`].
    pub fn consume(&self, queue: &'static QueueSpec, handler: Arc<dyn Handler>) -> Consumer {
        consume(&self.platform, queue, handler)
    }

    /// Removes what the test created: queues and exchanges, Redis keys, the database.
    pub async fn finish(self) {
        self.env.cleanup(Some(&self.platform)).await;
    }
}

/// `handler` consuming `queue` on `platform` until [`Consumer::stop`].
pub fn consume(
    platform: &Platform,
    queue: &'static QueueSpec,
    handler: Arc<dyn Handler>,
) -> Consumer {
    let token = CancellationToken::new();
    let handle = tokio::spawn(conveyor::consumer::run(
        platform.consumer_deps(),
        queue,
        handler,
        token.clone(),
    ));
    Consumer { token, handle }
}

/// A running consumer: cancel its token to stop it, its task ends when it has.
pub struct Consumer {
    pub token: CancellationToken,
    pub handle: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Consumer {
    /// Stops it and checks that it ended cleanly.
    pub async fn stop(self) {
        self.token.cancel();
        self.handle
            .await
            .expect("the consumer's task")
            .expect("the consumer ends cleanly");
    }
}
