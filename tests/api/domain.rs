//! A domain defined only here, registered through the same mechanism as the real ones
//! (`Application::build_with(settings, &[.., &PROBE])`): one queue, one route, one live
//! stream kind, built with the contract's required part only (name, group, queues,
//! install) and the OpenAPI setter. `POST /v1/probes` writes a message through the
//! outbox; the consumer marks the probe done and publishes its event; a WebSocket
//! subscriber of the `probe` stream sees it. If this works, a new domain needs nothing
//! outside its folder but the registry line (plus a migration and a config section when
//! it stores and configures things).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use async_trait::async_trait;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use conveyor::api::{AuthUser, Core};
use conveyor::broker::{DelaySpec, Envelope, QueueSpec, Target};
use conveyor::consumer::{Context, Handler, HandlerError, Worker};
use conveyor::domains::{Domain, Installed};
use conveyor::error::ApiError;
use conveyor::live::{Event, Snapshot, Source};
use conveyor::platform::Platform;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use sea_orm::{DatabaseConnection, DbErr, TransactionTrait as _};
use serde_json::{Value, json};

use crate::helpers::*;

pub const PROBE_WORK: QueueSpec = QueueSpec::new("probe.work", "probe", "test domain work")
    .prefetch(4)
    .max_attempts(3);

pub static PROBE: Domain = Domain::new("probe", "probe", &[&PROBE_WORK], probe_install)
    .openapi(<ProbeDoc as utoipa::OpenApi>::openapi);

/// The probes' store: id → (owner, done). In memory: the test domain has no table.
static PROBES: LazyLock<Mutex<HashMap<String, (String, bool)>>> = LazyLock::new(Default::default);

fn probe_install(_: &Platform) -> BoxFuture<'_, anyhow::Result<Installed>> {
    let installed = Installed::default()
        .handler(&PROBE_WORK, Worker::One(Arc::new(ProbeHandler)))
        .stream(Arc::new(ProbeStream))
        .routes(|core: Core| {
            let router = axum::Router::new()
                .route("/v1/probes", post(create))
                .with_state(core);
            async move { Ok(router) }.boxed()
        });
    async move { Ok(installed) }.boxed()
}

#[derive(utoipa::OpenApi)]
#[openapi(paths(create))]
struct ProbeDoc;

/// `POST /v1/probes`: a probe for the caller, done by the consumer.
#[utoipa::path(post, path = "/v1/probes", tag = "probe", security(("api_key" = [])),
    responses((status = 202, description = "Accepted", body = Object)))]
async fn create(
    State(core): State<Core>,
    AuthUser(user): AuthUser,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let id = uuid::Uuid::now_v7().to_string();
    PROBES
        .lock()
        .unwrap()
        .insert(id.clone(), (user.id.clone(), false));
    let txn = core.db.begin().await?;
    let message = Envelope::new("probe.run", json!({ "id": id, "owner": user.id }));
    conveyor::outbox::enqueue(&txn, Target::Queue(&PROBE_WORK), &message, 65536)
        .await
        .map_err(|e| ApiError::internal(e.into()))?;
    txn.commit().await?;
    core.relay.notify();
    Ok((StatusCode::ACCEPTED, Json(json!({ "id": id }))))
}

struct ProbeHandler;

#[async_trait]
impl Handler for ProbeHandler {
    async fn handle(&self, ctx: &Context, message: &Envelope) -> Result<(), HandlerError> {
        let id = message.payload["id"]
            .as_str()
            .ok_or_else(|| HandlerError::permanent("no id"))?;
        let owner = {
            let mut probes = PROBES.lock().unwrap();
            let Some(entry) = probes.get_mut(id) else {
                return Err(HandlerError::permanent("unknown probe"));
            };
            entry.1 = true;
            entry.0.clone()
        };
        conveyor::live::publish(ctx.broker.as_ref(), &[done_event(id, &owner)]).await;
        Ok(())
    }
}

fn done_event(id: &str, owner: &str) -> Event {
    let data = json!({ "probe_id": id, "state": "done" });
    Event::new("probe", id, owner, 1, data).terminal(true)
}

struct ProbeStream;

#[async_trait]
impl Source for ProbeStream {
    fn kind(&self) -> &'static str {
        "probe"
    }

    async fn snapshot(&self, _: &DatabaseConnection, id: &str) -> Result<Option<Snapshot>, DbErr> {
        Ok(PROBES
            .lock()
            .unwrap()
            .get(id)
            .map(|(owner, done)| Snapshot {
                owner: owner.clone(),
                seq: i64::from(*done),
                terminal: *done,
                view: json!({ "id": id, "state": if *done { "done" } else { "waiting" } }),
            }))
    }

    async fn events_after(
        &self,
        _: &DatabaseConnection,
        id: &str,
        owner: &str,
        after: i64,
    ) -> Result<Vec<Event>, DbErr> {
        let done = PROBES.lock().unwrap().get(id).is_some_and(|p| p.1);
        Ok(if done && after < 1 {
            vec![done_event(id, owner)]
        } else {
            vec![]
        })
    }
}

