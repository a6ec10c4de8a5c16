//! Operating dead letters: replay to the origin queue (once, audited, paced) and
//! discard, through the library, the admin API and on every backend.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::helpers::WORK;
use conveyor::broker::{Envelope, Outgoing, Target};
use conveyor::dead_letters::{self, OperateError};
use conveyor::users::entity::ledger;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

use crate::helpers::tasks;
use crate::helpers::{Backend, Consumer, Harness, Recorder, TestEnv, spawn_app, wait_until};
use crate::on_every_backend;

const WAIT: Duration = Duration::from_secs(20);

on_every_backend!(
    a_replay_goes_back_to_its_queue_once_and_reopens_if_it_dies_again,
    a_letter_replayed_enough_times_and_dead_again_is_parked_as_needs_fix,
    a_replay_by_filter_counts_first_then_replays_in_paced_slices,
    malformed_dead_letters_are_discarded_not_replayed,
    the_admin_api_lists_replays_and_discards,
);

async fn dead(
    platform: &conveyor::app::Platform,
    queue: &str,
    status: &str,
) -> Vec<dead_letters::DeadLetter> {
    dead_letters::list(&platform.db, Some(queue), 10)
        .await
        .unwrap()
        .into_iter()
        .filter(|d| d.status == status)
        .collect()
}

/// A consumer of core.work whose dependency is broken, and a message it dead-lettered.
async fn dead_while_broken(h: &Harness) -> (Arc<Recorder>, Consumer, Envelope) {
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    rec.broken.store(true, Ordering::SeqCst);
    let msg = Envelope::new("test.work", json!({ "fail_while_broken": true }));
    platform
        .broker
        .publish(Target::Queue(&WORK), &msg)
        .await
        .unwrap();
    wait_until(WAIT, "the dead letter", || async {
        dead(platform, "core.work", "dead").await.len() == 1
    })
    .await;
    (rec, consumer, msg)
}

/// Publishes what the outbox holds (these tests run no relay of their own).
async fn relay(platform: &conveyor::app::Platform) -> usize {
    platform.relay.relay_once().await.unwrap()
}

async fn a_replay_goes_back_to_its_queue_once_and_reopens_if_it_dies_again(backend: Backend) {
    let Some(h) = Harness::new(backend, "replay_once").await else {
        return;
    };
    let platform = &h.platform;
    let max = platform.settings.broker.max_payload_bytes;
    let (rec, consumer, msg) = dead_while_broken(&h).await;
    let letter = dead(platform, "core.work", "dead").await.remove(0);
    assert_eq!(letter.message_id, msg.id);

    // Replayed while the dependency is still broken: it dies again, and the same
    // dead letter opens again rather than being lost behind its `replayed` status.
    let first = dead_letters::replay(
        &platform.db,
        platform.broker.topology(),
        letter.id,
        "test:ops",
        max,
    )
    .await
    .unwrap();
    assert!(!first.already);
    assert_eq!(first.dead_letter.status, "replayed");
    assert_eq!(relay(platform).await, 1, "one message back to core.work");
    wait_until(WAIT, "the replayed message to die again", || async {
        rec.calls() == 2 && dead(platform, "core.work", "dead").await.len() == 1
    })
    .await;
    assert_eq!(
        dead(platform, "core.work", "dead").await[0].id,
        letter.id,
        "same row"
    );

    // Fixed: the replay takes effect, once.
    rec.broken.store(false, Ordering::SeqCst);
    let second = dead_letters::replay(
        &platform.db,
        platform.broker.topology(),
        letter.id,
        "test:ops",
        max,
    )
    .await
    .unwrap();
    assert!(!second.already);
    assert_eq!(relay(platform).await, 1);
    wait_until(WAIT, "the effect", || async {
        rec.effects_of(&msg.id) == 1
    })
    .await;
    assert_eq!(
        rec.attempts.lock().unwrap().get(&msg.id).copied(),
        Some(0),
        "a replay starts with a fresh attempt budget"
    );

    // Asking again is answered as done, and sends nothing.
    let again = dead_letters::replay(
        &platform.db,
        platform.broker.topology(),
        letter.id,
        "test:ops",
        max,
    )
    .await
    .unwrap();
    assert!(again.already);
    assert_eq!(relay(platform).await, 0, "nothing more in the outbox");
    let discard = dead_letters::discard(&platform.db, letter.id, "test:ops").await;
    assert!(
        matches!(discard, Err(OperateError::Conflict { .. })),
        "{discard:?}"
    );
    let actions = dead_letters::actions(&platform.db, letter.id)
        .await
        .unwrap();
    let trail: Vec<(&str, &str)> = actions
        .iter()
        .map(|a| (a.action.as_str(), a.actor.as_str()))
        .collect();
    assert_eq!(trail, [("replay", "test:ops"), ("replay", "test:ops")]);
    // Settled: a second effect of the replay would show now.
    crate::helpers::drain(platform, &WORK).await;
    assert_eq!(rec.effects_of(&msg.id), 1, "one effect");

    consumer.stop().await;
    h.finish().await;
}

