//! HTTP: buyers create payment intents and read them; providers call the webhook.
//!
//! `POST /v1/webhooks/payments/hmac` verifies the raw body before it parses it, checks
//! the amount and currency against the payment, records the event in the inbox together
//! with its `payments.apply` message (one transaction) and answers at once: the answer
//! never waits for the broker. A redelivered event answers the same with no effect.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRef, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::handler::APPLY_EVENT;
use super::queues::PAYMENTS_APPLY;
use super::settings::{PaymentSettings, ProviderKeys};
use super::store::{self, Payment};
use super::verify::{self, Refused};
use crate::api::openapi::ErrorBody;
use crate::api::{ApiJson, AuthUser, Core};
use crate::broker::{Envelope, Target};
use crate::error::ApiError;

/// The header carrying `t=<unix>,v1=<hex hmac>`.
pub const SIGNATURE_HEADER: &str = "conveyor-signature";

#[derive(Clone, FromRef)]
pub struct Payments {
    pub core: Core,
    pub settings: Arc<PaymentSettings>,
    /// Parsed once when the routes are built.
    pub keys: Arc<ProviderKeys>,
}

pub fn routes(state: Payments) -> Router {
    Router::new()
        .route("/v1/payments", post(create))
        .route("/v1/payments/{id}", get(show))
        .route("/v1/webhooks/payments/hmac", post(webhook))
        .route("/v1/webhooks/payments/alipay", post(alipay))
        .route("/v1/webhooks/payments/wechat", post(wechat))
        .with_state(state)
}

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(create, show, webhook, alipay, wechat),
    tags((name = "payments", description = "Payment intents and provider webhooks"))
)]
pub struct Doc;

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PaymentRequest {
    /// A product of `[payments.products]`.
    pub product: String,
}

/// What a client needs to pay, provider-agnostic.
#[derive(Debug, Serialize, ToSchema)]
pub struct PaymentView {
    pub id: String,
    /// Our order number at the provider (the payment id).
    pub out_trade_no: String,
    pub product: String,
    pub credits: i64,
    /// In the currency's minor unit.
    pub amount: i64,
    pub currency: String,
    /// `CREATED` or `PAID`.
    pub status: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub paid_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl From<Payment> for PaymentView {
    fn from(p: Payment) -> Self {
        PaymentView {
            out_trade_no: p.id.clone(),
            id: p.id,
            product: p.product,
            credits: p.credits,
            amount: p.amount,
            currency: p.currency,
            status: p.status,
            created_at: p.created_at,
            paid_at: p.paid_at,
        }
    }
}

/// `POST /v1/payments`: a payment intent for a product.
#[utoipa::path(post, path = "/v1/payments", tag = "payments", security(("api_key" = [])),
    request_body = PaymentRequest,
    responses(
        (status = 201, description = "The intent", body = PaymentView),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 422, description = "Unknown product", body = ErrorBody)))]
pub(crate) async fn create(
    State(state): State<Payments>,
    AuthUser(user): AuthUser,
    ApiJson(req): ApiJson<PaymentRequest>,
) -> Result<(StatusCode, Json<PaymentView>), ApiError> {
    let product = state.settings.products.get(&req.product).ok_or_else(|| {
        let known: Vec<&str> = state.settings.products.keys().map(String::as_str).collect();
        ApiError::Unprocessable {
            code: "invalid_field",
            message: format!("unknown product; expected one of {}", known.join(", ")),
            field: Some("product".into()),
        }
    })?;
    let p = store::create(
        &state.core.db,
        &user.id,
        &req.product,
        product.credits,
        product.amount,
        &state.settings.currency,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(p.into())))
}

