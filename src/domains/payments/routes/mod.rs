//! HTTP: buyers create payment intents and read them ([`intents`]); providers call their
//! webhook ([`hmac`], [`alipay`], [`wechat`]). A webhook verifies the raw body before it
//! parses it (on the signature gate), hands the verified claim to the service, which
//! records it in the inbox with its `payments.apply` message (one transaction), and
//! answers at once in the provider's format: the answer never waits for the broker. A
//! redelivered event answers the same with no effect.

pub mod alipay;
pub mod hmac;
pub mod intents;
pub mod wechat;

use std::sync::Arc;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post};

use super::gate::Busy;
use super::recorder::Recorder;
use super::service::Payments;
use crate::api::Core;
use crate::error::ApiError;

/// The routes' state.
#[derive(Clone, FromRef)]
pub struct PaymentsState {
    pub core: Core,
    pub service: Arc<Payments>,
    /// The webhooks' group commit into the inbox.
    pub recorder: Recorder,
}

pub fn routes(state: PaymentsState) -> Router {
    Router::new()
        .route("/v1/payments", post(intents::create))
        .route("/v1/payments/{id}", get(intents::show))
        .route("/v1/webhooks/payments/hmac", post(hmac::webhook))
        .route("/v1/webhooks/payments/alipay", post(alipay::webhook))
        .route("/v1/webhooks/payments/wechat", post(wechat::webhook))
        .with_state(state)
}

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(intents::create, intents::show, hmac::webhook, alipay::webhook, wechat::webhook),
    tags((name = "payments", description = "Payment intents and provider webhooks"))
)]
pub struct Doc;

/// 503 while every signature check permit is taken (the provider retries); 500 for a
/// check that panicked.
fn busy(why: Busy) -> ApiError {
    match why {
        Busy::Full => {
            metrics::counter!("conveyor_webhook_checks_busy_total").increment(1);
            ApiError::retry_later("signature checks are busy".into(), 1)
        }
        Busy::Panicked => ApiError::internal(anyhow::anyhow!("a signature check panicked")),
    }
}
