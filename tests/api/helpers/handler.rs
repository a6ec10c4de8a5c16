//! A test handler whose behaviour comes from its payload, and a consumer of it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use conveyor::app::Platform;
use conveyor::broker::{Envelope, QueueSpec};
use conveyor::consumer::{Context, Handler, HandlerError};
use conveyor::domains::{Domain, Installed};
use futures::FutureExt as _;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The delivery-core tests' queue: no business handler behind it, so what a test sees is
/// the runtime's doing (prefetch as `ai.short`'s, 5 attempts, the test tiers).
pub const WORK: QueueSpec =
    QueueSpec::new("core.work", "core", "the delivery-core tests' queue").prefetch(128);

/// The domain that declares [`WORK`] on every test platform ([`super::TestEnv::platform`]);
/// tests run their own consumers of it ([`start_consumer`]).
pub static CORE: Domain = Domain::new("core", "core", &[&WORK], |_| {
    async { Ok(Installed::default()) }.boxed()
});

/// Records what a [`TestHandler`] did.
#[derive(Default)]
pub struct Recorder {
    /// Successful effects per message id.
    pub effects: Mutex<HashMap<String, u32>>,
    /// Handler invocations (successful or not).
    pub calls: AtomicU32,
    /// Attempt number seen on each successful message.
    pub attempts: Mutex<HashMap<String, u32>>,
    pub started: Notify,
    /// While set, messages with `fail_while_broken` fail permanently (a dependency
    /// that is down until an operator fixes it).
    pub broken: std::sync::atomic::AtomicBool,
}

impl Recorder {
    pub fn effects_of(&self, id: &str) -> u32 {
        self.effects.lock().unwrap().get(id).copied().unwrap_or(0)
    }
    pub fn total_effects(&self) -> u32 {
        self.effects.lock().unwrap().values().sum()
    }
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

/// A handler whose behaviour comes from the payload:
/// `fail_until_attempt` (transient before that attempt), `permanent`, `panic_until_attempt`,
/// `sleep_ms`, `fail_while_broken` (permanent while [`Recorder::broken`]).
pub struct TestHandler(pub Arc<Recorder>);

#[async_trait]
impl Handler for TestHandler {
    async fn handle(&self, _ctx: &Context, msg: &Envelope) -> Result<(), HandlerError> {
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        self.0.started.notify_waiters();
        let p = &msg.payload;
        let num = |k: &str| p.get(k).and_then(|v| v.as_u64());
        if let Some(ms) = num("sleep_ms") {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if p.get("fail_while_broken").and_then(|v| v.as_bool()) == Some(true)
            && self.0.broken.load(Ordering::SeqCst)
        {
            return Err(HandlerError::permanent("the dependency is broken"));
        }
        if p.get("permanent").and_then(|v| v.as_bool()) == Some(true) {
            return Err(HandlerError::permanent("this can never work"));
        }
        if num("panic_until_attempt").is_some_and(|n| u64::from(msg.attempt) < n) {
            panic!("handler blew up");
        }
        if num("fail_until_attempt").is_some_and(|n| u64::from(msg.attempt) < n) {
            return Err(HandlerError::transient(format!(
                "flaky dependency (attempt {})",
                msg.attempt
            )));
        }
        *self
            .0
            .effects
            .lock()
            .unwrap()
            .entry(msg.id.clone())
            .or_default() += 1;
        self.0
            .attempts
            .lock()
            .unwrap()
            .insert(msg.id.clone(), msg.attempt);
        Ok(())
    }
}

/// Runs a [`TestHandler`] consumer on [`WORK`]; cancel the token to stop it.
pub fn start_consumer(
    platform: &Platform,
    rec: &Arc<Recorder>,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<anyhow::Result<()>>,
) {
    let c = super::consume(platform, &WORK, Arc::new(TestHandler(rec.clone())));
    (c.token, c.handle)
}