/// `GET /v1/payments/{id}`: the caller's payment.
#[utoipa::path(get, path = "/v1/payments/{id}", tag = "payments", security(("api_key" = [])),
    params(("id" = String, Path, description = "Payment id")),
    responses(
        (status = 200, description = "The payment", body = PaymentView),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "No such payment of the caller's", body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<Payments>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<PaymentView>, ApiError> {
    match store::get(&state.core.db, &id).await? {
        Some(p) if user.can_see(&p.user_id) => Ok(Json(p.into())),
        _ => Err(ApiError::NotFound("payment")),
    }
}

/// The event a provider signs.
#[derive(Debug, Deserialize)]
struct HmacEvent {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    data: HmacData,
}

#[derive(Debug, Deserialize)]
struct HmacData {
    out_trade_no: String,
    amount: i64,
    currency: String,
}

/// Logs and counts a refused webhook (the reason only, never the body).
fn note_refused(provider: &'static str, why: &Refused) {
    tracing::warn!(provider, reason = why.reason(), "webhook refused");
    outcome(provider, why.reason());
}

/// [`note_refused`], then the JSON answer of the HMAC route.
fn refused(provider: &'static str, why: &Refused) -> ApiError {
    note_refused(provider, why);
    match why {
        Refused::Malformed(_) => ApiError::BadRequest {
            code: "malformed",
            message: why.to_string(),
            field: None,
        },
        _ => ApiError::Unauthorized,
    }
}

fn outcome(provider: &'static str, outcome: &'static str) {
    metrics::counter!("conveyor_webhooks_total", "provider" => provider, "outcome" => outcome)
        .increment(1);
}

/// Records a verified paid event in the inbox with its apply message, one transaction;
/// false when the provider sent this event before (nothing more to do).
async fn record(
    state: &Payments,
    provider: &'static str,
    event_id: &str,
    payment: &Payment,
) -> Result<bool, ApiError> {
    let txn = crate::db::begin_read_committed(&state.core.db).await?;
    let Some(row) = store::receive(&txn, provider, event_id, &payment.id).await? else {
        txn.rollback().await?;
        outcome(provider, "duplicate");
        return Ok(false);
    };
    let apply =
        Envelope::new(APPLY_EVENT, json!({ "event": row })).with_correlation_id(payment.id.clone());
    let max = state.core.settings.broker.max_payload_bytes;
    crate::outbox::enqueue(&txn, Target::Queue(&PAYMENTS_APPLY), &apply, max)
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    txn.commit().await?;
    state.core.relay.notify();
    outcome(provider, "accepted");
    Ok(true)
}

/// Logs and counts an event that does not match its payment.
fn note_mismatch(provider: &'static str, event: &str, payment: &str) {
    tracing::warn!(
        provider,
        event,
        payment,
        "webhook does not match its payment"
    );
    outcome(provider, "mismatch");
}

/// `POST /v1/webhooks/payments/hmac`: a provider's signed event (`conveyor-signature:
/// t=<unix>,v1=<hex hmac-sha256 of "t.body">`).
#[utoipa::path(post, path = "/v1/webhooks/payments/hmac", tag = "payments",
    request_body(content = Object, description = "`{\"id\":…,\"type\":\"payment.succeeded\",\"data\":{\"out_trade_no\",\"amount\",\"currency\"}}`"),
    responses(
        (status = 200, description = "Recorded (or recorded before): `{\"received\":true}`", body = Object),
        (status = 400, description = "Malformed, or amount/currency not the payment's", body = ErrorBody),
        (status = 401, description = "Bad or expired signature", body = ErrorBody),
        (status = 404, description = "No such payment", body = ErrorBody)))]
pub(crate) async fn webhook(
    State(state): State<Payments>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    const PROVIDER: &str = "hmac";
    let header = headers
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            refused(
                PROVIDER,
                &Refused::Malformed("no conveyor-signature header"),
            )
        })?;
    let secrets: Vec<&[u8]> = state
        .settings
        .hmac_secrets
        .iter()
        .map(|s| s.as_bytes())
        .collect();
    let now = chrono::Utc::now().timestamp();
    verify::hmac_sha256(
        header,
        &body,
        &secrets,
        now,
        state.settings.timestamp_window_secs,
    )
    .map_err(|e| refused(PROVIDER, &e))?;
    let ev: HmacEvent = serde_json::from_slice(&body)
        .map_err(|_| refused(PROVIDER, &Refused::Malformed("not a payment event")))?;
    if ev.kind != "payment.succeeded" {
        // Signed and well-formed, but nothing we act on: acknowledge so it is not resent.
        outcome(PROVIDER, "ignored");
        return Ok(Json(json!({ "received": true })));
    }
    let payment = store::get(&state.core.db, &ev.data.out_trade_no)
        .await?
        .ok_or(ApiError::NotFound("payment"))?;
    if payment.amount != ev.data.amount || payment.currency != ev.data.currency {
        note_mismatch(PROVIDER, &ev.id, &payment.id);
        return Err(ApiError::BadRequest {
            code: "mismatch",
            message: "the event does not match the payment (amount or currency)".into(),
            field: None,
        });
    }
    record(&state, PROVIDER, &ev.id, &payment).await?;
    Ok(Json(json!({ "received": true })))
}

