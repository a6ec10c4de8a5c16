//! Batch handlers in the delivery core, on every backend: a failure of the whole call
//! (a panic) fails only the message at fault, and a batch whose processing stops
//! before its commit or after it (the process killed, the connection gone) loses
//! nothing and doubles nothing, with the fence rows written in the handler's own
//! transaction.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use conveyor::broker::{Envelope, Subscription, Target};
use conveyor::consumer::{
    Answers, BatchHandler, Context, HandlerError, Outcome, fence, process_batch,
};
use conveyor::domains::ai_tasks::queues::AI_SHORT;
use sea_orm::sea_query::{Alias, Expr, ExprTrait as _, Query};
use sea_orm::{ConnectionTrait, TransactionTrait};
use serde_json::json;

use crate::helpers::{Backend, Harness};
use crate::on_every_backend;

const WAIT: Duration = Duration::from_secs(20);

on_every_backend!(
    a_panic_in_a_batch_fails_only_its_message,
    a_batch_stopped_before_its_commit_runs_again_once,
    a_batch_stopped_after_its_commit_is_not_run_again,
    a_batch_acks_each_message_as_soon_as_it_is_answered,
);

async fn publish_n(
    platform: &conveyor::app::Platform,
    payloads: &[serde_json::Value],
) -> Vec<String> {
    let mut ids = Vec::new();
    for p in payloads {
        let env = Envelope::new("test.work", p.clone());
        platform
            .broker
            .publish(Target::Queue(&AI_SHORT), &env)
            .await
            .expect("publish");
        ids.push(env.id);
    }
    ids
}

async fn take(sub: &mut Box<dyn Subscription>, n: usize) -> Vec<conveyor::broker::Delivery> {
    let mut batch = Vec::new();
    while batch.len() < n {
        batch.push(
            tokio::time::timeout(WAIT, sub.next())
                .await
                .expect("a delivery in time")
                .expect("subscription open"),
        );
    }
    batch
}

/// Panics on the message that says so, wherever it is in the batch.
#[derive(Default)]
struct Panicky {
    calls: Mutex<Vec<usize>>,
}

#[async_trait::async_trait]
impl BatchHandler for Panicky {
    async fn handle_batch(
        &self,
        _ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        self.calls.lock().unwrap().push(messages.len());
        if messages.iter().any(|m| m.payload["do"] == "panic") {
            panic!("a bad message");
        }
        messages.iter().map(|_| Ok(())).collect()
    }
}

/// A panic takes the whole call down; each message is then run alone, so the good ones
/// are acked and only the panicking one goes to its retry tier, as on the single path.
async fn a_panic_in_a_batch_fails_only_its_message(backend: Backend) {
    let Some(h) = Harness::new(backend, "batch_panic_isolated").await else {
        return;
    };
    let platform = &h.platform;
    let deps = platform.consumer_deps();
    publish_n(
        platform,
        &[json!({}), json!({}), json!({ "do": "panic" }), json!({})],
    )
    .await;
    let mut sub = platform.broker.subscribe(&AI_SHORT).await.unwrap();
    let batch = take(&mut sub, 4).await;
    let handler = Panicky::default();
    let outcomes = process_batch(&deps, &handler, batch).await;
    assert_eq!(
        outcomes,
        [
            Outcome::Acked,
            Outcome::Acked,
            Outcome::Retried { attempt: 1 },
            Outcome::Acked
        ]
    );
    assert_eq!(
        *handler.calls.lock().unwrap(),
        [4, 1, 1, 1, 1],
        "the batch once, then each message alone"
    );
    sub.cancel().await;
    h.finish().await;
}

/// Where a batch handler stops (never returns: its process is killed).
#[derive(Clone, Copy, PartialEq)]
enum Stop {
    Never,
    BeforeCommit,
    AfterCommit,
}

