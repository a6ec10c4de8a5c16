//! The weighted fair share in a contended lane: a member's work starts first in the
//! configured ratio while a free user's still progresses, and an organisation gains no
//! share by spreading its flood over keys and members.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use conveyor::broker::settings::QueueOverride;
use conveyor::domains::ai_tasks::entity::task;
use conveyor::plans::PlanSettings;
use reqwest::Method;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;

use super::*;
use crate::helpers::tasks;
use crate::on_every_backend;

on_every_backend!(
    a_members_work_starts_first_in_the_configured_ratio_and_free_work_still_progresses,
    an_organisation_flooding_over_five_keys_and_three_members_gets_one_share,
    what_a_capped_plan_cannot_use_goes_to_the_others,
    a_lane_lowered_at_run_time_is_shared_by_its_live_slots,
);

/// `free` (weight 1, at most `free_running` running in a lane; 0: no cap) and `member`
/// (weight 3); `ai.short` with 8 slots.
async fn contended(backend: Backend, test: &str, free_running: u32) -> Option<(TestEnv, TestApp)> {
    let mut env = TestEnv::new(backend, test).await?;
    env.settings.plans.clear();
    env.settings.plans.insert(
        "free".into(),
        PlanSettings {
            limits: [("tasks_running".to_owned(), free_running)].into(),
            ..Default::default()
        },
    );
    env.settings.plans.insert(
        "member".into(),
        PlanSettings {
            weight: 3,
            membership: true,
            ..Default::default()
        },
    );
    env.settings.queues.insert(
        "ai.short".into(),
        QueueOverride {
            prefetch: Some(8),
            ..Default::default()
        },
    );
    let app = spawn_app(&env).await;
    Some((env, app))
}

/// A copywriting task of 1 s: long enough that, on the embedded stack (which consumes
/// while the floods are submitted), the first flood still waits when the second has been
/// submitted on a loaded machine (with 400 ms, 60 tasks on 8 slots drained in 3 s, and a
/// loaded CI once measured no contended starts at all).
fn work() -> Value {
    json!({ "kind": "copywriting", "prompt": "x", "params": { "simulate": { "step_ms": 1000 } } })
}

