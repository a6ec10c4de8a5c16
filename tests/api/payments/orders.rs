//! Payments and what they pay for: flash-sale orders, late payments for expired intents,
//! and the ledger they leave.

use super::*;
use crate::on_every_backend;

on_every_backend!(
    an_order_is_paid_by_its_payment_and_a_late_one_is_refund_due,
    the_ledger_pages_newest_first,
    a_late_payment_for_an_expired_intent_is_granted,
);

async fn an_order_is_paid_by_its_payment_and_a_late_one_is_refund_due(backend: Backend) {
    use crate::flash_sale as fs;
    use conveyor::domains::flash_sale::status::OrderStatus;
    let Some(mut env) = TestEnv::new(backend, "payments_orders").await else {
        return;
    };
    with_secret(&mut env);
    env.settings.queues.insert(
        "orders.payment-timeout".into(),
        conveyor::broker::settings::QueueOverride {
            delay_ms: Some(3000),
            ..Default::default()
        },
    );
    let app = spawn_app(&env).await;
    app.start_consumers();
    let admin = fs::admin(&app).await;
    let sale = fs::sale(&app, &admin, 5, 2).await;
    let (_, key) = app.user("buyer", 10).await;
    let (_, a) = fs::order(&app, &key, &sale).await;
    let (_, b) = fs::order(&app, &key, &sale).await;
    let (a, b) = (
        a["order_id"].as_str().unwrap(),
        b["order_id"].as_str().unwrap(),
    );
    fs::wait_status(&app, a, OrderStatus::Unpaid).await;
    fs::wait_status(&app, b, OrderStatus::Unpaid).await;
    let pa = intent_for(&app, &key, json!({ "order": a })).await;
    assert_eq!(
        (pa["amount"].as_i64(), pa["order_id"].as_str()),
        (Some(5), Some(a))
    );
    let pb = intent_for(&app, &key, json!({ "order": b })).await;
    // Both or neither of product and order; another buyer's order.
    let r = app
        .client
        .post(app.url("/v1/payments"))
        .bearer_auth(&key)
        .json(&json!({ "order": a, "product": "credits_100" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let (_, other) = app.user("other", 0).await;
    let r = app
        .client
        .post(app.url("/v1/payments"))
        .bearer_auth(&other)
        .json(&json!({ "order": a }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    pay(&app, "o-1", &pa).await;
    wait_payment(&app, &key, &pa, "PAID").await;
    assert_eq!(fs::status_of(&app, a).await, Some(OrderStatus::Paid));
    // b is left to its timer; paid after the cancel: refund due, the order stays canceled.
    fs::wait_status(&app, b, OrderStatus::Canceled).await;
    let r = app
        .client
        .post(app.url("/v1/payments"))
        .bearer_auth(&key)
        .json(&json!({ "order": b }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "order_not_payable");
    pay(&app, "o-2", &pb).await;
    let due = wait_payment(&app, &key, &pb, "REFUND_DUE").await;
    assert!(
        due["events"][0]["note"]
            .as_str()
            .unwrap()
            .contains("refund due")
    );
    assert_eq!(fs::status_of(&app, b).await, Some(OrderStatus::Canceled));
    let order = conveyor::domains::flash_sale::store::get_order(&app.platform.db, b)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(order.late_payment_ref.as_deref(), pb["id"].as_str());
    // The provider refunds it: closed, nothing taken from anybody.
    send(&app, "o-2-r", "payment.refunded", &pb, 5).await;
    wait_payment(&app, &key, &pb, "REFUNDED").await;
    assert_eq!(
        app.credits(
            &conveyor::users::authenticate(&app.platform.db, &key)
                .await
                .unwrap()
                .unwrap()
                .id
        )
        .await,
        10
    );
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

async fn the_ledger_pages_newest_first(backend: Backend) {
    let Some((env, app)) = app_with_secret(backend, "payments_ledger").await else {
        return;
    };
    let (user, key) = app.user("payer", 5).await;
    let payment = intent(&app, &key).await;
    pay(&app, "l-1", &payment).await;
    wait_payment(&app, &key, &payment, "PAID").await;
    let page = |cursor: Option<String>| {
        let mut url = "/v1/me/ledger?limit=1".to_owned();
        if let Some(c) = cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let req = app.client.get(app.url(&url)).bearer_auth(&key);
        async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let first = page(None).await;
    assert_eq!(first["items"][0]["delta"], 100);
    assert_eq!(
        first["items"][0]["effect"],
        format!("payment:{}", payment["id"].as_str().unwrap())
    );
    let second = page(first["next_cursor"].as_str().map(str::to_owned)).await;
    assert_eq!(second["items"][0]["delta"], 5);
    assert_eq!(
        second["items"][0]["effect"],
        format!("grant:initial:{}", user.id)
    );
    let third = page(second["next_cursor"].as_str().map(str::to_owned)).await;
    assert_eq!(third["items"].as_array().unwrap().len(), 0);
    assert_eq!(third["next_cursor"], Value::Null);
    // Another user's ledger is not the caller's; a bad cursor or limit is a 400.
    let (_, other) = app.user("other", 0).await;
    let theirs = app.get_json(&other, "/v1/me/ledger").await;
    assert_eq!(theirs["items"].as_array().unwrap().len(), 0);
    for bad in [
        "/v1/me/ledger?cursor=abc",
        "/v1/me/ledger?limit=0",
        "/v1/me/ledger?nope=1",
    ] {
        let r = app
            .client
            .get(app.url(bad))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{bad}");
    }
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// An intent nobody paid in time expires (no longer counts as open); money that still
/// arrives for it is granted all the same.
async fn a_late_payment_for_an_expired_intent_is_granted(backend: Backend) {
    let Some((env, app)) = app_with_secret(backend, "payments_expired").await else {
        return;
    };
    let (user, key) = app.user("late", 0).await;
    let payment = intent(&app, &key).await;
    let later = chrono::Utc::now() + chrono::Duration::seconds(5);
    let expired = conveyor::domains::payments::store::expire_unpaid(&app.platform.db, later)
        .await
        .unwrap();
    assert_eq!(expired, 1);
    assert_eq!(show(&app, &key, &payment).await["status"], "EXPIRED");
    pay(&app, "late-1", &payment).await;
    wait_payment(&app, &key, &payment, "PAID").await;
    assert_eq!(app.credits(&user.id).await, 100);
    done(env, app).await;
}
