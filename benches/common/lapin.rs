//! The practical limit of the broker on this machine: a bare lapin publisher (persistent,
//! confirms in windows) and a consumer that acks each message and does nothing else.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use lapin::options::*;
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};

use super::cpu::{Ticks, cpu_ticks};

/// One run: its wall time, each message's latency (µs) and the CPU spent.
pub struct Run {
    pub elapsed: Duration,
    pub latencies_us: Vec<u64>,
    pub ticks: Ticks,
}

impl Run {
    pub fn rate(&self, n: usize) -> f64 {
        n as f64 / self.elapsed.as_secs_f64()
    }
}

pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Publishes `n` 200-byte messages to a queue of its own (quorum when `quorum`) and
/// consumes them with no work.
pub async fn noop(
    amqp: &str,
    n: usize,
    prefetch: u16,
    window: usize,
    quorum: bool,
) -> anyhow::Result<Run> {
    let ns = format!("bench{}", std::process::id());
    let q = format!("{ns}.raw");
    let pub_conn = Connection::connect(amqp, ConnectionProperties::default()).await?;
    let sub_conn = Connection::connect(amqp, ConnectionProperties::default()).await?;
    let ch = pub_conn.create_channel().await?;
    let mut args = FieldTable::default();
    if quorum {
        args.insert(
            "x-queue-type".into(),
            lapin::types::AMQPValue::LongString("quorum".into()),
        );
    }
    ch.queue_declare(q.as_str().into(), QueueDeclareOptions::durable(), args)
        .await?;
    ch.confirm_select(ConfirmSelectOptions::default()).await?;
    let sub = sub_conn.create_channel().await?;
    sub.basic_qos(prefetch, BasicQosOptions::default()).await?;
    let mut consumer = sub
        .basic_consume(
            q.as_str().into(),
            "bench".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let start = Instant::now();
    let before = cpu_ticks();
    let consume = tokio::spawn(async move {
        let mut lat = Vec::with_capacity(n);
        while let Some(Ok(d)) = consumer.next().await {
            let sent: u64 = std::str::from_utf8(&d.data[..16])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            d.acker.ack(BasicAckOptions::default()).await.ok();
            lat.push(now_us().saturating_sub(sent));
            if lat.len() == n {
                break;
            }
        }
        lat
    });
    let props = BasicProperties::default().with_delivery_mode(2);
    let mut sent = 0;
    while sent < n {
        let mut confirms = Vec::with_capacity(window);
        for _ in 0..window.min(n - sent) {
            let mut body = format!("{:016}", now_us()).into_bytes();
            body.resize(200, b'x');
            let opts = BasicPublishOptions {
                mandatory: true,
                ..Default::default()
            };
            confirms.push(
                ch.basic_publish("".into(), q.as_str().into(), opts, &body, props.clone())
                    .await?,
            );
            sent += 1;
        }
        for c in futures::future::join_all(confirms).await {
            anyhow::ensure!(c?.is_ack(), "nacked");
        }
    }
    let lat = consume.await?;
    let elapsed = start.elapsed();
    let ticks = cpu_ticks().since(before);
    ch.queue_delete(q.as_str().into(), QueueDeleteOptions::default())
        .await?;
    Ok(Run {
        elapsed,
        latencies_us: lat,
        ticks,
    })
}