/// Yuan with two decimals, as Alipay writes `total_amount`, from fen.
fn yuan(fen: i64) -> String {
    format!("{}.{:02}", fen / 100, fen % 100)
}

/// Alipay's answers: `success` stops its retries, anything else makes it retry.
fn alipay_answer(ok: bool) -> (StatusCode, &'static str) {
    if ok {
        (StatusCode::OK, "success")
    } else {
        (StatusCode::BAD_REQUEST, "failure")
    }
}

/// `POST /v1/webhooks/payments/alipay`: an Alipay asynchronous notify (form-encoded,
/// RSA2-signed). TRADE_SUCCESS and TRADE_FINISHED pay; TRADE_CLOSED is acknowledged.
#[utoipa::path(post, path = "/v1/webhooks/payments/alipay", tag = "payments",
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "Alipay's notify parameters, `sign` and `sign_type=RSA2` included"),
    responses(
        (status = 200, description = "`success` (recorded, or recorded before, or nothing to do)", body = String, content_type = "text/plain"),
        (status = 400, description = "`failure`: bad signature, another app or seller, amount mismatch, unknown payment (Alipay retries)", body = String, content_type = "text/plain"),
        (status = 404, description = "Alipay is not configured (`payments.alipay.public_key`)", body = ErrorBody)))]
pub(crate) async fn alipay(
    State(state): State<Payments>,
    body: Bytes,
) -> Result<(StatusCode, &'static str), ApiError> {
    const PROVIDER: &str = "alipay";
    let conf = &state.settings.alipay;
    let Some(key) = &state.keys.alipay else {
        return Err(ApiError::NotFound("payment provider"));
    };
    let params = match verify::alipay(&body, key) {
        Ok(p) => p,
        Err(why) => {
            note_refused(PROVIDER, &why);
            return Ok(alipay_answer(false));
        }
    };
    let get = |k: &str| params.get(k).map(String::as_str).unwrap_or_default();
    let seller_ok = conf.seller_id.is_empty() || get("seller_id") == conf.seller_id;
    if get("app_id") != conf.app_id || !seller_ok {
        note_mismatch(PROVIDER, get("notify_id"), get("out_trade_no"));
        return Ok(alipay_answer(false));
    }
    if !matches!(get("trade_status"), "TRADE_SUCCESS" | "TRADE_FINISHED") {
        // TRADE_CLOSED, WAIT_BUYER_PAY: nothing to grant; acknowledged.
        outcome(PROVIDER, "ignored");
        return Ok(alipay_answer(true));
    }
    let Some(payment) = store::get(&state.core.db, get("out_trade_no")).await? else {
        outcome(PROVIDER, "unknown_payment");
        return Ok(alipay_answer(false));
    };
    if payment.currency != "CNY" || get("total_amount") != yuan(payment.amount) {
        note_mismatch(PROVIDER, get("notify_id"), &payment.id);
        return Ok(alipay_answer(false));
    }
    let event_id = match get("notify_id") {
        "" => get("trade_no"),
        id => id,
    };
    if event_id.is_empty() {
        note_refused(PROVIDER, &Refused::Malformed("no notify_id or trade_no"));
        return Ok(alipay_answer(false));
    }
    record(&state, PROVIDER, event_id, &payment).await?;
    Ok(alipay_answer(true))
}

