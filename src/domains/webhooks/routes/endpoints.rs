//! A tenant's webhook endpoints.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::Webhooks;
use crate::api::openapi::ErrorBody;
use crate::api::{ApiJson, AuthUser};
use crate::domains::webhooks::store::{self, NewEndpoint, Patch, StoreError};
use crate::domains::webhooks::target;
use crate::domains::webhooks::view::{EndpointView, EndpointWithSecret};
use crate::error::ApiError;

const MAX_URL_CHARS: usize = 2048;
const MAX_DESCRIPTION_CHARS: usize = 500;

/// A new endpoint.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEndpoint {
    /// Where events are POSTed: `https://` (a public address; `http://` and private
    /// addresses only where the server allows them, for development).
    #[schema(min_length = 1, max_length = 2048)]
    pub url: String,
    #[schema(max_length = 500)]
    pub description: Option<String>,
    /// The event types it receives (`task.succeeded`, `task.failed`, `task.canceled`,
    /// `order.paid`, `order.canceled`, `payment.succeeded`, `payment.refunded`,
    /// `material.created`); absent or empty: every type.
    #[schema(max_items = 20)]
    pub event_types: Option<Vec<String>>,
}

/// What an owner may change; at least one field.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(min_properties = 1)]
pub struct PatchEndpoint {
    #[schema(min_length = 1, max_length = 2048)]
    pub url: Option<String>,
    #[schema(max_length = 500)]
    pub description: Option<String>,
    #[schema(max_items = 20)]
    pub event_types: Option<Vec<String>>,
    /// `true` enables it again after it was disabled (by its owner or for failing).
    pub enabled: Option<bool>,
}

async fn checked_url(state: &Webhooks, url: &str) -> Result<String, ApiError> {
    if url.chars().count() > MAX_URL_CHARS {
        return Err(ApiError::invalid(
            "url",
            format!("at most {MAX_URL_CHARS} characters"),
        ));
    }
    target::check(state.policy(), url.trim())
        .await
        .map(|u| u.to_string())
        .map_err(|why| ApiError::invalid("url", why))
}

