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

use super::gate::VerifyGate;
use super::recorder::Recorder;
use super::settings::{PaymentSettings, ProviderKeys};
use super::store::{self, Incoming, Kind, NewPayment, Payment};
use super::verify::{self, Refused};
use crate::api::openapi::ErrorBody;
use crate::api::{ApiJson, AuthUser, Core};
use crate::domains::flash_sale::status::OrderStatus;
use crate::domains::flash_sale::store as orders;
use crate::error::ApiError;

/// The header carrying `t=<unix>,v1=<hex hmac>`.
pub const SIGNATURE_HEADER: &str = "conveyor-signature";

#[derive(Clone, FromRef)]
pub struct Payments {
    pub core: Core,
    pub settings: Arc<PaymentSettings>,
    /// Parsed once when the routes are built.
    pub keys: Arc<ProviderKeys>,
    pub recorder: Recorder,
    /// Signature checks, off the async workers and a few at a time.
    pub gate: VerifyGate,
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

/// What to pay for: a product of `[payments.products]`, or one of the caller's unpaid
/// flash-sale orders (exactly one of the two).
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PaymentRequest {
    pub product: Option<String>,
    /// A flash-sale order id; the payment is for its price.
    pub order: Option<String>,
}

/// What a client needs to pay, provider-agnostic, and what became of it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PaymentView {
    pub id: String,
    /// Our order number at the provider (the payment id).
    pub out_trade_no: String,
    /// The product, or `order` for a flash-sale order.
    pub product: String,
    pub order_id: Option<String>,
    pub credits: i64,
    /// Months of membership it buys.
    pub membership_months: i32,
    /// In the currency's minor unit.
    pub amount: i64,
    pub currency: String,
    /// `CREATED`, `PAID`, `REFUNDED`, `REFUND_DUE` (the order was canceled first) or
    /// `EXPIRED` (unpaid after `payments.intent_ttl_secs`; a payment that still arrives is
    /// granted).
    pub status: String,
    pub refunded_amount: i64,
    /// Credits a refund could not take back (spent already).
    pub shortfall: i64,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub paid_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The provider events received for it, oldest first.
    pub events: Vec<EventView>,
}

/// One provider event of a payment.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventView {
    pub provider: String,
    pub event_id: String,
    /// `paid`, `refund` or `refund_total` (Alipay: refunds up to a total).
    pub kind: String,
    /// A refund's amount (`refund_total`: the total refunded by then).
    pub amount: i64,
    /// `RECEIVED`, `WAITING` (a refund before its payment) or `APPLIED`.
    pub status: String,
    pub note: Option<String>,
    pub received_at: chrono::DateTime<chrono::Utc>,
    pub applied_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl PaymentView {
    fn new(p: Payment, events: Vec<store::Event>) -> Self {
        PaymentView {
            out_trade_no: p.id.clone(),
            id: p.id,
            product: p.product,
            order_id: p.order_id,
            credits: p.credits,
            membership_months: p.membership_months,
            amount: p.amount,
            currency: p.currency,
            status: p.status,
            refunded_amount: p.refunded_amount,
            shortfall: p.shortfall,
            created_at: p.created_at,
            paid_at: p.paid_at,
            events: events
                .into_iter()
                .map(|e| EventView {
                    provider: e.provider,
                    event_id: e.event_id,
                    kind: e.kind,
                    amount: e.amount,
                    status: e.status,
                    note: e.note,
                    received_at: e.received_at,
                    applied_at: e.applied_at,
                })
                .collect(),
        }
    }
}