async fn malformed_dead_letters_are_discarded_not_replayed(backend: Backend) {
    let Some(h) = Harness::new(backend, "malformed_discard").await else {
        return;
    };
    let platform = &h.platform;
    let (_, consumer) = h.record();
    let raw = Outgoing {
        target: Target::Queue(&WORK),
        message_id: "raw".into(),
        body: b"{not an envelope".to_vec(),
        traceparent: None,
    };
    platform.broker.publish_batch(&[raw]).await.unwrap();
    wait_until(WAIT, "the dead letter", || async {
        dead(platform, "core.work", "dead").await.len() == 1
    })
    .await;
    let id = dead(platform, "core.work", "dead").await[0].id;

    let replay = dead_letters::replay(
        &platform.db,
        platform.broker.topology(),
        id,
        "test:ops",
        1 << 20,
    )
    .await;
    assert!(
        matches!(&replay, Err(OperateError::NotReplayable { why, .. }) if why.contains("not a valid envelope")),
        "{replay:?}"
    );
    assert_eq!(relay(platform).await, 0, "nothing sent");
    let discarded = dead_letters::discard(&platform.db, id, "test:ops")
        .await
        .unwrap();
    assert!(!discarded.already);
    assert_eq!(discarded.dead_letter.status, "discarded");
    assert!(
        dead_letters::discard(&platform.db, id, "test:ops")
            .await
            .unwrap()
            .already
    );
    let replay = dead_letters::replay(
        &platform.db,
        platform.broker.topology(),
        id,
        "test:ops",
        1 << 20,
    )
    .await;
    assert!(
        matches!(&replay, Err(OperateError::Conflict { status, .. }) if status == "discarded"),
        "{replay:?}"
    );
    assert!(matches!(
        dead_letters::discard(&platform.db, id + 1000, "test:ops").await,
        Err(OperateError::NotFound(_))
    ));
    assert_eq!(
        dead_letters::actions(&platform.db, id).await.unwrap().len(),
        1
    );
    consumer.stop().await;
    h.finish().await;
}

