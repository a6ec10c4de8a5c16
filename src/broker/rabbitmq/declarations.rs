//! The topology declared (and torn down): exchanges, work, retry, delay and dead-letter
//! queues with their arguments.

use std::time::Duration;

use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Connection, ExchangeKind};

use super::QUORUM_DELIVERY_LIMIT;
use super::RabbitBroker;
use super::err;
use super::publish::long_str;
use super::publish::ms;
use crate::broker::BrokerError;
use crate::broker::settings::QueueType;
use crate::broker::topology::Topology;

/// Declares the whole topology on a short-lived channel. Idempotent; a queue whose
/// arguments changed fails with PRECONDITION_FAILED, which names the queue.
pub(super) async fn declare(conn: &Connection, t: &Topology) -> Result<(), BrokerError> {
    let ch = conn.create_channel().await.map_err(err)?;
    let durable = ExchangeDeclareOptions {
        durable: true,
        ..Default::default()
    };
    for (name, kind) in [
        (t.work_exchange(), ExchangeKind::Direct),
        (t.delay_exchange(), ExchangeKind::Direct),
        (t.dead_letter_exchange(), ExchangeKind::Direct),
        (t.events_exchange(), ExchangeKind::Fanout),
    ] {
        ch.exchange_declare(name.as_str().into(), kind, durable, FieldTable::default())
            .await
            .map_err(err)?;
    }
    let quorum = t.queue_type == QueueType::Quorum;
    let base_args = || {
        let mut a = FieldTable::default();
        if quorum {
            a.insert("x-queue-type".into(), long_str("quorum"));
        }
        a
    };
    // A quorum queue dead-letters at most once by default: a message expiring from a
    // retry tier while its leader changes could vanish. At least once needs
    // `reject-publish` overflow (no length limit is set, so it never refuses).
    let dead_letters_safely = |mut a: FieldTable| {
        if quorum {
            a.insert("x-dead-letter-strategy".into(), long_str("at-least-once"));
            a.insert("x-overflow".into(), long_str("reject-publish"));
        }
        a
    };
    let declare_bound = |name: String, args: FieldTable, exchange: String| {
        let ch = ch.clone();
        async move {
            ch.queue_declare(name.as_str().into(), QueueDeclareOptions::durable(), args)
                .await
                .map_err(|e| BrokerError::Protocol(format!("declaring queue {name}: {e}")))?;
            ch.queue_bind(
                name.as_str().into(),
                exchange.as_str().into(),
                name.as_str().into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(err)
        }
    };
    for q in &t.queues {
        declare_bound(q.dlq.clone(), base_args(), t.dead_letter_exchange()).await?;
        let mut args = base_args();
        args.insert(
            "x-dead-letter-exchange".into(),
            long_str(&t.dead_letter_exchange()),
        );
        args.insert("x-dead-letter-routing-key".into(), long_str(&q.dlq));
        if quorum {
            args.insert(
                "x-delivery-limit".into(),
                AMQPValue::LongInt(QUORUM_DELIVERY_LIMIT),
            );
        }
        declare_bound(q.name.clone(), dead_letters_safely(args), t.work_exchange()).await?;
        for (delay, name) in &q.retry {
            declare_bound(
                name.clone(),
                dead_letters_safely(ttl_args(base_args(), *delay, t, &q.name)),
                t.delay_exchange(),
            )
            .await?;
        }
    }
    for d in &t.delays {
        let target = &t.queue(d.spec.target).name;
        declare_bound(
            d.name.clone(),
            dead_letters_safely(ttl_args(base_args(), d.delay, t, target)),
            t.delay_exchange(),
        )
        .await?;
    }
    let _ = ch.close(200, "declared".into()).await;
    Ok(())
}

/// A delay queue: every message waits the queue's TTL, then dead-letters into `target`.
fn ttl_args(mut args: FieldTable, delay: Duration, t: &Topology, target: &str) -> FieldTable {
    args.insert("x-message-ttl".into(), ms(delay));
    args.insert(
        "x-dead-letter-exchange".into(),
        long_str(&t.work_exchange()),
    );
    args.insert("x-dead-letter-routing-key".into(), long_str(target));
    args
}

impl RabbitBroker {
    pub(super) async fn teardown_unbounded(&self) -> Result<(), BrokerError> {
        // A connection of its own, which declares nothing (and works after `close`).
        let (conn, _) = self.inner.connect("teardown").await?;
        let result = self.delete_all(&conn).await;
        let _ = conn.close(200, "torn down".into()).await;
        result
    }

    async fn delete_all(&self, conn: &Connection) -> Result<(), BrokerError> {
        let ch = conn.create_channel().await.map_err(err)?;
        let t = &self.inner.topology;
        let mut queues: Vec<String> = Vec::new();
        for q in &t.queues {
            queues.push(q.name.clone());
            queues.push(q.dlq.clone());
            queues.extend(q.retry.iter().map(|(_, n)| n.clone()));
        }
        queues.extend(t.delays.iter().map(|d| d.name.clone()));
        for q in queues {
            ch.queue_delete(
                q.as_str().into(),
                lapin::options::QueueDeleteOptions::default(),
            )
            .await
            .map_err(err)?;
        }
        for x in [
            t.work_exchange(),
            t.delay_exchange(),
            t.dead_letter_exchange(),
            t.events_exchange(),
        ] {
            ch.exchange_delete(
                x.as_str().into(),
                lapin::options::ExchangeDeleteOptions::default(),
            )
            .await
            .map_err(err)?;
        }
        let _ = ch.close(200, "torn down".into()).await;
        Ok(())
    }
}