/// Writes one effect row per message and the batch's fence rows in one transaction.
struct Effects {
    stop: Stop,
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl BatchHandler for Effects {
    async fn handle_batch(
        &self,
        ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let run = async {
            let txn = ctx.db.begin().await?;
            let mut insert = Query::insert();
            insert
                .into_table(Alias::new("batch_effects"))
                .columns([Alias::new("message_id")]);
            for m in messages {
                insert.values_panic([Expr::val(m.id.clone())]);
            }
            txn.execute(&insert).await?;
            if self.stop == Stop::BeforeCommit {
                std::future::pending::<()>().await;
            }
            let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
            fence::mark_many_in(&txn, &ids, ctx.queue.key).await?;
            txn.commit().await?;
            if self.stop == Stop::AfterCommit {
                std::future::pending::<()>().await;
            }
            Ok::<_, sea_orm::DbErr>(())
        };
        match run.await {
            Ok(()) => messages.iter().map(|_| Ok(())).collect(),
            Err(e) => messages
                .iter()
                .map(|_| Err(HandlerError::transient(&e)))
                .collect(),
        }
    }

    fn fencing(&self) -> conveyor::consumer::Fencing {
        conveyor::consumer::Fencing::InHandlerTransaction
    }
}

async fn effects_table(platform: &conveyor::app::Platform) {
    platform
        .db
        .execute_unprepared("CREATE TABLE batch_effects (message_id VARCHAR(64) NOT NULL)")
        .await
        .unwrap();
}

async fn effects_of(platform: &conveyor::app::Platform, id: &str) -> i64 {
    let q = Query::select()
        .expr_as(Expr::cust("COUNT(*)"), Alias::new("n"))
        .from(Alias::new("batch_effects"))
        .and_where(Expr::col(Alias::new("message_id")).eq(id))
        .to_owned();
    let row = platform.db.query_one(&q).await.unwrap().expect("a count");
    row.try_get::<i64>("", "n").expect("an integer count")
}

/// Runs a batch of `n` with a handler that stops at `stop`, drops it there (what a
/// killed process leaves: an open transaction, unsettled deliveries, Redis claims that
/// nobody renews), then consumes everything again with a handler that completes, and
/// returns the ids and what the second pass saw.
async fn stopped_then_resumed(backend: Backend, test: &str, stop: Stop) {
    // The dead run's claims lapse quickly.
    let Some(h) =
        Harness::configured(backend, test, |env| env.settings.dedupe.lease_ms = 300).await
    else {
        return;
    };
    let platform = &h.platform;
    effects_table(platform).await;
    let deps = platform.consumer_deps();
    let ids = publish_n(platform, &[json!({}), json!({}), json!({})]).await;
    {
        let mut sub = platform.broker.subscribe(&AI_SHORT).await.unwrap();
        let batch = take(&mut sub, 3).await;
        let stuck = Effects {
            stop,
            calls: AtomicUsize::new(0),
        };
        // The process dies half-way: the future is dropped, and with it the
        // transaction (rolled back if open) and the deliveries (handed back).
        let ran = tokio::time::timeout(
            Duration::from_millis(500),
            process_batch(&deps, &stuck, batch),
        )
        .await;
        assert!(ran.is_err(), "the handler never returned");
        assert_eq!(stuck.calls.load(Ordering::SeqCst), 1);
        sub.cancel().await;
    }
    let committed = if stop == Stop::AfterCommit { 1 } else { 0 };
    for id in &ids {
        assert_eq!(effects_of(platform, id).await, committed, "after the stop");
    }
    // The messages come back (the first ones may find the dead claims and be parked on
    // the first retry tier until they lapse); consume until each is settled for good.
    let mut sub = platform.broker.subscribe(&AI_SHORT).await.unwrap();
    let good = Effects {
        stop: Stop::Never,
        calls: AtomicUsize::new(0),
    };
    let mut settled = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while settled.len() < ids.len() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "settled: {settled:?}"
        );
        let batch = take(&mut sub, 1).await;
        for o in process_batch(&deps, &good, batch).await {
            match o {
                Outcome::Busy => {}
                o => settled.push(o),
            }
        }
    }
    let expected = if stop == Stop::AfterCommit {
        Outcome::Duplicate
    } else {
        Outcome::Acked
    };
    assert!(
        settled.iter().all(|o| *o == expected),
        "each message once more: {settled:?}"
    );
    for id in &ids {
        assert_eq!(effects_of(platform, id).await, 1, "one effect for {id}");
    }
    sub.cancel().await;
    h.finish().await;
}

