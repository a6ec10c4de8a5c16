//! Webhooks' listener on the event seam (`crate::events`): every domain records its
//! events in the transaction of the change; this listener, registered at install, hears
//! them there. The tenants' endpoints that want each event are read in that transaction
//! (one indexed query; nothing more for a tenant without endpoints), and the event, one
//! delivery per endpoint and their messages (through the outbox) are written with the
//! change: committed together or not at all, so no final state is missed and none is
//! reported twice. Webhooks owns no business event: it offers tenants the public types
//! the domains declare, and declares only its own notice ([`ENDPOINT_DISABLED`]).

use std::collections::HashMap;

use chrono::Utc;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect,
};
use serde_json::{Value, json};

use super::entity::{DeliveryStatus, delivery, endpoint, event};
use super::messages::Deliver;
use super::queues::WEBHOOKS_DELIVER;
use crate::broker::Target;
use crate::events::{Event, EventError, EventType, Listener, Then, Txn, Wants};
use crate::outbox;

/// The notice an endpoint's tenant gets (at its other endpoints) when the platform
/// disables one that failed for days.
pub const ENDPOINT_DISABLED: EventType = EventType::new(
    "webhook.endpoint_disabled",
    "one of the tenant's endpoints was disabled after failing for days",
);

/// What `POST /v1/webhooks/endpoints/{id}/test` sends: to that endpoint alone, never
/// through the seam (so not declared: no endpoint subscribes to it).
pub const TEST_EVENT: EventType =
    EventType::new("webhook.test", "a test event an endpoint's owner asked for");

/// A body larger than this leaves the `result` out (the receiver reads it from the API):
/// the events table holds text of at most 64 KiB on MariaDB.
const MAX_PAYLOAD_BYTES: usize = 60_000;

/// Webhooks' listener: built at install from `[webhooks]`.
pub struct Deliveries {
    /// How long a new delivery is retried (`webhooks.give_up_after_secs`).
    pub give_up: chrono::Duration,
}

#[async_trait::async_trait]
impl Listener for Deliveries {
    type Wants = Listeners;

    fn name(&self) -> &'static str {
        "webhooks"
    }

    async fn interest(&self, txn: &Txn<'_>, users: &[&str]) -> Result<Listeners, EventError> {
        Ok(listeners(txn, users.to_vec()).await?)
    }

    async fn hear(
        &self,
        txn: &Txn<'_>,
        wants: &Listeners,
        events: &[&Event],
        _: &mut Then<'_>,
    ) -> Result<(), EventError> {
        record_for(txn, self.give_up, wants, events).await
    }
}

/// Whether an endpoint subscribed to `types` (empty: every type) wants `event_type`.
fn wants(types: &[String], event_type: &str) -> bool {
    types.is_empty() || types.iter().any(|t| t == event_type)
}

/// The enabled endpoints of some tenants, with the event types each wants (read once,
/// in the recorder's transaction): the webhooks' part of the seam's interest check, so
/// a recorder with costly event bodies builds one only for a tenant whose endpoint wants
/// it, and a tenant without endpoints costs this one query and nothing else.
#[derive(Debug, Default)]
pub struct Listeners {
    /// Per tenant: (endpoint id, the types it wants).
    by_user: HashMap<String, Vec<(String, Vec<String>)>>,
}

impl Listeners {
    fn targets<'a>(&'a self, user: &str, event_type: &'a str) -> impl Iterator<Item = &'a str> {
        self.by_user
            .get(user)
            .into_iter()
            .flatten()
            .filter(move |(_, types)| wants(types, event_type))
            .map(|(id, _)| id.as_str())
    }
}

impl Wants for Listeners {
    /// Whether any endpoint of `user` wants `kind`; webhooks deliver public types only.
    fn wants(&self, user: &str, kind: &EventType) -> bool {
        kind.public && self.targets(user, kind.name).next().is_some()
    }

    fn is_empty(&self) -> bool {
        self.by_user.is_empty()
    }

    fn merge(&mut self, more: Self) {
        for (user, endpoints) in more.by_user {
            self.by_user.entry(user).or_insert(endpoints);
        }
    }
}

/// The enabled endpoints of `users`.
pub async fn listeners(
    txn: &impl ConnectionTrait,
    mut users: Vec<&str>,
) -> Result<Listeners, DbErr> {
    if users.is_empty() {
        return Ok(Listeners::default());
    }
    users.sort_unstable();
    users.dedup();
    let endpoints: Vec<(String, String, String)> = endpoint::Entity::find()
        .select_only()
        .column(endpoint::Column::Id)
        .column(endpoint::Column::UserId)
        .column(endpoint::Column::EventTypes)
        .filter(endpoint::Column::UserId.is_in(users))
        .filter(endpoint::Column::Enabled.eq(true))
        .into_tuple()
        .all(txn)
        .await?;
    let mut out = Listeners::default();
    for (id, user, types) in endpoints {
        let types: Vec<String> = serde_json::from_str(&types).unwrap_or_default();
        out.by_user.entry(user).or_default().push((id, types));
    }
    Ok(out)
}

