//! The `payments.apply` consumer: applies one verified event, once.

use async_trait::async_trait;

use super::store::{self, Applied};
use crate::broker::Envelope;
use crate::consumer::{Context, Handler, HandlerError};

/// Envelope kind of an apply message: `{"event": <inbox row id>}`.
pub const APPLY_EVENT: &str = "payments.event.apply";

pub struct ApplyHandler;

#[async_trait]
impl Handler for ApplyHandler {
    async fn handle(&self, ctx: &Context, message: &Envelope) -> Result<(), HandlerError> {
        let id = message.payload["event"]
            .as_i64()
            .ok_or_else(|| HandlerError::permanent("payload needs an integer `event`"))?;
        match store::apply(&ctx.db, id)
            .await
            .map_err(HandlerError::transient)?
        {
            Applied::Granted { user_id, credits } => {
                metrics::counter!("conveyor_payments_granted_total").increment(1);
                metrics::counter!("conveyor_credits_total", "effect" => "granted")
                    .increment(credits.max(0) as u64);
                tracing::info!(event = id, user = %user_id, credits, "payment applied");
                Ok(())
            }
            Applied::AlreadyPaid | Applied::Before => Ok(()),
            Applied::NoSuchEvent => Err(HandlerError::permanent(format!("no payment event {id}"))),
        }
    }
}
