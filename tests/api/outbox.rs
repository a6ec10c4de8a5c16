//! The transactional outbox and its relay.

use std::sync::Arc;
use std::time::Duration;

use conveyor::broker::{Envelope, Target};
use conveyor::domains::ai_tasks::queues::AI_SHORT;
use conveyor::outbox::{self, entity};
use sea_orm::{ColumnTrait as _, EntityTrait, QueryFilter as _, TransactionTrait};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::helpers::{Backend, Harness, Proxy, Recorder, TestHandler, wait_until};
use crate::on_every_backend;

const WAIT: Duration = Duration::from_secs(20);

on_every_backend!(
    relay_publishes_committed_rows_only,
    relays_in_parallel_publish_each_row_once,
    a_row_for_an_unknown_target_stays_pending
);

async fn enqueue_n(platform: &conveyor::app::Platform, n: usize) -> Vec<String> {
    let txn = platform.db.begin().await.unwrap();
    let mut ids = Vec::new();
    for i in 0..n {
        let env = Envelope::new("test.work", json!({ "n": i }));
        outbox::enqueue(&txn, Target::Queue(&AI_SHORT), &env, 65536)
            .await
            .unwrap();
        ids.push(env.id);
    }
    txn.commit().await.unwrap();
    ids
}

/// A row written by a build that knows a target this one does not (a rolling upgrade)
/// is left pending for a process that knows it; the rows beside it go out and are marked
/// (on PostgreSQL a round marks its rows first and unmarks such a row before committing).
async fn a_row_for_an_unknown_target_stays_pending(backend: Backend) {
    let Some(h) = Harness::new(backend, "a_row_for_an_unknown_target_stays_pending").await else {
        return;
    };
    let platform = &h.platform;
    let ids = enqueue_n(platform, 3).await;
    let stranger = ids[1].clone();
    entity::Entity::update_many()
        .col_expr(
            entity::Column::Queue,
            sea_orm::sea_query::Expr::value("ai.from-a-newer-build"),
        )
        .filter(entity::Column::MessageId.eq(stranger.clone()))
        .exec(&platform.db)
        .await
        .unwrap();
    assert_eq!(platform.relay.relay_once().await.unwrap(), 2);
    let lag = platform.relay.lag().await.unwrap();
    assert_eq!(lag.pending, 1, "only the unknown target's row waits");
    let row = entity::Entity::find()
        .filter(entity::Column::MessageId.eq(stranger))
        .one(&platform.db)
        .await
        .unwrap()
        .unwrap();
    assert!(row.published_at.is_none());
    // A second round takes it again and leaves it again: it is never marked unsent.
    assert_eq!(platform.relay.relay_once().await.unwrap(), 0);
    assert_eq!(platform.relay.lag().await.unwrap().pending, 1);
}

async fn relay_publishes_committed_rows_only(backend: Backend) {
    let Some(h) = Harness::new(backend, "relay_publishes_committed_rows_only").await else {
        return;
    };
    let platform = &h.platform;
    let ids = enqueue_n(platform, 5).await;
    let rolled_back = {
        let txn = platform.db.begin().await.unwrap();
        let e = Envelope::new("test.work", json!({}));
        outbox::enqueue(&txn, Target::Queue(&AI_SHORT), &e, 65536)
            .await
            .unwrap();
        txn.rollback().await.unwrap();
        e.id
    };
    assert_eq!(platform.relay.lag().await.unwrap().pending, 5);
    assert_eq!(platform.relay.relay_once().await.unwrap(), 5);
    assert_eq!(platform.relay.lag().await.unwrap().pending, 0);

    let rec = Arc::new(Recorder::default());
    let consumer = h.consume(&AI_SHORT, Arc::new(TestHandler(rec.clone())));
    wait_until(WAIT, "5 effects", || async { rec.total_effects() == 5 }).await;
    for id in &ids {
        assert_eq!(rec.effects_of(id), 1);
    }
    assert_eq!(rec.effects_of(&rolled_back), 0);
    consumer.stop().await;

    // An oversized payload is refused at enqueue, with a clear error.
    let txn = platform.db.begin().await.unwrap();
    let big = Envelope::new("test.work", json!({ "blob": "x".repeat(100_000) }));
    let err = outbox::enqueue(&txn, Target::Queue(&AI_SHORT), &big, 65536)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("limit"), "{err}");
    txn.rollback().await.unwrap();
    h.finish().await;
}

async fn relays_in_parallel_publish_each_row_once(backend: Backend) {
    if !backend.is_real() {
        // SQLite serves one process with one relay; row locking is the real databases' job.
        return;
    }
    let Some(h) = Harness::new(backend, "relays_in_parallel").await else {
        return;
    };
    let platform = &h.platform;
    enqueue_n(platform, 300).await;
    let (a, b) = (platform.relay.clone(), platform.relay.clone());
    let (ra, rb) = tokio::join!(
        async move {
            let mut n = 0;
            while let Ok(k) = a.relay_once().await {
                if k == 0 {
                    break;
                }
                n += k;
            }
            n
        },
        async move {
            let mut n = 0;
            while let Ok(k) = b.relay_once().await {
                if k == 0 {
                    break;
                }
                n += k;
            }
            n
        }
    );
    assert_eq!(
        ra + rb,
        300,
        "each row published by exactly one relay ({ra} + {rb})"
    );
    let work = platform.broker.topology().queue(&AI_SHORT).name;
    assert_eq!(platform.broker.depth(&work).await.unwrap(), 300);
    h.finish().await;
}

