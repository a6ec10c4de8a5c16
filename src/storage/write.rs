//! Streamed writes: a body arrives in chunks and leaves in parts of `storage.part_bytes`
//! (one part in flight at a time), so an upload of any size holds about two parts in
//! memory. Size and SHA-256 are computed on the way; the first bytes decide the kind
//! before anything is stored; crossing the size limit aborts the write.

use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use object_store::{ObjectStoreExt as _, WriteMultipart};
use sha2::{Digest as _, Sha256};

use super::key::Key;
use super::sniff::{Kind, SNIFF_BYTES};
use super::{Storage, StorageError};

/// A body that sends nothing for this long is given up on: uploads have no whole-request
/// deadline (they may take many minutes), so a stalled client must not hold a write open.
const IDLE: std::time::Duration = std::time::Duration::from_secs(60);
/// The slowest average a body may arrive at once [`GRACE`] has passed. Without it a client
/// that sends a byte now and then (never silent for [`IDLE`]) holds a connection and one
/// of its tenant's upload places for as long as it likes. 4 KiB/s is 32 kbit/s: below any
/// uplink that carries a file.
const MIN_RATE: u64 = 4 * 1024;
const GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Reads a body chunk by chunk under the two slow-client rules: never silent for
/// `idle`, and past `grace` never slower on average than `min_rate` bytes a second.
struct Pace {
    idle: std::time::Duration,
    grace: std::time::Duration,
    min_rate: u64,
    started: std::time::Instant,
    bytes: u64,
}

impl Pace {
    /// The rules of an upload: [`IDLE`], [`GRACE`], [`MIN_RATE`].
    fn new() -> Pace {
        Pace::with(IDLE, GRACE, MIN_RATE)
    }

    fn with(idle: std::time::Duration, grace: std::time::Duration, min_rate: u64) -> Pace {
        Pace {
            idle,
            grace,
            min_rate,
            started: std::time::Instant::now(),
            bytes: 0,
        }
    }

    /// The next chunk of `body`, or why the body was given up on.
    async fn next<S, E>(&mut self, body: &mut S) -> Option<Result<Bytes, WriteError>>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let item = match tokio::time::timeout(self.idle, body.next()).await {
            Ok(item) => item.map(|r| r.map_err(|e| WriteError::Source(e.to_string()))),
            Err(_) => {
                return Some(Err(WriteError::Source(format!(
                    "nothing arrived for {} s",
                    self.idle.as_secs()
                ))));
            }
        };
        if let Some(Ok(chunk)) = &item {
            self.bytes += chunk.len() as u64;
            let elapsed = self.started.elapsed();
            let floor = u128::from(self.min_rate) * elapsed.as_millis() / 1000;
            if elapsed > self.grace && u128::from(self.bytes) < floor {
                return Some(Err(WriteError::Source(format!(
                    "{} bytes in {} s: slower than {} bytes/s",
                    self.bytes,
                    elapsed.as_secs(),
                    self.min_rate
                ))));
            }
        }
        item
    }
}

/// What was stored.
#[derive(Debug, Clone)]
pub struct Written {
    pub key: Key,
    pub size: u64,
    /// Hex SHA-256 of the bytes.
    pub sha256: String,
    pub kind: Kind,
}

/// Why a streamed write stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The first bytes are not a kind the caller accepts (the reason says what they are).
    #[error("{0}")]
    Rejected(String),
    /// More than `limit` bytes arrived.
    #[error("the file is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    /// Nothing arrived.
    #[error("the file is empty")]
    Empty,
    /// The body failed (the client went away, a malformed multipart stream).
    #[error("reading the upload: {0}")]
    Source(String),
    #[error(transparent)]
    Store(#[from] StorageError),
}