async fn a_batch_stopped_before_its_commit_runs_again_once(backend: Backend) {
    stopped_then_resumed(backend, "batch_stop_before_commit", Stop::BeforeCommit).await;
}

/// Committed with its fence rows but never acked: the redeliveries find the fence and
/// are acked as duplicates, without running again.
async fn a_batch_stopped_after_its_commit_is_not_run_again(backend: Backend) {
    stopped_then_resumed(backend, "batch_stop_after_commit", Stop::AfterCommit).await;
}

/// Answers its "quick" messages at once and, when `hold_slow`, its "slow" one never
/// (until the process is killed): a streaming batch handler.
#[derive(Default)]
struct Staggered {
    hold_slow: bool,
    seen: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl BatchHandler for Staggered {
    async fn handle_batch(
        &self,
        _ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        self.seen
            .lock()
            .unwrap()
            .extend(messages.iter().map(|m| m.id.clone()));
        messages.iter().map(|_| Ok(())).collect()
    }

    async fn handle_streaming(&self, _ctx: &Context, messages: &[Envelope], answers: &Answers) {
        for (i, m) in messages.iter().enumerate() {
            self.seen.lock().unwrap().push(m.id.clone());
            if !self.hold_slow || m.payload["speed"] == "quick" {
                answers.give(i, Ok(()));
            }
        }
        if self.hold_slow {
            std::future::pending::<()>().await;
        }
    }
}

/// A batch's quick messages are fenced and acked while its slow one still runs: when the
/// process dies during the slow one, only that one comes back.
async fn a_batch_acks_each_message_as_soon_as_it_is_answered(backend: Backend) {
    let Some(h) = Harness::configured(backend, "batch_streaming_acks", |env| {
        env.settings.dedupe.lease_ms = 300;
    })
    .await
    else {
        return;
    };
    let platform = &h.platform;
    let deps = platform.consumer_deps();
    let quick = json!({ "speed": "quick" });
    let ids = publish_n(
        platform,
        &[quick.clone(), json!({ "speed": "slow" }), quick],
    )
    .await;
    {
        let mut sub = platform.broker.subscribe(&AI_SHORT).await.unwrap();
        let batch = take(&mut sub, 3).await;
        let handler = Staggered {
            hold_slow: true,
            ..Default::default()
        };
        // The slow message never ends; the process dies a second in.
        let ran = tokio::time::timeout(
            Duration::from_secs(1),
            process_batch(&deps, &handler, batch),
        )
        .await;
        assert!(ran.is_err(), "the slow message never ended");
        assert_eq!(*handler.seen.lock().unwrap(), ids, "one call for the batch");
        sub.cancel().await;
    }
    // Only the slow message is delivered again (possibly parked once while the dead
    // run's claim lapses).
    let mut sub = platform.broker.subscribe(&AI_SHORT).await.unwrap();
    let again = Staggered::default();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slow message came back"
        );
        let batch = take(&mut sub, 1).await;
        let outcomes = process_batch(&deps, &again, batch).await;
        if outcomes != [Outcome::Busy] {
            assert_eq!(outcomes, [Outcome::Acked]);
            break;
        }
    }
    assert_eq!(
        *again.seen.lock().unwrap(),
        [ids[1].clone()],
        "the slow one only"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(700), sub.next())
            .await
            .is_err(),
        "the quick ones were acked the first time"
    );
    sub.cancel().await;
    h.finish().await;
}
