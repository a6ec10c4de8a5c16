//! The events fan-out: one server-named queue per listening process.

use futures::StreamExt as _;
use lapin::Channel;
use lapin::options::{BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;

use super::Inner;
use super::err;
use crate::broker::{BrokerError, FanOut};

/// Binds a server-named exclusive queue to the events exchange and starts consuming it.
pub(super) async fn bind_events(inner: &Inner) -> Result<(Channel, lapin::Consumer), BrokerError> {
    inner
        .consumer_channel("binding the events queue", |ch| bind_events_on(inner, ch))
        .await
}

async fn bind_events_on(
    inner: &Inner,
    ch: Channel,
) -> Result<(Channel, lapin::Consumer), BrokerError> {
    let q = ch
        .queue_declare(
            "".into(),
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .map_err(err)?;
    ch.queue_bind(
        q.name().clone(),
        inner.topology.events_exchange().as_str().into(),
        "".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .map_err(err)?;
    let consumer = ch
        .basic_consume(
            q.name().clone(),
            "".into(),
            BasicConsumeOptions {
                no_ack: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .map_err(err)?;
    Ok((ch, consumer))
}

/// Forwards events until the receiver goes away (Ok) or the channel fails (Err).
pub(super) async fn forward_events(
    (ch, mut consumer): (Channel, lapin::Consumer),
    tx: &tokio::sync::mpsc::Sender<FanOut>,
) -> Result<(), BrokerError> {
    while let Some(d) = consumer.next().await {
        let d = d.map_err(err)?;
        let message = FanOut {
            topic: d.routing_key.to_string(),
            body: d.data,
        };
        if tx.send(message).await.is_err() {
            let _ = ch.close(200, "listener gone".into()).await;
            return Ok(());
        }
    }
    Err(BrokerError::Connection("event consumer ended".into()))
}
