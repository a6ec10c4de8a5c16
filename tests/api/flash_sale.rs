//! Flash-sale orders on every backend: no oversell under a stampede, the unpaid-order
//! timer, payments racing it, the sweep, a broker outage at intake.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use conveyor::broker::settings::QueueOverride;
use conveyor::domains::flash_sale::{OrderStatus, store};
use sea_orm::{ActiveModelTrait as _, ActiveValue::Set};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(
    a_stampede_never_oversells,
    an_unpaid_order_is_canceled_once_and_its_unit_returns,
    a_paid_order_stays_paid_and_a_late_payment_is_recorded,
    payments_racing_the_deadline_never_leave_both,
    the_sweep_cancels_an_order_whose_timer_was_lost,
    bad_sales_and_orders_get_clear_errors,
);

const WAIT: Duration = Duration::from_secs(60);

/// An app whose payment window is `pay_ms` (the delay queue's TTL).
pub async fn app(backend: Backend, test: &str, pay_ms: u64) -> Option<(TestEnv, TestApp)> {
    let mut env = TestEnv::new(backend, test).await?;
    env.settings.queues.insert(
        "orders.payment-timeout".into(),
        QueueOverride {
            delay_ms: Some(pay_ms),
            ..Default::default()
        },
    );
    let app = spawn_app(&env).await;
    app.start_consumers();
    Some((env, app))
}

pub async fn admin(app: &TestApp) -> String {
    conveyor::users::create(&app.platform.db, "ops", 0, true)
        .await
        .unwrap()
        .1
}