/// A domain whose queue nothing consumes: messages published there wait (for gauges).
pub const IDLE_WORK: QueueSpec =
    QueueSpec::new("idle.work", "idle", "test queue without a consumer")
        .prefetch(1)
        .max_attempts(1);

/// A 30-minute business timer feeding the idle queue.
pub const IDLE_TIMEOUT: DelaySpec = DelaySpec {
    key: "idle.timeout",
    delay: std::time::Duration::from_secs(30 * 60),
    target: &IDLE_WORK,
    purpose: "test timer",
};

/// Nothing but queues (no handler: messages wait) and a delay.
pub static IDLE: Domain =
    Domain::new("idle", "idle", &[&IDLE_WORK], idle_install).delays(&[&IDLE_TIMEOUT]);

crate::on_every_backend!(a_domain_registered_from_outside_works_end_to_end);

async fn a_domain_registered_from_outside_works_end_to_end(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "test_domain").await else {
        return;
    };
    let app = spawn_app_with(&env, &[&PROBE]).await;
    // With RabbitMQ the API process runs no consumers: run the probe group as
    // `conveyor consume probe` would.
    let consumer = backend.is_real().then(|| {
        let (p, token) = (app.platform.clone(), app.shutdown.clone());
        tokio::spawn(async move {
            let groups = ["probe".to_owned()];
            conveyor::app::run_workers(&p, &[&PROBE], Some(&groups), token).await
        })
    });
    let (user, key) = app.user("prober", 0).await;
    // The route is served and documented.
    let doc: Value = app
        .client
        .get(app.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["paths"]["/v1/probes"]["post"].is_object(), "documented");
    let mut ws = crate::live::connect(&app, &key).await;
    let r = app
        .client
        .post(app.url("/v1/probes"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    crate::live::send(
        &mut ws,
        json!({ "op": "subscribe", "stream": "probe", "id": id }),
    )
    .await;
    // A snapshot (waiting or already done), then the done event unless the snapshot
    // was already terminal; the subscription ends on the terminal event.
    let first = crate::live::next(&mut ws).await;
    assert_eq!(first["type"], "snapshot", "{first}");
    assert_eq!(first["stream"], "probe");
    assert_eq!(first["probe"]["id"], id.as_str());
    if first["probe"]["state"] == "waiting" {
        let ev = crate::live::next(&mut ws).await;
        assert_eq!(ev["type"], "event", "{ev}");
        assert_eq!(ev["stream"], "probe");
        assert_eq!(ev["probe_id"], id.as_str());
        assert_eq!(ev["state"], "done");
    }
    let end = crate::live::next(&mut ws).await;
    assert_eq!(end["type"], "unsubscribed", "{end}");
    assert_eq!(end["reason"], "terminal");
    // Another user cannot follow it, and an unknown kind is named as such.
    let (_, other) = app.user("other", 0).await;
    let mut ws2 = crate::live::connect(&app, &other).await;
    crate::live::send(
        &mut ws2,
        json!({ "op": "subscribe", "stream": "probe", "id": id }),
    )
    .await;
    assert_eq!(crate::live::next(&mut ws2).await["code"], "not_found");
    crate::live::send(
        &mut ws2,
        json!({ "op": "subscribe", "stream": "nope", "id": id }),
    )
    .await;
    assert_eq!(crate::live::next(&mut ws2).await["code"], "unknown_stream");
    assert_eq!(
        PROBES.lock().unwrap().get(&id).map(|p| p.0.clone()),
        Some(user.id)
    );
    let platform = app.stop().await;
    if let Some(c) = consumer {
        let _ = c.await;
    }
    env.cleanup(Some(&platform)).await;
}

fn idle_install(_: &Platform) -> BoxFuture<'_, anyhow::Result<Installed>> {
    async { Ok(Installed::default()) }.boxed()
}

/// Every queue a domain of the build declares has a handler among its own (a queue
/// without one would fill up with nobody to drain it).
#[tokio::test]
async fn every_declared_queue_has_a_handler() {
    let Some(env) = TestEnv::new(Backend::Embedded, "queues_have_handlers").await else {
        return;
    };
    let platform = env.platform().await;
    for domain in conveyor::domains::ALL {
        let handled: Vec<&str> = (domain.install)(&platform)
            .await
            .unwrap()
            .handlers
            .iter()
            .map(|(q, _)| q.key)
            .collect();
        for q in domain.queues {
            assert!(
                handled.contains(&q.key),
                "{}: no handler for {}",
                domain.name,
                q.key
            );
            assert_eq!(
                q.group, domain.group,
                "{}: {} in another group",
                domain.name, q.key
            );
        }
        for d in domain.delays {
            assert!(
                domain.queues.iter().any(|q| q.key == d.target.key),
                "{}: delay {} feeds a queue of another domain",
                domain.name,
                d.key
            );
        }
    }
    env.cleanup(Some(&platform)).await;
}
