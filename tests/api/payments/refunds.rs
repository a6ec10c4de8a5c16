//! Memberships and refunds: renewals stack, refunds take back once (a shortfall is
//! recorded), a refund before its payment waits for it.

use super::*;
use crate::on_every_backend;

on_every_backend!(
    a_membership_renewal_stacks_and_its_refund_takes_it_back,
    refunds_take_back_once_and_record_a_shortfall,
    a_refund_before_its_payment_waits_for_it,
    a_membership_past_2038_is_kept,
);

async fn a_membership_renewal_stacks_and_its_refund_takes_it_back(backend: Backend) {
    let Some((env, app)) = app_with_secret(backend, "payments_member").await else {
        return;
    };
    let (user, key) = app.user("member", 0).await;
    assert_eq!(me(&app, &key).await["membership"], Value::Null);
    let before = chrono::Utc::now();
    let monthly = intent_for(&app, &key, json!({ "product": "member_monthly" })).await;
    assert_eq!(monthly["membership_months"], 1);
    pay(&app, "m-1", &monthly).await;
    wait_payment(&app, &key, &monthly, "PAID").await;
    let first = member_until(&me(&app, &key).await);
    let after = chrono::Utc::now();
    let month = chrono::Months::new(1);
    // MariaDB keeps whole seconds.
    let (low, high) = (
        before.checked_add_months(month).unwrap() - chrono::Duration::seconds(1),
        after.checked_add_months(month).unwrap(),
    );
    assert!(
        first >= low && first <= high,
        "{first} not a month from now"
    );
    assert_eq!(me(&app, &key).await["membership"]["active"], true);
    // A renewal starts where the membership ends, not now; delivered twice, applied once.
    let renewal = intent_for(&app, &key, json!({ "product": "member_monthly" })).await;
    pay(&app, "m-2", &renewal).await;
    pay(&app, "m-2", &renewal).await;
    wait_payment(&app, &key, &renewal, "PAID").await;
    let second = member_until(&me(&app, &key).await);
    assert_eq!(second, first.checked_add_months(month).unwrap(), "stacked");
    // A yearly plan with bonus credits, then refunded in full: both taken back, once.
    let yearly = intent_for(&app, &key, json!({ "product": "member_yearly" })).await;
    pay(&app, "y-1", &yearly).await;
    wait_payment(&app, &key, &yearly, "PAID").await;
    let third = member_until(&me(&app, &key).await);
    assert_eq!(
        third,
        second.checked_add_months(chrono::Months::new(12)).unwrap()
    );
    assert_eq!(app.credits(&user.id).await, 500);
    for _ in 0..3 {
        send(&app, "y-r", "payment.refunded", &yearly, 29900).await;
    }
    let refunded = wait_payment(&app, &key, &yearly, "REFUNDED").await;
    assert_eq!(refunded["refunded_amount"], 29900);
    assert_eq!(refunded["shortfall"], 0);
    assert_eq!(app.credits(&user.id).await, 0);
    assert_eq!(
        member_until(&me(&app, &key).await),
        second,
        "the year taken back"
    );
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// Spends `amount` of the user's credits as a task would.
async fn spend(app: &TestApp, user_id: &str, amount: i64) {
    use conveyor::users::credits;
    let txn = sea_orm::TransactionTrait::begin(&app.platform.db)
        .await
        .unwrap();
    credits::reserve(&txn, user_id, amount)
        .await
        .unwrap()
        .unwrap();
    credits::book(
        &txn,
        user_id,
        -amount,
        "reserve",
        &format!("reserve:test-{}", uuid::Uuid::new_v4()),
    )
    .await
    .unwrap();
    txn.commit().await.unwrap();
}

async fn refunds_take_back_once_and_record_a_shortfall(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "payments_refund").await else {
        return;
    };
    with_secret(&mut env);
    let app = Arc::new(spawn_app(&env).await);
    app.start_consumers();
    let (user, key) = app.user("payer", 0).await;
    let payment = intent(&app, &key).await;
    pay(&app, "p-1", &payment).await;
    wait_payment(&app, &key, &payment, "PAID").await;
    assert_eq!(app.credits(&user.id).await, 100);
    // Half refunded, the event delivered five times at once: 50 credits back, once.
    let mut deliveries = Vec::new();
    for _ in 0..5 {
        let (app, payment) = (app.clone(), payment.clone());
        deliveries.push(tokio::spawn(async move {
            send(&app, "r-1", "payment.refunded", &payment, 495).await
        }));
    }
    for d in deliveries {
        d.await.unwrap();
    }
    let half = wait_payment(&app, &key, &payment, "PAID").await;
    assert_eq!(half["refunded_amount"], 495);
    assert_eq!(app.credits(&user.id).await, 50);
    // The same refund re-sent under a new notification id is the same refund.
    send_refund(&app, "r-1-again", "payment.refunded", "r-1", &payment, 495).await;
    // Settled, not slept on: a second grant would have been applied by now.
    app.drain(&conveyor::domains::payments::queues::PAYMENTS_APPLY)
        .await;
    let same = wait_payment(&app, &key, &payment, "PAID").await;
    assert_eq!(same["refunded_amount"], 495, "one refund, applied once");
    assert_eq!(app.credits(&user.id).await, 50);
    // A refund without its refund id is malformed.
    let anonymous = json!({ "id": "r-x", "type": "payment.refunded",
        "data": { "out_trade_no": payment["out_trade_no"], "amount": 1, "currency": "CNY" } })
    .to_string();
    let now = chrono::Utc::now().timestamp();
    let (status, answer) = deliver(&app, &anonymous, &signature(&anonymous, now)).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (400, Some("malformed")),
        "{answer}"
    );
    // 40 spent; the rest refunded: 50 owed, 10 held. Never below zero, the 40 recorded.
    spend(&app, &user.id, 40).await;
    send(&app, "r-2", "payment.refunded", &payment, 495).await;
    let full = wait_payment(&app, &key, &payment, "REFUNDED").await;
    assert_eq!(app.credits(&user.id).await, 0);
    assert_eq!(full["shortfall"], 40);
    let note = full["events"][2]["note"].as_str().unwrap();
    assert!(note.contains("shortfall"), "{note}");
    // Nothing left to refund; more than was paid is refused.
    send(&app, "r-3", "payment.refunded", &payment, 10).await;
    let body = json!({ "id": "r-4", "type": "payment.refunded",
        "data": { "out_trade_no": payment["out_trade_no"], "amount": 991, "currency": "CNY", "refund_id": "r-4" } })
    .to_string();
    let (status, answer) = deliver(
        &app,
        &body,
        &signature(&body, chrono::Utc::now().timestamp()),
    )
    .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (400, Some("mismatch"))
    );
    let last = wait_payment(&app, &key, &payment, "REFUNDED").await;
    assert_eq!(last["events"].as_array().unwrap().len(), 4);
    assert_eq!(app.credits(&user.id).await, 0, "never below zero");
    let app = Arc::try_unwrap(app).ok().unwrap();
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

