//! Payment webhooks (HMAC scheme) on every backend: verified, recorded, granted once.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::EntityTrait as _;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(
    a_webhook_delivered_twenty_times_grants_once,
    bad_webhooks_are_refused_with_their_reason,
    an_alipay_notify_grants_once_and_refuses_forgeries,
    a_wechat_notification_grants_once_and_refuses_forgeries,
    a_redelivery_after_the_commit_grants_nothing,
    a_membership_renewal_stacks_and_its_refund_takes_it_back,
    refunds_take_back_once_and_record_a_shortfall,
    a_refund_before_its_payment_waits_for_it,
    an_order_is_paid_by_its_payment_and_a_late_one_is_refund_due,
    the_ledger_pages_newest_first,
    a_membership_past_2038_is_kept,
    a_late_payment_for_an_expired_intent_is_granted,
);

/// At least 32 bytes: start-up refuses a shorter secret.
const SECRET: &str = "whsec_test_0123456789abcdef0123456789";
const MAX: usize = 1 << 20;

fn credit_pack() -> conveyor::domains::payments::store::NewPayment {
    conveyor::domains::payments::store::NewPayment {
        product: "credits_100".into(),
        credits: 100,
        membership_months: 0,
        order_id: None,
        amount: 990,
        currency: "CNY".into(),
    }
}

fn with_secret(env: &mut TestEnv) {
    env.settings.sections.get_mut("payments").unwrap()["hmac_secrets"] = json!([SECRET]);
}

/// An app with the HMAC secret configured and its consumers running.
async fn app_with_secret(backend: Backend, test: &str) -> Option<(TestEnv, TestApp)> {
    let mut env = TestEnv::new(backend, test).await?;
    with_secret(&mut env);
    let app = spawn_app(&env).await;
    app.start_consumers();
    Some((env, app))
}

fn signature(body: &str, t: i64) -> String {
    signature_with(SECRET, body, t)
}

fn signature_with(secret: &str, body: &str, t: i64) -> String {
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = aws_lc_rs::hmac::sign(&key, format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex::encode(tag.as_ref()))
}

async fn intent(app: &TestApp, key: &str) -> Value {
    intent_for(app, key, json!({ "product": "credits_100" })).await
}

async fn intent_for(app: &TestApp, key: &str, what: Value) -> Value {
    let r = app
        .client
        .post(app.url("/v1/payments"))
        .bearer_auth(key)
        .json(&what)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    r.json().await.unwrap()
}

/// Delivers a signed HMAC event of `kind` (`payment.succeeded`, `payment.refunded`) and
/// expects it accepted.
async fn send(app: &TestApp, id: &str, kind: &str, payment: &Value, amount: i64) {
    // A refund is its own refund id here (several notifications of one refund: see
    // `send_refund`).
    send_refund(app, id, kind, id, payment, amount).await
}

