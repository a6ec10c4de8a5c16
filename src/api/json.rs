//! `ApiJson<T>`: axum's JSON extractor with rejections turned into JSON 4xx errors that
//! say what was wrong (unknown field, wrong type, missing field, body too large).
//!
//! Every request body conveyor documents is a JSON object, and only an object is taken:
//! serde lets a struct be written as an array of its fields in order (`[null]` would be
//! `{"plan": null}`), a form no client means and the OpenAPI document forbids.

use std::fmt;
use std::marker::PhantomData;

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeOwned, Deserializer, MapAccess, Visitor};

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
        match axum::Json::<Object<T>>::from_request(req, state).await {
            Ok(axum::Json(Object(v))) => Ok(ApiJson(v)),
            Err(rejection) => Err(map_rejection(rejection)),
        }
    }
}

/// `T` read from a JSON object only (see the module doc).
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ObjectVisitor(PhantomData))
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Object<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Object)
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
                    // A path has no spaces: "invalid type" is the message, at the top.
                    .filter(|p| !p.contains(' '))
                    .map(str::to_owned)
            });
            ApiError::unprocessable(
                "invalid_field",
                if message.is_empty() { detail } else { message },
            )
            .with_field(field)
        }
        JsonRejection::JsonSyntaxError(e) => ApiError::malformed("malformed_json", e.body_text()),
        JsonRejection::MissingJsonContentType(_) => ApiError::malformed(
            "unsupported_media_type",
            "expected `Content-Type: application/json`".into(),
        ),
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::too_large()
        }
        other => ApiError::malformed("invalid_request", other.body_text()),
    }
}

impl<T: serde::Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}
