//! The OpenAI-compatible fake's media endpoints, as the public API reference documents
//! them: `POST /v1/audio/transcriptions` (multipart `file`, `model`, `response_format`;
//! `verbose_json` answers `{"task", "language", "duration", "text", "segments"}` plus
//! the newer `usage: {"type": "duration", "seconds"}`) and `POST /v1/embeddings`
//! (`{"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
//! "model", "usage": {"prompt_tokens", "total_tokens"}}`, here in reverse order: a
//! client must place vectors by `index`).
//!
//! Fault modes: a file named `boom…` (503), an empty file (400), an input containing
//! `refuse` (400).

use axum::Json;
use axum::extract::Multipart;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({ "error": { "message": message, "type": "invalid_request_error", "code": code } })),
    )
        .into_response()
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()) == Some("Bearer sk-test")
}

/// Seconds of 16 kHz 16-bit mono audio in `bytes` bytes.
pub fn seconds_of(bytes: usize) -> f64 {
    bytes as f64 / 32_000.0
}

async fn transcriptions(headers: HeaderMap, mut form: Multipart) -> Response {
    if !authorized(&headers) {
        return error(
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "Incorrect API key provided",
        );
    }
    let (mut file, mut name, mut model, mut format) = (None, String::new(), None, None);
    while let Ok(Some(field)) = form.next_field().await {
        match field.name().unwrap_or_default() {
            "file" => {
                name = field.file_name().unwrap_or_default().to_owned();
                file = field.bytes().await.ok();
            }
            "model" => model = field.text().await.ok(),
            "response_format" => format = field.text().await.ok(),
            _ => {}
        }
    }
    let (Some(file), Some(model)) = (file, model) else {
        return error(
            StatusCode::BAD_REQUEST,
            "missing_field",
            "file and model are required",
        );
    };
    if name.starts_with("boom") {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "The server is overloaded",
        );
    }
    if file.is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_file",
            "The audio file is empty",
        );
    }
    // A pipeline's first segment answers last: its transcript must still come first.
    if name.ends_with("-000.wav") {
        // The fake's behaviour, not a wait: this answer arrives after the others.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    let duration = seconds_of(file.len());
    let text = format!("transcript of {name} by {model}");
    if format.as_deref() == Some("verbose_json") {
        Json(json!({
            "task": "transcribe", "language": "english", "duration": duration, "text": text,
            "segments": [{ "id": 0, "start": 0.0, "end": duration, "text": text }],
            "usage": { "type": "duration", "seconds": duration.ceil() as u64 }
        }))
        .into_response()
    } else {
        Json(json!({ "text": text })).into_response()
    }
}

/// The fake's vector for `input`: `[bytes, 0.5, -0.25]`.
pub fn vector_of(input: &str) -> Vec<f32> {
    vec![input.len() as f32, 0.5, -0.25]
}

async fn embeddings(headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if !authorized(&headers) {
        return error(
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "Incorrect API key provided",
        );
    }
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_input",
                "input must be text",
            );
        }
    };
    if inputs.iter().any(|i| i.contains("refuse")) {
        return error(
            StatusCode::BAD_REQUEST,
            "content_policy_violation",
            "refused",
        );
    }
    let tokens: usize = inputs.iter().map(|i| i.len().div_ceil(4)).sum();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, input)| json!({ "object": "embedding", "index": i, "embedding": vector_of(input) }))
        .collect();
    Json(
        json!({ "object": "list", "data": data, "model": body["model"],
        "usage": { "prompt_tokens": tokens, "total_tokens": tokens } }),
    )
    .into_response()
}

pub fn routes() -> axum::Router {
    axum::Router::new()
        .route("/v1/audio/transcriptions", post(transcriptions))
        .route("/v1/embeddings", post(embeddings))
}
