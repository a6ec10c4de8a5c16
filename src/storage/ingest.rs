//! A provider's output URL into the store: streamed (never whole in memory), sniffed,
//! measured and checksummed like an upload, so what users get is always this platform's
//! signed URL to its own copy, never the provider's link (which expires, leaks the
//! provider, and may change under the same name).

use futures::StreamExt as _;

use super::key::Key;
use super::sniff::Kind;
use super::write::{WriteError, Written};
use super::{Storage, StorageError};

/// Why an output could not be fetched into the store.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The provider's server failed or could not be reached: worth retrying.
    #[error("fetching the output: {0}")]
    Fetch(String),
    /// The provider answered, but not with a file we take (4xx, a wrong kind, too big).
    #[error("the output was refused: {0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] StorageError),
}

impl Storage {
    /// GETs `url` and stores its body under the key `key_for` names once `accept` has
    /// read the first bytes, at most `limit` bytes.
    pub async fn ingest(
        &self,
        client: &reqwest::Client,
        url: &str,
        limit: u64,
        accept: impl FnOnce(&[u8]) -> Result<Kind, String>,
        key_for: impl FnOnce(Kind) -> Result<Key, StorageError>,
    ) -> Result<Written, IngestError> {
        let response = client
            .get(url)
            .send()
            .await
            .map_err(|e| IngestError::Fetch(e.without_url().to_string()))?;
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
