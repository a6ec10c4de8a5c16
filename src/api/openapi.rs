//! The OpenAPI document (`GET /openapi.json`) and Swagger UI (`/docs`), generated from
//! the handlers' `#[utoipa::path]` annotations and the answer types, so it follows the
//! code; a test checks that every routed path is documented.

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
    /// `forbidden`, `insufficient_credits`, `not_found`, `conflict`, `rate_limited`, …
    code: String,
    message: String,
    /// The request field at fault, when there is one.
    field: Option<String>,
    /// With `insufficient_credits`: the cost and the balance.
    needed: Option<i64>,
    balance: Option<i64>,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "conveyor",
        description = "Async task platform for AI SaaS products: submit AI generation tasks, \
                       follow their progress, operate dead letters. Authenticate with \
                       `Authorization: Bearer <API key>` (`conveyor users create`)."
    ),
    paths(
        crate::api::health::healthz,
        crate::api::health::readyz,
        crate::api::health::metrics,
        crate::users::routes::me,
        crate::domains::ai_tasks::routes::submit,
        crate::domains::ai_tasks::routes::list,
        crate::domains::ai_tasks::routes::read,
        crate::domains::ai_tasks::routes::cancel,
        crate::live::tickets::issue,
        crate::live::ws::upgrade,
        crate::live::sse::stream,
        crate::live::demo,
        crate::dead_letters::routes::list,
        crate::dead_letters::routes::show,
        crate::dead_letters::routes::replay,
        crate::dead_letters::routes::discard,
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    modifiers(&BearerKey),
    tags(
        (name = "health", description = "Liveness, readiness, Prometheus metrics"),
        (name = "tasks", description = "AI generation tasks"),
        (name = "live", description = "Progress over WebSocket and SSE"),
        (name = "admin", description = "Operators (admin keys only)"),
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

/// `/openapi.json` and the Swagger UI at `/docs`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> axum::Router<S> {
    utoipa_swagger_ui::SwaggerUi::new("/docs")
        .url("/openapi.json", ApiDoc::openapi())
        .into()
}
