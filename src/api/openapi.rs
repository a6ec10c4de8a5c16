//! The base of the OpenAPI document: title, error schema, security scheme, tags. Each
//! route module contributes a `#[derive(OpenApi)] Doc` of its own paths (generated from
//! the handlers' `#[utoipa::path]` annotations); `app` merges them and serves the result
//! at `GET /openapi.json` with Swagger UI at `/docs`. A test checks that every routed path
//! is documented.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{IntoResponses, Modify, OpenApi, ToSchema};

/// Every error answer: `{"error": {...}}` with a 4xx/5xx status.
#[derive(ToSchema)]
#[allow(dead_code)] // documents ApiError's JSON; never built
pub struct ErrorBody {
    error: ErrorDetail,
}

/// The error answers most routes share, for `#[utoipa::path(responses(...))]` beside their
/// own: `responses((status = 200, ...), Unauthorized)`. Each documents exactly what the
/// tuple it replaces did.
#[derive(IntoResponses)]
#[allow(dead_code)] // documents; never built
pub enum Unauthorized {
    #[response(status = 401, description = "Missing or invalid API key")]
    Unauthorized(ErrorBody),
}

/// An admin route's refusal of a caller who is not one (with [`Unauthorized`]).
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum NotAdmin {
    #[response(status = 403, description = "Not an admin")]
    NotAdmin(ErrorBody),
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

/// Puts `schema` (JSON Schema as JSON) in the document's components as `name`, in place
/// of the derived one: for what the configuration decides at start-up (names as enums).
pub fn set_schema(doc: &mut utoipa::openapi::OpenApi, name: &str, schema: serde_json::Value) {
    match serde_json::from_value(schema) {
        Ok(schema) => {
            let components = doc.components.get_or_insert_with(Default::default);
            components.schemas.insert(name.to_owned(), schema);
        }
        // Callers give fixed shapes; only a utoipa change could refuse one.
        Err(e) => tracing::warn!(error = %e, schema = name, "a configured schema was not built"),
    }
}

/// Documents, for every operation that reads a JSON body or a query string, the 400 it
/// answers when it cannot parse them (`malformed_json`, `unsupported_media_type`,
/// `invalid_query`, `invalid_multipart`): the extractors answer it for every route, so
/// it is written here once and no route can leave it out.
pub fn with_parse_errors(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::path::ParameterIn;
    for item in doc.paths.paths.values_mut() {
        let ops = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for op in ops.into_iter().flatten() {
            let body = op.request_body.is_some();
            let query =
                op.parameters.iter().flatten().any(
                    |p| matches!(p, RefOr::T(p) if matches!(p.parameter_in, ParameterIn::Query)),
                );
            let unread = match (body, query) {
                (false, false) => None,
                (true, false) => Some(
                    "The body could not be read: not JSON (`malformed_json`), not `Content-Type: application/json` (`unsupported_media_type`), or a form that is not one (`invalid_multipart`)",
                ),
                (false, true) => Some(
                    "The query string could not be read (`invalid_query`: an unknown or malformed parameter)",
                ),
                (true, true) => Some(
                    "The body or the query string could not be read (`malformed_json`, `unsupported_media_type`, `invalid_multipart`, `invalid_query`)",
                ),
            };
            let unfit = body.then_some(
                "The body is JSON but not what this operation takes (`invalid_field`: an unknown field, a missing one, a wrong type)",
            );
            let responses = &mut op.responses.responses;
            for (status, what) in [("400", unread), ("422", unfit)] {
                if let Some(what) = what {
                    responses
                        .entry(status.to_owned())
                        .or_insert_with(|| error_answer(what));
                }
            }
        }
    }
}

/// A documented error answer: `description`, with the [`ErrorBody`] schema.
fn error_answer(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build(),
    )
}

/// `/openapi.json` serving `doc`, and the Swagger UI at `/docs`. The document is
/// serialised once and only its bytes kept (the UI's own route would keep its tree, a
/// few hundred operations and schemas, for every process's life, and serialise it on
/// every request).
pub fn routes(doc: utoipa::openapi::OpenApi) -> axum::Router {
    let json = match serde_json::to_vec(&doc) {
        Ok(json) => bytes::Bytes::from(json),
        Err(e) => {
            tracing::error!(error = %e, "the OpenAPI document does not serialise");
            bytes::Bytes::from_static(b"{}")
        }
    };
    drop(doc);
    let ui = utoipa_swagger_ui::SwaggerUi::new("/docs")
        .config(utoipa_swagger_ui::Config::new(["/openapi.json"]));
    let json = (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        json,
    );
    axum::Router::from(ui).route(
        "/openapi.json",
        axum::routing::get(move || std::future::ready(json.clone())),
    )
}