/// WeChat Pay's answers: `{"code":"SUCCESS"}`, or a 4xx `{"code":"FAIL",…}` that makes it
/// retry.
fn wechat_answer(ok: bool, message: &str) -> (StatusCode, Json<serde_json::Value>) {
    if ok {
        (StatusCode::OK, Json(json!({ "code": "SUCCESS" })))
    } else {
        (
            StatusCode::BAD_REQUEST,
            Json(json!({ "code": "FAIL", "message": message })),
        )
    }
}

/// The decrypted `resource` of a payment notification.
#[derive(Debug, Deserialize)]
struct WechatTransaction {
    #[serde(default)]
    appid: String,
    #[serde(default)]
    mchid: String,
    out_trade_no: String,
    trade_state: String,
    amount: WechatAmount,
}

#[derive(Debug, Deserialize)]
struct WechatAmount {
    total: i64,
    #[serde(default)]
    currency: String,
}

/// `POST /v1/webhooks/payments/wechat`: a WeChat Pay API v3 notification (headers
/// `Wechatpay-Timestamp`, `-Nonce`, `-Signature`, `-Serial`; `resource` encrypted with the
/// APIv3 key). `trade_state` SUCCESS pays; anything else is acknowledged.
#[utoipa::path(post, path = "/v1/webhooks/payments/wechat", tag = "payments",
    request_body(content = Object, description = "WeChat Pay's notification JSON"),
    responses(
        (status = 200, description = "`{\"code\":\"SUCCESS\"}` (recorded, recorded before, or nothing to do)", body = Object),
        (status = 400, description = "`{\"code\":\"FAIL\"}`: bad or expired signature, unknown serial, undecryptable resource, another merchant, amount mismatch (WeChat retries)", body = Object),
        (status = 404, description = "WeChat Pay is not configured (`payments.wechat`)", body = ErrorBody)))]
pub(crate) async fn wechat(
    State(state): State<Payments>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    const PROVIDER: &str = "wechat";
    let conf = &state.settings.wechat;
    if state.keys.wechat.is_empty() {
        return Err(ApiError::NotFound("payment provider"));
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    let h = verify::WechatHeaders {
        timestamp: header("wechatpay-timestamp"),
        nonce: header("wechatpay-nonce"),
        signature: header("wechatpay-signature"),
        serial: header("wechatpay-serial"),
    };
    let now = chrono::Utc::now().timestamp();
    let window = state.settings.timestamp_window_secs;
    let plain = match verify::wechat(
        &h,
        &body,
        &state.keys.wechat,
        conf.api_v3_key.as_bytes(),
        now,
        window,
    ) {
        Ok(p) => p,
        Err(why) => {
            note_refused(PROVIDER, &why);
            return Ok(wechat_answer(false, why.reason()));
        }
    };
    #[derive(Deserialize)]
    struct Outer {
        id: String,
    }
    let (Ok(outer), Ok(tx)) = (
        serde_json::from_slice::<Outer>(&body),
        serde_json::from_slice::<WechatTransaction>(&plain),
    ) else {
        note_refused(PROVIDER, &Refused::Malformed("not a payment notification"));
        return Ok(wechat_answer(false, "malformed"));
    };
    let merchant_ok = (conf.mchid.is_empty() || tx.mchid == conf.mchid)
        && (conf.appid.is_empty() || tx.appid == conf.appid);
    if !merchant_ok {
        note_mismatch(PROVIDER, &outer.id, &tx.out_trade_no);
        return Ok(wechat_answer(false, "mismatch"));
    }
    if tx.trade_state != "SUCCESS" {
        outcome(PROVIDER, "ignored");
        return Ok(wechat_answer(true, ""));
    }
    let Some(payment) = store::get(&state.core.db, &tx.out_trade_no).await? else {
        outcome(PROVIDER, "unknown_payment");
        return Ok(wechat_answer(false, "unknown payment"));
    };
    let currency = if tx.amount.currency.is_empty() {
        "CNY"
    } else {
        tx.amount.currency.as_str()
    };
    if payment.amount != tx.amount.total || payment.currency != currency {
        note_mismatch(PROVIDER, &outer.id, &payment.id);
        return Ok(wechat_answer(false, "mismatch"));
    }
    record(&state, PROVIDER, &outer.id, &payment).await?;
    Ok(wechat_answer(true, ""))
}