fn checked_types(known: &[&str], types: Vec<String>) -> Result<Vec<String>, ApiError> {
    let mut out: Vec<String> = Vec::new();
    for t in types {
        if !known.contains(&t.as_str()) {
            return Err(ApiError::invalid(
                "event_types",
                format!("`{t}` is not an event type ({})", known.join(", ")),
            ));
        }
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

fn checked_description(d: String) -> Result<String, ApiError> {
    let d = d.trim().to_owned();
    if d.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(ApiError::invalid(
            "description",
            format!("at most {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
    Ok(d)
}

/// `POST /v1/webhooks/endpoints`: a new endpoint, with its signing secret (shown once).
#[utoipa::path(post, path = "/v1/webhooks/endpoints", operation_id = "create_webhook_endpoint", tag = "webhooks", security(("api_key" = [])),
    request_body = CreateEndpoint,
    responses(
        (status = 201, description = "Created; `secret` is shown this once", body = EndpointWithSecret),
        (status = 400, description = "Not JSON, or unknown fields", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        (status = 409, description = "`too_many_endpoints`: the account has `webhooks.max_endpoints` already", body = ErrorBody),
        (status = 422, description = "A bad URL (not https, not public, credentials in it) or event type (named in `field`)", body = ErrorBody)))]
pub(crate) async fn create(
    State(state): State<Webhooks>,
    AuthUser(user): AuthUser,
    ApiJson(req): ApiJson<CreateEndpoint>,
) -> Result<(StatusCode, axum::Json<EndpointWithSecret>), ApiError> {
    let url = checked_url(&state, &req.url).await?;
    let new = NewEndpoint {
        url,
        description: checked_description(req.description.unwrap_or_default())?,
        event_types: checked_types(&state.event_types, req.event_types.unwrap_or_default())?,
    };
    let e = store::create(&state.core.db, &user.id, new, state.settings.max_endpoints)
        .await
        .map_err(|e| match e {
            StoreError::TooMany(max) => ApiError::refused(
                "too_many_endpoints",
                format!("at most {max} webhook endpoints per account"),
            ),
            other => ApiError::internal(other.into()),
        })?;
    let secret = e.secret.clone();
    Ok((
        StatusCode::CREATED,
        axum::Json(EndpointWithSecret {
            endpoint: e.into(),
            secret,
        }),
    ))
}

/// The caller's endpoints.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EndpointList {
    pub items: Vec<EndpointView>,
}

/// `GET /v1/webhooks/endpoints`: the caller's endpoints, oldest first.
#[utoipa::path(get, path = "/v1/webhooks/endpoints", operation_id = "list_webhook_endpoints", tag = "webhooks", security(("api_key" = [])),
    responses(
        (status = 200, description = "The caller's endpoints", body = EndpointList),
        crate::api::openapi::Unauthorized))]
pub(crate) async fn list(
    State(state): State<Webhooks>,
    AuthUser(user): AuthUser,
) -> Result<axum::Json<EndpointList>, ApiError> {
    let rows = store::list(&state.core.db, &user.id).await?;
    Ok(axum::Json(EndpointList {
        items: rows.into_iter().map(Into::into).collect(),
    }))
}

/// `GET /v1/webhooks/endpoints/{id}`.
#[utoipa::path(get, path = "/v1/webhooks/endpoints/{id}", operation_id = "show_webhook_endpoint", tag = "webhooks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Endpoint id")),
    responses(
        (status = 200, description = "The endpoint", body = EndpointView),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such endpoint of the caller's", body = ErrorBody)))]
pub(crate) async fn read(
    State(state): State<Webhooks>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<EndpointView>, ApiError> {
    Ok(axum::Json(state.endpoint(&user.id, &id).await?.into()))
}

/// `PATCH /v1/webhooks/endpoints/{id}`: change its URL, description, event types, or
/// enable or disable it.
#[utoipa::path(patch, path = "/v1/webhooks/endpoints/{id}", operation_id = "edit_webhook_endpoint", tag = "webhooks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Endpoint id")),
    request_body = PatchEndpoint,
    responses(
        (status = 200, description = "The endpoint after the change", body = EndpointView),
        (status = 400, description = "Not JSON, or unknown fields", body = ErrorBody),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such endpoint of the caller's", body = ErrorBody),
        (status = 422, description = "A bad field (named in `field`)", body = ErrorBody)))]
pub(crate) async fn edit(
    State(state): State<Webhooks>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<PatchEndpoint>,
) -> Result<axum::Json<EndpointView>, ApiError> {
    // Another user's endpoint is 404 whatever the body says.
    state.endpoint(&user.id, &id).await?;
    if req.url.is_none()
        && req.description.is_none()
        && req.event_types.is_none()
        && req.enabled.is_none()
    {
        return Err(ApiError::invalid(
            "url",
            "give `url`, `description`, `event_types` or `enabled`",
        ));
    }
    let patch = Patch {
        url: match req.url {
            Some(u) => Some(checked_url(&state, &u).await?),
            None => None,
        },
        description: req.description.map(checked_description).transpose()?,
        event_types: req
            .event_types
            .map(|t| checked_types(&state.event_types, t))
            .transpose()?,
        enabled: req.enabled,
    };
    store::update(&state.core.db, &user.id, &id, patch)
        .await?
        .map(|e| axum::Json(e.into()))
        .ok_or(ApiError::not_found("webhook endpoint"))
}

/// `DELETE /v1/webhooks/endpoints/{id}`: no more deliveries (those still being attempted
/// end as FAILED).
#[utoipa::path(delete, path = "/v1/webhooks/endpoints/{id}", operation_id = "delete_webhook_endpoint", tag = "webhooks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Endpoint id")),
    responses(
        (status = 204, description = "Deleted"),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such endpoint of the caller's", body = ErrorBody)))]
pub(crate) async fn remove(
    State(state): State<Webhooks>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if store::delete(&state.core.db, &user.id, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("webhook endpoint"))
    }
}

/// `POST /v1/webhooks/endpoints/{id}/rotate-secret`: a new secret (shown once); the old
/// one signs beside it for `webhooks.secret_overlap_secs`, so receivers can switch
/// without missing a delivery.
#[utoipa::path(post, path = "/v1/webhooks/endpoints/{id}/rotate-secret", tag = "webhooks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Endpoint id")),
    responses(
        (status = 200, description = "The new secret, shown this once; `previous_secret_until` says how long the old one still signs", body = EndpointWithSecret),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such endpoint of the caller's", body = ErrorBody)))]
pub(crate) async fn rotate(
    State(state): State<Webhooks>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<EndpointWithSecret>, ApiError> {
    let overlap = chrono::Duration::seconds(state.settings.secret_overlap_secs as i64);
    let e = store::rotate(&state.core.db, &user.id, &id, overlap)
        .await?
        .ok_or(ApiError::not_found("webhook endpoint"))?;
    let secret = e.secret.clone();
    Ok(axum::Json(EndpointWithSecret {
        endpoint: e.into(),
        secret,
    }))
}

/// A test event on its way.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TestSent {
    pub event_id: String,
    pub delivery_id: String,
}

/// `POST /v1/webhooks/endpoints/{id}/test`: sends a `webhook.test` event to this endpoint
/// (whatever it subscribed to); its delivery is in the log like any other.
#[utoipa::path(post, path = "/v1/webhooks/endpoints/{id}/test", tag = "webhooks", security(("api_key" = [])),
    params(("id" = String, Path, description = "Endpoint id")),
    responses(
        (status = 202, description = "The test event is on its way", body = TestSent),
        crate::api::openapi::Unauthorized,
        (status = 404, description = "No such endpoint of the caller's", body = ErrorBody),
        (status = 409, description = "`endpoint_disabled`: enable it first", body = ErrorBody),
        (status = 429, description = "`rate_limited`: over `webhook_sends_per_min` (test events and manual retries); see Retry-After", body = ErrorBody)))]
pub(crate) async fn test(
    State(state): State<Webhooks>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<(StatusCode, axum::Json<TestSent>), ApiError> {
    let e = state.endpoint(&user.id, &id).await?;
    if !e.enabled {
        return Err(ApiError::refused(
            "endpoint_disabled",
            "the endpoint is disabled: enable it (PATCH enabled=true) first".into(),
        ));
    }
    state
        .core
        .limits
        .take(&super::super::limits::SENDS, &user.id)
        .await?;
    let (event_id, delivery_id) =
        store::send_test(&state.core.db, &e, state.settings.give_up()).await?;
    state.core.relay.notify();
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(TestSent {
            event_id,
            delivery_id,
        }),
    ))
}