/// RabbitMQ goes away; rows committed meanwhile wait and go out once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_catches_up_after_a_broker_outage() {
    for backend in [Backend::RabbitMariadb, Backend::RabbitPostgres] {
        let proxy = Proxy::start("127.0.0.1:5672").await;
        let Some(h) =
            Harness::configured(backend, "relay_catches_up_after_a_broker_outage", |env| {
                env.settings.broker.url =
                    format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port);
            })
            .await
        else {
            return;
        };
        let platform = &h.platform;
        proxy.down();
        let ids = enqueue_n(platform, 5).await;
        assert!(
            platform.relay.relay_once().await.is_err(),
            "publishing fails while the broker is away"
        );
        let rows = entity::Entity::find().all(&platform.db).await.unwrap();
        assert!(
            rows.iter()
                .all(|r| r.published_at.is_none() && r.attempts >= 1 && r.last_error.is_some())
        );

        proxy.up();
        let token = CancellationToken::new();
        let relay = tokio::spawn(platform.relay.clone().run(token.clone()));
        let rec = Arc::new(Recorder::default());
        let consumer = h.consume(&AI_SHORT, Arc::new(TestHandler(rec.clone())));
        wait_until(WAIT, "5 effects after the outage", || async {
            rec.total_effects() == 5
        })
        .await;
        for id in &ids {
            assert_eq!(rec.effects_of(id), 1);
        }
        token.cancel();
        relay.await.unwrap();
        consumer.stop().await;
        h.finish().await;
    }
}

on_every_backend!(housekeeping_trims_only_old_rows);

async fn housekeeping_trims_only_old_rows(backend: Backend) {
    use sea_orm::{ActiveModelTrait, ActiveValue::Set, PaginatorTrait};
    let Some(h) = Harness::new(backend, "housekeeping_trims_only_old_rows").await else {
        return;
    };
    let platform = &h.platform;
    enqueue_n(platform, 3).await;
    platform.relay.relay_once().await.unwrap();
    let rows = entity::Entity::find().all(&platform.db).await.unwrap();
    // Age one published row past the retention.
    let mut old: entity::ActiveModel = rows[0].clone().into();
    old.published_at = Set(Some(chrono::Utc::now() - chrono::Duration::days(8)));
    old.update(&platform.db).await.unwrap();
    let key = |k: &str, age: chrono::Duration| conveyor::idempotency::entity::ActiveModel {
        user_id: Set("u1".into()),
        key: Set(k.into()),
        request_hash: Set("h".into()),
        status: Set(202),
        response: Set("{}".into()),
        created_at: Set(chrono::Utc::now() - age),
        ..Default::default()
    };
    key("old", chrono::Duration::hours(49))
        .insert(&platform.db)
        .await
        .unwrap();
    key("fresh", chrono::Duration::hours(25))
        .insert(&platform.db)
        .await
        .unwrap();

    // Fence rows and WebSocket tickets, one past its retention and one within it each.
    for (id, age) in [("fenced-long-ago", 8), ("fenced-yesterday", 1)] {
        conveyor::consumer::fence_entity::ActiveModel {
            message_id: Set(id.into()),
            queue: Set("ai.short".into()),
            processed_at: Set(chrono::Utc::now() - chrono::Duration::days(age)),
        }
        .insert(&platform.db)
        .await
        .unwrap();
    }
    let (user, _) = conveyor::users::create(&platform.db, "ticket holder", 0, false)
        .await
        .unwrap();
    for (hash, age) in [("expired-ticket", 2), ("live-ticket", 0)] {
        conveyor::live::tickets::entity::ActiveModel {
            ticket_hash: Set(hash.into()),
            user_id: Set(user.id.clone()),
            expires_at: Set(chrono::Utc::now() - chrono::Duration::hours(age)),
            used_at: Set(None),
            key_hash: Set(None),
        }
        .insert(&platform.db)
        .await
        .unwrap();
    }

    for (id, age) in [("died-long-ago", 8), ("died-today", 0)] {
        conveyor::consumer::deaths::entity::ActiveModel {
            message_id: Set(id.into()),
            queue: Set("ai.short".into()),
            deaths: Set(1),
            updated_at: Set(chrono::Utc::now() - chrono::Duration::days(age)),
        }
        .insert(&platform.db)
        .await
        .unwrap();
    }
    let rules = conveyor::app::retention(&h.env.settings, conveyor::domains::ALL);
    let trimmed = conveyor::housekeeping::once(&platform.db, &rules)
        .await
        .unwrap();
    for table in [
        "idempotency_keys",
        "outbox",
        "processed_messages",
        "ws_tickets",
        "message_deaths",
    ] {
        assert_eq!(trimmed.get(table), Some(&1), "{table}: {trimmed:?}");
    }
    let fence = conveyor::consumer::fence_entity::Entity::find()
        .all(&platform.db)
        .await
        .unwrap();
    assert_eq!(fence.len(), 1);
    assert_eq!(fence[0].message_id, "fenced-yesterday");
    assert_eq!(entity::Entity::find().count(&platform.db).await.unwrap(), 2);
    let left = conveyor::idempotency::entity::Entity::find()
        .all(&platform.db)
        .await
        .unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].key, "fresh", "keys are kept at least 24 hours");
    h.finish().await;
}
