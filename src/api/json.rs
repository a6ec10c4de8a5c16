//! `ApiJson<T>`: axum's JSON extractor with rejections turned into JSON 4xx errors that
//! say what was wrong (unknown field, wrong type, missing field, body too large).

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(rejection) => Err(map_rejection(rejection)),
        }
    }
}

fn map_rejection(r: JsonRejection) -> ApiError {
    match r {
        JsonRejection::JsonDataError(e) => {
            // serde's message names the field: "unknown field `x`", "missing field `kind`".
            let detail = e.body_text();
            let message = detail.split(": ").skip(1).collect::<Vec<_>>().join(": ");
            let field = message.split('`').nth(1).map(str::to_owned).or_else(|| {
                detail
                    .split(": ")
                    .nth(1)
                    .and_then(|p| p.split('.').next())
                    .map(str::to_owned)
            });
            ApiError::Unprocessable {
                code: "invalid_field",
                message: if message.is_empty() { detail } else { message },
                field,
            }
        }
        JsonRejection::JsonSyntaxError(e) => ApiError::BadRequest {
            code: "malformed_json",
            message: e.body_text(),
            field: None,
        },
        JsonRejection::MissingJsonContentType(_) => ApiError::BadRequest {
            code: "unsupported_media_type",
            message: "expected `Content-Type: application/json`".into(),
            field: None,
        },
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::TooLarge
        }
        other => ApiError::BadRequest {
            code: "invalid_request",
            message: other.body_text(),
            field: None,
        },
    }
}

impl<T: serde::Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}
