//! The form of `POST /v1/uploads` as it arrives: the body metered against a budget
//! ([`Meter`]), and the head (everything before the file's bytes: the `purpose` field,
//! the parts' headers) read within bounds and by a deadline ([`next_part`],
//! [`small_field`]). The file is the only large part:
//!
//! - until the file begins, the body is handed to the multipart parser in small pieces
//!   and at most [`HEAD_BYTES`] of it are read, so the parser (which buffers a part's
//!   headers until they end) never holds more than that;
//! - a field other than the file is read up to [`FIELD_BYTES`], then refused (413
//!   `field_too_large`) without reading the rest;
//! - once the purpose is known the whole body may be its size limit plus
//!   [`FRAMING`], the rule `Content-Length` is checked against, for a body of unknown
//!   length too.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, BodyDataStream};
use axum::extract::Multipart;
use axum::extract::multipart::{Field, MultipartError};
use bytes::Bytes;
use futures::Stream;
use tokio::time::Instant;

use crate::error::ApiError;

/// Multipart framing around the file (boundaries, part headers, the `purpose` field): a
/// request this much over the purpose's limit may still carry a file within it.
pub(super) const FRAMING: u64 = 64 * 1024;

/// The most read of a body before its file begins: the `purpose` field and the parts'
/// headers take a few hundred bytes; the rest is room for the pieces the parser reads
/// ahead.
pub(super) const HEAD_BYTES: u64 = 32 * 1024;

/// The longest value of a field other than the file (`purpose` is at most 5 bytes).
pub(super) const FIELD_BYTES: usize = 256;

/// Until the file begins, the body goes to the parser in pieces of at most this, one per
/// poll: the parser pulls chunks until none is ready, so a large chunk (or many ready
/// ones) would otherwise land in its buffer whole.
const PIECE: usize = 4 * 1024;

/// Counts a body's bytes against a budget that grows once the file begins; shared by the
/// body (which fails past the budget) and the handler (which asks why a read failed).
#[derive(Clone)]
pub(super) struct Meter(Arc<Counts>);

struct Counts {
    budget: AtomicU64,
    read: AtomicU64,
    over: AtomicBool,
    /// Still before the file: hand over small pieces, one per poll.
    head: AtomicBool,
}

impl Meter {
    /// A meter on the head's budget.
    pub(super) fn new() -> Self {
        Meter(Arc::new(Counts {
            budget: AtomicU64::new(HEAD_BYTES),
            read: AtomicU64::new(0),
            over: AtomicBool::new(false),
            head: AtomicBool::new(true),
        }))
    }

    /// `body`, metered.
    pub(super) fn body(&self, body: Body) -> Body {
        Body::from_stream(Metered {
            inner: body.into_data_stream(),
            meter: self.clone(),
            held: None,
            paused: false,
        })
    }

    /// The file begins: the whole body may now be `budget` bytes, read as it comes.
    pub(super) fn file_begins(&self, budget: u64) {
        self.0.budget.store(budget, Ordering::Relaxed);
        self.0.head.store(false, Ordering::Relaxed);
    }

    /// Whether the body went past its budget (the read that failed failed for that).
    pub(super) fn over(&self) -> bool {
        self.0.over.load(Ordering::Relaxed)
    }

    /// The answer to a multipart error while reading the head.
    pub(super) fn head_error(&self, e: MultipartError) -> ApiError {
        if self.over() {
            metrics::counter!("conveyor_storage_uploads_total", "outcome" => "too_large")
                .increment(1);
            return ApiError::too_large_for(
                "form_too_large",
                format!(
                    "the form before the file's bytes (fields, part headers) is longer than {HEAD_BYTES} bytes"
                ),
            );
        }
        malformed(e)
    }
}

pub(super) fn malformed(e: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request("file", format!("malformed multipart body: {e}"))
}

/// The body past its budget.
#[derive(Debug, thiserror::Error)]
#[error("the request body is longer than {0} bytes")]
struct Overrun(u64);

struct Metered {
    inner: BodyDataStream,
    meter: Meter,
    /// The rest of a chunk cut into pieces.
    held: Option<Bytes>,
    /// A piece was just handed over: the next poll yields instead.
    paused: bool,
}