async fn the_admin_api_lists_replays_and_discards(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "dead_letter_api").await else {
        return;
    };
    // Two replays pass, the third within the second is refused.
    env.settings.dead_letters.replay_per_second = 2;
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("ada", 100).await;
    let admin = app.admin().await;
    let task_id = tasks::submit_id(&app, &key, json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "fail_permanent": true } } }))
        .await;
    tasks::wait_status(&app, &key, &task_id, "FAILED").await;
    wait_until(WAIT, "the dead letter", || async {
        dead(&app.platform, "ai.short", "dead").await.len() == 1
    })
    .await;
    let get = |path: String, key: String| {
        let req = app.client.get(app.url(&path)).bearer_auth(key);
        async move { req.send().await.unwrap() }
    };
    let post = |path: String, key: String| {
        let req = app.client.post(app.url(&path)).bearer_auth(key);
        async move { req.send().await.unwrap() }
    };

    // Operators only.
    let r = get("/v1/admin/dead-letters".into(), key.clone()).await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "forbidden"
    );
    let r = app
        .client
        .get(app.url("/v1/admin/dead-letters"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    // List with filters; bad filters are 400 naming the field.
    let r = get(
        "/v1/admin/dead-letters?queue=ai.short&status=dead".into(),
        admin.clone(),
    )
    .await;
    assert_eq!(r.status(), 200);
    let list: Value = r.json().await.unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list}");
    assert_eq!(items[0]["reason"], "permanent");
    let id = items[0]["id"].as_i64().unwrap();
    for (query, field) in [
        ("status=gone", "status"),
        ("limit=0", "limit"),
        ("cursor=x", "cursor"),
    ] {
        let r = get(format!("/v1/admin/dead-letters?{query}"), admin.clone()).await;
        assert_eq!(r.status(), 400, "{query}");
        assert_eq!(r.json::<Value>().await.unwrap()["error"]["field"], field);
    }
    let r = get("/v1/admin/dead-letters?colour=red".into(), admin.clone()).await;
    assert_eq!(r.status(), 400, "unknown query fields are refused");

    // Detail: the envelope as it died, with its failure.
    let r = get(format!("/v1/admin/dead-letters/{id}"), admin.clone()).await;
    let detail: Value = r.json().await.unwrap();
    assert_eq!(
        detail["body"]["payload"]["task_id"],
        task_id.as_str(),
        "{detail}"
    );
    assert_eq!(detail["history"].as_array().unwrap().len(), 1);
    assert_eq!(detail["actions"], json!([]));
    for missing in ["999999999", "abc"] {
        let r = get(format!("/v1/admin/dead-letters/{missing}"), admin.clone()).await;
        assert_eq!(r.status(), 404);
    }

    // Replay: done once; again is "already"; then the pace limit answers 429.
    let processed = || {
        app.platform
            .tally
            .totals()
            .get(&("ai.short", conveyor::tally::What::Processed))
            .copied()
            .unwrap_or(0)
    };
    let processed_before = processed();
    let r = post(format!("/v1/admin/dead-letters/{id}/replay"), admin.clone()).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["already"], false);
    assert_eq!(body["dead_letter"]["status"], "replayed");
    let r = post(format!("/v1/admin/dead-letters/{id}/replay"), admin.clone()).await;
    assert_eq!(r.json::<Value>().await.unwrap()["already"], true);
    let r = post(format!("/v1/admin/dead-letters/{id}/replay"), admin.clone()).await;
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"));
    let r = post(
        format!("/v1/admin/dead-letters/{id}/discard"),
        admin.clone(),
    )
    .await;
    assert_eq!(r.status(), 409, "a replayed letter cannot be discarded");

    // The replayed message reaches the handler, which finds the task FAILED: the
    // refund stays single and the credits do not move.
    wait_until(WAIT, "the replayed message processed", || async {
        processed() > processed_before
    })
    .await;
    assert_eq!(app.credits(&user.id).await, 100);
    let refunds = ledger::Entity::find()
        .filter(ledger::Column::UserId.eq(user.id.as_str()))
        .filter(ledger::Column::Reason.eq("refund"))
        .all(&app.platform.db)
        .await
        .unwrap();
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    let r = get(format!("/v1/admin/dead-letters/{id}"), admin.clone()).await;
    let detail: Value = r.json().await.unwrap();
    assert_eq!(detail["actions"].as_array().unwrap().len(), 1, "{detail}");
    assert!(
        detail["actions"][0]["actor"]
            .as_str()
            .unwrap()
            .starts_with("user:")
    );

    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

crate::on_every_backend!(the_keeper_drains_dead_letter_queues_into_the_table);

/// Always fails for good.
struct Refuses;

#[async_trait::async_trait]
impl conveyor::consumer::Handler for Refuses {
    async fn handle(
        &self,
        _ctx: &conveyor::consumer::Context,
        _msg: &conveyor::broker::Envelope,
    ) -> Result<(), conveyor::consumer::HandlerError> {
        Err(conveyor::consumer::HandlerError::permanent("no"))
    }
}

