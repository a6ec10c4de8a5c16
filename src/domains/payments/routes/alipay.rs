//! `POST /v1/webhooks/payments/alipay`: Alipay's asynchronous notifies (form-encoded,
//! RSA2-signed), answered `success` / `failure` as Alipay expects.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;

use super::{PaymentsState, busy};
use crate::api::openapi::ErrorBody;
use crate::domains::payments::accept::{Claim, Verdict, note_mismatch, note_refused, refund_key};
use crate::domains::payments::metrics;
use crate::domains::payments::store::{self, Kind};
use crate::domains::payments::verify::{self, Refused};
use crate::error::ApiError;

const PROVIDER: &str = "alipay";

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

/// A verified notify's parameters are ones Alipay could have sent: a well-formed
/// `notify_id` (its inbox key), no parameter given twice, and no value holding `&name=`.
/// Alipay's signed string joins `k=v` with `&` and escapes neither inside values, so a
/// value holding `&out_biz_no=R1` could be another parameter folded into the one before
/// it in sort order: the signature still verifies, but the notify would read otherwise
/// (re-keyed under another id, a refund read as a payment).
fn fields_ok(params: &verify::AlipayParams) -> Result<(), Refused> {
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
    if params.params.values().any(|v| folds_a_parameter(v)) {
        return Err(Refused::Malformed(
            "a value holds another parameter (&name=)",
        ));
    }
    Ok(())
}

/// Whether `value` holds `&name=` (a name of letters, digits and `_`).
fn folds_a_parameter(value: &str) -> bool {
    value.split('&').skip(1).any(|rest| {
        rest.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
    })
}

/// Alipay's answers: `success` stops its retries, anything else makes it retry.
fn answer(ok: bool) -> (StatusCode, &'static str) {
    if ok {
        (StatusCode::OK, "success")
    } else {
        (StatusCode::BAD_REQUEST, "failure")
    }
}

/// `POST /v1/webhooks/payments/alipay`: an Alipay asynchronous notify (form-encoded,
/// RSA2-signed). TRADE_SUCCESS and TRADE_FINISHED pay; a notify with `refund_fee` refunds
/// that much; TRADE_CLOSED without one is acknowledged.
#[utoipa::path(post, path = "/v1/webhooks/payments/alipay", operation_id = "alipay_webhook", tag = "payments",
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "Alipay's notify parameters, `sign` and `sign_type=RSA2` included"),
    responses(
        (status = 200, description = "`success` (recorded, or recorded before, or nothing to do)", body = String, content_type = "text/plain"),
        (status = 400, description = "`failure`: bad signature, another app or seller, amount mismatch, unknown payment (Alipay retries)", body = String, content_type = "text/plain"),
        (status = 404, description = "Alipay is not configured (`payments.alipay.public_key`)", body = ErrorBody),
        (status = 503, description = "Signature checks are busy (`Retry-After`)", body = ErrorBody)))]
pub(crate) async fn webhook(
    State(state): State<PaymentsState>,
    body: Bytes,
) -> Result<(StatusCode, &'static str), ApiError> {
    let service = &state.service;
    let conf = &service.settings.alipay;
    if service.keys.alipay.is_none() {
        return Err(ApiError::not_found("payment provider"));
    }
    let (checker, signed) = (service.clone(), body.clone());
    let checked = service
        .gate
        .run(move || match &checker.keys.alipay {
            Some(key) => verify::alipay(&signed, key),
            None => Err(Refused::UnknownKey),
        })
        .await
        .map_err(busy)?;
    let params = match checked {
        Ok(p) => p,
        Err(why) => {
            note_refused(PROVIDER, &why);
            return Ok(answer(false));
        }
    };
    if let Err(why) = fields_ok(&params) {
        note_refused(PROVIDER, &why);
        return Ok(answer(false));
    }
    let get = |k: &str| params.get(k).map(String::as_str).unwrap_or_default();
    let seller_ok = conf.seller_id.is_empty() || get("seller_id") == conf.seller_id;
    if get("app_id") != conf.app_id || !seller_ok {
        note_mismatch(PROVIDER, get("notify_id"), get("out_trade_no"));
        return Ok(answer(false));
    }
    // A refund notify carries `refund_fee` (its trade may still be TRADE_SUCCESS, or
    // TRADE_CLOSED once refunded in full); otherwise SUCCESS/FINISHED pay and anything
    // else (TRADE_CLOSED unpaid, WAIT_BUYER_PAY) has nothing to grant: acknowledged.
    let refund = !get("refund_fee").is_empty();
    if !refund && !matches!(get("trade_status"), "TRADE_SUCCESS" | "TRADE_FINISHED") {
        metrics::webhook(PROVIDER, "ignored");
        return Ok(answer(true));
    }
    let kind = match (refund, fen(get("refund_fee"))) {
        // `refund_fee` is the total refunded so far, not this refund's amount.
        (true, Some(r)) => Kind::RefundTotal(r),
        (true, None) => Kind::RefundTotal(0), // not an amount: refused as a mismatch
        (false, _) => Kind::Paid,
    };
    // A refund is recorded by its request number (`out_biz_no`, which Alipay's refund
    // notifies always carry): the same refund re-notified is one event.
    let event_id = match (refund, get("out_biz_no")) {
        (true, "") => {
            note_refused(
                PROVIDER,
                &Refused::Malformed("a refund notify without out_biz_no"),
            );
            return Ok(answer(false));
        }
        (true, biz) => refund_key(get("out_trade_no"), biz),
        (false, _) => get("notify_id").to_owned(),
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
    let verdict = service
        .accept(&state.recorder, claim)
        .await
        .map_err(|e| ApiError::internal(e.into()))?;
    Ok(answer(matches!(verdict, Verdict::Recorded)))
}

#[cfg(test)]
mod tests {
    use super::{fen, folds_a_parameter};

    #[test]
    fn a_folded_parameter_is_seen_in_any_value() {
        for folded in [
            "x&out_biz_no=R1",
            "trade_status_sync&refund_fee=9.90",
            "a&b&c_1=2",
        ] {
            assert!(folds_a_parameter(folded), "{folded}");
        }
        for plain in ["tea & cakes", "a=b", "R&D", "x&=y", "&", "50%&more"] {
            assert!(!folds_a_parameter(plain), "{plain}");
        }
    }

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
