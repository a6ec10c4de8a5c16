//! The cluster bus: small typed messages every process hears, each on a topic of its own
//! (live events, API key notices, process reports), carried by the broker's fan-out.
//!
//! A [`Topic`] names the topic and the type it carries; the module that owns the type
//! declares it. [`publish`] sends from any process; a [`Bus`] is one process's listener:
//! it reads the fan-out once and hands each message to its topic's handler, decoding it
//! once for all of that topic's subscribers ([`Bus::subscribe`]), or passing the bytes
//! to a handler that decodes itself ([`Bus::on`], for a topic whose decoding is worth
//! skipping when nobody listens). A message of a topic nobody handles is dropped.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

use crate::broker::{Broker, BrokerError};

/// A topic: its name on the wire and the type its messages decode to.
pub struct Topic<T> {
    pub name: &'static str,
    /// Messages a slow subscriber may fall behind before it is told it lagged.
    pub backlog: usize,
    _carries: PhantomData<fn() -> T>,
}

impl<T> Topic<T> {
    pub const fn new(name: &'static str, backlog: usize) -> Self {
        Topic {
            name,
            backlog,
            _carries: PhantomData,
        }
    }
}

/// Sends `messages` on `topic` to every listening process (this one included), as one
/// broker batch.
pub async fn publish<T: Serialize>(
    broker: &dyn Broker,
    topic: &Topic<T>,
    messages: &[T],
) -> Result<(), BrokerError> {
    let bodies = messages
        .iter()
        .map(serde_json::to_vec)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BrokerError::Protocol(e.to_string()))?;
    broker.publish_events(topic.name, bodies).await
}

/// What a topic's message is handed to.
type Handler = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// One process's listener on the fan-out.
#[derive(Clone)]
pub struct Bus {
    handlers: Arc<Mutex<HashMap<&'static str, Handler>>>,
    /// Typed senders by topic (one per topic, shared by its subscribers).
    senders: Arc<Mutex<HashMap<&'static str, Box<dyn std::any::Any + Send + Sync>>>>,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus").finish_non_exhaustive()
    }
}

impl Bus {
    /// Starts listening; returns once the fan-out is bound, so nothing published after
    /// this returns can miss this process.
    pub async fn start(broker: &dyn Broker) -> Result<Self, BrokerError> {
        let bus = Bus {
            handlers: Arc::default(),
            senders: Arc::default(),
        };
        let mut rx = broker.subscribe_events().await?;
        let handlers = bus.handlers.clone();
        tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                let handler = handlers
                    .lock()
                    .ok()
                    .and_then(|h| h.get(message.topic.as_str()).cloned());
                match handler {
                    Some(handle) => handle(&message.body),
                    None => tracing::debug!(topic = %message.topic, "a bus message nobody handles"),
                }
            }
        });
        Ok(bus)
    }

    /// Hands every message of `topic` to `handle`, as bytes (it decodes what it needs).
    /// One handler per topic: a second replaces the first.
    pub fn on<T>(&self, topic: &Topic<T>, handle: impl Fn(&[u8]) + Send + Sync + 'static) {
        if let Ok(mut handlers) = self.handlers.lock() {
            handlers.insert(topic.name, Arc::new(handle));
        }
    }

    /// The messages of `topic`, each decoded once for every subscriber. A message that
    /// does not decode is logged and skipped.
    pub fn subscribe<T>(&self, topic: &Topic<T>) -> broadcast::Receiver<Arc<T>>
    where
        T: DeserializeOwned + Send + Sync + 'static,
    {
        let Ok(mut senders) = self.senders.lock() else {
            // Poisoned: a receiver that never hears anything, rather than a panic.
            return broadcast::channel(1).1;
        };
        if let Some(tx) = senders
            .get(topic.name)
            .and_then(|s| s.downcast_ref::<broadcast::Sender<Arc<T>>>())
        {
            return tx.subscribe();
        }
        let (tx, rx) = broadcast::channel(topic.backlog.max(1));
        senders.insert(topic.name, Box::new(tx.clone()));
        drop(senders);
        let name = topic.name;
        self.on(topic, move |body| {
            if tx.receiver_count() == 0 {
                return;
            }
            match serde_json::from_slice::<T>(body) {
                // Nobody listening right now is fine.
                Ok(message) => drop(tx.send(Arc::new(message))),
                Err(e) => tracing::warn!(topic = name, error = %e, "ignored a bus message that does not decode"),
            }
        });
        rx
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const NUMBERS: Topic<u32> = Topic::new("test.numbers", 8);
    const WORDS: Topic<String> = Topic::new("test.words", 8);

    /// Each topic reaches its own subscribers, decoded; topics never mix.
    #[tokio::test]
    async fn topics_are_kept_apart_and_decoded_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings: crate::broker::settings::BrokerSettings = crate::config::layered(
            std::path::Path::new("/nonexistent"),
            "none",
            Vec::new(),
            &[],
        )
        .unwrap()
        .get("broker")
        .unwrap();
        settings.embedded_path = dir.path().join("broker.sqlite");
        let topology = crate::broker::Topology::new(&settings, &Default::default(), &[], &[]);
        let broker = crate::broker::connect(&settings, topology).await.unwrap();
        let bus = Bus::start(broker.as_ref()).await.unwrap();
        let mut numbers = bus.subscribe(&NUMBERS);
        let mut numbers_too = bus.subscribe(&NUMBERS);
        let mut words = bus.subscribe(&WORDS);
        publish(broker.as_ref(), &NUMBERS, &[1, 2]).await.unwrap();
        publish(broker.as_ref(), &WORDS, &["one".to_owned()])
            .await
            .unwrap();
        // A message of another shape on a topic is skipped, not a failure.
        broker
            .publish_events(NUMBERS.name, vec![b"\"x\"".to_vec()])
            .await
            .unwrap();
        publish(broker.as_ref(), &NUMBERS, &[3]).await.unwrap();
        for rx in [&mut numbers, &mut numbers_too] {
            for want in [1, 2, 3] {
                assert_eq!(*rx.recv().await.unwrap(), want);
            }
        }
        assert_eq!(words.recv().await.unwrap().as_str(), "one");
        assert!(words.try_recv().is_err(), "only its own topic");
    }
}
