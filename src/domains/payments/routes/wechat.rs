//! `POST /v1/webhooks/payments/wechat`: WeChat Pay API v3 notifications (RSA-signed
//! headers, AES-GCM-encrypted `resource`), answered `{"code":"SUCCESS"|"FAIL"}`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::{PaymentsState, busy};
use crate::api::openapi::ErrorBody;
use crate::domains::payments::accept::{Claim, Verdict, note_mismatch, note_refused, refund_key};
use crate::domains::payments::metrics;
use crate::domains::payments::store::Kind;
use crate::domains::payments::verify::{self, Refused};
use crate::error::ApiError;

const PROVIDER: &str = "wechat";

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
#[utoipa::path(post, path = "/v1/webhooks/payments/wechat", operation_id = "wechat_webhook", tag = "payments",
    request_body(content = Object, description = "WeChat Pay's notification JSON"),
    responses(
        (status = 200, description = "`{\"code\":\"SUCCESS\"}` (recorded, recorded before, or nothing to do)", body = Object),
        (status = 400, description = "`{\"code\":\"FAIL\"}`: bad or expired signature, unknown serial, undecryptable resource, another merchant, amount mismatch (WeChat retries)", body = Object),
        (status = 404, description = "WeChat Pay is not configured (`payments.wechat`)", body = ErrorBody),
        (status = 503, description = "Signature checks are busy (`Retry-After`)", body = ErrorBody)))]
pub(crate) async fn webhook(
    State(state): State<PaymentsState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let service = &state.service;
    let conf = &service.settings.wechat;
    if service.keys.wechat.is_empty() {
        return Err(ApiError::not_found("payment provider"));
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
    // A stale (or far-future) timestamp is refused before it costs an RSA check.
    let stale = timestamp
        .parse::<i64>()
        .map_err(|_| Refused::Malformed("Wechatpay-Timestamp is not a number"))
        .and_then(|t| verify::fresh(t, now, service.settings.timestamp_window_secs));
    if let Err(why) = stale {
        note_refused(PROVIDER, &why);
        return Ok(wechat_answer(false, why.reason()));
    }
    let (checker, signed) = (service.clone(), body.clone());
    let checked = service
        .gate
        .run(move || {
            let h = verify::WechatHeaders {
                timestamp: &timestamp,
                nonce: &nonce,
                signature: &signature,
                serial: &serial,
            };
            let (settings, keys) = (&checker.settings, &checker.keys);
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
        metrics::webhook(PROVIDER, "ignored");
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
            ("", id) | (id, _) => refund_key(&tx.out_trade_no, id),
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
    let verdict = service
        .accept(&state.recorder, claim)
        .await
        .map_err(|e| ApiError::internal(e.into()))?;
    Ok(match verdict {
        Verdict::Recorded => wechat_answer(true, ""),
        Verdict::UnknownPayment => wechat_answer(false, "unknown payment"),
        Verdict::Mismatch => wechat_answer(false, "mismatch"),
        Verdict::Malformed(why) => wechat_answer(false, why),
    })
}