/// What the request buys, checked.
async fn to_buy(
    state: &Payments,
    user: &crate::users::User,
    req: PaymentRequest,
) -> Result<NewPayment, ApiError> {
    let currency = state.settings.currency.clone();
    match (req.product, req.order) {
        (Some(name), None) => {
            let product = state.settings.products.get(&name).ok_or_else(|| {
                let known: Vec<&str> = state.settings.products.keys().map(String::as_str).collect();
                ApiError::invalid(
                    "product",
                    format!("unknown product; expected one of {}", known.join(", ")),
                )
            })?;
            Ok(NewPayment {
                product: name,
                credits: product.credits,
                membership_months: product.membership_months(),
                order_id: None,
                amount: product.amount,
                currency,
            })
        }
        (None, Some(order_id)) => {
            let order = orders::get_order(&state.core.db, &order_id)
                .await?
                .filter(|o| o.user_id == user.id)
                .ok_or(ApiError::NotFound("order"))?;
            if order.status != OrderStatus::Unpaid {
                return Err(ApiError::Refused {
                    code: "order_not_payable",
                    message: format!("the order is {}, not UNPAID", order.status.as_str()),
                });
            }
            Ok(NewPayment {
                product: "order".into(),
                credits: 0,
                membership_months: 0,
                order_id: Some(order.id),
                amount: order.price,
                currency,
            })
        }
        _ => Err(ApiError::bad_request(
            "product",
            "give exactly one of `product` and `order`",
        )),
    }
}

/// `POST /v1/payments`: a payment intent for a product or a flash-sale order.
#[utoipa::path(post, path = "/v1/payments", tag = "payments", security(("api_key" = [])),
    request_body = PaymentRequest,
    responses(
        (status = 201, description = "The intent", body = PaymentView),
        (status = 400, description = "Neither or both of product and order", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "No such order of the caller's", body = ErrorBody),
        (status = 409, description = "`order_not_payable`: the order is not UNPAID", body = ErrorBody),
        (status = 422, description = "Unknown product", body = ErrorBody),
        (status = 429, description = "`rate_limited` (intents per minute) or `too_many_open_payments` (`Retry-After`)", body = ErrorBody)))]
pub(crate) async fn create(
    State(state): State<Payments>,
    AuthUser(user): AuthUser,
    ApiJson(req): ApiJson<PaymentRequest>,
) -> Result<(StatusCode, Json<PaymentView>), ApiError> {
    let limits = &state.core.limits;
    limits.take(&super::limits::INTENTS, &user.id).await?;
    let new = to_buy(&state, &user, req).await?;
    let cap = limits.value(&super::limits::OPEN, &user.id).await;
    if cap > 0 && store::count_open(&state.core.db, &user.id).await? >= u64::from(cap) {
        return Err(crate::limits::cap_refusal(
            &super::limits::OPEN,
            "too_many_open_payments",
            format!(
                "this account already has {cap} unpaid payment intents; pay or wait for them to expire"
            ),
        ));
    }
    let p = store::create(&state.core.db, &user.id, new).await?;
    Ok((StatusCode::CREATED, Json(PaymentView::new(p, Vec::new()))))
}

/// `GET /v1/payments/{id}`: the caller's payment and its events.
#[utoipa::path(get, path = "/v1/payments/{id}", tag = "payments", security(("api_key" = [])),
    params(("id" = String, Path, description = "Payment id")),
    responses(
        (status = 200, description = "The payment and its events", body = PaymentView),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "No such payment of the caller's", body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<Payments>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<PaymentView>, ApiError> {
    match store::get(&state.core.db, &id).await? {
        Some(p) if user.can_see(&p.user_id) => {
            let events = store::events_of(&state.core.db, &p.id).await?;
            Ok(Json(PaymentView::new(p, events)))
        }
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
    /// The provider's id of a refund (required for `payment.refunded`): a refund is
    /// recorded once by it, whatever notification carries it.
    #[serde(default)]
    refund_id: String,
}

/// The inbox key of a refund: its identity at the provider, so one refund re-sent under
/// a new notification id is recorded (and applied) once.
fn refund_key(refund_id: &str) -> String {
    format!("refund:{refund_id}")
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
        Refused::Malformed(what) => malformed(what),
        _ => ApiError::Unauthorized,
    }
}

/// 503 while every signature check permit is taken (the provider retries).
fn busy(_: super::gate::Busy) -> ApiError {
    metrics::counter!("conveyor_webhook_checks_busy_total").increment(1);
    ApiError::RetryLater {
        message: "signature checks are busy".into(),
        retry_after_secs: 1,
    }
}

/// 400 `malformed` (already logged and counted).
fn malformed(why: &str) -> ApiError {
    ApiError::BadRequest {
        code: "malformed",
        message: format!("malformed: {why}"),
        field: None,
    }
}

fn outcome(provider: &'static str, outcome: &'static str) {
    metrics::counter!("conveyor_webhooks_total", "provider" => provider, "outcome" => outcome)
        .increment(1);
}

/// What a verified event claims: which payment, what happened, the payment's total as
/// the event states it (if it does) and the currency.
struct Claim<'a> {
    provider: &'static str,
    event_id: &'a str,
    out_trade_no: &'a str,
    kind: Kind,
    total: Option<i64>,
    currency: &'a str,
}

