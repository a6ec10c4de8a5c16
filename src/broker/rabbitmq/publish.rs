//! Publishing: persistent messages with `mandatory`, confirms awaited as a window.

use std::time::Duration;

use lapin::options::BasicPublishOptions;
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Confirmation};

use super::Inner;
use super::err;
use crate::broker::BrokerError;
use crate::broker::topology::Target;

impl Inner {
    pub(super) fn route(&self, target: Target) -> (String, String) {
        match target {
            Target::Queue(q) => (
                self.topology.work_exchange(),
                self.topology.queue(q).name.clone(),
            ),
            Target::Delay(d) => (
                self.topology.delay_exchange(),
                self.topology.delay(d).name.clone(),
            ),
        }
    }

    /// Publishes every message, then awaits all confirms together within the timeout.
    pub(super) async fn publish_all(&self, items: Vec<Publish>) -> Result<(), BrokerError> {
        let ch = self.publish_channel().await?;
        let result = self.publish_on(&ch, items).await;
        if matches!(
            result,
            Err(BrokerError::Connection(_)) | Err(BrokerError::ConfirmTimeout(_))
        ) {
            // The channel may be wedged (lapin#409): start afresh next time.
            self.forget_publisher().await;
        }
        result
    }

    async fn publish_on(&self, ch: &Channel, items: Vec<Publish>) -> Result<(), BrokerError> {
        let timeout = Duration::from_millis(self.settings.publish_timeout_ms);
        let work = async {
            let mut confirms = Vec::with_capacity(items.len());
            for item in &items {
                let mut props = BasicProperties::default()
                    .with_delivery_mode(2)
                    .with_content_type("application/json".into())
                    .with_message_id(item.message_id.as_str().into());
                if let Some(h) = &item.headers {
                    props = props.with_headers(h.clone());
                }
                let confirm = ch
                    .basic_publish(
                        item.exchange.as_str().into(),
                        item.routing_key.as_str().into(),
                        BasicPublishOptions {
                            mandatory: item.mandatory,
                            ..Default::default()
                        },
                        &item.body,
                        props,
                    )
                    .await
                    .map_err(err)?;
                confirms.push(confirm);
            }
            let results = futures::future::join_all(confirms).await;
            for (item, res) in items.iter().zip(results) {
                match res.map_err(err)? {
                    Confirmation::Ack(None) => {}
                    Confirmation::Ack(Some(_)) => {
                        return Err(BrokerError::Unroutable {
                            target: item.routing_key.clone(),
                        });
                    }
                    Confirmation::Nack(_) => {
                        return Err(BrokerError::Nacked {
                            target: item.routing_key.clone(),
                        });
                    }
                    Confirmation::NotRequested => {
                        return Err(BrokerError::Protocol("publisher confirms are off".into()));
                    }
                }
            }
            Ok(())
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| BrokerError::ConfirmTimeout(timeout))?
    }
}

pub(super) struct Publish {
    /// Unroutable is an error (work); events may have no listener.
    pub(super) mandatory: bool,
    pub(super) exchange: String,
    pub(super) routing_key: String,
    pub(super) message_id: String,
    pub(super) body: Vec<u8>,
    pub(super) headers: Option<FieldTable>,
}

/// The headers of a message sent in a trace: `traceparent` (W3C trace context over
/// AMQP), so a consumer in another language can continue the trace.
pub(super) fn trace_headers(traceparent: &str) -> FieldTable {
    let mut h = FieldTable::default();
    h.insert(crate::traces::TRACEPARENT.into(), long_str(traceparent));
    h
}

/// The `traceparent` header of a delivery, if it has one.
pub(super) fn traceparent_of(headers: Option<&FieldTable>) -> Option<String> {
    match headers?.inner().get(crate::traces::TRACEPARENT)? {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

pub(super) fn long_str(s: &str) -> AMQPValue {
    AMQPValue::LongString(s.into())
}

pub(super) fn ms(d: Duration) -> AMQPValue {
    AMQPValue::LongInt(i32::try_from(d.as_millis()).unwrap_or(i32::MAX))
}
