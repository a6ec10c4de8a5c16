//! A provider's server-sent events (OpenAI's chat stream, Dify's workflow stream), read
//! the way every streamed call needs: stopped by the cancel (dropping the stream closes
//! the connection, and the provider stops), given up on after `stream_idle_ms` of
//! silence, a broken read classed as transient.

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource as _};
use futures::{Stream, StreamExt as _};
use tokio_util::sync::CancellationToken;

use super::ExecError;

type Inner = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

pub struct Events {
    inner: Inner,
    idle: Duration,
}

impl Events {
    /// The events of `resp`, silent at most `idle` between two.
    pub fn of(resp: reqwest::Response, idle: Duration) -> Self {
        Events {
            inner: Box::pin(resp.bytes_stream().eventsource()),
            idle,
        }
    }

    /// The next event; `Ok(None)` when the stream ended (the caller knows whether that
    /// was early).
    pub async fn next(&mut self, cancel: &CancellationToken) -> Result<Option<Event>, ExecError> {
        let next = tokio::select! {
            _ = cancel.cancelled() => return Err(ExecError::Canceled),
            n = tokio::time::timeout(self.idle, self.inner.next()) => n,
        };
        match next {
            Err(_) => Err(ExecError::Transient(format!(
                "the stream was silent for {} ms",
                self.idle.as_millis()
            ))),
            Ok(None) => Ok(None),
            Ok(Some(Err(e))) => Err(ExecError::Transient(format!("reading the stream: {e}"))),
            Ok(Some(Ok(e))) => Ok(Some(e)),
        }
    }
}