/// What became of a claim; each provider answers it in its own format.
enum Verdict {
    /// In the inbox (now, or before: a redelivery).
    Recorded,
    UnknownPayment,
    /// Amount or currency not the payment's (logged and counted).
    Mismatch,
    /// Refused before the database (logged and counted).
    Malformed(&'static str),
}

impl Claim<'_> {
    /// A paid event states the payment's total; a refund gives back at most what was paid;
    /// the currency is the payment's.
    fn fits(&self, p: &Payment) -> bool {
        let amount_ok = match self.kind {
            Kind::Paid => self.total == Some(p.amount),
            Kind::Refund(r) | Kind::RefundTotal(r) => {
                r > 0 && r <= p.amount && self.total.is_none_or(|t| t == p.amount)
            }
        };
        amount_ok && self.currency == p.currency
    }
}

/// The steps every webhook shares once its signature verified: the event id checked, the
/// payment looked up, the claim checked against it, the event recorded in the inbox with
/// its apply message (group-committed with concurrent deliveries).
async fn accept(state: &Payments, claim: Claim<'_>) -> Result<Verdict, ApiError> {
    let malformed = |why: &'static str| {
        note_refused(claim.provider, &Refused::Malformed(why));
        Ok(Verdict::Malformed(why))
    };
    if claim.event_id.is_empty() {
        return malformed("no event id");
    }
    if claim.event_id.len() > store::MAX_EVENT_ID {
        // Never recordable: a clear refusal, not a 500 the provider would retry for days.
        return malformed("event id longer than 128 characters");
    }
    let Some(payment) = store::get(&state.core.db, claim.out_trade_no).await? else {
        outcome(claim.provider, "unknown_payment");
        return Ok(Verdict::UnknownPayment);
    };
    if !claim.fits(&payment) {
        note_mismatch(claim.provider, claim.event_id, &payment.id);
        return Ok(Verdict::Mismatch);
    }
    let incoming = Incoming {
        provider: claim.provider,
        event_id: claim.event_id.to_owned(),
        payment_id: payment.id,
        kind: claim.kind,
    };
    let fresh = state
        .recorder
        .write(incoming)
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    outcome(claim.provider, if fresh { "accepted" } else { "duplicate" });
    Ok(Verdict::Recorded)
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
    request_body(content = Object, description = "`{\"id\":…,\"type\":\"payment.succeeded\"|\"payment.refunded\",\"data\":{\"out_trade_no\",\"amount\",\"currency\"}}` (a refund's amount is what it gives back)"),
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
    // Read and bounded here, for the price of a scan: only a well-formed header costs a
    // hash, and that runs on the gate.
    let parsed = verify::SignatureHeader::parse(header).map_err(|e| refused(PROVIDER, &e))?;
    let (settings, signed) = (state.settings.clone(), body.clone());
    let now = chrono::Utc::now().timestamp();
    state
        .gate
        .run(move || {
            let secrets: Vec<&[u8]> = settings.hmac_secrets.iter().map(|s| s.as_bytes()).collect();
            parsed.verify(&signed, &secrets, now, settings.timestamp_window_secs)
        })
        .await
        .map_err(busy)?
        .map_err(|e| refused(PROVIDER, &e))?;
    let ev: HmacEvent = serde_json::from_slice(&body)
        .map_err(|_| refused(PROVIDER, &Refused::Malformed("not a payment event")))?;
    let refund = match ev.kind.as_str() {
        "payment.succeeded" => false,
        "payment.refunded" => true,
        _ => {
            // Signed and well-formed, but nothing we act on: acknowledge so it is not resent.
            outcome(PROVIDER, "ignored");
            return Ok(Json(json!({ "received": true })));
        }
    };
    let (kind, total) = if refund {
        (Kind::Refund(ev.data.amount), None)
    } else {
        (Kind::Paid, Some(ev.data.amount))
    };
    if refund && ev.data.refund_id.is_empty() {
        return Err(refused(
            PROVIDER,
            &Refused::Malformed("a refund needs data.refund_id"),
        ));
    }
    let event_id = if refund {
        refund_key(&ev.data.refund_id)
    } else {
        ev.id.clone()
    };
    let claim = Claim {
        provider: PROVIDER,
        event_id: &event_id,
        out_trade_no: &ev.data.out_trade_no,
        kind,
        total,
        currency: &ev.data.currency,
    };
    match accept(&state, claim).await? {
        Verdict::Recorded => Ok(Json(json!({ "received": true }))),
        Verdict::UnknownPayment => Err(ApiError::NotFound("payment")),
        Verdict::Mismatch => Err(ApiError::BadRequest {
            code: "mismatch",
            message: "the event does not match the payment (amount or currency)".into(),
            field: None,
        }),
        Verdict::Malformed(why) => Err(malformed(why)),
    }
}

