//! Running: success and its consumption, every kind and pipeline steps in order, a
//! killed consumer, terminal states, waves and bursts of results.

use super::*;
use crate::helpers::Harness;
use crate::on_every_backend;

on_every_backend!(
    a_task_runs_to_success_and_consumes_its_credits,
    every_kind_succeeds_and_pipeline_steps_run_in_order,
    a_killed_consumer_leaves_a_task_that_finishes_once,
    terminal_states_never_change,
    a_wave_of_results_commits_each_on_its_own_terms,
    a_burst_runs_in_batches_with_each_task_booked_once,
);

async fn a_task_runs_to_success_and_consumes_its_credits(backend: Backend) {
    let Some((env, app)) = app(backend, "task_runs_to_success").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let r = tasks::submit(
        &app,
        &key,
        json!({ "kind": "copywriting", "prompt": "spring sale on sneakers" }),
    )
    .await;
    assert_eq!(r.status(), 202);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], "PENDING");
    let id = body["id"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("/v1/tasks/{id}"));
    assert_eq!(app.credits(&user.id).await, 99, "reserved at submit");

    let t = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    assert_eq!(t["progress"], 100);
    assert!(
        t["result"]["text"]
            .as_str()
            .unwrap()
            .contains("spring sale"),
        "{t}"
    );
    assert_eq!(t["attempts"], 1, "{t}");
    assert_eq!(app.credits(&user.id).await, 99, "consumed, not refunded");
    let reasons: Vec<String> = ledger_of(&app, &user.id)
        .await
        .into_iter()
        .map(|l| l.reason)
        .collect();
    assert_eq!(reasons, ["grant", "reserve", "consume"]);
    let m = material_of(&app.platform.db, &id)
        .await
        .unwrap()
        .expect("a material");
    assert_eq!(m.user_id, user.id);
    // Events: monotonic sequence from 1, ending SUCCESS.
    let evs = events(&app, &id).await;
    assert!(evs.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    assert_eq!(evs[0].seq, 1);
    assert_eq!(
        evs.first().unwrap().status,
        conveyor::domains::ai_tasks::Status::Pending
    );
    assert_eq!(
        evs.last().unwrap().status,
        conveyor::domains::ai_tasks::Status::Success
    );
    assert!(evs.iter().any(
        |e| e.status == conveyor::domains::ai_tasks::Status::Processing
            && e.progress > 0
            && e.progress < 100
    ));
    done(env, app).await;
}

async fn every_kind_succeeds_and_pipeline_steps_run_in_order(backend: Backend) {
    let Some((env, app)) = app(backend, "every_kind_succeeds").await else {
        return;
    };
    let (user, key) = app.user("ada", 1000).await;
    let mut ids = Vec::new();
    let upload = crate::helpers::videos::analysable(&app, &key).await;
    for kind in ["copywriting", "image", "video", "model3d", "video_analysis"] {
        let id = tasks::submit_id(
            &app,
            &key,
            json!({ "kind": kind, "prompt": format!("a {kind} about tea"),
                "params": { "upload_id": upload } }),
        )
        .await;
        ids.push((kind, id));
    }
    for (kind, id) in &ids {
        let t = tasks::wait_status(&app, &key, id, "SUCCESS").await;
        if *kind == "image" || *kind == "video" || *kind == "model3d" {
            // A real generated file, with a signed URL of this API.
            assert!(
                t["files"][0]["url"]
                    .as_str()
                    .unwrap()
                    .starts_with("/v1/files/"),
                "{t}"
            );
        }
    }
    let (_, pipeline) = &ids[4];
    let steps: Vec<String> = events(&app, pipeline)
        .await
        .into_iter()
        .filter(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.ends_with(" started"))
        })
        .filter_map(|e| e.step)
        .collect();
    assert_eq!(
        steps,
        [
            "extract_audio",
            "transcribe",
            "summarize",
            "build_knowledge_entry"
        ]
    );
    let t = tasks::task(&app, &key, pipeline).await;
    for step in [
        "extract_audio",
        "transcribe",
        "summarize",
        "build_knowledge_entry",
    ] {
        assert!(t["result"][step].is_object(), "{step} output kept: {t}");
    }
    assert_eq!(app.credits(&user.id).await, 1000 - 1 - 4 - 20 - 30 - 10);
    done(env, app).await;
}