async fn a_refund_before_its_payment_waits_for_it(backend: Backend) {
    let Some((env, app)) = app_with_secret(backend, "payments_order").await else {
        return;
    };
    let (user, key) = app.user("payer", 0).await;
    let payment = intent(&app, &key).await;
    send(&app, "early-refund", "payment.refunded", &payment, 990).await;
    wait_until(Duration::from_secs(30), "the refund waiting", || async {
        show(&app, &key, &payment).await["events"][0]["status"] == "WAITING"
    })
    .await;
    assert_eq!(show(&app, &key, &payment).await["status"], "CREATED");
    assert_eq!(app.credits(&user.id).await, 0);
    pay(&app, "late-paid", &payment).await;
    let done = wait_payment(&app, &key, &payment, "REFUNDED").await;
    assert_eq!(done["shortfall"], 0);
    assert_eq!(app.credits(&user.id).await, 0);
    let ledger = app.get_json(&key, "/v1/me/ledger").await;
    let deltas: Vec<i64> = ledger["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["delta"].as_i64().unwrap())
        .collect();
    assert_eq!(deltas, [-100, 100], "granted, then taken back: {ledger}");
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// Twenty stacked yearly plans end past 2038 (MariaDB's TIMESTAMP limit): kept exactly.
async fn a_membership_past_2038_is_kept(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "payments_2038").await else {
        return;
    };
    let platform = env.platform().await;
    let (user, _) = conveyor::users::create(&platform.db, "member", 0, false)
        .await
        .unwrap();
    let txn = sea_orm::TransactionTrait::begin(&platform.db)
        .await
        .unwrap();
    let locked = conveyor::users::lock(&txn, &user.id).await.unwrap();
    let until = conveyor::users::membership::extend(&txn, &locked, 240, None, "membership:far")
        .await
        .unwrap();
    txn.commit().await.unwrap();
    assert!(chrono::Datelike::year(&until) >= 2046, "{until}");
    let stored = conveyor::users::entity::user::Entity::find_by_id(user.id.clone())
        .one(&platform.db)
        .await
        .unwrap()
        .unwrap()
        .member_until
        .unwrap();
    assert_eq!(stored.timestamp(), until.timestamp());
    env.cleanup(Some(&platform)).await;
}