/// Fen from yuan as Alipay writes amounts (`9.90`, `10`, `0.5`); `None` if it is not one.
fn fen(yuan: &str) -> Option<i64> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (whole, frac) = yuan.split_once('.').unwrap_or((yuan, "0"));
    if !digits(whole) || !digits(frac) || frac.len() > 2 {
        return None;
    }
    let cents: i64 = format!("{frac:0<2}").parse().ok()?;
    whole
        .parse::<i64>()
        .ok()?
        .checked_mul(100)?
        .checked_add(cents)
}

/// The notify fields conveyor reads. Alipay's signed string joins `k=v` with `&` and
/// escapes neither inside values, so a field holding `&` or `=` could be another field
/// moved into it (a signed notify re-keyed under a new notify id): Alipay never puts
/// them in these, and a notify that does is refused.
const ALIPAY_READ: [&str; 9] = [
    "notify_id",
    "app_id",
    "seller_id",
    "out_trade_no",
    "trade_no",
    "trade_status",
    "total_amount",
    "refund_fee",
    "out_biz_no",
];

/// A verified notify's parameters are ones Alipay could have sent: a well-formed
/// `notify_id` (its inbox key), no parameter given twice, no `&`/`=` in a field read.
fn alipay_fields_ok(params: &verify::AlipayParams) -> Result<(), Refused> {
    if params.repeated {
        return Err(Refused::Malformed("a parameter is given twice"));
    }
    let id = params
        .get("notify_id")
        .map(String::as_str)
        .unwrap_or_default();
    let id_ok = !id.is_empty()
        && id.len() <= store::MAX_EVENT_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !id_ok {
        return Err(Refused::Malformed(
            "notify_id missing or not an Alipay notify id",
        ));
    }
    let smuggled = ALIPAY_READ
        .iter()
        .filter_map(|k| params.get(k))
        .any(|v| v.contains(['&', '=']));
    if smuggled {
        return Err(Refused::Malformed(
            "& or = inside a field Alipay never puts them in",
        ));
    }
    Ok(())
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
/// RSA2-signed). TRADE_SUCCESS and TRADE_FINISHED pay; a notify with `refund_fee` refunds
/// that much; TRADE_CLOSED without one is acknowledged.
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
    let (key, signed) = (key.clone(), body.clone());
    let checked = state
        .gate
        .run(move || verify::alipay(&signed, &key))
        .await
        .map_err(busy)?;
    let params = match checked {
        Ok(p) => p,
        Err(why) => {
            note_refused(PROVIDER, &why);
            return Ok(alipay_answer(false));
        }
    };
    if let Err(why) = alipay_fields_ok(&params) {
        note_refused(PROVIDER, &why);
        return Ok(alipay_answer(false));
    }
    let get = |k: &str| params.get(k).map(String::as_str).unwrap_or_default();
    let seller_ok = conf.seller_id.is_empty() || get("seller_id") == conf.seller_id;
    if get("app_id") != conf.app_id || !seller_ok {
        note_mismatch(PROVIDER, get("notify_id"), get("out_trade_no"));
        return Ok(alipay_answer(false));
    }
    // A refund notify carries `refund_fee` (its trade may still be TRADE_SUCCESS, or
    // TRADE_CLOSED once refunded in full); otherwise SUCCESS/FINISHED pay and anything
    // else (TRADE_CLOSED unpaid, WAIT_BUYER_PAY) has nothing to grant: acknowledged.
    let refund = !get("refund_fee").is_empty();
    if !refund && !matches!(get("trade_status"), "TRADE_SUCCESS" | "TRADE_FINISHED") {
        outcome(PROVIDER, "ignored");
        return Ok(alipay_answer(true));
    }
    let kind = match (refund, fen(get("refund_fee"))) {
        // `refund_fee` is the total refunded so far, not this refund's amount.
        (true, Some(r)) => Kind::RefundTotal(r),
        (true, None) => Kind::RefundTotal(0), // not an amount: refused as a mismatch
        (false, _) => Kind::Paid,
    };
    // A refund is recorded by its request number (`out_biz_no`) when the notify names
    // it: the same refund re-notified is one event.
    let event_id = match get("out_biz_no") {
        biz if refund && !biz.is_empty() => refund_key(biz),
        _ => get("notify_id").to_owned(),
    };
    let claim = Claim {
        provider: PROVIDER,
        event_id: &event_id,
        out_trade_no: get("out_trade_no"),
        kind,
        total: if refund {
            None
        } else {
            fen(get("total_amount"))
        },
        currency: "CNY",
    };
    let verdict = accept(&state, claim).await?;
    Ok(alipay_answer(matches!(verdict, Verdict::Recorded)))
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

/// The decrypted `resource` of a payment (`trade_state`) or refund (`refund_status`)
/// notification.
#[derive(Debug, Deserialize)]
struct WechatTransaction {
    /// Absent from refund notifications.
    #[serde(default)]
    appid: String,
    /// A refund's request number (ours) and id (WeChat's): its identity.
    #[serde(default)]
    out_refund_no: String,
    #[serde(default)]
    refund_id: String,
    #[serde(default)]
    mchid: String,
    out_trade_no: String,
    #[serde(default)]
    trade_state: String,
    #[serde(default)]
    refund_status: String,
    amount: WechatAmount,
}

#[derive(Debug, Deserialize)]
struct WechatAmount {
    total: i64,
    /// A refund's amount.
    #[serde(default)]
    refund: i64,
    #[serde(default)]
    currency: String,
}

/// `POST /v1/webhooks/payments/wechat`: a WeChat Pay API v3 notification (headers
/// `Wechatpay-Timestamp`, `-Nonce`, `-Signature`, `-Serial`; `resource` encrypted with the
/// APIv3 key). `TRANSACTION.SUCCESS` with `trade_state` SUCCESS pays, `REFUND.SUCCESS`
/// refunds `amount.refund`; anything else is acknowledged.
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
            .to_owned()
    };
    let [timestamp, nonce, signature, serial] = [
        "wechatpay-timestamp",
        "wechatpay-nonce",
        "wechatpay-signature",
        "wechatpay-serial",
    ]
    .map(header);
    let now = chrono::Utc::now().timestamp();
    let (settings, keys, signed) = (state.settings.clone(), state.keys.clone(), body.clone());
    let checked = state
        .gate
        .run(move || {
            let h = verify::WechatHeaders {
                timestamp: &timestamp,
                nonce: &nonce,
                signature: &signature,
                serial: &serial,
            };
            let api_v3_key = settings.wechat.api_v3_key.as_bytes();
            verify::wechat(
                &h,
                &signed,
                &keys.wechat,
                api_v3_key,
                now,
                settings.timestamp_window_secs,
            )
        })
        .await
        .map_err(busy)?;
    let note = match checked {
        Ok(p) => p,
        Err(why) => {
            note_refused(PROVIDER, &why);
            return Ok(wechat_answer(false, why.reason()));
        }
    };
    let Ok(tx) = serde_json::from_slice::<WechatTransaction>(&note.plain) else {
        note_refused(PROVIDER, &Refused::Malformed("not a payment notification"));
        return Ok(wechat_answer(false, "malformed"));
    };
    let merchant_ok = (conf.mchid.is_empty() || tx.mchid == conf.mchid)
        && (conf.appid.is_empty() || tx.appid.is_empty() || tx.appid == conf.appid);
    if !merchant_ok {
        note_mismatch(PROVIDER, &note.id, &tx.out_trade_no);
        return Ok(wechat_answer(false, "mismatch"));
    }
    let refund = note.event_type.starts_with("REFUND.");
    let acts = if refund {
        tx.refund_status == "SUCCESS"
    } else {
        tx.trade_state == "SUCCESS"
    };
    if !acts {
        outcome(PROVIDER, "ignored");
        return Ok(wechat_answer(true, ""));
    }
    let event_id = if refund {
        match (tx.out_refund_no.as_str(), tx.refund_id.as_str()) {
            ("", "") => {
                note_refused(
                    PROVIDER,
                    &Refused::Malformed("a refund without out_refund_no or refund_id"),
                );
                return Ok(wechat_answer(false, "malformed"));
            }
            ("", id) | (id, _) => refund_key(id),
        }
    } else {
        note.id.clone()
    };
    let claim = Claim {
        provider: PROVIDER,
        event_id: &event_id,
        out_trade_no: &tx.out_trade_no,
        kind: if refund {
            Kind::Refund(tx.amount.refund)
        } else {
            Kind::Paid
        },
        total: Some(tx.amount.total),
        currency: match tx.amount.currency.as_str() {
            "" => "CNY",
            c => c,
        },
    };
    Ok(match accept(&state, claim).await? {
        Verdict::Recorded => wechat_answer(true, ""),
        Verdict::UnknownPayment => wechat_answer(false, "unknown payment"),
        Verdict::Mismatch => wechat_answer(false, "mismatch"),
        Verdict::Malformed(why) => wechat_answer(false, why),
    })
}

#[cfg(test)]
mod tests {
    use super::fen;

    #[test]
    fn alipay_amounts_read_as_fen() {
        for (yuan, want) in [
            ("9.90", Some(990)),
            ("10", Some(1000)),
            ("0.5", Some(50)),
            ("0.01", Some(1)),
        ] {
            assert_eq!(fen(yuan), want, "{yuan}");
        }
        for bad in [
            "",
            ".5",
            "1.",
            "1.234",
            "-1",
            "1e3",
            "9,90",
            " 1",
            "99999999999999999999",
        ] {
            assert_eq!(fen(bad), None, "{bad}");
        }
    }
}