async fn a_killed_consumer_leaves_a_task_that_finishes_once(backend: Backend) {
    // No API here: the test runs the consumers itself, so it can kill them.
    let Some(h) = Harness::new(backend, "killed_consumer").await else {
        return;
    };
    let platform = &h.platform;
    let (user, _) = conveyor::users::create(&platform.db, "ada", 100, false)
        .await
        .unwrap();
    let txn = sea_orm::TransactionTrait::begin(&platform.db)
        .await
        .unwrap();
    let params = json!({ "simulate": { "step_ms": 1500 } });
    let kind = conveyor::domains::ai_tasks::TaskKind::Image;
    let new = store::NewTask {
        tenant_id: String::new(),
        plan: String::new(),
        user_id: user.id.clone(),
        kind,
        prompt: "x".into(),
        params,
        cost: 4,
        max_in_flight: 0,
        resume: None,
        metadata: None,
        trace: None,
    };
    let (t, _) = store::submit(&txn, &new, 65536).await.unwrap();
    txn.commit().await.unwrap();
    let id = t.id;
    let status = |p: conveyor::app::Platform, id: String| async move {
        store::get(&p.db, &id).await.unwrap().unwrap()
    };

    let first = {
        let p = platform.clone();
        tokio::spawn(async move {
            conveyor::app::run_workers(
                &p,
                conveyor::domains::ALL,
                None,
                tokio_util::sync::CancellationToken::new(),
            )
            .await
        })
    };
    crate::helpers::wait_until(Duration::from_secs(20), "PROCESSING", || async {
        status(platform.clone(), id.clone()).await.status
            == conveyor::domains::ai_tasks::Status::Processing
    })
    .await;
    first.abort(); // killed mid-task: no ack, no more heartbeats
    let _ = first.await;

    let token = tokio_util::sync::CancellationToken::new();
    let second = {
        let (p, token) = (platform.clone(), token.clone());
        tokio::spawn(async move {
            conveyor::app::run_workers(&p, conveyor::domains::ALL, None, token).await
        })
    };
    crate::helpers::wait_until(
        Duration::from_secs(30),
        "SUCCESS after the kill",
        || async {
            status(platform.clone(), id.clone()).await.status
                == conveyor::domains::ai_tasks::Status::Success
        },
    )
    .await;
    let done = status(platform.clone(), id.clone()).await;
    assert!(
        done.attempt >= 2,
        "a second attempt finished it (attempt {})",
        done.attempt
    );
    // Settled: a lost attempt writing late would have written by now.
    crate::helpers::drain(platform, &conveyor::domains::ai_tasks::queues::AI_SHORT).await;
    let materials = material::Entity::find()
        .filter(material::Column::TaskId.eq(id.as_str()))
        .count(&platform.db)
        .await
        .unwrap();
    assert_eq!(materials, 1, "the effect happened once");
    let consumed = ledger::Entity::find()
        .filter(ledger::Column::UserId.eq(user.id.as_str()))
        .filter(ledger::Column::Reason.eq("consume"))
        .count(&platform.db)
        .await
        .unwrap();
    assert_eq!(consumed, 1);
    token.cancel();
    second.await.unwrap().unwrap();
    h.finish().await;
}

async fn terminal_states_never_change(backend: Backend) {
    let Some((env, app)) = app(backend, "terminal_states").await else {
        return;
    };
    let (user, key) = app.user("ada", 100).await;
    let id = tasks::submit_id(&app, &key, json!({ "kind": "copywriting", "prompt": "x" })).await;
    let before = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    let db = &app.platform.db;
    // Forbidden transitions are refused by their guards.
    let to_failed = store::finish_unsuccessfully(
        db,
        &app.platform.events,
        &id,
        &Guard::status(&[Status::Pending, Status::Processing, Status::Retrying]),
        Status::Failed,
        None,
    )
    .await
    .unwrap();
    assert!(to_failed.is_none(), "SUCCESS → FAILED refused");
    let claim = Change {
        status: Some(Status::Processing),
        claim: true,
        ..Default::default()
    };
    assert!(
        store::apply(
            db,
            &app.platform.events,
            &id,
            &Guard::status(&[Status::Pending, Status::Retrying]),
            claim
        )
        .await
        .unwrap()
        .is_none()
    );
    let stale_write = Change {
        progress: Some(5),
        ..Default::default()
    };
    assert!(
        store::apply(
            db,
            &app.platform.events,
            &id,
            &Guard::holder(1),
            stale_write
        )
        .await
        .unwrap()
        .is_none(),
        "no write without the lease"
    );
    // A duplicate run message for the finished task changes nothing.
    let dup = conveyor::broker::Envelope::new("ai.task.run", json!({ "task_id": id, "step": 0 }));
    app.platform
        .broker
        .publish(
            conveyor::broker::Target::Queue(&conveyor::domains::ai_tasks::queues::AI_SHORT),
            &dup,
        )
        .await
        .unwrap();
    // Settled: had the duplicate run done anything, it would show now.
    app.drain(&conveyor::domains::ai_tasks::queues::AI_SHORT)
        .await;
    let after = tasks::task(&app, &key, &id).await;
    assert_eq!(before["updated_at"], after["updated_at"]);
    assert_eq!(after["status"], "SUCCESS");
    assert_eq!(app.credits(&user.id).await, 99);
    let seqs = task::Entity::find_by_id(id.clone())
        .one(db)
        .await
        .unwrap()
        .unwrap()
        .seq;
    assert_eq!(seqs as usize, events(&app, &id).await.len());
    // Fenced by the task's own state: the AI queues read and write no fence rows.
    use conveyor::consumer::fence_entity;
    let fence_rows = fence_entity::Entity::find()
        .filter(fence_entity::Column::Queue.eq("ai.short"))
        .count(db)
        .await
        .unwrap();
    assert_eq!(fence_rows, 0);
    done(env, app).await;
}