/// Starts of each group of ids since the call (the embedded stack consumes while the
/// floods are submitted: what started before both were in line is not a share),
/// counted while every group still has tasks waiting (or `limit` passed): the shares of
/// a contended lane.
async fn starts_while_contended(
    app: &TestApp,
    groups: &[Vec<String>],
    limit: Duration,
) -> Vec<u64> {
    let all: Vec<String> = groups.iter().flatten().cloned().collect();
    let group_of: HashMap<&str, usize> = groups
        .iter()
        .enumerate()
        .flat_map(|(g, ids)| ids.iter().map(move |id| (id.as_str(), g)))
        .collect();
    let began = Instant::now();
    let mut last = vec![0; groups.len()];
    let mut before: Option<Vec<u64>> = None;
    loop {
        let rows = task::Entity::find()
            .filter(task::Column::Id.is_in(all.clone()))
            .all(&app.platform.db)
            .await
            .unwrap();
        let mut started = vec![0u64; groups.len()];
        let mut waiting = vec![0u64; groups.len()];
        for t in &rows {
            let g = group_of[t.id.as_str()];
            if t.started_at.is_some() {
                started[g] += 1;
            } else {
                waiting[g] += 1;
            }
        }
        let before = before.get_or_insert_with(|| started.clone());
        if waiting.contains(&0) || began.elapsed() > limit {
            return last;
        }
        last = started
            .iter()
            .zip(before.iter())
            .map(|(s, b)| s - b)
            .collect();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_members_work_starts_first_in_the_configured_ratio_and_free_work_still_progresses(
    backend: Backend,
) {
    let Some((env, app)) = contended(backend, "plans_ratio", 0).await else {
        return;
    };
    let (_, free_key) = app.user("free", 1_000_000).await;
    let (member, member_key) = app.user("member", 1_000_000).await;
    let (status, _) = admin_json(
        &app,
        Method::PUT,
        &format!("/v1/admin/users/{}/plan", member.id),
        Some(json!({ "plan": "member" })),
    )
    .await;
    assert_eq!(status, 200);
    // The free user's flood is queued first: in line order it would all run first.
    let mut free = Vec::new();
    let mut members = Vec::new();
    for _ in 0..60 {
        free.push(tasks::submit_id(&app, &free_key, work()).await);
    }
    for _ in 0..60 {
        members.push(tasks::submit_id(&app, &member_key, work()).await);
    }
    app.start_consumers();
    let started = starts_while_contended(
        &app,
        &[members.clone(), free.clone()],
        Duration::from_secs(6),
    )
    .await;
    let (m, f) = (started[0] as f64, started[1] as f64);
    eprintln!("starts while contended: member {m}, free {f}");
    assert!(f >= 2.0, "the free user's work progresses: {started:?}");
    // Weights 3:1 put a quarter of the starts on the free user. About 35 starts in the
    // window make that share binomial with a spread of ±0.07 (one standard deviation),
    // so the bounds are two of them either side: far from line order (the free flood
    // was queued first: a share near 1) and from strict priority (none).
    let ratio = m / f;
    let share = f / (m + f);
    assert!(
        (0.11..=0.39).contains(&share),
        "member:free starts {ratio:.2}, free share {share:.2} (weights 3:1): {started:?}"
    );
    done(env, app).await;
}

async fn an_organisation_flooding_over_five_keys_and_three_members_gets_one_share(
    backend: Backend,
) {
    // Tenants of one plan share a lane through the plan's cap: 4 of the 8 slots each.
    let Some((env, app)) = contended(backend, "plans_org_share", 4).await else {
        return;
    };
    let (owner, owner_key) = app.user("owner", 1_000_000).await;
    let (status, org) = admin_json(
        &app,
        Method::POST,
        "/v1/admin/orgs",
        Some(json!({ "name": "Big Team", "owner": owner.id })),
    )
    .await;
    assert_eq!(status, 201, "{org}");
    let org_id = org["id"].as_str().unwrap().to_owned();
    let mut keys = vec![owner_key.clone()];
    let mut members = vec![owner.id.clone()];
    for name in ["second", "third"] {
        let (u, k) = app.user(name, 1_000_000).await;
        let (status, body) = call(
            &app,
            &owner_key,
            Method::POST,
            "/v1/org/members",
            Some(json!({ "user_id": u.id })),
        )
        .await;
        assert_eq!(status, 202, "{body}");
        let accept = format!("/v1/me/invitations/{}/accept", body["id"].as_str().unwrap());
        let (status, body) = call(&app, &k, Method::POST, &accept, None).await;
        assert_eq!(status, 200, "{body}");
        keys.push(k);
        members.push(u.id);
    }
    // A second key of the owner and of the second member: five keys in all.
    for id in &members[..2] {
        let (status, made) = admin_json(
            &app,
            Method::POST,
            &format!("/v1/admin/users/{id}/keys"),
            None,
        )
        .await;
        assert_eq!(status, 201, "{made}");
        keys.push(made["key"].as_str().unwrap().to_owned());
    }
    assert_eq!(keys.len(), 5);
    let (_, solo_key) = app.user("solo", 1_000_000).await;
    // The organisation's flood first, spread over its five keys; then the solo user's.
    let mut team = Vec::new();
    for i in 0..60 {
        let id = tasks::submit_id(&app, &keys[i % keys.len()], work()).await;
        team.push(id);
    }
    let first = task::Entity::find_by_id(team[0].clone())
        .one(&app.platform.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.tenant_id, org_id, "the organisation is the tenant");
    let mut solo = Vec::new();
    for _ in 0..60 {
        solo.push(tasks::submit_id(&app, &solo_key, work()).await);
    }
    app.start_consumers();
    let started =
        starts_while_contended(&app, &[team.clone(), solo.clone()], Duration::from_secs(6)).await;
    let (t, s) = (started[0] as f64, started[1] as f64);
    eprintln!("starts while contended: organisation {t}, solo {s}");
    assert!(s >= 2.0, "{started:?}");
    // Counted apart, three members would have three caps (12) against the one key's 4.
    let ratio = t / s;
    assert!(
        (0.6..=1.6).contains(&ratio),
        "organisation:solo starts {ratio:.2} (one share each): {started:?}"
    );
    done(env, app).await;
}

/// Free capped at one running task beside a member's flood: the slot free leaves goes to
/// the member (seven of eight run), none idles for the length of the flood.
async fn what_a_capped_plan_cannot_use_goes_to_the_others(backend: Backend) {
    // Free capped at 1 of the 8 slots, member of weight 3.
    let Some((env, app)) = contended(backend, "plans_capped_share", 1).await else {
        return;
    };
    let (_, free_key) = app.user("free", 1_000_000).await;
    let (member, member_key) = app.user("member", 1_000_000).await;
    conveyor::users::orgs::set_user_plan(&app.platform.db, &member.id, Some("member"), "test")
        .await
        .unwrap();
    let mut all = Vec::new();
    for _ in 0..30 {
        all.push(tasks::submit_id(&app, &free_key, work()).await);
        all.push(tasks::submit_id(&app, &member_key, work()).await);
    }
    app.start_consumers();
    // The most running at once while both still wait.
    let began = Instant::now();
    let (mut most_member, mut most_free) = (0usize, 0usize);
    while began.elapsed() < Duration::from_secs(4) {
        let rows = task::Entity::find()
            .filter(task::Column::Id.is_in(all.clone()))
            .all(&app.platform.db)
            .await
            .unwrap();
        use conveyor::domains::ai_tasks::Status::{Pending, Processing};
        let waiting_member = rows
            .iter()
            .any(|t| t.user_id == member.id && t.status == Pending);
        if !waiting_member {
            break;
        }
        most_member = most_member.max(
            rows.iter()
                .filter(|t| t.user_id == member.id && t.status == Processing)
                .count(),
        );
        most_free = most_free.max(
            rows.iter()
                .filter(|t| t.user_id != member.id && t.status == Processing)
                .count(),
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("most running at once: member {most_member}, free {most_free}");
    assert_eq!(most_free, 1, "free's cap holds");
    assert_eq!(most_member, 7, "the member takes what free cannot use");
    done(env, app).await;
}

/// An operator lowers `ai.short` to 2 slots at run time (`PUT
/// /v1/admin/queues/ai.short/concurrency`) on the configured plans (free weight 1, member
/// weight 4): a member's 5 tasks, queued behind a free user's 40, finish while most of the
/// free ones still wait. Cut from the configured 128 slots instead, free's part would be
/// 25 of them: it would never yield, and the member would wait behind all 40 (60 s).
async fn a_lane_lowered_at_run_time_is_shared_by_its_live_slots(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "plans_live_slots").await else {
        return;
    };
    env.settings.consumer.settings_poll_ms = 200;
    assert_eq!(
        env.settings.plans["member"].weight, 4,
        "the configured plans"
    );
    assert_eq!(env.settings.plans["free"].weight, 1, "the configured plans");
    let app = spawn_app(&env).await;
    let (_, free_key) = app.user("free", 1_000_000).await;
    let (member, member_key) = app.user("member", 1_000_000).await;
    let (status, body) = admin_json(
        &app,
        Method::PUT,
        &format!("/v1/admin/users/{}/plan", member.id),
        Some(json!({ "plan": "member" })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = admin_json(
        &app,
        Method::PUT,
        "/v1/admin/queues/ai.short/concurrency",
        Some(json!({ "prefetch": 2 })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    if !backend.is_real() {
        // `serve` consumes from the start: wait for its consumer to follow the change.
        let tally = app.platform.tally.clone();
        wait_until(
            Duration::from_secs(10),
            "ai.short consumed with 2 slots",
            || {
                let tally = tally.clone();
                async move { tally.prefetch("ai.short") == Some(2) }
            },
        )
        .await;
    }
    // Free tasks of 3 s: what decides is the order of starts, not how busy the machine
    // is. On the embedded stack the free ones start while the floods are submitted (two
    // at a time, one class waiting then), so each must last the submissions out.
    let slow = json!({ "kind": "copywriting", "prompt": "x", "params": { "simulate": { "step_ms": 3000 } } });
    let mut free = Vec::new();
    for _ in 0..40 {
        free.push(tasks::submit_id(&app, &free_key, slow.clone()).await);
    }
    let mut members = Vec::new();
    for _ in 0..5 {
        members.push(tasks::submit_id(&app, &member_key, work()).await);
    }
    // On RabbitMQ the consumers start now, at the stored concurrency.
    app.start_consumers();
    let ended = |ids: &[String], rows: &[task::Model]| {
        rows.iter()
            .filter(|t| ids.contains(&t.id) && t.finished_at.is_some())
            .count()
    };
    let began = Instant::now();
    let free_waiting = loop {
        let rows = task::Entity::find()
            .filter(task::Column::Id.is_in(free.iter().chain(&members).cloned()))
            .all(&app.platform.db)
            .await
            .unwrap();
        if ended(&members, &rows) == members.len() {
            break rows
                .iter()
                .filter(|t| free.contains(&t.id) && t.started_at.is_none())
                .count();
        }
        assert!(
            began.elapsed() < Duration::from_secs(40),
            "the member's tasks did not finish: {} of 5, free finished {}",
            ended(&members, &rows),
            ended(&free, &rows)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!(
        "member's 5 done after {:?}; free waiting {free_waiting} of 40",
        began.elapsed()
    );
    assert_eq!(app.platform.tally.prefetch("ai.short"), Some(2));
    assert!(
        free_waiting >= 30,
        "the member waited behind the free flood: {free_waiting} of 40 free tasks still wait"
    );
    done(env, app).await;
}
