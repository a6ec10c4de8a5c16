//! The delivery consumer: one attempt per `webhooks.deliver` message. A delivery that
//! moved on (answered, given up, or past this attempt) is left alone; an endpoint whose
//! slots in this process are all busy (a slow server) makes its delivery step aside
//! without an attempt counted, so it never holds the slots other tenants' deliveries
//! need. After the attempt, in one transaction: the attempt in the log, the delivery's
//! new state (guarded by its attempt count), the next attempt on its delay queue
//! (through the outbox) or the end (answered 2xx, or given up), and the endpoint's
//! health (failing since when; disabled after failing for days).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter,
    TransactionTrait,
};
use tokio::sync::Semaphore;

use super::entity::{DeliveryStatus, attempt, delivery, endpoint, event};
use super::messages::Deliver;
use super::queues::retry_delay;
use super::sender::{Attempt, Sender};
use super::settings::WebhookSettings;
use crate::broker::{Envelope, Target};
use crate::consumer::{Context, Handler, HandlerError};
use crate::events::{Event, Events};
use crate::outbox::{self, Relay};

pub struct DeliveryHandler {
    pub sender: Sender,
    pub settings: WebhookSettings,
    pub relay: Relay,
    /// Where a disabled endpoint's notice is recorded.
    pub events: Events,
    /// Each endpoint's slots in this process.
    slots: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl DeliveryHandler {
    pub fn new(sender: Sender, settings: WebhookSettings, relay: Relay, events: Events) -> Self {
        DeliveryHandler {
            sender,
            settings,
            relay,
            events,
            slots: Mutex::new(HashMap::new()),
        }
    }

    fn slots_of(&self, endpoint: &str) -> Arc<Semaphore> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots
            .entry(endpoint.to_owned())
            .or_insert_with(|| {
                Arc::new(Semaphore::new(
                    self.settings.per_endpoint_concurrency as usize,
                ))
            })
            .clone()
    }
}

fn db(e: DbErr) -> HandlerError {
    HandlerError::transient(format!("database: {e}"))
}

#[async_trait]
impl Handler for DeliveryHandler {
    async fn handle(&self, ctx: &Context, message: &Envelope) -> Result<(), HandlerError> {
        let msg = Deliver::parse(message).map_err(HandlerError::Permanent)?;
        let Some(d) = delivery::Entity::find_by_id(msg.delivery_id.clone())
            .one(&ctx.db)
            .await
            .map_err(db)?
        else {
            return Err(HandlerError::permanent(format!(
                "no delivery {}",
                msg.delivery_id
            )));
        };
        if d.status != DeliveryStatus::Pending || d.attempts != msg.attempts {
            return Ok(());
        }
        let to = endpoint::Entity::find_by_id(d.endpoint_id.clone())
            .one(&ctx.db)
            .await
            .map_err(db)?;
        let Some(to) = to.filter(|e| e.enabled) else {
            return self
                .abandon(ctx, &d, "the endpoint was disabled or deleted")
                .await;
        };
        let Some(ev) = event::Entity::find_by_id(d.event_id.clone())
            .one(&ctx.db)
            .await
            .map_err(db)?
        else {
            return Err(HandlerError::permanent(format!("no event {}", d.event_id)));
        };
        let slots = self.slots_of(&to.id);
        let wait = Duration::from_millis(self.settings.busy_wait_ms);
        let Ok(Ok(_slot)) = tokio::time::timeout(wait, slots.acquire_owned()).await else {
            metrics::counter!("conveyor_webhook_deferred_total").increment(1);
            return Err(HandlerError::Deferred(format!(
                "endpoint {} is busy ({} deliveries at once)",
                to.id, self.settings.per_endpoint_concurrency
            )));
        };
        let outcome = self.sender.send(&to, &ev).await;
        let result = if outcome.succeeded() {
            "delivered"
        } else {
            "failed"
        };
        metrics::counter!("conveyor_webhook_attempts_total", "result" => result).increment(1);
        metrics::histogram!("conveyor_webhook_attempt_seconds")
            .record(f64::from(outcome.latency_ms) / 1000.0);
        let txn = ctx.db.begin().await.map_err(db)?;
        if record(&txn, &d, &to, &outcome, self).await.map_err(db)? {
            txn.commit().await.map_err(db)?;
            self.relay.notify();
        } else {
            txn.rollback().await.map_err(db)?;
        }
        Ok(())
    }
}

impl DeliveryHandler {
    /// Ends a delivery that cannot be made (its endpoint is gone or disabled).
    async fn abandon(
        &self,
        ctx: &Context,
        d: &delivery::Model,
        why: &str,
    ) -> Result<(), HandlerError> {
        delivery::Entity::update_many()
            .col_expr(
                delivery::Column::Status,
                Expr::value(DeliveryStatus::Failed),
            )
            .col_expr(delivery::Column::LastError, Expr::value(why))
            .col_expr(
                delivery::Column::NextAttemptAt,
                Expr::value(Option::<chrono::DateTime<Utc>>::None),
            )
            .filter(delivery::Column::Id.eq(d.id.clone()))
            .filter(delivery::Column::Status.eq(DeliveryStatus::Pending))
            .exec(&ctx.db)
            .await
            .map_err(db)?;
        Ok(())
    }
}

