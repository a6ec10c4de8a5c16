//! Payments on every backend: webhooks verified, recorded and granted once, per provider
//! ([`hmac`], [`alipay`], [`wechat`]); refunds and memberships ([`refunds`]); what
//! payments pay for ([`orders`]). The helpers here are shared by all of them.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::EntityTrait as _;
use serde_json::{Value, json};

use crate::helpers::*;

mod alipay;
mod forgeries;
mod hmac;
mod notify;
mod orders;
mod plans;
mod refunds;
mod wechat;

/// At least 32 bytes: start-up refuses a shorter secret.
const SECRET: &str = "whsec_test_0123456789abcdef0123456789";

const MAX: usize = 1 << 20;

fn credit_pack() -> conveyor::domains::payments::store::NewPayment {
    conveyor::domains::payments::store::NewPayment {
        product: "credits_100".into(),
        credits: 100,
        membership_months: 0,
        plan: None,
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
