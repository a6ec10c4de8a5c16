//! The base of the OpenAPI document: title, error schema, security scheme, tags. Each
//! route module contributes a `#[derive(OpenApi)] Doc` of its own paths (generated from
//! the handlers' `#[utoipa::path]` annotations); `app` merges them and serves the result
//! at `GET /openapi.json` with Swagger UI at `/docs`. A test checks that every routed path
//! is documented.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// Every error answer: `{"error": {...}}` with a 4xx/5xx status.
#[derive(ToSchema)]
#[allow(dead_code)] // documents ApiError's JSON; never built
pub struct ErrorBody {
    error: ErrorDetail,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ErrorDetail {
    /// Machine-readable: `invalid_request`, `invalid_field`, `unauthorized`,
    /// `forbidden`, `plan_required`, `insufficient_credits`, `not_found`, `conflict`,
    /// `idempotency_key_reused`, `rate_limited`, `too_many_tasks_in_flight`,
    /// `too_many_streams`, …
    code: String,
    message: String,
    /// The request field at fault, when there is one.
    field: Option<String>,
    /// With `insufficient_credits`: the cost and the balance.
    needed: Option<i64>,
    balance: Option<i64>,
    /// With `plan_required`: the caller's plan, and the plans that include what was
    /// asked.
    plan: Option<String>,
    plans: Option<Vec<String>>,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "conveyor",
        description = "Async task platform for AI SaaS products: submit AI generation tasks, \
                       follow their progress, operate dead letters. Authenticate with \
                       `Authorization: Bearer <API key>` (`conveyor users create`)."
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    modifiers(&BearerKey),
    tags(
        (name = "health", description = "Liveness, readiness, Prometheus metrics"),
        (name = "account", description = "The caller's own account"),
        (name = "live", description = "Progress over WebSocket and SSE"),
        (name = "admin", description = "Operators (admin keys only)"),
        (name = "ops", description = "The operations console page (it signs in with an admin key)"),
    )
)]
pub struct ApiDoc;

/// The `api_key` security scheme the annotated routes name.
struct BearerKey;

impl Modify for BearerKey {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("cvk_…")
                    .build(),
            ),
        );
    }
}

/// `/openapi.json` serving `doc`, and the Swagger UI at `/docs`.
pub fn routes(doc: utoipa::openapi::OpenApi) -> axum::Router {
    utoipa_swagger_ui::SwaggerUi::new("/docs")
        .url("/openapi.json", doc)
        .into()
}
