#![allow(clippy::unwrap_used)]

use super::*;

const SHORT: QueueSpec = QueueSpec::new("t.short", "t", "test work").prefetch(8);
const EXPIRE: QueueSpec = QueueSpec::new("t.expire", "t", "test timers").prefetch(8);
const TIMEOUT: DelaySpec = DelaySpec {
    key: "t.timeout",
    delay: Duration::from_secs(30 * 60),
    target: &EXPIRE,
    purpose: "test delay",
};

fn topology() -> Topology {
    let layers = crate::config::layered(
        std::path::Path::new("/nonexistent"),
        "none",
        Vec::new(),
        &[],
    )
    .unwrap();
    let broker: BrokerSettings = layers.get("broker").unwrap();
    Topology::new(&broker, &BTreeMap::new(), &[&SHORT, &EXPIRE], &[&TIMEOUT])
}

#[test]
fn names_derive_from_namespace() {
    let t = topology();
    let q = t.queue(&SHORT);
    assert_eq!(q.name, "conveyor.t.short");
    assert_eq!(q.dlq, "conveyor.t.short.dlq");
    assert_eq!(q.retry[0].1, "conveyor.t.short.retry.1s");
    assert_eq!(q.retry[3].1, "conveyor.t.short.retry.2m");
    assert_eq!(t.delay(&TIMEOUT).name, "conveyor.delay.t.timeout.30m");
}

#[test]
fn retry_tiers_grow_then_stay_on_the_longest() {
    let t = topology();
    let q = t.queue(&SHORT);
    assert_eq!(t.retry_tier(&q, 1), 0);
    assert_eq!(t.retry_tier(&q, 2), 1);
    assert_eq!(t.retry_tier(&q, 99), q.retry.len() - 1);
}

#[test]
fn targets_round_trip_through_their_keys() {
    let t = topology();
    for q in [&SHORT, &EXPIRE] {
        assert_eq!(t.target(&Target::Queue(q).key()), Some(Target::Queue(q)));
    }
    let d = Target::Delay(&TIMEOUT);
    assert_eq!(t.target(&d.key()), Some(d));
    assert_eq!(t.target("nope"), None);
    assert_eq!(t.groups(), vec!["t"]);
}

#[test]
fn mermaid_names_every_queue() {
    let t = topology();
    let m = t.mermaid();
    for q in &t.queues {
        assert!(m.contains(&q.dlq));
    }
    assert!(m.contains("conveyor.delay.t.timeout.30m"));
}
