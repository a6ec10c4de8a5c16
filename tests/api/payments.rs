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
);

const SECRET: &str = "whsec_test";
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

fn signature(body: &str, t: i64) -> String {
    signature_with(SECRET, body, t)
}

fn signature_with(secret: &str, body: &str, t: i64) -> String {
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = aws_lc_rs::hmac::sign(&key, format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex::encode(tag.as_ref()))
}

async fn intent(app: &TestApp, key: &str) -> Value {
    let r = app
        .client
        .post(app.url("/v1/payments"))
        .bearer_auth(key)
        .json(&json!({ "product": "credits_100" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    r.json().await.unwrap()
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
    tokio::time::sleep(Duration::from_millis(1500)).await;
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
    let Some(mut env) = TestEnv::new(backend, "payments_refused").await else {
        return;
    };
    with_secret(&mut env);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("payer", 0).await;
    let payment = intent(&app, &key).await;
    let now = chrono::Utc::now().timestamp();
    let body = event("evt_x", &payment, 990);
    // Signed with another secret; signed for another body; too old; no header; not JSON.
    let forged = signature_with("whsec_guess", &body, now);
    assert_eq!(deliver(&app, &body, &forged).await.0, 401);
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
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(app.credits(&user.id).await, 0, "nothing granted");
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
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
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(app.credits(&user.id).await, 100, "granted once");
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

    /// A notification for `transaction` (encrypted) with its signed headers.
    fn notify(&self, id: &str, transaction: &Value) -> (String, [(&'static str, String); 4]) {
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
            "id": id, "event_type": "TRANSACTION.SUCCESS",
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
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(app.credits(&user.id).await, 100, "granted once");
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
