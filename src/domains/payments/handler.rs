//! The `payments.apply` consumer: applies verified events, each once, a batch in one
//! transaction. The broker-down fallback ([`super::jobs`]) applies through the same
//! [`Payments::apply`].

use std::sync::Arc;

use async_trait::async_trait;

use super::messages::ApplyMessage;
use super::service::Payments;
use super::store::Applied;
use crate::broker::Envelope;
use crate::consumer::{BatchHandler, Context, HandlerError};

pub struct ApplyHandler {
    pub payments: Arc<Payments>,
}

#[async_trait]
impl BatchHandler for ApplyHandler {
    async fn handle_batch(
        &self,
        _: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        let parsed: Vec<Result<i64, HandlerError>> = messages
            .iter()
            .map(|m| ApplyMessage::from_envelope(m).map(|a| a.event))
            .collect();
        let ids: Vec<i64> = parsed
            .iter()
            .filter_map(|p| p.as_ref().ok().copied())
            .collect();
        // The lot in one transaction; if anything in it fails, each on its own, so a
        // failure (or a deadlock with another batch) costs only its own event a retry.
        let mut applied = match self.payments.apply_many(&ids).await {
            Ok(all) => all.into_iter().map(Ok).collect(),
            Err(_) => {
                let mut one_by_one = Vec::with_capacity(ids.len());
                for id in &ids {
                    one_by_one.push(self.payments.apply(*id).await);
                }
                one_by_one
            }
        }
        .into_iter();
        parsed
            .into_iter()
            .map(|p| {
                let id = p?;
                match applied.next() {
                    Some(Ok(Applied::NoSuchEvent)) => {
                        Err(HandlerError::permanent(format!("no payment event {id}")))
                    }
                    Some(Ok(_)) => Ok(()),
                    Some(Err(e)) => Err(HandlerError::transient(e)),
                    None => Err(HandlerError::transient(format!("event {id} not applied"))),
                }
            })
            .collect()
    }
}
