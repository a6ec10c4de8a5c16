//! `POST /v1/webhooks/payments/hmac`: the Stripe-style scheme (`conveyor-signature:
//! t=<unix>,v1=<hex hmac-sha256 of "t.body">`), answered in JSON.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::json;

use super::{PaymentsState, busy};
use crate::api::openapi::ErrorBody;
use crate::domains::payments::accept::{Claim, Verdict, note_refused, refund_key};
use crate::domains::payments::metrics;
use crate::domains::payments::store::Kind;
use crate::domains::payments::verify::{self, Refused};
use crate::error::ApiError;

/// The header carrying `t=<unix>,v1=<hex hmac>`.
pub const SIGNATURE_HEADER: &str = "conveyor-signature";
const PROVIDER: &str = "hmac";

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

/// [`note_refused`], then the JSON answer: 400 `malformed` or 401.
fn refused(why: &Refused) -> ApiError {
    note_refused(PROVIDER, why);
    match why {
        Refused::Malformed(what) => malformed(what),
        _ => ApiError::unauthorized(),
    }
}

/// 400 `malformed` (already logged and counted).
fn malformed(why: &str) -> ApiError {
    ApiError::malformed("malformed", format!("malformed: {why}"))
}

/// `POST /v1/webhooks/payments/hmac`: a provider's signed event.
#[utoipa::path(post, path = "/v1/webhooks/payments/hmac", operation_id = "hmac_webhook", tag = "payments",
    request_body(content = Object, description = "`{\"id\":…,\"type\":\"payment.succeeded\"|\"payment.refunded\",\"data\":{\"out_trade_no\",\"amount\",\"currency\",\"refund_id\"}}` (a refund's amount is what it gives back; `refund_id` is required for a refund)"),
    responses(
        (status = 200, description = "Recorded (or recorded before): `{\"received\":true}`", body = Object),
        (status = 400, description = "Malformed, or amount/currency not the payment's", body = ErrorBody),
        (status = 401, description = "Bad or expired signature", body = ErrorBody),
        (status = 404, description = "No such payment", body = ErrorBody),
        (status = 503, description = "Signature checks are busy (`Retry-After`)", body = ErrorBody)))]
pub(crate) async fn webhook(
    State(state): State<PaymentsState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    let header = headers
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| refused(&Refused::Malformed("no conveyor-signature header")))?;
    // Read and bounded here, for the price of a scan: only a well-formed header costs a
    // hash, and that runs on the gate.
    let parsed = verify::SignatureHeader::parse(header).map_err(|e| refused(&e))?;
    // A stale (or far-future) timestamp is refused before it costs a hash.
    let now = chrono::Utc::now().timestamp();
    let window = state.service.settings.timestamp_window_secs;
    verify::fresh(parsed.t, now, window).map_err(|e| refused(&e))?;
    let (service, signed) = (state.service.clone(), body.clone());
    state
        .service
        .gate
        .run(move || {
            let s = &service.settings;
            let secrets: Vec<&[u8]> = s.hmac_secrets.iter().map(|s| s.as_bytes()).collect();
            parsed.verify(&signed, &secrets, now, s.timestamp_window_secs)
        })
        .await
        .map_err(busy)?
        .map_err(|e| refused(&e))?;
    let ev: HmacEvent = serde_json::from_slice(&body)
        .map_err(|_| refused(&Refused::Malformed("not a payment event")))?;
    let refund = match ev.kind.as_str() {
        "payment.succeeded" => false,
        "payment.refunded" => true,
        _ => {
            // Signed and well-formed, but nothing we act on: acknowledge so it is not resent.
            metrics::webhook(PROVIDER, "ignored");
            return Ok(Json(json!({ "received": true })));
        }
    };
    let (kind, total, event_id) = if refund {
        if ev.data.refund_id.is_empty() {
            return Err(refused(&Refused::Malformed(
                "a refund needs data.refund_id",
            )));
        }
        (
            Kind::Refund(ev.data.amount),
            None,
            refund_key(&ev.data.out_trade_no, &ev.data.refund_id),
        )
    } else {
        (Kind::Paid, Some(ev.data.amount), ev.id.clone())
    };
    let claim = Claim {
        provider: PROVIDER,
        event_id: &event_id,
        out_trade_no: &ev.data.out_trade_no,
        kind,
        total,
        currency: &ev.data.currency,
    };
    let verdict = state
        .service
        .accept(&state.recorder, claim)
        .await
        .map_err(|e| ApiError::internal(e.into()))?;
    match verdict {
        Verdict::Recorded => Ok(Json(json!({ "received": true }))),
        Verdict::UnknownPayment => Err(ApiError::not_found("payment")),
        Verdict::Mismatch => Err(ApiError::malformed(
            "mismatch",
            "the event does not match the payment (amount or currency)".into(),
        )),
        Verdict::Malformed(why) => Err(malformed(why)),
    }
}
