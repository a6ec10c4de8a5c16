//! The delivery core's behavioural suite: the same tests against the embedded broker
//! and dedupe store and against RabbitMQ + Redis.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::helpers::WORK;
use conveyor::broker::{BrokerError, Envelope, Outgoing, Target, Topology};
use conveyor::consumer::{
    self, BatchHandler, Context, HandlerError, Outcome, process_batch, process_one,
};
use conveyor::dead_letters;
use conveyor::domains::ai_tasks::queues::AI_LONG;
use serde_json::json;

use crate::helpers::{Backend, Harness, Recorder, TestEnv, TestHandler, consume, wait_until};
use crate::on_every_backend;

const WAIT: Duration = Duration::from_secs(20);

on_every_backend!(
    publishes_consumes_and_acks,
    transient_failure_is_retried_after_its_tier_delay,
    exhausted_attempts_dead_letter_with_history,
    malformed_message_goes_straight_to_the_dlq,
    permanent_error_skips_retries,
    handler_panic_counts_as_transient,
    unroutable_publish_is_an_error,
    unsettled_message_is_redelivered_and_takes_effect_once,
    same_message_id_takes_effect_once,
    graceful_shutdown_finishes_in_flight_work,
    unfinished_work_is_handed_back_at_shutdown,
    redeclaring_the_topology_is_harmless,
    a_batch_settles_each_message_on_its_own,
    a_running_handler_keeps_its_claim_and_a_dead_ones_claim_lapses,
    a_message_that_keeps_killing_its_consumer_is_quarantined,
);

async fn publish(platform: &conveyor::app::Platform, payload: serde_json::Value) -> Envelope {
    let env = Envelope::new("test.work", payload);
    platform
        .broker
        .publish(Target::Queue(&WORK), &env)
        .await
        .expect("publish");
    env
}

async fn dlq_depth(platform: &conveyor::app::Platform) -> u64 {
    let dlq = platform.broker.topology().queue(&WORK).dlq;
    platform.broker.depth(&dlq).await.expect("dlq depth")
}

async fn publishes_consumes_and_acks(backend: Backend) {
    let Some(h) = Harness::new(backend, "publishes_consumes_and_acks").await else {
        return;
    };
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(publish(platform, json!({ "n": i })).await.id);
    }
    wait_until(WAIT, "20 effects", || async { rec.total_effects() == 20 }).await;
    for id in &ids {
        assert_eq!(rec.effects_of(id), 1);
    }
    let work = platform.broker.topology().queue(&WORK).name;
    wait_until(WAIT, "empty work queue", || async {
        platform.broker.depth(&work).await.unwrap() == 0
    })
    .await;
    consumer.stop().await;
    assert_eq!(dlq_depth(platform).await, 0);
    h.finish().await;
}

async fn transient_failure_is_retried_after_its_tier_delay(backend: Backend) {
    let Some(h) = Harness::new(backend, "transient_failure_is_retried").await else {
        return;
    };
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    let started = Instant::now();
    let msg = publish(platform, json!({ "fail_until_attempt": 2 })).await;
    wait_until(WAIT, "the retried effect", || async {
        rec.effects_of(&msg.id) == 1
    })
    .await;
    // Tiers in config/test.toml: 50 ms then 100 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "retries waited their tiers: {:?}",
        started.elapsed()
    );
    assert_eq!(rec.calls(), 3);
    assert_eq!(rec.attempts.lock().unwrap()[&msg.id], 2);
    // Settled: a duplicate delivery would have been handled by now.
    crate::helpers::drain(platform, &WORK).await;
    assert_eq!(rec.effects_of(&msg.id), 1, "no duplicate after success");
    consumer.stop().await;
    h.finish().await;
}

