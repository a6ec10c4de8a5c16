//! The `payments.apply` consumer: applies one verified event, once. The broker-down
//! fallback ([`super::jobs`]) applies through the same [`Payments::apply`].

use std::sync::Arc;

use async_trait::async_trait;

use super::messages::ApplyMessage;
use super::service::Payments;
use super::store::Applied;
use crate::broker::Envelope;
use crate::consumer::{Context, Handler, HandlerError};

pub struct ApplyHandler {
    pub payments: Arc<Payments>,
}

#[async_trait]
impl Handler for ApplyHandler {
    async fn handle(&self, _: &Context, message: &Envelope) -> Result<(), HandlerError> {
        let id = ApplyMessage::from_envelope(message)?.event;
        match self
            .payments
            .apply(id)
            .await
            .map_err(HandlerError::transient)?
        {
            Applied::NoSuchEvent => Err(HandlerError::permanent(format!("no payment event {id}"))),
            _ => Ok(()),
        }
    }
}
