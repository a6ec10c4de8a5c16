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
        // Each message's answer, settled below for those that name an event (`at`:
        // their places, `ids`: their events).
        let mut answers = Vec::with_capacity(messages.len());
        let (mut at, mut ids) = (Vec::new(), Vec::new());
        for (i, m) in messages.iter().enumerate() {
            answers.push(ApplyMessage::from_envelope(m).map(|a| {
                at.push(i);
                ids.push(a.event);
            }));
        }
        // The lot in one transaction. If anything in it fails (a deadlock with another
        // batch, say), no answers: the runtime runs each message again alone, so a
        // failure costs only its own event a retry.
        let applied = match self.payments.apply_many(&ids).await {
            Ok(applied) => applied,
            Err(e) if messages.len() > 1 => {
                tracing::debug!(error = %e, size = messages.len(), "a payments batch failed as a whole");
                return Vec::new();
            }
            Err(e) => return vec![Err(HandlerError::transient(e))],
        };
        for ((i, id), a) in at.into_iter().zip(ids).zip(applied) {
            if a == Applied::NoSuchEvent {
                answers[i] = Err(HandlerError::permanent(format!("no payment event {id}")));
            }
        }
        answers
    }
}