async fn exhausted_attempts_dead_letter_with_history(backend: Backend) {
    let Some(h) = Harness::configured(backend, "exhausted_attempts_dead_letter", |env| {
        env.set_max_attempts("core.work", 3);
    })
    .await
    else {
        return;
    };
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    let msg = publish(platform, json!({ "fail_until_attempt": 99 })).await;
    wait_until(WAIT, "a dead letter", || async {
        dlq_depth(platform).await == 1
    })
    .await;
    let dead = dead_letters::list(&platform.db, Some("core.work"), 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    let d = &dead[0];
    assert_eq!(d.message_id, msg.id);
    assert_eq!(d.reason, "exhausted");
    assert_eq!(d.attempts, 3);
    assert!(d.last_error.contains("flaky dependency"));
    let history: Vec<serde_json::Value> = serde_json::from_str(&d.history).unwrap();
    assert_eq!(history.len(), 3, "one failure per attempt: {history:?}");
    assert_eq!(rec.calls(), 3);
    assert_eq!(rec.effects_of(&msg.id), 0);
    consumer.stop().await;
    h.finish().await;
}

async fn malformed_message_goes_straight_to_the_dlq(backend: Backend) {
    let Some(h) = Harness::new(backend, "malformed_message").await else {
        return;
    };
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    let raw = Outgoing {
        target: Target::Queue(&WORK),
        message_id: "raw".into(),
        body: b"{not an envelope".to_vec(),
        traceparent: None,
    };
    platform.broker.publish_batch(&[raw]).await.unwrap();
    wait_until(WAIT, "a dead letter", || async {
        dlq_depth(platform).await == 1
    })
    .await;
    let dead = dead_letters::list(&platform.db, Some("core.work"), 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].reason, "malformed");
    assert!(
        dead[0].last_error.contains("not a valid envelope"),
        "{}",
        dead[0].last_error
    );
    assert_eq!(dead[0].body, "{not an envelope");
    assert_eq!(rec.calls(), 0, "the handler never saw it");
    consumer.stop().await;
    h.finish().await;
}

async fn permanent_error_skips_retries(backend: Backend) {
    let Some(h) = Harness::new(backend, "permanent_error").await else {
        return;
    };
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    let msg = publish(platform, json!({ "permanent": true })).await;
    wait_until(WAIT, "a dead letter", || async {
        dlq_depth(platform).await == 1
    })
    .await;
    let dead = dead_letters::list(&platform.db, Some("core.work"), 10)
        .await
        .unwrap();
    assert_eq!(dead[0].message_id, msg.id);
    assert_eq!(dead[0].reason, "permanent");
    assert_eq!(dead[0].attempts, 1);
    // Settled: a retry would have been handled by now.
    crate::helpers::drain(platform, &WORK).await;
    assert_eq!(rec.calls(), 1, "no retry");
    consumer.stop().await;
    h.finish().await;
}

async fn handler_panic_counts_as_transient(backend: Backend) {
    let Some(h) = Harness::new(backend, "handler_panic").await else {
        return;
    };
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    let msg = publish(platform, json!({ "panic_until_attempt": 1 })).await;
    wait_until(WAIT, "the effect after a panic", || async {
        rec.effects_of(&msg.id) == 1
    })
    .await;
    assert_eq!(rec.attempts.lock().unwrap()[&msg.id], 1);
    assert_eq!(dlq_depth(platform).await, 0);
    consumer.stop().await;
    h.finish().await;
}

async fn unroutable_publish_is_an_error(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "unroutable_publish").await else {
        return;
    };
    // Declare only core.work: nothing is bound for ai.long.
    let topology = Topology::declaring_only(
        &env.settings.broker,
        &env.settings.queues,
        conveyor::domains::ai_tasks::queues::QUEUES,
        &[],
        &[&WORK],
    );
    let broker = conveyor::broker::connect(&env.settings.broker, topology)
        .await
        .unwrap();
    broker.declare().await.unwrap();
    let err = broker
        .publish(Target::Queue(&AI_LONG), &Envelope::new("k", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(err, BrokerError::Unroutable { .. }), "{err:?}");
    // The routable queue still works on the same connection.
    broker
        .publish(Target::Queue(&WORK), &Envelope::new("k", json!({})))
        .await
        .unwrap();
    let _ = broker.teardown().await;
    broker.close().await;
    env.cleanup(None).await;
}