impl Stream for Metered {
    type Item = Result<Bytes, axum::BoxError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let head = self.meter.0.head.load(Ordering::Relaxed);
        if head && self.paused {
            // Let the parser work through what it has before it pulls more.
            self.paused = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let mut chunk = match self.held.take() {
            Some(rest) => rest,
            None => match Pin::new(&mut self.inner).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => chunk,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            },
        };
        if head && chunk.len() > PIECE {
            self.held = Some(chunk.split_off(PIECE));
        }
        let counts = &self.meter.0;
        let read =
            counts.read.fetch_add(chunk.len() as u64, Ordering::Relaxed) + chunk.len() as u64;
        let budget = counts.budget.load(Ordering::Relaxed);
        if read > budget {
            counts.over.store(true, Ordering::Relaxed);
            return Poll::Ready(Some(Err(Overrun(budget).into())));
        }
        self.paused = head;
        Poll::Ready(Some(Ok(chunk)))
    }
}

/// The next part of the form, by `deadline` (408 `form_timeout` naming `field`, the part
/// awaited, after it).
pub(super) async fn next_part<'a>(
    multipart: &'a mut Multipart,
    meter: &Meter,
    deadline: Instant,
    field: &str,
) -> Result<Option<Field<'a>>, ApiError> {
    match tokio::time::timeout_at(deadline, multipart.next_field()).await {
        Ok(next) => next.map_err(|e| meter.head_error(e)),
        Err(_) => Err(too_slow(field)),
    }
}

/// A small field's value, by `deadline`: refused (413 `field_too_large`, naming it) as
/// soon as it runs past [`FIELD_BYTES`], without reading the rest.
pub(super) async fn small_field(
    field: Field<'_>,
    name: &str,
    meter: &Meter,
    deadline: Instant,
) -> Result<String, ApiError> {
    tokio::time::timeout_at(deadline, text(field, name, meter))
        .await
        .unwrap_or_else(|_| Err(too_slow(name)))
}

/// The 408 of a form whose head (before the file's bytes) came too slowly.
fn too_slow(field: &str) -> ApiError {
    metrics::counter!("conveyor_storage_uploads_total", "outcome" => "too_slow").increment(1);
    ApiError::too_slow("form_timeout", format!(
            "the form before the file's bytes (the `purpose` field, the parts' headers) did not arrive in time (server.header_read_timeout_ms); `{field}` was awaited"
        )).with_field(Some(field.to_owned()))
}

async fn text(mut field: Field<'_>, name: &str, meter: &Meter) -> Result<String, ApiError> {
    let mut value = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(|e| meter.head_error(e))? {
        if value.len() + chunk.len() > FIELD_BYTES {
            metrics::counter!("conveyor_storage_uploads_total", "outcome" => "too_large")
                .increment(1);
            return Err(ApiError::too_large_for(
                "field_too_large",
                format!("the `{name}` field is longer than {FIELD_BYTES} bytes"),
            )
            .with_field(Some(name.to_owned())));
        }
        value.extend_from_slice(&chunk);
    }
    String::from_utf8(value).map_err(|_| ApiError::invalid(name, "must be UTF-8 text"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use futures::StreamExt as _;

    #[tokio::test]
    async fn the_head_goes_in_pieces_within_its_budget_then_the_file_as_it_comes() {
        let meter = Meter::new();
        let body = meter.body(Body::from(vec![7u8; 3 * PIECE + 1]));
        let mut stream = body.into_data_stream();
        let sizes: Vec<usize> = (&mut stream).map(|c| c.unwrap().len()).collect().await;
        assert_eq!(sizes, [PIECE, PIECE, PIECE, 1]);
        assert!(!meter.over());

        let meter = Meter::new();
        let mut stream = meter
            .body(Body::from(vec![7u8; HEAD_BYTES as usize + 1]))
            .into_data_stream();
        let mut failed = false;
        while let Some(chunk) = stream.next().await {
            if chunk.is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed && meter.over(), "past the head's budget");

        let meter = Meter::new();
        meter.file_begins(1 << 20);
        let mut stream = meter
            .body(Body::from(vec![7u8; 100_000]))
            .into_data_stream();
        assert_eq!(stream.next().await.unwrap().unwrap().len(), 100_000);
        assert!(!meter.over());
    }
}
