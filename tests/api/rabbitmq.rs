//! RabbitMQ specifics: the declared arguments as the broker reports them, and consumers
//! that resume on their own after the connection drops.

use std::sync::Arc;
use std::time::Duration;

use crate::helpers::WORK;
use conveyor::broker::Target;
use conveyor::broker::settings::QueueType;
use serde_json::{Value, json};

use crate::helpers::{Backend, Harness, Proxy, Recorder, TestEnv, start_consumer, wait_until};

/// `rabbitmqctl list_<what> <columns…>`, one JSON object per row.
fn rabbitmqctl_list(what: &str, columns: &[&str]) -> Vec<Value> {
    let list = format!("list_{what}");
    let out = std::process::Command::new("rabbitmqctl")
        .args(["-q", list.as_str()])
        .args(columns)
        .args(["--formatter", "json"])
        .output()
        .expect("rabbitmqctl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json from rabbitmqctl")
}

/// A table as rabbitmqctl prints it (`[[key, type, value], …]`), as an object.
fn table(rows: &Value) -> serde_json::Map<String, Value> {
    rows.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|kv| Some((kv[0].as_str()?.to_owned(), kv[2].clone())))
                .collect()
        })
        .unwrap_or_default()
}

/// `rabbitmqctl list_queues` for this namespace, with `arguments` as an object.
fn list_queues(ns: &str) -> Vec<Value> {
    let prefix = format!("{ns}.");
    rabbitmqctl_list("queues", &["name", "type", "arguments"])
        .into_iter()
        .filter(|q| q["name"].as_str().is_some_and(|n| n.starts_with(&prefix)))
        .map(|mut q| {
            q["arguments"] = Value::Object(table(&q["arguments"]));
            q
        })
        .collect()
}