/// The broker DLQs do not pile up: the keeper acks the copies of what conveyor
/// dead-lettered (already recorded, not recorded twice) and records first what the broker
/// dead-lettered on its own (here a foreign consumer's reject on RabbitMQ).
async fn the_keeper_drains_dead_letter_queues_into_the_table(backend: crate::helpers::Backend) {
    use crate::helpers::WORK;
    use conveyor::broker::{Envelope, Target};
    let Some(h) = Harness::new(backend, "dlq_keeper").await else {
        return;
    };
    let platform = &h.platform;
    let deps = platform.consumer_deps();
    let ours = Envelope::new("test.work", serde_json::json!({}));
    platform
        .broker
        .publish(Target::Queue(&WORK), &ours)
        .await
        .unwrap();
    let mut sub = platform.broker.subscribe(&WORK).await.unwrap();
    let d = tokio::time::timeout(Duration::from_secs(20), sub.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        conveyor::consumer::process_one(&deps, &Refuses, d).await,
        conveyor::consumer::Outcome::DeadLettered(conveyor::broker::DeadReason::Permanent)
    );
    sub.cancel().await;
    let resolved = platform.broker.topology().queue(&WORK);
    let mut expected = 1;
    let foreign = Envelope::new("test.work", serde_json::json!({ "foreign": true }));
    if backend.is_real() {
        // A consumer that is not conveyor rejects a message without requeue: RabbitMQ
        // dead-letters it by itself (x-death reason "rejected").
        platform
            .broker
            .publish(Target::Queue(&WORK), &foreign)
            .await
            .unwrap();
        let conn = lapin::Connection::connect(
            &crate::helpers::amqp_url(),
            lapin::ConnectionProperties::default(),
        )
        .await
        .unwrap();
        let ch = conn.create_channel().await.unwrap();
        let got = loop {
            if let Some(g) = ch
                .basic_get(
                    resolved.name.as_str().into(),
                    lapin::options::BasicGetOptions::default(),
                )
                .await
                .unwrap()
            {
                break g;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        got.delivery
            .acker
            .reject(lapin::options::BasicRejectOptions { requeue: false })
            .await
            .unwrap();
        let _ = conn.close(200, "ok".into()).await;
        expected = 2;
    }
    crate::helpers::wait_until(Duration::from_secs(10), "the DLQ copies", || async {
        platform.broker.depth(&resolved.dlq).await.unwrap() == expected
    })
    .await;
    let drained =
        conveyor::dead_letters::keeper::drain(&platform.db, platform.broker.as_ref(), &WORK)
            .await
            .unwrap();
    assert_eq!(drained as u64, expected);
    crate::helpers::wait_until(Duration::from_secs(10), "the DLQ empty", || async {
        platform.broker.depth(&resolved.dlq).await.unwrap() == 0
    })
    .await;
    let rows = dead_letters::list(&platform.db, Some("core.work"), 10)
        .await
        .unwrap();
    assert_eq!(rows.len() as u64, expected, "{rows:?}");
    let mine = rows.iter().find(|r| r.message_id == ours.id).unwrap();
    assert_eq!(mine.reason, "permanent", "recorded once, by the runtime");
    if backend.is_real() {
        let theirs = rows.iter().find(|r| r.message_id == foreign.id).unwrap();
        assert_eq!(theirs.reason, "broker");
        assert!(
            theirs.last_error.contains("rejected"),
            "{}",
            theirs.last_error
        );
    }
    h.finish().await;
}

async fn a_letter_replayed_enough_times_and_dead_again_is_parked_as_needs_fix(backend: Backend) {
    let Some(h) = Harness::configured(backend, "needs_fix", |env| {
        env.settings.dead_letters.needs_fix_after_replays = 2;
    })
    .await
    else {
        return;
    };
    let platform = &h.platform;
    let max = platform.settings.broker.max_payload_bytes;
    let (rec, consumer, msg) = dead_while_broken(&h).await;
    let id = dead(platform, "core.work", "dead").await[0].id;
    // Replayed once and dead again: still `dead`; twice: parked.
    for (round, expect) in [(1, "dead"), (2, "needs_fix")] {
        dead_letters::replay(
            &platform.db,
            platform.broker.topology(),
            id,
            "test:ops",
            max,
        )
        .await
        .unwrap();
        assert_eq!(relay(platform).await, 1);
        wait_until(WAIT, "the replay to die again", || async {
            rec.calls() == round + 1 && dead(platform, "core.work", expect).await.len() == 1
        })
        .await;
        assert_eq!(
            dead(platform, "core.work", expect).await[0].id,
            id,
            "same row"
        );
    }
    // Still waiting for an operator (the gauge's and the board's count), and replayable by
    // its id once fixed.
    rec.broken.store(false, Ordering::SeqCst);
    let fixed = dead_letters::replay(
        &platform.db,
        platform.broker.topology(),
        id,
        "test:ops",
        max,
    )
    .await
    .unwrap();
    assert_eq!(fixed.dead_letter.status, "replayed");
    assert_eq!(relay(platform).await, 1);
    wait_until(WAIT, "the effect", || async {
        rec.effects_of(&msg.id) == 1
    })
    .await;
    consumer.stop().await;
    h.finish().await;
}

async fn a_replay_by_filter_counts_first_then_replays_in_paced_slices(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "replay_filter").await else {
        return;
    };
    // Letters of a queue nothing consumes: what is replayed stays replayed (on the
    // embedded backend a served app consumes ai.short in-process).
    let app = crate::helpers::spawn_app_with(&env, &[&crate::domain::IDLE]).await;
    let admin = app.admin().await;
    let info = conveyor::broker::DeadLetterInfo {
        reason: conveyor::broker::DeadReason::Exhausted,
        origin_queue: "idle.work".into(),
        attempts: 3,
        last_error: "provider timed out".into(),
    };
    let mut ids = Vec::new();
    for _ in 0..3 {
        let e = Envelope::new("test.work", json!({}));
        dead_letters::record(
            &app.platform.db,
            &e.id,
            "idle.work",
            &e.kind,
            &info,
            &[],
            &e.encode(usize::MAX).unwrap(),
            3,
        )
        .await
        .unwrap();
        ids.push(e.id);
    }
    // One of them parked as needs_fix.
    dead_letters::entity::Entity::update_many()
        .col_expr(
            dead_letters::entity::Column::Status,
            sea_orm::sea_query::Expr::value("needs_fix"),
        )
        .filter(dead_letters::entity::Column::MessageId.eq(ids[2].clone()))
        .exec(&app.platform.db)
        .await
        .unwrap();
    let call = |body: Value| {
        let req = app
            .client
            .post(app.url("/v1/admin/dead-letters/replay"))
            .bearer_auth(&admin)
            .json(&body);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let (status, dry) = call(json!({ "queue": "idle.work", "dry_run": true })).await;
    assert_eq!(status, 200, "{dry}");
    assert_eq!(dry["matched"], 2);
    assert_eq!(dry["parked"], 1);
    assert_eq!(dry["replayed"], json!([]));
    assert_eq!(
        idle_letters(&app.platform, "dead").await.len(),
        2,
        "a dry run sends nothing"
    );
    let (_, first) = call(json!({ "queue": "idle.work", "limit": 1 })).await;
    assert_eq!(first["replayed"].as_array().unwrap().len(), 1, "{first}");
    assert_eq!(first["remaining"], 1);
    let (_, second) = call(json!({ "queue": "idle.work", "limit": 1 })).await;
    assert_eq!(second["replayed"].as_array().unwrap().len(), 1, "{second}");
    assert_eq!(second["remaining"], 0);
    assert_eq!(idle_letters(&app.platform, "replayed").await.len(), 2);
    let (_, forced) = call(json!({ "queue": "idle.work", "force": true, "dry_run": true })).await;
    assert_eq!(forced["matched"], 1, "the parked one, with force");
    let (status, bad) = call(json!({ "queue": "nope" })).await;
    assert_eq!(status, 400);
    assert_eq!(bad["error"]["field"], "queue");
    let (status, bad) = call(json!({ "queue": "idle.work", "limit": 0 })).await;
    assert_eq!(status, 400);
    assert_eq!(bad["error"]["field"], "limit");

    // The list filters by kind and time too.
    let list = |query: &str| {
        let req = app
            .client
            .get(app.url(&format!("/v1/admin/dead-letters?{query}")))
            .bearer_auth(&admin);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let count = |v: &Value| v["items"].as_array().map_or(0, Vec::len);
    let (_, all) = list("kind=test.work").await;
    assert_eq!(count(&all), 3, "{all}");
    let (_, none) = list("kind=ai.task.run").await;
    assert_eq!(count(&none), 0);
    let past = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let future = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let (_, recent) = list(&format!("since={}", urlencode(&past))).await;
    assert_eq!(count(&recent), 3);
    let (_, later) = list(&format!("since={}", urlencode(&future))).await;
    assert_eq!(count(&later), 0);
    let (status, bad) = list("since=yesterday").await;
    assert_eq!(status, 400);
    assert_eq!(bad["error"]["field"], "since");
    crate::helpers::done(env, app).await;
}

fn urlencode(s: &str) -> String {
    s.replace('+', "%2B").replace(':', "%3A")
}

/// The idle queue's letters in `status`.
async fn idle_letters(
    platform: &conveyor::app::Platform,
    status: &str,
) -> Vec<dead_letters::DeadLetter> {
    dead_letters::list(&platform.db, Some("idle.work"), 10)
        .await
        .unwrap()
        .into_iter()
        .filter(|d| d.status == status)
        .collect()
}