/// The consumer's batch path at the store: one claim for several tasks, then one wave
/// commit where each task keeps its own result, a pipeline moves to its next step, a
/// finished task books its credits and material, and a result whose attempt lost the
/// task (re-driven meanwhile) is fenced out without touching its neighbours.
async fn a_wave_of_results_commits_each_on_its_own_terms(backend: Backend) {
    use conveyor::domains::ai_tasks::TaskKind;
    use conveyor::domains::ai_tasks::store::{NewTask, StepClaim, StepResult};
    use sea_orm::TransactionTrait;
    let Some(env) = TestEnv::new(backend, "wave_commit").await else {
        return;
    };
    // No server, consumers or relay (an embedded `serve` would run the pipeline's next
    // step in-process meanwhile): the test plays the consumer, with the event seam as an
    // installed search sync fills it (finished tasks' outputs become materials).
    let platform = env.platform().await;
    use conveyor::domains::search_sync;
    platform
        .events
        .register(
            search_sync::DOMAIN.name,
            search_sync::DOMAIN.events,
            vec![conveyor::events::AnyListener::new(
                search_sync::events::Materials,
            )],
        )
        .unwrap();
    let (user, _) = conveyor::users::create(&platform.db, "wave", 100, false)
        .await
        .unwrap();
    let db = &platform.db;
    let mut tasks = Vec::new();
    for (kind, prompt) in [
        (TaskKind::Copywriting, "one"),
        (TaskKind::Copywriting, "two"),
        (TaskKind::VideoAnalysis, "three"),
        (TaskKind::Copywriting, "four"),
    ] {
        let txn = db.begin().await.unwrap();
        let new = NewTask {
            tenant_id: String::new(),
            plan: String::new(),
            user_id: user.id.clone(),
            kind,
            prompt: prompt.into(),
            params: json!({}),
            cost: 1,
            max_in_flight: 0,
            resume: None,
            metadata: None,
            trace: None,
        };
        let (t, _) = store::submit(&txn, &new, 1 << 20).await.unwrap();
        txn.commit().await.unwrap();
        tasks.push(t);
    }
    let first_step = |t: &store::Task| t.kind.steps()[0];
    let wanted: Vec<StepClaim<'_>> = tasks
        .iter()
        .map(|t| StepClaim {
            id: &t.id,
            step_index: 0,
            step: first_step(t),
        })
        .collect();
    let long_ago = chrono::Utc::now() - chrono::Duration::hours(1);
    let claimed = store::claim_many(db, &wanted, long_ago).await.unwrap();
    assert_eq!(claimed.len(), 4, "every task claimed");
    assert!(
        store::claim_many(db, &wanted, long_ago)
            .await
            .unwrap()
            .is_empty(),
        "a live lease is not claimed again"
    );
    let mut claimed: Vec<store::Task> = claimed.into_iter().map(|(t, _)| t).collect();
    claimed.sort_by_key(|t| tasks.iter().position(|x| x.id == t.id));
    assert!(
        claimed
            .iter()
            .all(|t| t.attempt == 1 && t.status == Status::Processing)
    );
    // The fourth is re-driven before its result commits: its attempt no longer holds.
    let mut stale = claimed[3].clone();
    stale.attempt = 0;
    let results: Vec<StepResult<'_>> = [&claimed[0], &claimed[1], &claimed[2], &stale]
        .into_iter()
        .map(|t| StepResult {
            task: t,
            step: first_step(t),
            result: json!({ "text": format!("out of {}", t.prompt) }),
            last: t.kind.steps().len() == 1,
            usage: Default::default(),
            price: conveyor::domains::ai_tasks::usage::pricing::Price {
                flat: t.cost,
                tokens: None,
            },
            approval: None,
            vectors: None,
            trace: None,
        })
        .collect();
    let txn = db.begin().await.unwrap();
    let applied = store::commit_steps(&txn, &platform.events, &results, 1 << 20)
        .await
        .unwrap();
    txn.commit().await.unwrap();
    let states: Vec<Option<(Status, i32)>> = applied
        .iter()
        .map(|a| a.as_ref().map(|c| (c.task.status, c.task.step_index)))
        .collect();
    assert_eq!(
        states,
        [
            Some((Status::Success, 1)),
            Some((Status::Success, 1)),
            Some((Status::Processing, 1)),
            None
        ]
    );
    for (t, prompt) in [(&claimed[0], "one"), (&claimed[1], "two")] {
        let now = store::get(db, &t.id).await.unwrap().unwrap();
        let result: Value = serde_json::from_str(now.result.as_deref().unwrap()).unwrap();
        assert_eq!(result["text"], format!("out of {prompt}"), "its own result");
        assert!(material_of(db, &t.id).await.unwrap().is_some());
        assert!(now.heartbeat_at.is_none() && now.finished_at.is_some());
    }
    let pipeline = store::get(db, &claimed[2].id).await.unwrap().unwrap();
    assert!(
        pipeline.heartbeat_at.is_none(),
        "the lease is released between steps"
    );
    assert!(material_of(db, &claimed[2].id).await.unwrap().is_none());
    let untouched = store::get(db, &claimed[3].id).await.unwrap().unwrap();
    assert_eq!(untouched.status, Status::Processing);
    assert!(
        untouched.result.is_none(),
        "the fenced result is not written"
    );
    let consumed = ledger::Entity::find()
        .filter(ledger::Column::UserId.eq(&user.id))
        .filter(ledger::Column::Reason.eq("consume"))
        .count(db)
        .await
        .unwrap();
    assert_eq!(consumed, 2, "one consume per finished task");

    // A stale message of the pipeline's first step (a repeat of a step that committed:
    // no fence row stops it, the task's state does) is dead-lettered: the task, now at
    // its second step, is not failed for it.
    let handlers = (conveyor::domains::ai_tasks::DOMAIN.install)(&platform)
        .await
        .unwrap()
        .handlers;
    let Some((queue, conveyor::consumer::Worker::Batch(handler))) = handlers
        .iter()
        .find(|(q, _)| q.key == claimed[2].kind.queue().key)
    else {
        panic!("a batch handler for the pipeline's queue");
    };
    let stale_step = conveyor::broker::Envelope::new(
        conveyor::domains::ai_tasks::messages::RUN_STEP,
        json!({ "task_id": claimed[2].id, "step": 0 }),
    );
    let fate = conveyor::consumer::Fate::DeadLetter {
        reason: conveyor::broker::DeadReason::Exhausted,
        error: "provider down".into(),
    };
    let ctx = platform.consumer_deps().context(queue);
    handler.on_failure(&ctx, &stale_step, &fate).await.unwrap();
    let pipeline = store::get(db, &claimed[2].id).await.unwrap().unwrap();
    assert_eq!(
        (pipeline.status, pipeline.step_index),
        (Status::Processing, 1),
        "a stale step's dead letter leaves the task at its current step"
    );
    // The same message for the step the task is at fails it.
    let current_step = conveyor::broker::Envelope::new(
        conveyor::domains::ai_tasks::messages::RUN_STEP,
        json!({ "task_id": claimed[2].id, "step": 1 }),
    );
    handler
        .on_failure(&ctx, &current_step, &fate)
        .await
        .unwrap();
    let pipeline = store::get(db, &claimed[2].id).await.unwrap().unwrap();
    assert_eq!(pipeline.status, Status::Failed);
    env.cleanup(Some(&platform)).await;
}

