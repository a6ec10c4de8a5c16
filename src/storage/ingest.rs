//! A provider's output URL into the store: streamed (never whole in memory), sniffed,
//! measured and checksummed like an upload, so what users get is always this platform's
//! signed URL to its own copy, never the provider's link (which expires, leaks the
//! provider, and may change under the same name).
//!
//! The URL is the provider's to name, so it is fetched through the SSRF guard
//! ([`crate::net::guard`]): http or https, public addresses only (and
//! `storage.ingest_private_addresses`), on the first URL and on every redirect, no proxy,
//! and none of the provider's credentials (a client of its own, not the provider's).

use std::time::Duration;

use futures::StreamExt as _;

use super::key::Key;
use super::sniff::Kind;
use super::write::{WriteError, Written};
use super::{Storage, StorageError};
use crate::net::guard::{self, Guard};

/// Why an output could not be fetched into the store.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The provider's server failed or could not be reached: worth retrying.
    #[error("fetching the output: {0}")]
    Fetch(String),
    /// The provider answered, but not with a file we take (4xx, a wrong kind, too big),
    /// or its URL (or a redirect) leads where this platform does not fetch from.
    #[error("the output was refused: {0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] StorageError),
}

/// The client every output is fetched with.
pub(super) fn client(guard: &Guard) -> anyhow::Result<reqwest::Client> {
    Ok(guard
        .client()
        .connect_timeout(Duration::from_secs(5))
        // Per read, not for the whole body: a large video takes as long as it takes, a
        // server that stops sending does not hold the step.
        .read_timeout(Duration::from_secs(60))
        .user_agent(concat!("conveyor/", env!("CARGO_PKG_VERSION")))
        .build()?)
}

/// A failed request as an [`IngestError`]: the guard's refusal is final, the rest may
/// pass (the whole chain of causes is kept: reqwest's own message says little).
fn fetch_failed(e: reqwest::Error) -> IngestError {
    if let Some(refused) = guard::refusal(&e) {
        return IngestError::Refused(format!("the output's URL: {refused}"));
    }
    let e = e.without_url();
    let mut message = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        message.push_str(": ");
        message.push_str(&c.to_string());
        cause = c.source();
    }
    IngestError::Fetch(message)
}

impl Storage {
    /// GETs `url` and stores its body under the key `key_for` names once `accept` has
    /// read the first bytes, at most `limit` bytes.
    pub async fn ingest(
        &self,
        url: &str,
        limit: u64,
        accept: impl FnOnce(&[u8]) -> Result<Kind, String>,
        key_for: impl FnOnce(Kind) -> Result<Key, StorageError>,
    ) -> Result<Written, IngestError> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| IngestError::Refused(format!("the output's URL is not a URL: {e}")))?;
        self.guard
            .check_url(&parsed)
            .map_err(|r| IngestError::Refused(format!("the output's URL: {r}")))?;
        let response = self.ingest.get(parsed).send().await.map_err(fetch_failed)?;
        let status = response.status();
        if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Err(IngestError::Fetch(format!(
                "the provider answered {status}"
            )));
        }
        if !status.is_success() {
            return Err(IngestError::Refused(format!(
                "the provider answered {status}"
            )));
        }
        if response.content_length().is_some_and(|n| n > limit) {
            return Err(IngestError::Refused(format!("larger than {limit} bytes")));
        }
        let body = response
            .bytes_stream()
            .map(|r| r.map_err(|e| e.without_url()));
        match self
            .write_stream(Box::pin(body), limit, accept, key_for)
            .await
        {
            Ok(w) => Ok(w),
            Err(WriteError::Source(e)) => Err(IngestError::Fetch(e)),
            Err(WriteError::Store(e)) => Err(IngestError::Store(e)),
            Err(
                e @ (WriteError::Rejected(_) | WriteError::TooLarge { .. } | WriteError::Empty),
            ) => Err(IngestError::Refused(e.to_string())),
        }
    }
}