impl Storage {
    /// Streams `body` into the store: sniffs the first bytes with `accept`, names the
    /// object with `key_for` once the kind is known, and stores at most `limit` bytes.
    /// On any error the partial write is aborted and nothing stays behind.
    pub async fn write_stream<S, E>(
        &self,
        mut body: S,
        limit: u64,
        accept: impl FnOnce(&[u8]) -> Result<Kind, String>,
        key_for: impl FnOnce(Kind) -> Result<Key, StorageError>,
    ) -> Result<Written, WriteError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        // The head: enough bytes to know the kind (or the whole of a small body).
        let mut pace = Pace::new();
        let mut head: Vec<u8> = Vec::with_capacity(SNIFF_BYTES);
        let mut rest: Option<Bytes> = None;
        while head.len() < SNIFF_BYTES {
            match pace.next(&mut body).await {
                Some(Ok(chunk)) => {
                    let take = (SNIFF_BYTES - head.len()).min(chunk.len());
                    head.extend_from_slice(&chunk[..take]);
                    if take < chunk.len() {
                        rest = Some(chunk.slice(take..));
                    }
                }
                Some(Err(e)) => return Err(e),
                None => break,
            }
        }
        if head.is_empty() {
            return Err(WriteError::Empty);
        }
        let kind = accept(&head).map_err(WriteError::Rejected)?;
        let key = key_for(kind)?;
        let upload = self
            .store
            .put_multipart(&key.path())
            .await
            .map_err(StorageError::from)?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, self.settings.part_bytes);
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let result: Result<(), WriteError> = async {
            // Chunks are handed over as they are (`put`, no copy): a part is a list of
            // the body's own buffers.
            let mut feed = |chunk: Bytes, writer: &mut WriteMultipart| {
                size += chunk.len() as u64;
                if size > limit {
                    return Err(WriteError::TooLarge { limit });
                }
                hasher.update(&chunk);
                writer.put(chunk);
                Ok(())
            };
            feed(Bytes::from(head), &mut writer)?;
            if let Some(r) = rest.take() {
                feed(r, &mut writer)?;
            }
            while let Some(chunk) = pace.next(&mut body).await {
                let chunk = chunk?;
                // One part uploading while the next fills: memory stays ~2 parts.
                writer
                    .wait_for_capacity(1)
                    .await
                    .map_err(StorageError::from)?;
                feed(chunk, &mut writer)?;
            }
            Ok(())
        }
        .await;
        if let Err(e) = result {
            if let Err(abort) = writer.abort().await {
                tracing::warn!(key = %key, error = %abort, "aborting a failed write");
            }
            return Err(e);
        }
        writer.finish().await.map_err(StorageError::from)?;
        Ok(Written {
            key,
            size,
            sha256: hex::encode(hasher.finalize()),
            kind,
        })
    }

    /// Stores `bytes` whole (small files the platform makes itself).
    pub async fn put(&self, key: &Key, bytes: Bytes, kind: Kind) -> Result<Written, StorageError> {
        let size = bytes.len() as u64;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        self.store.put(&key.path(), bytes.into()).await?;
        Ok(Written {
            key: key.clone(),
            size,
            sha256,
            kind,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A body that trickles (never silent for its idle time) is given up on once the
    /// grace has passed; a body at twice the floor's pace goes on to its end. (The
    /// upload's rules scaled down: 60 s, 60 s and 4 KiB/s become 300 ms, 300 ms and
    /// 4 KiB/s.)
    #[tokio::test]
    async fn a_trickling_body_is_given_up_on_and_a_steady_one_is_not() {
        use std::time::{Duration, Instant};
        let (idle, grace) = (Duration::from_millis(300), Duration::from_millis(300));
        let every = |gap_ms: u64, size: usize, n: u32| {
            Box::pin(futures::stream::unfold(0u32, move |i| async move {
                tokio::time::sleep(Duration::from_millis(gap_ms)).await;
                (i < n).then(|| {
                    (
                        Ok::<_, std::convert::Infallible>(Bytes::from(vec![0u8; size])),
                        i + 1,
                    )
                })
            }))
        };
        let mut trickle = every(200, 1, 1_000);
        let mut pace = Pace::with(idle, grace, MIN_RATE);
        let began = Instant::now();
        let why = loop {
            match pace.next(&mut trickle).await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => break e.to_string(),
                None => panic!("the trickle ended"),
            }
        };
        assert!(why.contains("slower than 4096 bytes/s"), "{why}");
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "{:?}",
            began.elapsed()
        );
        // 8 KiB every 100 ms: 80 KiB/s, for a second and a half.
        let mut steady = every(100, 8 * 1024, 15);
        let mut pace = Pace::with(idle, grace, MIN_RATE);
        let mut chunks = 0;
        while let Some(chunk) = pace.next(&mut steady).await {
            chunk.unwrap();
            chunks += 1;
        }
        assert_eq!(chunks, 15, "a steady body is not cut");
    }
}
