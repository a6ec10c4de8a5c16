//! The `canary.ping` consumer: stamps the ping's row with its arrival. A malformed ping
//! is dead-lettered with the reason; a redelivered one changes nothing.

use async_trait::async_trait;

use super::messages::Ping;
use super::store::{self, Received};
use crate::broker::Envelope;
use crate::consumer::{Context, Handler, HandlerError};

pub struct PingHandler;

#[async_trait]
impl Handler for PingHandler {
    async fn handle(&self, ctx: &Context, message: &Envelope) -> Result<(), HandlerError> {
        let ping = Ping::parse(message).map_err(HandlerError::permanent)?;
        match store::receive(&ctx.db, &ping, chrono::Utc::now())
            .await
            .map_err(HandlerError::transient)?
        {
            Received::Stamped(ms) => {
                metrics::histogram!("conveyor_canary_round_trip_seconds")
                    .record(ms as f64 / 1000.0);
            }
            Received::Already => {}
        }
        Ok(())
    }
}
