//! HTTP: a tenant's webhook endpoints (create with a secret shown once, list, read,
//! change, delete, rotate the secret, send a test event) and their delivery log (list,
//! read with every attempt, retry). Everything is scoped to the caller: another user's
//! endpoint is 404.

mod deliveries;
mod endpoints;

use std::sync::Arc;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post};

use super::settings::WebhookSettings;
use super::target::Policy;
use crate::api::Core;
use crate::error::ApiError;

#[derive(Clone, FromRef)]
pub struct Webhooks {
    pub core: Core,
    pub settings: Arc<WebhookSettings>,
    /// What an endpoint may subscribe to: the public event types the domains declare,
    /// in registry order.
    pub event_types: Arc<[&'static str]>,
}

impl Webhooks {
    fn policy(&self) -> Policy {
        Policy {
            allow_http: self.settings.allow_http,
            allow_private: self.settings.allow_private_targets,
        }
    }

    /// The caller's endpoint `id`, or 404.
    async fn endpoint(&self, user: &str, id: &str) -> Result<super::store::Endpoint, ApiError> {
        super::store::get_owned(&self.core.db, user, id)
            .await?
            .ok_or(ApiError::not_found("webhook endpoint"))
    }
}

pub fn routes(state: Webhooks) -> Router {
    Router::new()
        .route(
            "/v1/webhooks/endpoints",
            post(endpoints::create).get(endpoints::list),
        )
        .route(
            "/v1/webhooks/endpoints/{id}",
            get(endpoints::read)
                .patch(endpoints::edit)
                .delete(endpoints::remove),
        )
        .route(
            "/v1/webhooks/endpoints/{id}/rotate-secret",
            post(endpoints::rotate),
        )
        .route("/v1/webhooks/endpoints/{id}/test", post(endpoints::test))
        .route(
            "/v1/webhooks/endpoints/{id}/deliveries",
            get(deliveries::list),
        )
        .route(
            "/v1/webhooks/endpoints/{id}/deliveries/{delivery}",
            get(deliveries::read),
        )
        .route(
            "/v1/webhooks/endpoints/{id}/deliveries/{delivery}/retry",
            post(deliveries::retry),
        )
        .with_state(state)
}

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(
        endpoints::create,
        endpoints::list,
        endpoints::read,
        endpoints::edit,
        endpoints::remove,
        endpoints::rotate,
        endpoints::test,
        deliveries::list,
        deliveries::read,
        deliveries::retry
    ),
    tags((name = "webhooks", description = "Signed notifications of final states to the tenants' own servers (Standard Webhooks)"))
)]
pub struct Doc;