/// The body of an event: Standard Webhooks' recommended shape.
fn payload(event_type: &str, data: &Value) -> String {
    let at = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let body = json!({ "type": event_type, "timestamp": at, "data": data });
    let text = body.to_string();
    if text.len() <= MAX_PAYLOAD_BYTES {
        return text;
    }
    let mut data = data.clone();
    if let Some(o) = data.as_object_mut() {
        o.insert("result".into(), Value::Null);
        o.insert("result_omitted".into(), Value::Bool(true));
    }
    json!({ "type": event_type, "timestamp": at, "data": data }).to_string()
}

/// Records `events` for those of `listeners` that want them, each delivery retried for
/// `give_up`.
async fn record_for(
    txn: &impl ConnectionTrait,
    give_up: chrono::Duration,
    listeners: &Listeners,
    events: &[&Event],
) -> Result<(), EventError> {
    let plan: Vec<(&Event, Vec<&str>)> = events
        .iter()
        .filter(|e| e.kind.public)
        .map(|e| {
            let targets: Vec<&str> = listeners.targets(&e.user_id, e.kind.name).collect();
            (*e, targets)
        })
        .filter(|(_, targets)| !targets.is_empty())
        .collect();
    insert(txn, give_up, &plan).await.map(|_| ())
}

/// Writes the events of `plan`, a delivery for each of their endpoints (retried for
/// `give_up`), and the deliveries' messages; the (event, delivery) ids written.
pub(super) async fn insert(
    txn: &impl ConnectionTrait,
    give_up: chrono::Duration,
    plan: &[(&Event, Vec<&str>)],
) -> Result<Vec<(String, String)>, EventError> {
    if plan.is_empty() {
        return Ok(Vec::new());
    }
    let mut written = Vec::new();
    let now = Utc::now();
    let give_up = now + give_up;
    let mut events = Vec::with_capacity(plan.len());
    let mut deliveries = Vec::new();
    let mut messages = Vec::new();
    for (e, targets) in plan {
        let event_id = format!("evt_{}", uuid::Uuid::now_v7().simple());
        events.push(event::ActiveModel {
            id: Set(event_id.clone()),
            user_id: Set(e.user_id.clone()),
            event_type: Set(e.kind.name.to_owned()),
            payload: Set(payload(e.kind.name, &e.data)),
            created_at: Set(now),
        });
        for endpoint_id in targets {
            let id = uuid::Uuid::now_v7().to_string();
            written.push((event_id.clone(), id.clone()));
            messages.push((
                Target::Queue(&WEBHOOKS_DELIVER),
                Deliver {
                    delivery_id: id.clone(),
                    attempts: 0,
                }
                .envelope(),
            ));
            deliveries.push(delivery::ActiveModel {
                id: Set(id),
                event_id: Set(event_id.clone()),
                endpoint_id: Set((*endpoint_id).to_owned()),
                user_id: Set(e.user_id.clone()),
                event_type: Set(e.kind.name.to_owned()),
                status: Set(DeliveryStatus::Pending.into()),
                attempts: Set(0),
                next_attempt_at: Set(Some(now)),
                give_up_at: Set(give_up),
                last_status: Set(None),
                last_response: Set(None),
                last_latency_ms: Set(None),
                last_error: Set(None),
                created_at: Set(now),
                delivered_at: Set(None),
            });
        }
    }
    event::Entity::insert_many(events)
        .exec_without_returning(txn)
        .await?;
    delivery::Entity::insert_many(deliveries)
        .exec_without_returning(txn)
        .await?;
    // Ids only: far below any payload limit.
    outbox::enqueue_many(txn, &messages, usize::MAX)
        .await
        .map_err(|e| EventError::Listener {
            listener: "webhooks",
            message: e.to_string(),
        })?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_list_wants_everything_and_a_list_only_itself() {
        let failed = vec!["task.failed".to_owned()];
        assert!(wants(&[], "task.failed"));
        assert!(wants(&failed, "task.failed"));
        assert!(!wants(&failed, "task.succeeded"));
    }

    #[test]
    fn an_endpoint_of_every_type_gets_the_public_ones_only() {
        const INNER: EventType = EventType::internal("thing.inner", "for listeners");
        let mut found = Listeners::default();
        found
            .by_user
            .insert("ada".into(), vec![("e1".into(), Vec::new())]);
        let mut more = Listeners::default();
        more.by_user.insert(
            "bob".into(),
            vec![("e2".into(), vec![ENDPOINT_DISABLED.name.to_owned()])],
        );
        found.merge(more);
        assert!(found.wants("ada", &ENDPOINT_DISABLED));
        assert!(!found.wants("ada", &INNER), "internal: never delivered");
        assert!(found.wants("bob", &ENDPOINT_DISABLED));
        assert!(!found.wants("bob", &TEST_EVENT), "not subscribed");
        assert!(!found.wants("carol", &ENDPOINT_DISABLED));
    }

    #[test]
    fn a_large_result_is_left_out_of_the_body() {
        let big = json!({ "id": "t1", "result": { "text": "x".repeat(70_000) } });
        let body: Value =
            serde_json::from_str(&payload("task.succeeded", &big)).unwrap_or_default();
        assert_eq!(body["data"]["result"], Value::Null);
        assert_eq!(body["data"]["result_omitted"], true);
        assert_eq!(body["data"]["id"], "t1");
        let small: Value = serde_json::from_str(&payload("task.failed", &json!({ "id": "t2" })))
            .unwrap_or_default();
        assert_eq!(
            (small["type"].as_str(), small["data"]["id"].as_str()),
            (Some("task.failed"), Some("t2"))
        );
    }
}