async fn unsettled_message_is_redelivered_and_takes_effect_once(backend: Backend) {
    let Some(h) = Harness::new(backend, "unsettled_message_redelivered").await else {
        return;
    };
    let first = &h.platform;
    let msg = publish(first, json!({})).await;
    let mut sub = first.broker.subscribe(&WORK).await.unwrap();
    let delivery = tokio::time::timeout(WAIT, sub.next())
        .await
        .unwrap()
        .unwrap();
    assert!(!delivery.redelivered);
    // The consumer "dies": its connection goes away with the message unacked.
    first.broker.close().await;
    drop(delivery);
    drop(sub);

    let second = h.env.platform().await;
    let rec = Arc::new(Recorder::default());
    let consumer = consume(&second, &WORK, Arc::new(TestHandler(rec.clone())));
    wait_until(WAIT, "the redelivered effect", || async {
        rec.effects_of(&msg.id) == 1
    })
    .await;
    // Settled: a second effect of the redelivery would show now.
    crate::helpers::drain(&second, &WORK).await;
    assert_eq!(rec.effects_of(&msg.id), 1);
    consumer.stop().await;
    h.env.cleanup(Some(&second)).await;
}

async fn same_message_id_takes_effect_once(backend: Backend) {
    let Some(h) = Harness::new(backend, "same_message_id_once").await else {
        return;
    };
    let platform = &h.platform;
    let deps = platform.consumer_deps();
    let rec = Arc::new(Recorder::default());
    let handler = TestHandler(rec.clone());
    let msg = Envelope::new("test.work", json!({}));
    for _ in 0..2 {
        platform
            .broker
            .publish(Target::Queue(&WORK), &msg)
            .await
            .unwrap();
    }
    let mut sub = platform.broker.subscribe(&WORK).await.unwrap();
    let d = tokio::time::timeout(WAIT, sub.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(process_one(&deps, &handler, d).await, Outcome::Acked);
    let d = tokio::time::timeout(WAIT, sub.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(process_one(&deps, &handler, d).await, Outcome::Duplicate);

    // Redis lost the key (eviction, failover): the database fence still knows.
    platform.dedupe.forget(&msg.id).await.unwrap();
    platform
        .broker
        .publish(Target::Queue(&WORK), &msg)
        .await
        .unwrap();
    let d = tokio::time::timeout(WAIT, sub.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(process_one(&deps, &handler, d).await, Outcome::Duplicate);

    assert_eq!(rec.effects_of(&msg.id), 1);
    assert_eq!(rec.calls(), 1);
    sub.cancel().await;
    h.finish().await;
}

async fn graceful_shutdown_finishes_in_flight_work(backend: Backend) {
    let Some(h) = Harness::new(backend, "graceful_shutdown_finishes").await else {
        return;
    };
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(publish(platform, json!({ "sleep_ms": 400 })).await.id);
    }
    wait_until(WAIT, "three handlers running", || async {
        rec.calls() == 3
    })
    .await;
    consumer.token.cancel();
    tokio::time::timeout(Duration::from_secs(10), consumer.handle)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    for id in &ids {
        assert_eq!(rec.effects_of(id), 1, "in-flight work finished before exit");
    }
    let work = platform.broker.topology().queue(&WORK).name;
    // Nothing handed back: a new consumer finds no work.
    let (rec2, consumer2) = h.record();
    // The new consumer has had its chance at the queue.
    crate::helpers::drain(platform, &WORK).await;
    assert_eq!(rec2.calls(), 0);
    assert_eq!(platform.broker.depth(&work).await.unwrap(), 0);
    consumer2.stop().await;
    h.finish().await;
}

async fn unfinished_work_is_handed_back_at_shutdown(backend: Backend) {
    let Some(h) = Harness::configured(backend, "unfinished_work_handed_back", |env| {
        env.settings.consumer.shutdown_grace_ms = 100;
    })
    .await
    else {
        return;
    };
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    let slow = publish(platform, json!({ "sleep_ms": 5000 })).await;
    wait_until(WAIT, "the slow handler running", || async {
        rec.calls() == 1
    })
    .await;
    consumer.token.cancel();
    tokio::time::timeout(Duration::from_secs(5), consumer.handle)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(rec.effects_of(&slow.id), 0);

    // The message went back to the queue: another consumer finishes it.
    let rec2 = Arc::new(Recorder::default());
    let other = if backend.is_real() {
        h.env.platform().await
    } else {
        platform.clone()
    };
    let consumer2 = consume(&other, &WORK, Arc::new(FastForward(rec2.clone())));
    wait_until(WAIT, "the handed-back message", || async {
        rec2.effects_of(&slow.id) == 1
    })
    .await;
    consumer2.stop().await;
    if backend.is_real() {
        other.broker.close().await;
    }
    h.finish().await;
}

/// Like TestHandler, but ignores `sleep_ms`.
struct FastForward(Arc<Recorder>);

#[async_trait::async_trait]
impl conveyor::consumer::Handler for FastForward {
    async fn handle(
        &self,
        _: &conveyor::consumer::Context,
        msg: &Envelope,
    ) -> Result<(), conveyor::consumer::HandlerError> {
        *self
            .0
            .effects
            .lock()
            .unwrap()
            .entry(msg.id.clone())
            .or_default() += 1;
        Ok(())
    }
}

async fn redeclaring_the_topology_is_harmless(backend: Backend) {
    let Some(h) = Harness::new(backend, "redeclaring_is_harmless").await else {
        return;
    };
    let platform = &h.platform;
    let msg = publish(platform, json!({})).await;
    platform.broker.declare().await.unwrap();
    platform.broker.declare().await.unwrap();
    if backend.is_real() {
        // A second process declaring the same namespace is harmless too (the embedded
        // broker's file admits one process only).
        let again = h.env.platform().await;
        again.broker.close().await;
    }
    let work = platform.broker.topology().queue(&WORK).name;
    assert_eq!(
        platform.broker.depth(&work).await.unwrap(),
        1,
        "declaring kept the queued message"
    );
    let (rec, consumer) = h.record();
    wait_until(WAIT, "the effect", || async {
        rec.effects_of(&msg.id) == 1
    })
    .await;
    consumer.stop().await;
    h.finish().await;
}

/// A batch handler that answers what each message's payload asks for, and records the
/// batches it was given.
#[derive(Default)]
struct Scripted {
    batches: std::sync::Mutex<Vec<Vec<String>>>,
}

#[async_trait::async_trait]
impl BatchHandler for Scripted {
    async fn handle_batch(
        &self,
        _ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        self.batches
            .lock()
            .unwrap()
            .push(messages.iter().map(|m| m.id.clone()).collect());
        messages
            .iter()
            .map(|m| match m.payload["do"].as_str() {
                Some("transient") => Err(HandlerError::transient("busy")),
                Some("permanent") => Err(HandlerError::permanent("never")),
                _ => Ok(()),
            })
            .collect()
    }
}

/// One handler call for the admitted messages of a batch; each settled from its own
/// result (acked, retried, dead-lettered), a malformed one dead-lettered without reaching
/// the handler, and a batch of duplicates acked without calling it at all.
async fn a_batch_settles_each_message_on_its_own(backend: Backend) {
    let Some(h) = Harness::new(backend, "batch_settles_each").await else {
        return;
    };
    let platform = &h.platform;
    let deps = platform.consumer_deps();
    let ok1 = publish(platform, json!({ "do": "ok" })).await;
    let ok2 = publish(platform, json!({ "do": "ok" })).await;
    let busy = publish(platform, json!({ "do": "transient" })).await;
    let never = publish(platform, json!({ "do": "permanent" })).await;
    platform
        .broker
        .publish_batch(&[Outgoing {
            target: Target::Queue(&WORK),
            message_id: "junk".into(),
            body: b"not an envelope".to_vec(),
            traceparent: None,
        }])
        .await
        .unwrap();
    let mut sub = platform.broker.subscribe(&WORK).await.unwrap();
    let mut batch = Vec::new();
    while batch.len() < 5 {
        batch.push(
            tokio::time::timeout(WAIT, sub.next())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    let handler = Scripted::default();
    let outcomes = process_batch(&deps, &handler, batch).await;
    let calls = handler.batches.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "one call for the batch");
    assert_eq!(
        calls[0],
        [
            ok1.id.clone(),
            ok2.id.clone(),
            busy.id.clone(),
            never.id.clone()
        ],
        "the malformed message never reaches the handler"
    );
    assert_eq!(
        outcomes,
        [
            Outcome::Acked,
            Outcome::Acked,
            Outcome::Retried { attempt: 1 },
            Outcome::DeadLettered(conveyor::broker::DeadReason::Permanent),
            Outcome::DeadLettered(conveyor::broker::DeadReason::Malformed),
        ]
    );
    // The retried one comes back alone after its tier; the acked ones are duplicates now.
    for env in [&ok1, &ok2] {
        platform
            .broker
            .publish(Target::Queue(&WORK), env)
            .await
            .unwrap();
    }
    let mut again = Vec::new();
    while again.len() < 3 {
        again.push(
            tokio::time::timeout(WAIT, sub.next())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    let outcomes = process_batch(&deps, &handler, again).await;
    let retried = outcomes
        .iter()
        .filter(|o| **o == Outcome::Retried { attempt: 2 })
        .count();
    let dupes = outcomes
        .iter()
        .filter(|o| **o == Outcome::Duplicate)
        .count();
    assert_eq!((retried, dupes), (1, 2), "{outcomes:?}");
    assert_eq!(
        handler.batches.lock().unwrap()[1],
        std::slice::from_ref(&busy.id),
        "only the retry ran"
    );
    let dead = dead_letters::list(&platform.db, Some("core.work"), 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 2, "{dead:?}");
    sub.cancel().await;
    h.finish().await;
}

/// Sleeps, then succeeds.
struct Slow(Duration);

#[async_trait::async_trait]
impl consumer::Handler for Slow {
    async fn handle(&self, _ctx: &Context, _msg: &Envelope) -> Result<(), HandlerError> {
        tokio::time::sleep(self.0).await;
        Ok(())
    }
}

/// Claims are short and renewed while their handler runs: a handler four leases long
/// keeps its message to itself, while the claim of a consumer that died (never renewed)
/// lapses within one lease, so the message can run again in seconds, not minutes.
async fn a_running_handler_keeps_its_claim_and_a_dead_ones_claim_lapses(backend: Backend) {
    let Some(h) = Harness::configured(backend, "claims_renewed", |env| {
        env.settings.dedupe.lease_ms = 300;
    })
    .await
    else {
        return;
    };
    let platform = &h.platform;
    let deps = platform.consumer_deps();
    let lease = deps.lease;
    let msg = publish(platform, json!({})).await;
    let mut sub = platform.broker.subscribe(&WORK).await.unwrap();
    let d = tokio::time::timeout(WAIT, sub.next())
        .await
        .unwrap()
        .unwrap();
    let running = {
        let deps = deps.clone();
        tokio::spawn(async move { process_one(&deps, &Slow(Duration::from_millis(1200)), d).await })
    };
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (claim, _) = platform.dedupe.claim(&msg.id, lease).await.unwrap();
        assert_eq!(
            claim,
            conveyor::dedupe::Claim::InProgress,
            "renewed while the handler runs"
        );
    }
    assert_eq!(running.await.unwrap(), Outcome::Acked);
    let (claim, _) = platform.dedupe.claim(&msg.id, lease).await.unwrap();
    assert_eq!(claim, conveyor::dedupe::Claim::Done);

    // A consumer that claimed and died: nobody renews, the claim lapses within a lease.
    let orphan = "claimed-by-a-dead-consumer";
    let (first, _) = platform.dedupe.claim(orphan, lease).await.unwrap();
    assert_eq!(first, conveyor::dedupe::Claim::Acquired);
    let (again, _) = platform.dedupe.claim(orphan, lease).await.unwrap();
    assert_eq!(again, conveyor::dedupe::Claim::InProgress);
    // Polled (a claim that finds it held does not extend it) until it lapses: within a
    // lease, three allowed for a busy machine.
    let lapsing = Instant::now();
    let after = loop {
        let (claim, _) = platform.dedupe.claim(orphan, lease).await.unwrap();
        if claim != conveyor::dedupe::Claim::InProgress || lapsing.elapsed() > lease * 3 {
            break claim;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        after,
        conveyor::dedupe::Claim::Acquired,
        "lapsed after one lease"
    );
    sub.cancel().await;
    h.finish().await;
}

/// Says it started, then never ends.
struct Hang(tokio::sync::mpsc::UnboundedSender<()>);

#[async_trait::async_trait]
impl consumer::Handler for Hang {
    async fn handle(&self, _ctx: &Context, _msg: &Envelope) -> Result<(), HandlerError> {
        let _ = self.0.send(());
        std::future::pending().await
    }
}

/// A message whose consumer dies while handling it (here: the handling task is aborted
/// mid-handler, the delivery dropped unsettled, as a killed process leaves it) comes back
/// marked redelivered; at `consumer.crash_loop_after` such returns it is dead-lettered
/// with reason `crash_loop` instead of being handed to a consumer again, and healthy
/// messages keep flowing.
async fn a_message_that_keeps_killing_its_consumer_is_quarantined(backend: Backend) {
    let Some(h) = Harness::configured(backend, "crash_loop", |env| {
        env.settings.consumer.crash_loop_after = 3;
        env.settings.dedupe.lease_ms = 150;
    })
    .await
    else {
        return;
    };
    let platform = &h.platform;
    let deps = platform.consumer_deps();
    let poison = publish(platform, json!({ "poison": true })).await;
    let mut sub = platform.broker.subscribe(&WORK).await.unwrap();
    let mut outcomes = Vec::new();
    let mut deliveries = 0;
    loop {
        let d = tokio::time::timeout(WAIT, sub.next())
            .await
            .unwrap()
            .unwrap();
        deliveries += 1;
        assert!(deliveries < 60, "never quarantined: {outcomes:?}");
        let (started, mut running) = tokio::sync::mpsc::unbounded_channel();
        let task = {
            let deps = deps.clone();
            tokio::spawn(async move { process_one(&deps, &Hang(started), d).await })
        };
        // Kill it only once the handler runs (a process dies at any point, but an abort
        // in the middle of a settle would leave the delivery unacked on a live channel,
        // which no real crash does: the channel closes with the process).
        let ran = tokio::select! {
            r = running.recv() => r.is_some(),
            _ = tokio::time::sleep(Duration::from_secs(5)) => false,
        };
        if ran {
            // The consumer "dies" holding the message.
            task.abort();
            let _ = task.await;
            outcomes.push(Outcome::Unsettled("killed".into()));
        } else {
            let outcome = task.await.unwrap();
            let done = outcome == Outcome::DeadLettered(conveyor::broker::DeadReason::CrashLoop);
            outcomes.push(outcome);
            if done {
                break;
            }
        }
    }
    let killed = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Unsettled(_)))
        .count();
    assert_eq!(killed, 3, "three deaths, then quarantined: {outcomes:?}");
    let dead = dead_letters::list(&platform.db, Some("core.work"), 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].reason, "crash_loop");
    assert_eq!(dead[0].message_id, poison.id);
    // Healthy traffic is not held up by it.
    let healthy = publish(platform, json!({})).await;
    let d = tokio::time::timeout(WAIT, sub.next())
        .await
        .unwrap()
        .unwrap();
    let handler = TestHandler(Arc::new(Recorder::default()));
    assert_eq!(process_one(&deps, &handler, d).await, Outcome::Acked);
    assert_eq!(handler.0.effects_of(&healthy.id), 1);
    sub.cancel().await;
    h.finish().await;
}