/// A sale open now for an hour.
pub async fn sale(app: &TestApp, admin: &str, stock: i32, limit: i32) -> String {
    let now = Utc::now();
    let r = app
        .client
        .post(app.url("/v1/admin/flash-sales"))
        .bearer_auth(admin)
        .json(&json!({
            "item": "tea set", "price": 5, "stock": stock, "per_user_limit": limit,
            "starts_at": now - chrono::Duration::seconds(5),
            "ends_at": now + chrono::Duration::hours(1),
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["remaining"], stock);
    assert_eq!(v["state"], "active");
    // The price is in the minor unit of the sale's currency, named with it.
    assert_eq!(
        (v["price"].as_i64(), v["currency"].as_str()),
        (Some(5), Some("CNY"))
    );
    v["id"].as_str().unwrap().to_owned()
}

pub async fn order(app: &TestApp, key: &str, sale: &str) -> (u16, Value) {
    let r = app
        .client
        .post(app.url(&format!("/v1/flash-sales/{sale}/orders")))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Units left in the stock store, as the app's own stock store says (reconciliation is
/// what reads it; the embedded stock lives only in the app's process).
pub async fn remaining(app: &TestApp, sale: &str) -> Option<i64> {
    reconciled(app, sale).await["remaining"].as_i64()
}

async fn reconciled(app: &TestApp, sale: &str) -> Value {
    let admin = app.admin().await;
    let r = app
        .client
        .post(app.url(&format!("/v1/admin/flash-sales/{sale}/reconcile")))
        .bearer_auth(admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

pub async fn status_of(app: &TestApp, order: &str) -> Option<OrderStatus> {
    store::get_order(&app.platform.db, order)
        .await
        .unwrap()
        .map(|o| o.status)
}

pub async fn wait_status(app: &TestApp, order: &str, want: OrderStatus) {
    wait_until(WAIT, &format!("order {order} {want:?}"), || async {
        status_of(app, order).await == Some(want)
    })
    .await;
}

async fn drift(app: &TestApp, sale: &str) -> Option<i64> {
    reconciled(app, sale).await["drift"].as_i64()
}

async fn a_stampede_never_oversells(backend: Backend) {
    let Some((env, app)) = app(backend, "flash_stampede", 3_600_000).await else {
        return;
    };
    let admin = admin(&app).await;
    let sale = sale(&app, &admin, 100, 1).await;
    // 1,000 buyers, 5 concurrent attempts each.
    let mut buyers = Vec::new();
    for i in 0..1000 {
        let (u, key) = conveyor::users::create(&app.platform.db, &format!("b{i}"), 0, false)
            .await
            .unwrap();
        buyers.push((u.id, key));
    }
    let app = Arc::new(app);
    let gate = Arc::new(tokio::sync::Semaphore::new(200));
    let mut attempts = Vec::new();
    for (uid, key) in &buyers {
        for _ in 0..5 {
            let (app, gate, key, sale, uid) = (
                app.clone(),
                gate.clone(),
                key.clone(),
                sale.clone(),
                uid.clone(),
            );
            attempts.push(tokio::spawn(async move {
                let _permit = gate.acquire().await.unwrap();
                (uid, order(&app, &key, &sale).await)
            }));
        }
    }
    let mut won: HashMap<String, u32> = HashMap::new();
    let mut reasons: HashMap<String, u32> = HashMap::new();
    for a in attempts {
        let (uid, (status, body)) = a.await.unwrap();
        match status {
            202 => {
                assert_eq!(body["status"], "QUEUED");
                *won.entry(uid).or_default() += 1;
            }
            409 => {
                let code = body["error"]["code"].as_str().unwrap().to_owned();
                assert!(
                    ["sold_out", "limit_reached"].contains(&code.as_str()),
                    "{body}"
                );
                *reasons.entry(code).or_default() += 1;
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(won.values().sum::<u32>(), 100, "exactly 100 units taken");
    assert!(won.values().all(|n| *n == 1), "nobody holds two");
    assert_eq!(
        reasons.values().sum::<u32>(),
        4900,
        "every loser told why: {reasons:?}"
    );
    assert_eq!(remaining(&app, &sale).await, Some(0));
    // Every order is written once, UNPAID.
    wait_until(WAIT, "100 orders written", || async {
        store::live_orders(&app.platform.db, &sale).await.unwrap() == 100
    })
    .await;
    let s = store::get_sale(&app.platform.db, &sale)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.sold, 100);
    assert_eq!(
        drift(&app, &sale).await,
        Some(0),
        "reconciliation: no drift"
    );
    let view: Value = app
        .get_json(&buyers[0].1, &format!("/v1/flash-sales/{sale}"))
        .await;
    assert_eq!(view["remaining"], 0);
    assert_eq!(view["state"], "sold_out");
    let app = Arc::try_unwrap(app).ok().unwrap();
    done(env, app).await;
}

async fn an_unpaid_order_is_canceled_once_and_its_unit_returns(backend: Backend) {
    let Some((env, app)) = app(backend, "flash_unpaid", 1500).await else {
        return;
    };
    let admin = admin(&app).await;
    let sale = sale(&app, &admin, 3, 1).await;
    let (_, key) = app.user("buyer", 0).await;
    let (status, body) = order(&app, &key, &sale).await;
    assert_eq!(status, 202, "{body}");
    let id = body["order_id"].as_str().unwrap().to_owned();
    assert_eq!(remaining(&app, &sale).await, Some(2));
    wait_status(&app, &id, OrderStatus::Unpaid).await;
    let seen: Value = app.get_json(&key, &format!("/v1/orders/{id}")).await;
    assert_eq!(seen["status"], "UNPAID");
    // The timer fires after 1.5 s: canceled, the unit back.
    wait_status(&app, &id, OrderStatus::Canceled).await;
    wait_until(WAIT, "the unit back", || async {
        remaining(&app, &sale).await == Some(3)
    })
    .await;
    // A second timer message changes nothing.
    let again = conveyor::broker::Envelope::new(
        conveyor::domains::flash_sale::messages::EXPIRE_ORDER,
        json!({ "order_id": id }),
    );
    app.platform
        .broker
        .publish(
            conveyor::broker::Target::Queue(&conveyor::domains::flash_sale::queues::ORDERS_EXPIRE),
            &again,
        )
        .await
        .unwrap();
    // Settled: a second return of the unit would show now.
    app.drain(&conveyor::domains::flash_sale::queues::ORDERS_EXPIRE)
        .await;
    assert_eq!(remaining(&app, &sale).await, Some(3), "returned once");
    let s = store::get_sale(&app.platform.db, &sale)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.sold, 0);
    // The buyer may order again: their slot came back too.
    let (status, _) = order(&app, &key, &sale).await;
    assert_eq!(status, 202);
    done(env, app).await;
}

async fn mark_paid(app: &TestApp, admin: &str, order: &str, reference: &str) -> Value {
    let r = app
        .client
        .post(app.url(&format!("/v1/admin/orders/{order}/mark-paid")))
        .bearer_auth(admin)
        .json(&json!({ "payment_ref": reference }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

async fn a_paid_order_stays_paid_and_a_late_payment_is_recorded(backend: Backend) {
    let Some((env, app)) = app(backend, "flash_paid", 1500).await else {
        return;
    };
    let admin = admin(&app).await;
    let sale = sale(&app, &admin, 5, 2).await;
    let (_, key) = app.user("buyer", 0).await;
    let (_, a) = order(&app, &key, &sale).await;
    let (_, b) = order(&app, &key, &sale).await;
    let (a, b) = (
        a["order_id"].as_str().unwrap(),
        b["order_id"].as_str().unwrap(),
    );
    wait_status(&app, a, OrderStatus::Unpaid).await;
    let paid = mark_paid(&app, &admin, a, "pay-1").await;
    assert_eq!(paid["outcome"], "paid");
    assert_eq!(
        mark_paid(&app, &admin, a, "pay-1").await["outcome"],
        "already_paid"
    );
    // b is left unpaid: canceled; a survives its timer.
    wait_status(&app, b, OrderStatus::Canceled).await;
    // Settled: a's timer has fired and found it paid.
    app.drain(&conveyor::domains::flash_sale::queues::ORDERS_EXPIRE)
        .await;
    assert_eq!(status_of(&app, a).await, Some(OrderStatus::Paid));
    let late = mark_paid(&app, &admin, b, "pay-2").await;
    assert_eq!(late["outcome"], "paid_after_cancel");
    assert_eq!(late["order"]["status"], "CANCELED");
    assert_eq!(late["order"]["paid_after_cancel"], true);
    wait_until(WAIT, "b's unit back", || async {
        remaining(&app, &sale).await == Some(4)
    })
    .await;
    // The buyer's live page: QUEUED, UNPAID, PAID for a.
    let mut ws = crate::live::connect(&app, &key).await;
    crate::live::send(
        &mut ws,
        json!({ "op": "subscribe", "stream": "order", "id": a, "after_seq": 0 }),
    )
    .await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let f = crate::live::next(&mut ws).await;
        assert_eq!(f["stream"], "order", "{f}");
        seen.push(f["status"].as_str().unwrap().to_owned());
    }
    assert_eq!(seen, ["QUEUED", "UNPAID", "PAID"]);
    assert_eq!(crate::live::next(&mut ws).await["type"], "unsubscribed");
    done(env, app).await;
}

async fn payments_racing_the_deadline_never_leave_both(backend: Backend) {
    let Some((env, app)) = app(backend, "flash_race", 1200).await else {
        return;
    };
    let admin = admin(&app).await;
    let sale = sale(&app, &admin, 40, 40).await;
    let (_, key) = app.user("buyer", 0).await;
    let mut ids = Vec::new();
    for _ in 0..20 {
        let (s, b) = order(&app, &key, &sale).await;
        assert_eq!(s, 202);
        ids.push(b["order_id"].as_str().unwrap().to_owned());
    }
    for id in &ids {
        wait_status(&app, id, OrderStatus::Unpaid).await;
    }
    // Fixed wait: payments land around the deadline, spread across it. The times are the
    // test's input (a race with the order's timer), so no condition marks them.
    let mut payments = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let (client, url, admin) = (
            app.client.clone(),
            app.url(&format!("/v1/admin/orders/{id}/mark-paid")),
            admin.clone(),
        );
        payments.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(900 + 25 * i as u64)).await;
            let r = client
                .post(url)
                .bearer_auth(admin)
                .json(&json!({ "payment_ref": format!("p{i}") }))
                .send()
                .await
                .unwrap();
            r.json::<Value>().await.unwrap()["outcome"]
                .as_str()
                .unwrap()
                .to_owned()
        }));
    }
    let mut outcomes = Vec::new();
    for p in payments {
        outcomes.push(p.await.unwrap());
    }
    // Let the remaining timers fire.
    app.drain(&conveyor::domains::flash_sale::queues::ORDERS_EXPIRE)
        .await;
    let mut paid = 0;
    for (id, outcome) in ids.iter().zip(&outcomes) {
        let o = store::get_order(&app.platform.db, id)
            .await
            .unwrap()
            .unwrap();
        match outcome.as_str() {
            "paid" => {
                assert_eq!(o.status, OrderStatus::Paid, "{id}");
                assert!(o.late_payment_ref.is_none());
                paid += 1;
            }
            "paid_after_cancel" => {
                assert_eq!(o.status, OrderStatus::Canceled, "{id}");
                assert!(o.late_payment_ref.is_some());
            }
            other => panic!("{other}"),
        }
    }
    let s = store::get_sale(&app.platform.db, &sale)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.sold, paid, "only paid orders hold units");
    wait_until(WAIT, "canceled units back", || async {
        remaining(&app, &sale).await == Some(i64::from(40 - paid))
    })
    .await;
    done(env, app).await;
}

async fn the_sweep_cancels_an_order_whose_timer_was_lost(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "flash_sweep").await else {
        return;
    };
    // An hour to pay (the timer will not fire during the test); a sweep every 100 ms
    // that takes orders as soon as their deadline passed.
    env.settings.queues.insert(
        "orders.payment-timeout".into(),
        QueueOverride {
            delay_ms: Some(3_600_000),
            ..Default::default()
        },
    );
    let section = env.settings.sections.get_mut("flash_sale").unwrap();
    section["sweep_interval_ms"] = json!(100);
    section["sweep_margin_ms"] = json!(0);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let admin = admin(&app).await;
    let sale = sale(&app, &admin, 2, 1).await;
    let (_, key) = app.user("buyer", 0).await;
    let (_, b) = order(&app, &key, &sale).await;
    let id = b["order_id"].as_str().unwrap().to_owned();
    wait_status(&app, &id, OrderStatus::Unpaid).await;
    assert_eq!(remaining(&app, &sale).await, Some(1));
    // As if its deadline passed long ago and its timer message was lost.
    let o = store::get_order(&app.platform.db, &id)
        .await
        .unwrap()
        .unwrap();
    let mut stale: conveyor::domains::flash_sale::entity::order::ActiveModel = o.into();
    stale.pay_by = Set(Utc::now() - chrono::Duration::hours(2));
    stale.update(&app.platform.db).await.unwrap();
    wait_status(&app, &id, OrderStatus::Canceled).await;
    // Its unit came back, once, however many sweeps ran since.
    wait_until(WAIT, "the unit back", || async {
        remaining(&app, &sale).await == Some(2)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(250)).await; // a few more sweeps (100 ms)
    assert_eq!(remaining(&app, &sale).await, Some(2));
    assert_eq!(drift(&app, &sale).await, Some(0));
    done(env, app).await;
}

async fn bad_sales_and_orders_get_clear_errors(backend: Backend) {
    let Some((env, app)) = app(backend, "flash_errors", 3_600_000).await else {
        return;
    };
    let admin = admin(&app).await;
    let (_, key) = app.user("buyer", 0).await;
    let now = Utc::now();
    let post = |body: Value, key: String| {
        let (client, url) = (app.client.clone(), app.url("/v1/admin/flash-sales"));
        async move {
            let r = client
                .post(url)
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let good = json!({ "item": "x", "price": 1, "stock": 1, "per_user_limit": 1,
        "starts_at": now, "ends_at": now + chrono::Duration::hours(1) });
    assert_eq!(
        post(good.clone(), key.clone()).await.0,
        403,
        "buyers cannot create sales"
    );
    for (field, value) in [
        ("stock", json!(0)),
        ("per_user_limit", json!(0)),
        ("price", json!(-1)),
        // An order at 0 could never be paid: refused, not canceled 30 minutes later.
        ("price", json!(0)),
        ("item", json!(" ")),
    ] {
        let mut bad = good.clone();
        bad[field] = value;
        let (status, body) = post(bad, admin.clone()).await;
        assert_eq!(status, 422, "{field}: {body}");
        assert_eq!(body["error"]["field"], field);
    }
    let mut backwards = good.clone();
    backwards["ends_at"] = json!(now - chrono::Duration::hours(1));
    assert_eq!(
        post(backwards, admin.clone()).await.1["error"]["field"],
        "ends_at"
    );
    let mut extra = good.clone();
    extra["sold"] = json!(0);
    assert_eq!(
        post(extra, admin.clone()).await.0,
        422,
        "unknown fields are refused"
    );
    // Unknown sale; a sale not started yet.
    let (status, body) = order(&app, &key, "no-such-sale").await;
    assert_eq!(status, 404, "{body}");
    let mut later = good.clone();
    later["starts_at"] = json!(now + chrono::Duration::hours(1));
    later["ends_at"] = json!(now + chrono::Duration::hours(2));
    let (_, s) = post(later, admin.clone()).await;
    assert_eq!(s["state"], "upcoming");
    let (status, body) = order(&app, &key, s["id"].as_str().unwrap()).await;
    assert_eq!(status, 409);
    assert_eq!(body["error"]["code"], "not_active");
    // Another buyer's order is invisible.
    let (_, open) = post(good.clone(), admin.clone()).await;
    let (_, mine) = order(&app, &key, open["id"].as_str().unwrap()).await;
    let id = mine["order_id"].as_str().unwrap().to_owned();
    wait_status(&app, &id, OrderStatus::Unpaid).await;
    let (_, other) = app.user("other", 0).await;
    let r = app
        .client
        .get(app.url(&format!("/v1/orders/{id}")))
        .bearer_auth(&other)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let list: Value = app.get_json(&key, "/v1/orders?status=unpaid").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let r = app
        .client
        .get(app.url("/v1/orders?status=lost"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    done(env, app).await;
}

/// The broker goes away during intake: 503 with Retry-After, and the unit came back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_outage_at_intake_gives_the_unit_back() {
    for backend in [Backend::RabbitMariadb, Backend::RabbitPostgres] {
        let Some(mut env) = TestEnv::new(backend, "flash_broker_down").await else {
            return;
        };
        let proxy = Proxy::start("127.0.0.1:5672").await;
        env.settings.broker.url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port);
        env.settings.broker.publish_timeout_ms = 1000;
        let app = spawn_app(&env).await;
        let admin = admin(&app).await;
        let sale = sale(&app, &admin, 10, 1).await;
        let (_, key) = app.user("buyer", 0).await;
        proxy.down();
        let r = app
            .client
            .post(app.url(&format!("/v1/flash-sales/{sale}/orders")))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        assert!(r.headers().contains_key("retry-after"));
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unavailable");
        assert_eq!(remaining(&app, &sale).await, Some(10), "the unit came back");
        proxy.up();
        // And once it is back, the same buyer can order.
        let mut ok = false;
        for _ in 0..50 {
            if order(&app, &key, &sale).await.0 == 202 {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(ok, "orders flow again after the outage");
        assert_eq!(remaining(&app, &sale).await, Some(9));
        done(env, app).await;
    }
}