/// Writes one attempt's outcome; `false` when the delivery had moved on meanwhile (a
/// repeated message): nothing is written then.
async fn record(
    txn: &impl ConnectionTrait,
    d: &delivery::Model,
    to: &endpoint::Model,
    outcome: &Attempt,
    handler: &DeliveryHandler,
) -> Result<bool, DbErr> {
    let now = Utc::now();
    let attempts = d.attempts + 1;
    let delivered = outcome.succeeded();
    let give_up = !delivered && now >= d.give_up_at;
    let next = (!delivered && !give_up).then(|| retry_delay(attempts));
    let status = match (delivered, next) {
        (true, _) => DeliveryStatus::Succeeded,
        (false, Some(_)) => DeliveryStatus::Pending,
        (false, None) => DeliveryStatus::Failed,
    };
    let next_at = next.map(|n| now + chrono::Duration::from_std(n.delay).unwrap_or_default());
    let updated = delivery::Entity::update_many()
        .col_expr(delivery::Column::Status, Expr::value(status))
        .col_expr(delivery::Column::Attempts, Expr::value(attempts))
        .col_expr(delivery::Column::NextAttemptAt, Expr::value(next_at))
        .col_expr(
            delivery::Column::LastStatus,
            Expr::value(outcome.status.map(i32::from)),
        )
        .col_expr(
            delivery::Column::LastResponse,
            Expr::value(outcome.response.clone()),
        )
        .col_expr(
            delivery::Column::LastLatencyMs,
            Expr::value(outcome.latency_ms),
        )
        .col_expr(
            delivery::Column::LastError,
            Expr::value(outcome.error.clone()),
        )
        .col_expr(
            delivery::Column::DeliveredAt,
            Expr::value(delivered.then_some(now)),
        )
        .filter(delivery::Column::Id.eq(d.id.clone()))
        .filter(delivery::Column::Status.eq(DeliveryStatus::Pending))
        .filter(delivery::Column::Attempts.eq(d.attempts))
        .exec(txn)
        .await?;
    if updated.rows_affected == 0 {
        return Ok(false);
    }
    attempt::Entity::insert(attempt::ActiveModel {
        delivery_id: Set(d.id.clone()),
        attempt: Set(attempts),
        at: Set(now),
        status_code: Set(outcome.status.map(i32::from)),
        response: Set(outcome.response.clone()),
        latency_ms: Set(outcome.latency_ms),
        error: Set(outcome.error.clone()),
    })
    .exec_without_returning(txn)
    .await?;
    if let Some(delay) = next {
        let message = Deliver {
            delivery_id: d.id.clone(),
            attempts,
        }
        .envelope();
        outbox::enqueue(txn, Target::Delay(delay), &message, usize::MAX)
            .await
            .map_err(|e| DbErr::Custom(e.to_string()))?;
    }
    health(txn, to, delivered, now, handler).await?;
    Ok(true)
}

/// The endpoint's health after an attempt: healthy again on a success; failing since its
/// first failure after one; disabled once it has failed for `disable_after_secs`.
async fn health(
    txn: &impl ConnectionTrait,
    to: &endpoint::Model,
    delivered: bool,
    now: chrono::DateTime<Utc>,
    handler: &DeliveryHandler,
) -> Result<(), DbErr> {
    let settings = &handler.settings;
    let update = endpoint::Entity::update_many().filter(endpoint::Column::Id.eq(to.id.clone()));
    if delivered {
        if to.failing_since.is_some() {
            update
                .col_expr(
                    endpoint::Column::FailingSince,
                    Expr::value(Option::<chrono::DateTime<Utc>>::None),
                )
                .exec(txn)
                .await?;
        }
        return Ok(());
    }
    let Some(since) = to.failing_since else {
        update
            .col_expr(endpoint::Column::FailingSince, Expr::value(Some(now)))
            .filter(endpoint::Column::FailingSince.is_null())
            .exec(txn)
            .await?;
        return Ok(());
    };
    let limit = chrono::Duration::seconds(settings.disable_after_secs as i64);
    if now - since >= limit && to.enabled {
        let why = format!(
            "every delivery failed since {} ({} s): disabled; enable it again when it answers",
            since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            settings.disable_after_secs
        );
        tracing::warn!(endpoint = %to.id, user = %to.user_id, "webhook endpoint disabled after failing for {} s", settings.disable_after_secs);
        metrics::counter!("conveyor_webhook_endpoints_disabled_total").increment(1);
        update
            .col_expr(endpoint::Column::Enabled, Expr::value(false))
            .col_expr(endpoint::Column::DisabledReason, Expr::value(why.clone()))
            .col_expr(endpoint::Column::UpdatedAt, Expr::value(now))
            .exec(txn)
            .await?;
        // The notice, to the tenant's other endpoints (this one is disabled now).
        let notice = Event::new(
            to.user_id.clone(),
            &super::listener::ENDPOINT_DISABLED,
            serde_json::json!({
                "endpoint_id": to.id,
                "url": to.url,
                "failing_since": since,
                "reason": why,
            }),
        );
        handler.events.record(txn, vec![notice]).await?;
    }
    Ok(())
}
