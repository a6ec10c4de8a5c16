//! Security headers on every answer: no MIME sniffing, no referrer, never framed, not
//! cached (answers carry tenants' data), and a Content-Security-Policy that allows
//! nothing for JSON and only this origin for the pages (`/demo`, `/ops`, `/docs`), whose
//! inline script and style are their own.

use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// JSON and everything else: nothing to load, nothing may frame it.
const CSP_API: &str = "default-src 'none'; frame-ancestors 'none'";
/// The demo page: its own inline script and style, API calls and the WebSocket to this
/// origin only; the generated images and videos it shows come from this origin's signed
/// file URLs.
const CSP_DEMO: &str = "default-src 'none'; script-src 'self' 'unsafe-inline'; \
    style-src 'self' 'unsafe-inline'; connect-src 'self' ws: wss:; img-src 'self' data:; \
    media-src 'self'; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/// Swagger UI and the ops console: their scripts and styles from this origin, API
/// calls to it.
const CSP_PAGES: &str = "default-src 'none'; script-src 'self' 'unsafe-inline'; \
    style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub async fn security_headers(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let csp = if path == "/demo" {
        CSP_DEMO
    } else if path == "/ops" || path == "/docs" || path.starts_with("/docs/") {
        CSP_PAGES
    } else {
        CSP_API
    };
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    resp
}