fn find<'a>(queues: &'a [Value], name: &str) -> &'a Value {
    queues
        .iter()
        .find(|q| q["name"] == name)
        .unwrap_or_else(|| panic!("queue {name} declared"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_arguments_match_the_topology() {
    for queue_type in [QueueType::Classic, QueueType::Quorum] {
        let Some(mut env) = TestEnv::new(
            Backend::RabbitPostgres,
            "declared_arguments_match_the_topology",
        )
        .await
        else {
            return;
        };
        env.settings.broker.queue_type = queue_type;
        // The test domain brings a business delay (no domain of the build has one yet).
        let platform = env.platform_with(&[&crate::domain::IDLE]).await;
        let t = platform.broker.topology().clone();
        let queues = list_queues(&t.namespace);
        let expected = t.queues.iter().map(|q| 2 + q.retry.len()).sum::<usize>() + t.delays.len();
        assert_eq!(queues.len(), expected, "every queue declared: {queues:?}");

        let work = t.queue(&WORK);
        let kind = if queue_type == QueueType::Quorum {
            "quorum"
        } else {
            "classic"
        };
        let q = find(&queues, &work.name);
        assert_eq!(q["type"], kind);
        assert_eq!(
            q["arguments"]["x-dead-letter-exchange"],
            t.dead_letter_exchange()
        );
        assert_eq!(q["arguments"]["x-dead-letter-routing-key"], work.dlq);
        if queue_type == QueueType::Quorum {
            assert_eq!(q["arguments"]["x-delivery-limit"], 20);
            assert_eq!(q["arguments"]["x-dead-letter-strategy"], "at-least-once");
            assert_eq!(q["arguments"]["x-overflow"], "reject-publish");
        }
        for (delay, name) in &work.retry {
            let r = find(&queues, name);
            assert_eq!(r["type"], kind);
            assert_eq!(
                r["arguments"]["x-message-ttl"],
                delay.as_millis() as u64,
                "{name}"
            );
            assert_eq!(r["arguments"]["x-dead-letter-exchange"], t.work_exchange());
            assert_eq!(
                r["arguments"]["x-dead-letter-routing-key"], work.name,
                "retry feeds the work queue"
            );
            if queue_type == QueueType::Quorum {
                // Expiring into the work queue survives a leader change.
                assert_eq!(r["arguments"]["x-dead-letter-strategy"], "at-least-once");
                assert_eq!(r["arguments"]["x-overflow"], "reject-publish");
            }
        }
        let dlq = find(&queues, &work.dlq);
        assert!(
            dlq["arguments"].get("x-dead-letter-exchange").is_none(),
            "no DLX cycle"
        );
        let timer = t
            .delays
            .iter()
            .find(|d| d.spec.key == "orders.payment-timeout")
            .unwrap();
        let d = find(&queues, &timer.name);
        assert_eq!(d["arguments"]["x-message-ttl"], 30 * 60 * 1000);
        if queue_type == QueueType::Quorum {
            assert_eq!(d["arguments"]["x-dead-letter-strategy"], "at-least-once");
        }
        assert_eq!(
            d["arguments"]["x-dead-letter-routing-key"],
            t.queue(timer.spec.target).name
        );
        env.cleanup(Some(&platform)).await;
    }
}

/// Publishes a message with `payload` to core.work (trying again every 100 ms while the publisher
/// reconnects; it must go out within 5 s) and waits for the consumer's one effect of it.
/// The wait allows for a consumer that first tries a dead connection (each broker step
/// is bounded by 10 s) and backs off; a timeout says where the message stands.
async fn publish_and_see_handled(
    broker: &dyn conveyor::broker::Broker,
    rec: &Recorder,
    payload: Value,
    what: &str,
) -> conveyor::broker::Envelope {
    let msg = conveyor::broker::Envelope::new("t", payload);
    let mut published = false;
    for _ in 0..50 {
        if broker.publish(Target::Queue(&WORK), &msg).await.is_ok() {
            published = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(published, "published within 5 s: {what}");
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    while rec.effects_of(&msg.id) != 1 {
        if std::time::Instant::now() > deadline {
            let queue = &broker.topology().queue(&WORK).name;
            panic!(
                "no effect within 40 s: {what}; connections on {:?}, {:?} waiting in {queue}",
                broker.nodes().await,
                broker.depth(queue).await
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    msg
}

/// The frame size a process proposes (`broker.frame_max_bytes`, lapin's buffers are 32
/// frames each way) is what its connections use, and a message larger than a frame still
/// travels whole (as several frames), both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_use_the_proposed_frame_size_and_big_messages_travel_whole() {
    let Some(h) = Harness::new(
        Backend::RabbitPostgres,
        "connections_use_the_proposed_frame_size_and_big_messages_travel_whole",
    )
    .await
    else {
        return;
    };
    let (env, platform) = (&h.env, &h.platform);
    assert_eq!(env.settings.broker.frame_max_bytes, 32768, "the default");
    let (rec, consumer) = h.record();
    // Three frames' worth: a cut or garbled body would not parse (a dead letter, no effect).
    let big = json!({ "text": "x".repeat(60_000) });
    publish_and_see_handled(platform.broker.as_ref(), &rec, big, "a 60 KB message").await;
    // Both of this process's connections (publish, consume), by their names.
    let all = rabbitmqctl_list("connections", &["client_properties", "frame_max"]);
    let suffix = format!("@{}", platform.broker.topology().namespace);
    let ours: Vec<&Value> = all
        .iter()
        .filter(|c| {
            table(&c["client_properties"])
                .get("connection_name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.ends_with(&suffix))
        })
        .collect();
    assert!(ours.len() >= 2, "publish and consume connections: {all:?}");
    for c in ours {
        assert_eq!(c["frame_max"], env.settings.broker.frame_max_bytes, "{c}");
    }
    consumer.stop().await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_resume_after_the_connection_drops() {
    let proxy = Proxy::start("127.0.0.1:5672").await;
    let Some(h) = Harness::configured(
        Backend::RabbitPostgres,
        "consumers_resume_after_the_connection_drops",
        |env| env.settings.broker.url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port),
    )
    .await
    else {
        return;
    };
    let platform = &h.platform;
    let (rec, consumer) = h.record();
    publish_and_see_handled(
        platform.broker.as_ref(),
        &rec,
        json!({}),
        "the first effect",
    )
    .await;

    proxy.down();
    // Down until both connections (publish, consume) saw it: neither is live.
    wait_until(
        Duration::from_secs(10),
        "both connections to see the outage",
        || async { platform.broker.nodes().await.is_empty() },
    )
    .await;
    proxy.up();

    // The publisher reconnects on its next publish; the consumer on its own.
    publish_and_see_handled(
        platform.broker.as_ref(),
        &rec,
        json!({}),
        "the effect after reconnecting",
    )
    .await;
    consumer.stop().await;
    h.finish().await;
}

/// `broker.urls` (a cluster's nodes): when the node a process uses goes away, the
/// publisher, the consumers and the events listener move to the next address on their
/// own, nothing is lost or run twice, and readiness names the node each connection uses.
/// Two forwarders to the one local broker stand for two nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_move_to_the_next_node_when_theirs_goes() {
    let Some(mut env) = TestEnv::new(
        Backend::RabbitPostgres,
        "connections_move_to_the_next_node_when_theirs_goes",
    )
    .await
    else {
        return;
    };
    let (a, b) = (
        Proxy::start("127.0.0.1:5672").await,
        Proxy::start("127.0.0.1:5672").await,
    );
    let node = |p: &Proxy| format!("127.0.0.1:{}", p.port);
    env.settings.broker.urls = [&a, &b]
        .iter()
        .map(|p| format!("amqp://guest:guest@127.0.0.1:{}/%2f", p.port))
        .collect();
    env.settings.server.ops_token = "ops-secret-0123456789".into();
    let app = crate::helpers::spawn_app_with(&env, &[&crate::helpers::CORE]).await;
    let broker = app.platform.broker.clone();
    let ops = Some("ops-secret-0123456789");
    let rec = Arc::new(Recorder::default());
    let (token, consumer) = start_consumer(&app.platform, &rec);
    let mut events = broker.subscribe_events().await.unwrap();
    let first = publish_and_see_handled(broker.as_ref(), &rec, json!({}), "the first effect").await;
    let (status, body) = app.readyz(ops).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["broker_nodes"]["publish"], node(&a), "{body}");
    assert_eq!(body["broker_nodes"]["consume"], node(&a), "{body}");
    // The public does not see addresses.
    assert!(app.readyz(None).await.1.get("broker_nodes").is_none());

    // Node a goes for good: connections to it are cut, new ones refused.
    a.down();
    publish_and_see_handled(
        broker.as_ref(),
        &rec,
        json!({}),
        "the publisher and the consumer on node b",
    )
    .await;
    assert_eq!(rec.effects_of(&first.id), 1, "nothing ran twice");
    let (status, body) = app.readyz(ops).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["broker_nodes"]["publish"], node(&b), "{body}");
    assert_eq!(body["broker_nodes"]["consume"], node(&b), "{body}");
    // The events listener re-bound its queue on node b.
    while events.try_recv().is_ok() {}
    let mut heard = false;
    for _ in 0..50 {
        broker
            .publish_events("ping", vec![b"{\"ping\":1}".to_vec()])
            .await
            .ok();
        if tokio::time::timeout(Duration::from_millis(200), events.recv())
            .await
            .is_ok_and(|e| e.is_some())
        {
            heard = true;
            break;
        }
    }
    assert!(heard, "events reach this instance again");
    let metrics = app.metrics(ops).await;
    let gauge = format!(
        "conveyor_broker_node{{role=\"publish\",node=\"{}\"}} 1",
        node(&b)
    );
    assert!(metrics.contains(&gauge), "{gauge} in /metrics");
    token.cancel();
    consumer.await.unwrap().unwrap();
    crate::helpers::done(env, app).await;
}
