//! Dead letters found by what they were about, and replayed on a schedule: a letter is
//! found by its business id (the message's correlation id: an order's, a task's) in the
//! API with the consumer instance that handled it last; the compensation pass replays
//! only what its policy allows (transient reasons, at most `max_replays` times), never a
//! permanent one, audited as `compensation`.

use std::sync::Arc;
use std::time::Duration;

use conveyor::broker::{Envelope, Target};
use conveyor::dead_letters::compensation::{self, CompensationSettings, Pass, Policy};
use conveyor::dead_letters::{self, Filter, Status};
use serde_json::json;

use crate::helpers::*;
use crate::on_every_backend;

const WAIT: Duration = Duration::from_secs(20);

on_every_backend!(dead_letters_are_found_by_business_id_and_compensated_within_policy);

async fn letter_of(
    platform: &conveyor::app::Platform,
    business: &str,
) -> Option<dead_letters::DeadLetter> {
    let filter = Filter {
        business_id: Some(business),
        ..Filter::default()
    };
    dead_letters::search(&platform.db, &filter, None, 10)
        .await
        .unwrap()
        .pop()
}

async fn dead_letters_are_found_by_business_id_and_compensated_within_policy(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "compensation").await else {
        return;
    };
    let env = env.with_max_attempts("core.work", 2);
    let app = spawn_app_with(&env, &[&CORE]).await;
    let platform = app.platform.clone();
    let rec = Arc::new(Recorder::default());
    let (token, consumer) = start_consumer(&platform, &rec);
    let outage = Envelope::new("test.work", json!({ "fail_until_attempt": 1000 }))
        .with_correlation_id("order-outage");
    let poison = Envelope::new("test.work", json!({ "permanent": true }))
        .with_correlation_id("order-poison");
    for m in [&outage, &poison] {
        platform
            .broker
            .publish(Target::Queue(&WORK), m)
            .await
            .unwrap();
    }
    wait_until(WAIT, "both dead", || async {
        letter_of(&platform, "order-outage")
            .await
            .is_some_and(|d| d.status == "dead")
            && letter_of(&platform, "order-poison").await.is_some()
    })
    .await;
    let a = letter_of(&platform, "order-outage").await.unwrap();
    assert_eq!(
        (a.reason.as_str(), a.message_id.as_str()),
        ("exhausted", outage.id.as_str())
    );
    assert!(
        a.consumer.as_deref().is_some_and(|c| c.contains(':')),
        "{a:?}"
    );
    // The admin API finds it by its business id, and nothing else.
    let admin = app.admin().await;
    let page = app
        .get_json(&admin, "/v1/admin/dead-letters?business_id=order-outage")
        .await;
    let items = page["items"].as_array().unwrap_or_else(|| panic!("{page}"));
    assert_eq!(items.len(), 1, "{page}");
    assert_eq!(
        (items[0]["id"].as_i64(), items[0]["business_id"].as_str()),
        (Some(a.id), Some("order-outage"))
    );
    assert!(items[0]["consumer"].is_string(), "{page}");
    let none = app
        .get_json(&admin, "/v1/admin/dead-letters?business_id=order-nothing")
        .await;
    assert_eq!(none["items"], json!([]));

    // The policy: transient reasons, at most two replays; a pass replays the outage's
    // letter (it dies again: the dependency is still down), never the poison one.
    let settings = CompensationSettings {
        interval_secs: 1,
        queues: [(
            "core.work".to_owned(),
            Policy {
                older_than_secs: 0,
                max_replays: 2,
                ..Policy::default()
            },
        )]
        .into(),
    };
    let max = platform.settings.broker.max_payload_bytes;
    let topology = platform.broker.topology();
    let pass = || compensation::pass(&platform.db, topology, &settings, 100, max);
    for round in 1..=2 {
        assert_eq!(
            pass().await.unwrap(),
            [Pass {
                queue: "core.work".into(),
                replayed: 1,
                spent: 0
            }],
            "round {round}"
        );
        platform.relay.relay_once().await.unwrap();
        wait_until(WAIT, "the replay to die again", || async {
            letter_of(&platform, "order-outage")
                .await
                .is_some_and(|d| d.status == "dead")
                && rec.calls() >= 2 * (round + 1)
        })
        .await;
    }
    assert_eq!(
        pass().await.unwrap(),
        [Pass {
            queue: "core.work".into(),
            replayed: 0,
            spent: 1
        }],
        "replayed its two times: left to a person"
    );
    let actions = dead_letters::actions(&platform.db, a.id).await.unwrap();
    assert_eq!(actions.len(), 2);
    assert!(
        actions
            .iter()
            .all(|x| x.action == "replay" && x.actor == compensation::ACTOR)
    );
    let p = letter_of(&platform, "order-poison").await.unwrap();
    assert_eq!(
        (p.reason.as_str(), p.status.as_str()),
        ("permanent", Status::Dead.as_str())
    );
    assert!(
        dead_letters::actions(&platform.db, p.id)
            .await
            .unwrap()
            .is_empty()
    );
    // A policy that names a reason the message is at fault for is refused.
    let bad = CompensationSettings {
        interval_secs: 1,
        queues: [(
            "core.work".to_owned(),
            Policy {
                reasons: vec!["permanent".into()],
                ..Policy::default()
            },
        )]
        .into(),
    };
    assert!(bad.validate().is_err());
    token.cancel();
    let _ = consumer.await;
    done(env, app).await;
}