/// `ai.short` with batches of 16 (what short, even steps run with): a burst of tasks,
/// some of them pipelines' first steps on another queue, all end SUCCESS with one
/// consume each, one material each, and events in sequence.
async fn a_burst_runs_in_batches_with_each_task_booked_once(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "burst_in_batches").await else {
        return;
    };
    env.settings.queues.insert(
        "ai.short".into(),
        conveyor::broker::settings::QueueOverride {
            batch: Some(16),
            linger_ms: Some(20),
            ..Default::default()
        },
    );
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("burst", 1000).await;
    let ids = tasks::copywriting_burst(&app, &key, 40, "burst").await;
    for id in &ids {
        let t = tasks::wait_status(&app, &key, id, "SUCCESS").await;
        assert_eq!(t["attempts"], 1, "{t}");
        assert!(material_of(&app.platform.db, id).await.unwrap().is_some());
        let evs = events(&app, id).await;
        assert!(evs.windows(2).all(|w| w[1].seq == w[0].seq + 1), "{evs:?}");
    }
    let consumed = ledger::Entity::find()
        .filter(ledger::Column::UserId.eq(&user.id))
        .filter(ledger::Column::Reason.eq("consume"))
        .count(&app.platform.db)
        .await
        .unwrap();
    assert_eq!(consumed, 40, "one consume per task");
    assert_eq!(app.credits(&user.id).await, 1000 - 40);
    done(env, app).await;
}
