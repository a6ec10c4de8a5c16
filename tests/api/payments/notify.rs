//! Orders and payments reach webhook endpoints: a paid order (`order.paid` and
//! `payment.succeeded`), an order its timer canceled (`order.canceled`) and a refund
//! (`payment.refunded`), each once, signed, the body the API's view.

use super::*;
use crate::on_every_backend;
use crate::webhooks::receiver::{Receiver, verify};

on_every_backend!(orders_and_payments_reach_webhook_endpoints_once);

async fn orders_and_payments_reach_webhook_endpoints_once(backend: Backend) {
    use crate::flash_sale as fs;
    use conveyor::domains::flash_sale::status::OrderStatus;
    let Some(mut env) = TestEnv::new(backend, "payments_notify").await else {
        return;
    };
    with_secret(&mut env);
    env.settings.queues.insert(
        "orders.payment-timeout".into(),
        conveyor::broker::settings::QueueOverride {
            delay_ms: Some(1500),
            ..Default::default()
        },
    );
    let app = spawn_app(&env).await;
    app.start_consumers();
    let admin = fs::admin(&app).await;
    let sale = fs::sale(&app, &admin, 5, 2).await;
    let (_, key) = app.user("buyer", 10).await;
    let rx = Receiver::start().await;
    let (_, secret) = crate::webhooks::endpoint(
        &app,
        &key,
        json!({ "url": rx.url, "event_types": ["order.paid", "order.canceled", "payment.succeeded", "payment.refunded"] }),
    )
    .await;
    let (_, a) = fs::order(&app, &key, &sale).await;
    let (_, b) = fs::order(&app, &key, &sale).await;
    let (a, b) = (
        a["order_id"].as_str().unwrap(),
        b["order_id"].as_str().unwrap(),
    );
    fs::wait_status(&app, a, OrderStatus::Unpaid).await;
    let pa = intent_for(&app, &key, json!({ "order": a })).await;
    pay(&app, "n-1", &pa).await;
    wait_payment(&app, &key, &pa, "PAID").await;
    fs::wait_status(&app, b, OrderStatus::Canceled).await;
    send_refund(&app, "n-r1", "payment.refunded", "r-n1", &pa, 5).await;
    wait_payment(&app, &key, &pa, "REFUNDED").await;

    let got = rx.wait_for_all(&app, 4, Duration::from_secs(20)).await;
    let mut seen: Vec<(String, String)> = got
        .iter()
        .map(|r| {
            let v = r.json();
            (
                v["type"].as_str().unwrap().to_owned(),
                v["data"]["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    let pid = pa["id"].as_str().unwrap().to_owned();
    let mut want = vec![
        ("order.canceled".to_owned(), b.to_owned()),
        ("order.paid".to_owned(), a.to_owned()),
        ("payment.refunded".to_owned(), pid.clone()),
        ("payment.succeeded".to_owned(), pid),
    ];
    want.sort();
    assert_eq!(seen, want, "{got:#?}");
    let paid = got
        .iter()
        .find(|r| r.json()["type"] == "order.paid")
        .unwrap()
        .json();
    assert_eq!(paid["data"]["status"], "PAID");
    assert!(paid["data"]["currency"].is_string(), "{paid}");
    let refunded = got
        .iter()
        .find(|r| r.json()["type"] == "payment.refunded")
        .unwrap()
        .json();
    assert_eq!(refunded["data"]["refunded_amount"], 5, "{refunded}");
    assert_eq!(verify(&secret, &got), ["ok"; 4]);
    done(env, app).await;
}
