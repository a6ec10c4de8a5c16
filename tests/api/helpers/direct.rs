//! Requests straight into the composed router (`tower::ServiceExt::oneshot`), no socket
//! and no workers: for refusal matrices, which depend on no backend and need not boot
//! three of them.

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request};
use conveyor::app::{Application, Platform};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use super::TestEnv;

/// The application's router on `env`'s (embedded) backends.
pub struct Direct {
    pub router: Router,
    pub platform: Platform,
    shutdown: CancellationToken,
}

impl Direct {
    pub async fn new(env: &TestEnv) -> Self {
        let app = Application::build(env.settings.clone())
            .await
            .expect("app builds");
        let platform = app.platform().clone();
        let shutdown = CancellationToken::new();
        let router = app
            .into_router(shutdown.clone())
            .await
            .expect("router composes");
        Direct {
            router,
            platform,
            shutdown,
        }
    }

    /// Sends one request; the status and the JSON body (`Null` when it is not JSON).
    pub async fn send(&self, request: Request<Body>) -> (u16, Value) {
        let answer = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router answers");
        let status = answer.status().as_u16();
        let bytes = axum::body::to_bytes(answer.into_body(), usize::MAX)
            .await
            .expect("the body");
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// `method path` with `body` as JSON text, as the owner of `key` (if any), with
    /// `headers`.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: impl Into<Body>,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json");
        if let Some(key) = key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(body.into()).expect("a request"))
            .await
    }

    /// Stops what the application started (its relay and bus) and hands the platform
    /// back for cleanup.
    pub async fn stop(self) -> Platform {
        self.shutdown.cancel();
        self.platform
    }
}