/// [`send`] with the refund's id at the provider set apart from the notification's id.
async fn send_refund(
    app: &TestApp,
    id: &str,
    kind: &str,
    refund_id: &str,
    payment: &Value,
    amount: i64,
) {
    let body = json!({
        "id": id, "type": kind,
        "data": { "out_trade_no": payment["out_trade_no"], "amount": amount,
                  "currency": payment["currency"], "refund_id": refund_id },
    })
    .to_string();
    let (status, answer) = deliver(
        app,
        &body,
        &signature(&body, chrono::Utc::now().timestamp()),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
}

async fn pay(app: &TestApp, id: &str, payment: &Value) {
    let amount = payment["amount"].as_i64().unwrap();
    send(app, id, "payment.succeeded", payment, amount).await;
}

async fn show(app: &TestApp, key: &str, payment: &Value) -> Value {
    let id = payment["id"].as_str().unwrap();
    app.get_json(key, &format!("/v1/payments/{id}")).await
}

async fn wait_payment(app: &TestApp, key: &str, payment: &Value, status: &str) -> Value {
    let settled = |p: &Value| {
        p["status"] == status
            && p["events"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e["status"] == "APPLIED")
    };
    wait_until(
        Duration::from_secs(30),
        &format!("payment {status}"),
        || async { settled(&show(app, key, payment).await) },
    )
    .await;
    show(app, key, payment).await
}

async fn me(app: &TestApp, key: &str) -> Value {
    app.get_json(key, "/v1/me").await
}

fn member_until(me: &Value) -> chrono::DateTime<chrono::Utc> {
    me["membership"]["until"].as_str().unwrap().parse().unwrap()
}

fn event(id: &str, payment: &Value, amount: i64) -> String {
    json!({
        "id": id, "type": "payment.succeeded",
        "data": { "out_trade_no": payment["out_trade_no"], "amount": amount, "currency": payment["currency"] },
    })
    .to_string()
}

async fn deliver(app: &TestApp, body: &str, signature: &str) -> (u16, Value) {
    let r = app
        .client
        .post(app.url("/v1/webhooks/payments/hmac"))
        .header("conveyor-signature", signature)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

async fn a_webhook_delivered_twenty_times_grants_once(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "payments_once").await else {
        return;
    };
    with_secret(&mut env);
    let app = Arc::new(spawn_app(&env).await);
    app.start_consumers();
    let (user, key) = app.user("payer", 5).await;
    let payment = intent(&app, &key).await;
    assert_eq!(payment["amount"], 990);
    let body = event("evt_1", &payment, 990);
    let sig = signature(&body, chrono::Utc::now().timestamp());
    let mut deliveries = Vec::new();
    for _ in 0..20 {
        let (app, body, sig) = (app.clone(), body.clone(), sig.clone());
        deliveries.push(tokio::spawn(
            async move { deliver(&app, &body, &sig).await },
        ));
    }
    for d in deliveries {
        let (status, answer) = d.await.unwrap();
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["received"], true);
    }
    wait_until(Duration::from_secs(30), "the grant", || async {
        app.credits(&user.id).await == 105
    })
    .await;
    // A second event for the same payment (another id) grants nothing more.
    let again = event("evt_2", &payment, 990);
    let (status, _) = deliver(
        &app,
        &again,
        &signature(&again, chrono::Utc::now().timestamp()),
    )
    .await;
    assert_eq!(status, 200);
    // Settled, not slept on: a second grant would have been applied by now.
    app.drain(&conveyor::domains::payments::queues::PAYMENTS_APPLY)
        .await;
    assert_eq!(app.credits(&user.id).await, 105, "granted once");
    let seen: Value = app
        .client
        .get(app.url(&format!("/v1/payments/{}", payment["id"].as_str().unwrap())))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(seen["status"], "PAID");
    let app = Arc::try_unwrap(app).ok().unwrap();
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

async fn bad_webhooks_are_refused_with_their_reason(backend: Backend) {
    let Some((env, app)) = app_with_secret(backend, "payments_refused").await else {
        return;
    };
    let (user, key) = app.user("payer", 0).await;
    let payment = intent(&app, &key).await;
    let now = chrono::Utc::now().timestamp();
    let body = event("evt_x", &payment, 990);
    // Signed with another secret (the empty key too); signed for another body; too old;
    // no header; not JSON.
    let forged = signature_with("whsec_guess", &body, now);
    assert_eq!(deliver(&app, &body, &forged).await.0, 401);
    let empty_key = signature_with("", &body, now);
    assert_eq!(deliver(&app, &body, &empty_key).await.0, 401);
    // A header built to make the verifier work: read and refused before any hashing.
    let tag = signature(&body, now)
        .split_once("v1=")
        .unwrap()
        .1
        .to_owned();
    let many = format!("t={now}{}", format!(",v1={tag}").repeat(400));
    let (status, answer) = deliver(&app, &body, &many).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (400, Some("malformed")),
        "{answer}"
    );
    // 1,000 entries (68 KB) do not fit in server.max_header_bytes: refused at the door.
    let thousand = format!("t={now}{}", format!(",v1={tag}").repeat(1000));
    assert_eq!(deliver(&app, &body, &thousand).await.0, 431);
    assert_eq!(
        deliver(&app, &body, "t=now,v1=zz").await.0,
        400,
        "malformed"
    );
    let other = event("evt_x", &payment, 1);
    assert_eq!(deliver(&app, &body, &signature(&other, now)).await.0, 401);
    assert_eq!(
        deliver(&app, &body, &signature(&body, now - 3600)).await.0,
        401
    );
    let r = app
        .client
        .post(app.url("/v1/webhooks/payments/hmac"))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Signed, but an event id longer than the inbox keeps: a clear 400, not a 500.
    let long = event(&"x".repeat(129), &payment, 990);
    let (status, answer) = deliver(&app, &long, &signature(&long, now)).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (400, Some("malformed"))
    );
    // Signed, but the amount is not the payment's.
    let cheap = event("evt_y", &payment, 1);
    let (status, answer) = deliver(&app, &cheap, &signature(&cheap, now)).await;
    assert_eq!(status, 400);
    assert_eq!(answer["error"]["code"], "mismatch");
    // Unknown product; another user's payment is invisible.
    let r = app
        .client
        .post(app.url("/v1/payments"))
        .bearer_auth(&key)
        .json(&json!({ "product": "gold_bars" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let (_, other_key) = app.user("other", 0).await;
    let r = app
        .client
        .get(app.url(&format!("/v1/payments/{}", payment["id"].as_str().unwrap())))
        .bearer_auth(&other_key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // Settled, not slept on: a second grant would have been applied by now.
    app.drain(&conveyor::domains::payments::queues::PAYMENTS_APPLY)
        .await;
    assert_eq!(app.credits(&user.id).await, 0, "nothing granted");
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// Two anonymous requests at once, each with a 250 KB body and by turns the largest
/// header the server reads (a signature header of 32 KB of `v1=` entries: refused by
/// reading it) and a well-formed one with a wrong tag (refused after one HMAC on the
/// gate): each is refused (4xx) within 50 ms, and the rest of the API does not notice
/// (`/healthz` p99 under 10 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_amplifying_webhook_is_refused_without_stalling_the_api() {
    let Some((env, app)) = app_with_secret(Backend::Embedded, "payments_amplify").await else {
        return;
    };
    let app = Arc::new(app);
    let now = chrono::Utc::now().timestamp();
    let body = format!("{{\"id\":\"{}\"}}", "x".repeat(250_000));
    let tag = "ab".repeat(32);
    // As many entries as fit under server.max_header_bytes with the other headers.
    let entries = (env.settings.server.max_header_bytes - 1024) / (tag.len() + 4);
    let header = format!("t={now}{}", format!(",v1={tag}").repeat(entries));
    let well_formed = format!("t={now},v1={tag}");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut attackers = Vec::new();
    for _ in 0..2 {
        let (app, body, stop) = (app.clone(), body.clone(), stop.clone());
        let headers = [header.clone(), well_formed.clone()];
        attackers.push(tokio::spawn(async move {
            let mut slowest = Duration::ZERO;
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let start = std::time::Instant::now();
                let (status, _) = deliver(&app, &body, &headers[n % 2]).await;
                slowest = slowest.max(start.elapsed());
                let want = if n % 2 == 0 { 400 } else { 401 };
                assert_eq!(status, want, "request {n}");
                n += 1;
            }
            (n, slowest)
        }));
    }
    let mut health = Vec::new();
    for _ in 0..300 {
        let start = std::time::Instant::now();
        let r = app.client.get(app.url("/healthz")).send().await.unwrap();
        assert_eq!(r.status(), 200);
        health.push(start.elapsed());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    health.sort();
    let p99 = health[health.len() * 99 / 100];
    for a in attackers {
        let (n, slowest) = a.await.unwrap();
        eprintln!("attacker: {n} requests, slowest {slowest:?}");
        assert!(n > 10, "the attack ran ({n} requests)");
        assert!(
            slowest < Duration::from_millis(50),
            "a refusal took {slowest:?}"
        );
    }
    eprintln!("healthz p99 {p99:?} under attack");
    assert!(p99 < Duration::from_millis(10), "healthz p99 {p99:?}");
    let app = Arc::try_unwrap(app).ok().unwrap();
    done(env, app).await;
}

/// RabbitMQ goes away: webhooks still answer at once; the grant happens once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_answer_while_the_broker_is_down() {
    for backend in [Backend::RabbitMariadb, Backend::RabbitPostgres] {
        let Some(mut env) = TestEnv::new(backend, "payments_broker_down").await else {
            return;
        };
        with_secret(&mut env);
        let proxy = Proxy::start("127.0.0.1:5672").await;
        env.settings.broker.url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port);
        let app = spawn_app(&env).await;
        app.start_consumers();
        let (user, key) = app.user("payer", 0).await;
        let payment = intent(&app, &key).await;
        proxy.down();
        let body = event("evt_down", &payment, 990);
        let (status, _) = deliver(
            &app,
            &body,
            &signature(&body, chrono::Utc::now().timestamp()),
        )
        .await;
        assert_eq!(status, 200, "answered without the broker");
        // A fixed wait: what is checked is that nothing happens while the broker is away
        // (the fallback is off), and an absence has no event to await.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(app.credits(&user.id).await, 0);
        proxy.up();
        wait_until(
            Duration::from_secs(60),
            "the grant after the outage",
            || async { app.credits(&user.id).await == 100 },
        )
        .await;
        let platform = app.stop().await;
        env.cleanup(Some(&platform)).await;
    }
}

struct Alipay {
    pair: aws_lc_rs::signature::RsaKeyPair,
}

impl Alipay {
    fn new(env: &mut TestEnv) -> Alipay {
        use aws_lc_rs::encoding::AsDer as _;
        use aws_lc_rs::signature::KeyPair as _;
        use base64::Engine as _;
        let pair =
            aws_lc_rs::signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let der = pair.public_key().as_der().unwrap();
        let public = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        env.settings.sections.get_mut("payments").unwrap()["alipay"] =
            json!({ "app_id": "2021001", "seller_id": "2088001", "public_key": public });
        Alipay { pair }
    }

    /// The form Alipay posts, signed.
    fn notify(&self, params: &[(&str, &str)]) -> String {
        use base64::Engine as _;
        let map = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let signed = conveyor::domains::payments::verify::alipay_signed_string(&map);
        let mut sig = vec![0u8; self.pair.public_modulus_len()];
        self.pair
            .sign(
                &aws_lc_rs::signature::RSA_PKCS1_SHA256,
                &aws_lc_rs::rand::SystemRandom::new(),
                signed.as_bytes(),
                &mut sig,
            )
            .unwrap();
        let mut form = form_urlencoded::Serializer::new(String::new());
        for (k, v) in params {
            form.append_pair(k, v);
        }
        form.append_pair("sign_type", "RSA2");
        form.append_pair(
            "sign",
            &base64::engine::general_purpose::STANDARD.encode(sig),
        );
        form.finish()
    }
}

async fn post_alipay(app: &TestApp, form: &str) -> (u16, String) {
    let r = app
        .client
        .post(app.url("/v1/webhooks/payments/alipay"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.to_owned())
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn an_alipay_notify_grants_once_and_refuses_forgeries(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "payments_alipay").await else {
        return;
    };
    let alipay = Alipay::new(&mut env);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("payer", 0).await;
    let payment = intent(&app, &key).await;
    let id = payment["out_trade_no"].as_str().unwrap().to_owned();
    let good = [
        ("app_id", "2021001"),
        ("seller_id", "2088001"),
        ("notify_id", "n-1"),
        ("trade_no", "t-1"),
        ("out_trade_no", id.as_str()),
        ("total_amount", "9.90"),
        ("trade_status", "TRADE_SUCCESS"),
    ];
    let form = alipay.notify(&good);
    for _ in 0..5 {
        assert_eq!(post_alipay(&app, &form).await, (200, "success".into()));
    }
    wait_until(Duration::from_secs(30), "the grant", || async {
        app.credits(&user.id).await == 100
    })
    .await;
    // The same signed notify re-keyed: `notify_id` moved into the value before it in
    // sort order (`app_id`: Alipay's signed string escapes no `&`), or a key repeated.
    // The signature still verifies; the notify is refused, never recorded anew.
    let sign = form_urlencoded::parse(form.as_bytes())
        .find(|(k, _)| k == "sign")
        .unwrap()
        .1
        .into_owned();
    let mut smuggled = form_urlencoded::Serializer::new(String::new());
    for (k, v) in good.iter().filter(|(k, _)| *k != "notify_id") {
        let v = if *k == "app_id" {
            "2021001&notify_id=n-1"
        } else {
            v
        };
        smuggled.append_pair(k, v);
    }
    smuggled.append_pair("sign_type", "RSA2");
    smuggled.append_pair("sign", &sign);
    let smuggled = smuggled.finish();
    assert_eq!(post_alipay(&app, &smuggled).await, (400, "failure".into()));
    let repeated = format!("{form}&notify_id=n-1");
    assert_eq!(post_alipay(&app, &repeated).await, (400, "failure".into()));
    let mut odd_id = good;
    odd_id[2] = ("notify_id", "n 1/x");
    assert_eq!(
        post_alipay(&app, &alipay.notify(&odd_id)).await,
        (400, "failure".into())
    );
    // Forged: the amount changed after signing; another app; signed by someone else.
    let tampered = form.replace("9.90", "0.01");
    assert_eq!(post_alipay(&app, &tampered).await, (400, "failure".into()));
    let mut other_app = good;
    other_app[0] = ("app_id", "2021999");
    other_app[2] = ("notify_id", "n-2");
    assert_eq!(
        post_alipay(&app, &alipay.notify(&other_app)).await,
        (400, "failure".into())
    );
    let mut cheap = good;
    cheap[5] = ("total_amount", "0.01");
    cheap[2] = ("notify_id", "n-3");
    assert_eq!(
        post_alipay(&app, &alipay.notify(&cheap)).await,
        (400, "failure".into())
    );
    // A closed trade is acknowledged and grants nothing.
    let mut closed = good;
    closed[6] = ("trade_status", "TRADE_CLOSED");
    closed[2] = ("notify_id", "n-4");
    assert_eq!(
        post_alipay(&app, &alipay.notify(&closed)).await,
        (200, "success".into())
    );
    // Settled, not slept on: a second grant would have been applied by now.
    app.drain(&conveyor::domains::payments::queues::PAYMENTS_APPLY)
        .await;
    assert_eq!(app.credits(&user.id).await, 100, "granted once");
    // Refunds: Alipay's refund_fee is the total refunded so far. Half, then all (the
    // trade closes); each notify twice, and the first again after the second.
    let mut half = good.to_vec();
    half[2] = ("notify_id", "n-5");
    half.push(("refund_fee", "4.95"));
    half.push(("out_biz_no", "R1"));
    half.push(("gmt_refund", "2026-12-03 10:00:00"));
    let half = alipay.notify(&half);
    let mut all = good.to_vec();
    all[2] = ("notify_id", "n-6");
    all[6] = ("trade_status", "TRADE_CLOSED");
    all.push(("refund_fee", "9.90"));
    all.push(("out_biz_no", "R2"));
    all.push(("gmt_refund", "2026-12-03 10:05:00"));
    let all_form = alipay.notify(&all);
    for _ in 0..2 {
        assert_eq!(post_alipay(&app, &half).await, (200, "success".into()));
    }
    wait_until(Duration::from_secs(30), "half back", || async {
        app.credits(&user.id).await == 50
    })
    .await;
    for form in [&all_form, &all_form, &half] {
        assert_eq!(post_alipay(&app, form).await, (200, "success".into()));
    }
    let mut too_much = all.clone();
    too_much[2] = ("notify_id", "n-7");
    too_much[7] = ("refund_fee", "10.00");
    too_much[8] = ("out_biz_no", "R3");
    assert_eq!(
        post_alipay(&app, &alipay.notify(&too_much)).await,
        (400, "failure".into())
    );
    // A refund notify without its request number; one whose `out_biz_no` was folded into
    // the value before it in sort order (`notify_type`): the signature of the folded one
    // still verifies, and both are refused.
    let mut anonymous = all.clone();
    anonymous[2] = ("notify_id", "n-8");
    anonymous.remove(8);
    assert_eq!(
        post_alipay(&app, &alipay.notify(&anonymous)).await,
        (400, "failure".into())
    );
    let mut typed = all.clone();
    typed[2] = ("notify_id", "n-9");
    typed[8] = ("out_biz_no", "R4");
    typed.push(("notify_type", "trade_status_sync"));
    let signed = alipay.notify(&typed);
    let sign = form_urlencoded::parse(signed.as_bytes())
        .find(|(k, _)| k == "sign")
        .unwrap()
        .1
        .into_owned();
    let mut folded = form_urlencoded::Serializer::new(String::new());
    for (k, v) in typed.iter().filter(|(k, _)| *k != "out_biz_no") {
        let v = if *k == "notify_type" {
            "trade_status_sync&out_biz_no=R4"
        } else {
            v
        };
        folded.append_pair(k, v);
    }
    folded.append_pair("sign_type", "RSA2");
    folded.append_pair("sign", &sign);
    assert_eq!(
        post_alipay(&app, &folded.finish()).await,
        (400, "failure".into())
    );
    wait_payment(&app, &key, &payment, "REFUNDED").await;
    assert_eq!(app.credits(&user.id).await, 0, "taken back once");
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

struct Wechat {
    pair: aws_lc_rs::signature::RsaKeyPair,
}

const API_V3_KEY: &str = "0123456789abcdef0123456789abcdef";

impl Wechat {
    fn new(env: &mut TestEnv) -> Wechat {
        use aws_lc_rs::encoding::AsDer as _;
        use aws_lc_rs::signature::KeyPair as _;
        use base64::Engine as _;
        let pair =
            aws_lc_rs::signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let der = pair.public_key().as_der().unwrap();
        let public = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        env.settings.sections.get_mut("payments").unwrap()["wechat"] = json!({
            "appid": "wx1", "mchid": "m1", "api_v3_key": API_V3_KEY,
            "platform_keys": { "S1": public },
        });
        Wechat { pair }
    }

    /// A payment notification for `transaction` (encrypted) with its signed headers.
    fn notify(&self, id: &str, transaction: &Value) -> (String, [(&'static str, String); 4]) {
        self.notify_as(id, "TRANSACTION.SUCCESS", transaction)
    }

    fn notify_as(
        &self,
        id: &str,
        event_type: &str,
        transaction: &Value,
    ) -> (String, [(&'static str, String); 4]) {
        use base64::Engine as _;
        let b64 = &base64::engine::general_purpose::STANDARD;
        let key = aws_lc_rs::aead::LessSafeKey::new(
            aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_256_GCM, API_V3_KEY.as_bytes())
                .unwrap(),
        );
        let mut data = transaction.to_string().into_bytes();
        key.seal_in_place_append_tag(
            aws_lc_rs::aead::Nonce::try_assume_unique_for_key(b"abcdefghijkl").unwrap(),
            aws_lc_rs::aead::Aad::from(b"transaction"),
            &mut data,
        )
        .unwrap();
        let body = json!({
            "id": id, "event_type": event_type,
            "resource": { "algorithm": "AEAD_AES_256_GCM", "associated_data": "transaction",
                          "nonce": "abcdefghijkl", "ciphertext": b64.encode(&data) },
        })
        .to_string();
        let ts = chrono::Utc::now().timestamp().to_string();
        let signed = format!("{ts}\nnonce-1\n{body}\n");
        let mut sig = vec![0u8; self.pair.public_modulus_len()];
        self.pair
            .sign(
                &aws_lc_rs::signature::RSA_PKCS1_SHA256,
                &aws_lc_rs::rand::SystemRandom::new(),
                signed.as_bytes(),
                &mut sig,
            )
            .unwrap();
        let headers = [
            ("wechatpay-timestamp", ts),
            ("wechatpay-nonce", "nonce-1".to_owned()),
            ("wechatpay-signature", b64.encode(sig)),
            ("wechatpay-serial", "S1".to_owned()),
        ];
        (body, headers)
    }
}

async fn post_wechat(
    app: &TestApp,
    body: &str,
    headers: &[(&'static str, String)],
) -> (u16, Value) {
    let mut req = app
        .client
        .post(app.url("/v1/webhooks/payments/wechat"))
        .header("content-type", "application/json")
        .body(body.to_owned());
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

async fn a_wechat_notification_grants_once_and_refuses_forgeries(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "payments_wechat").await else {
        return;
    };
    let wechat = Wechat::new(&mut env);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("payer", 0).await;
    let payment = intent(&app, &key).await;
    let tx = |total: i64, mchid: &str| {
        json!({ "appid": "wx1", "mchid": mchid, "out_trade_no": payment["out_trade_no"],
                "trade_state": "SUCCESS", "amount": { "total": total, "currency": "CNY" } })
    };
    let (body, headers) = wechat.notify("EV-1", &tx(990, "m1"));
    for _ in 0..3 {
        let (status, answer) = post_wechat(&app, &body, &headers).await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (200, Some("SUCCESS")),
            "{answer}"
        );
    }
    wait_until(Duration::from_secs(30), "the grant", || async {
        app.credits(&user.id).await == 100
    })
    .await;
    // Another serial; the body changed after signing; a cheaper amount; another merchant.
    let mut unknown = headers.clone();
    unknown[3].1 = "S9".into();
    assert_eq!(post_wechat(&app, &body, &unknown).await.0, 400);
    assert_eq!(
        post_wechat(&app, &body.replace("EV-1", "EV-9"), &headers)
            .await
            .0,
        400
    );
    let (cheap, cheap_headers) = wechat.notify("EV-2", &tx(1, "m1"));
    assert_eq!(post_wechat(&app, &cheap, &cheap_headers).await.0, 400);
    let (other, other_headers) = wechat.notify("EV-3", &tx(990, "m9"));
    assert_eq!(post_wechat(&app, &other, &other_headers).await.0, 400);
    // Settled, not slept on: a second grant would have been applied by now.
    app.drain(&conveyor::domains::payments::queues::PAYMENTS_APPLY)
        .await;
    assert_eq!(app.credits(&user.id).await, 100, "granted once");
    // A partial refund (REFUND.SUCCESS, no appid in its resource), delivered twice.
    let refund = json!({ "mchid": "m1", "out_trade_no": payment["out_trade_no"],
        "out_refund_no": "R1", "refund_status": "SUCCESS",
        "amount": { "total": 990, "refund": 99, "payer_total": 990, "payer_refund": 99 } });
    let (body, headers) = wechat.notify_as("EV-R1", "REFUND.SUCCESS", &refund);
    for _ in 0..2 {
        assert_eq!(post_wechat(&app, &body, &headers).await.0, 200);
    }
    wait_until(Duration::from_secs(30), "the refund", || async {
        app.credits(&user.id).await == 90
    })
    .await;
    // The same refund (R1) in a notification with a new id: recorded once, by refund.
    let (again, again_headers) = wechat.notify_as("EV-R1-resent", "REFUND.SUCCESS", &refund);
    assert_eq!(post_wechat(&app, &again, &again_headers).await.0, 200);
    // Settled, not slept on: a second grant would have been applied by now.
    app.drain(&conveyor::domains::payments::queues::PAYMENTS_APPLY)
        .await;
    assert_eq!(app.credits(&user.id).await, 90, "a tenth back, once");
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// A consumer that committed and died before its ack: the redelivery applies nothing more.
async fn a_redelivery_after_the_commit_grants_nothing(backend: Backend) {
    use conveyor::domains::payments::store::{self, Applied, Kind};
    let Some(env) = TestEnv::new(backend, "payments_redelivery").await else {
        return;
    };
    let platform = env.platform().await;
    let (user, _) = conveyor::users::create(&platform.db, "payer", 0, false)
        .await
        .unwrap();
    let payment = store::create(&platform.db, &user.id, credit_pack())
        .await
        .unwrap();
    let txn = sea_orm::TransactionTrait::begin(&platform.db)
        .await
        .unwrap();
    let row = store::receive(&txn, "hmac", "evt_r", &payment.id, Kind::Paid)
        .await
        .unwrap()
        .unwrap();
    txn.commit().await.unwrap();
    let first = store::apply(&platform.db, row, MAX).await.unwrap();
    assert_eq!(
        first,
        Applied::Granted {
            user_id: user.id.clone(),
            credits: 100,
            membership_until: None,
            order_event: None,
        }
    );
    // The same message again (its ack was lost), and concurrently twice more.
    let (a, b, c) = tokio::join!(
        store::apply(&platform.db, row, MAX),
        store::apply(&platform.db, row, MAX),
        store::apply(&platform.db, row, MAX)
    );
    for again in [a, b, c] {
        assert_eq!(again.unwrap(), Applied::Before);
    }
    let balance = conveyor::users::entity::user::Entity::find_by_id(user.id.clone())
        .one(&platform.db)
        .await
        .unwrap()
        .unwrap()
        .credits;
    assert_eq!(balance, 100, "granted once");
    env.cleanup(Some(&platform)).await;
}

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

/// The fallback on: with RabbitMQ unreachable the grant happens during the outage, and
/// when the broker returns and the apply message arrives, nothing is granted twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fallback_grants_while_the_broker_is_down() {
    for backend in [Backend::RabbitMariadb, Backend::RabbitPostgres] {
        let Some(mut env) = TestEnv::new(backend, "payments_fallback").await else {
            return;
        };
        with_secret(&mut env);
        env.settings.sections.get_mut("payments").unwrap()["fallback_after_secs"] = json!(1);
        let proxy = Proxy::start("127.0.0.1:5672").await;
        env.settings.broker.url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port);
        let app = spawn_app(&env).await;
        app.start_consumers();
        let (user, key) = app.user("payer", 0).await;
        let payment = intent(&app, &key).await;
        proxy.down();
        pay(&app, "fb-1", &payment).await;
        wait_until(
            Duration::from_secs(30),
            "the grant during the outage",
            || async { app.credits(&user.id).await == 100 },
        )
        .await;
        proxy.up();
        // The relay publishes the apply message; the consumer finds it applied.
        app.drain(&conveyor::domains::payments::queues::PAYMENTS_APPLY)
            .await;
        assert_eq!(app.credits(&user.id).await, 100, "granted once");
        let p = wait_payment(&app, &key, &payment, "PAID").await;
        assert_eq!(p["events"].as_array().unwrap().len(), 1);
        let platform = app.stop().await;
        env.cleanup(Some(&platform)).await;
    }
}

/// Random forgeries over HTTP for each scheme — bodies, headers, timestamps, serials,
/// signatures and keys changed after signing: not one is accepted, nothing is recorded
/// or granted; then the genuine events are (the harness can tell an accept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_webhooks_are_never_accepted() {
    use rand::Rng as _;
    const EACH: usize = 1000;
    let Some(mut env) = TestEnv::new(Backend::Embedded, "payments_forgeries").await else {
        return;
    };
    with_secret(&mut env);
    let alipay = Alipay::new(&mut env);
    let wechat = Wechat::new(&mut env);
    let other_alipay = Alipay {
        pair: aws_lc_rs::signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap(),
    };
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("payer", 0).await;
    let payment = intent(&app, &key).await;
    let mut rng = rand::rng();
    let flip = |bytes: &mut Vec<u8>, rng: &mut rand::rngs::ThreadRng| {
        let i = rng.random_range(0..bytes.len());
        let was = bytes[i];
        while bytes[i] == was {
            bytes[i] = rng.random_range(0x20..0x7f);
        }
    };

    // HMAC: body byte, timestamp, signature, secret, stale.
    let now = chrono::Utc::now().timestamp();
    let hmac_body = event("f-hmac", &payment, 990);
    let sig = signature(&hmac_body, now);
    for n in 0..EACH {
        let (b, h) = match n % 5 {
            0 => {
                let mut b = hmac_body.clone().into_bytes();
                flip(&mut b, &mut rng);
                (String::from_utf8_lossy(&b).into_owned(), sig.clone())
            }
            1 => {
                let t = now + rng.random_range(1..100) * if rng.random_bool(0.5) { 1 } else { -1 };
                (
                    hmac_body.clone(),
                    sig.replacen(&format!("t={now}"), &format!("t={t}"), 1),
                )
            }
            2 => {
                let mut h = sig.clone().into_bytes();
                let i = rng.random_range(h.len() - 64..h.len());
                h[i] = if h[i] == b'0' { b'1' } else { b'0' };
                (hmac_body.clone(), String::from_utf8(h).unwrap())
            }
            3 => (
                hmac_body.clone(),
                signature_with(&format!("whsec_{}", rng.random::<u64>()), &hmac_body, now),
            ),
            _ => (
                hmac_body.clone(),
                signature(&hmac_body, now - 301 - rng.random_range(0..10_000)),
            ),
        };
        let (status, answer) = deliver(&app, &b, &h).await;
        assert_ne!(status, 200, "HMAC forgery {n} accepted: {answer}");
    }

    // Alipay: a signed value, a dropped or added parameter, the signature, another key.
    let id = payment["out_trade_no"].as_str().unwrap().to_owned();
    let params = [
        ("app_id", "2021001"),
        ("seller_id", "2088001"),
        ("notify_id", "f-ali"),
        ("trade_no", "t-f"),
        ("out_trade_no", id.as_str()),
        ("total_amount", "9.90"),
        ("trade_status", "TRADE_SUCCESS"),
    ];
    let form = alipay.notify(&params);
    let pairs: Vec<(String, String)> = form_urlencoded::parse(form.as_bytes())
        .into_owned()
        .collect();
    let encode = |pairs: &[(String, String)]| {
        let mut f = form_urlencoded::Serializer::new(String::new());
        for (k, v) in pairs {
            f.append_pair(k, v);
        }
        f.finish()
    };
    for n in 0..EACH {
        let mut p = pairs.clone();
        let forged = match n % 5 {
            0 => {
                let i = rng.random_range(0..params.len());
                let mut v = p[i].1.clone().into_bytes();
                flip(&mut v, &mut rng);
                p[i].1 = String::from_utf8_lossy(&v).into_owned();
                encode(&p)
            }
            1 => {
                p.remove(rng.random_range(0..params.len()));
                encode(&p)
            }
            2 => {
                p.insert(0, (format!("x{}", rng.random::<u32>()), "1".into()));
                encode(&p)
            }
            3 => {
                let sign = p.iter_mut().find(|(k, _)| k == "sign").unwrap();
                let mut v = sign.1.clone().into_bytes();
                let i = rng.random_range(0..v.len() - 4);
                v[i] = if v[i] == b'A' { b'B' } else { b'A' };
                sign.1 = String::from_utf8(v).unwrap();
                encode(&p)
            }
            _ => other_alipay.notify(&params),
        };
        let answer = post_alipay(&app, &forged).await;
        assert_eq!(
            answer,
            (400, "failure".into()),
            "Alipay forgery {n} accepted"
        );
    }

    // WeChat: body byte, timestamp, nonce, signature, serial.
    let tx = json!({ "appid": "wx1", "mchid": "m1", "out_trade_no": payment["out_trade_no"],
        "trade_state": "SUCCESS", "amount": { "total": 990, "currency": "CNY" } });
    let (body, headers) = wechat.notify("f-wx", &tx);
    for n in 0..EACH {
        let mut h = headers.clone();
        let mut b = body.clone();
        match n % 5 {
            0 => {
                let mut bytes = b.into_bytes();
                flip(&mut bytes, &mut rng);
                b = String::from_utf8_lossy(&bytes).into_owned();
            }
            1 => {
                let t: i64 = h[0].1.parse().unwrap();
                h[0].1 = (t + rng.random_range(1..100)).to_string();
            }
            2 => h[1].1 = format!("nonce-{}", rng.random::<u32>()),
            3 => {
                let mut v = h[2].1.clone().into_bytes();
                let i = rng.random_range(0..v.len() - 4);
                v[i] = if v[i] == b'A' { b'B' } else { b'A' };
                h[2].1 = String::from_utf8(v).unwrap();
            }
            _ => h[3].1 = format!("S{}", rng.random_range(2..1000)),
        }
        let (status, answer) = post_wechat(&app, &b, &h).await;
        assert_ne!(status, 200, "WeChat forgery {n} accepted: {answer}");
    }

    let p = show(&app, &key, &payment).await;
    assert_eq!(p["events"].as_array().unwrap().len(), 0, "nothing recorded");
    assert_eq!(app.credits(&user.id).await, 0);
    // The genuine three are accepted; the payment is granted once.
    assert_eq!(deliver(&app, &hmac_body, &sig).await.0, 200);
    assert_eq!(post_alipay(&app, &form).await, (200, "success".into()));
    assert_eq!(post_wechat(&app, &body, &headers).await.0, 200);
    wait_payment(&app, &key, &payment, "PAID").await;
    assert_eq!(app.credits(&user.id).await, 100);
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
    let until = conveyor::users::membership::extend(&txn, &locked, 240, "membership:far")
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
