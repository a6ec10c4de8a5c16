//! An uploaded video's length read with ffprobe before any work runs (a submission
//! picks its lane by it), remembered per upload in this process. The first caller naming
//! an upload runs the probe; those at the same moment wait for it; later ones take its
//! outcome, a failed probe's too (for [`FAILED_TTL`]), so a video ffprobe cannot read
//! costs one run, not one per retry of its submission. A length read is also kept on the
//! upload's row, which every instance sees.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use sea_orm::DatabaseConnection;
use tokio::sync::OnceCell;

use super::probe;
use crate::providers::ExecError;
use crate::storage::Storage;
use crate::storage::records;

/// How long a failed probe's outcome stands before a submission may try again (ffprobe
/// installed meanwhile, a store back).
const FAILED_TTL: Duration = Duration::from_secs(600);
/// Uploads remembered at once; past it, failed outcomes that stood their time go first,
/// then everything (a length is on its row anyway).
const MAX_ENTRIES: usize = 10_000;

struct Entry {
    outcome: Arc<OnceCell<Option<i64>>>,
    since: Instant,
    /// Probes run for this upload by this process.
    runs: u32,
}

impl Entry {
    fn new() -> Self {
        Entry {
            outcome: Arc::new(OnceCell::new()),
            since: Instant::now(),
            runs: 0,
        }
    }

    /// A failed probe whose outcome stood its time: the next submission probes again.
    fn stale(&self) -> bool {
        matches!(self.outcome.get(), Some(None)) && self.since.elapsed() > FAILED_TTL
    }
}

static PROBED: LazyLock<Mutex<HashMap<String, Entry>>> = LazyLock::new(Mutex::default);

/// Upload `u`'s length in milliseconds, probed at most once per upload (per
/// [`FAILED_TTL`] when it failed) whatever the callers naming it.
pub async fn of_upload(
    db: &DatabaseConnection,
    storage: &Storage,
    u: &records::Object,
) -> Option<i64> {
    length(&u.id, probe_length(db, storage, u)).await
}

/// Reads `u`'s length with ffprobe and keeps it on the upload, so each upload is probed
/// once however many analyses name it. ffprobe reads a local file only, never a URL (a
/// presigned one would let whatever the file names be fetched from the API's network):
/// on S3 the ends of the video, where its index is, are copied here first. `None` when
/// it cannot be read here (no ffprobe on the API's machine, a store it cannot reach):
/// the caller goes on without it (the extraction reads the video anyway).
async fn probe_length(
    db: &DatabaseConnection,
    storage: &Storage,
    u: &records::Object,
) -> Option<i64> {
    let key = crate::storage::Key::parse(u.store_key.as_deref()?).ok()?;
    let cancel = tokio_util::sync::CancellationToken::new();
    // The copy (dropped, so removed, at the end of this function) and the probe share
    // one deadline: the submission is waiting.
    let probed = tokio::time::timeout(std::time::Duration::from_secs(15), async {
        let file = storage
            .metadata_file(&key)
            .await
            .map_err(|e| ExecError::Transient(format!("copying the video here: {e}")))?;
        probe::probe(&file.path().display().to_string(), &cancel).await
    })
    .await;
    match probed {
        Ok(Ok(p)) => {
            let ms = (p.duration_s * 1000.0) as i64;
            if let Err(e) = records::set_duration(db, &u.id, ms).await {
                tracing::warn!(upload = %u.id, error = %e, "keeping the video's length failed");
            }
            Some(ms)
        }
        other => {
            tracing::debug!(upload = %u.id, outcome = ?other.map(|r| r.err()), "could not read the video's length; the regular lane");
            None
        }
    }
}

/// `upload_id`'s length: `probe`'s outcome, run at most once per upload (per
/// [`FAILED_TTL`] when it failed) whatever the callers naming it.
async fn length(upload_id: &str, probe: impl Future<Output = Option<i64>>) -> Option<i64> {
    let outcome = {
        let mut probed = PROBED.lock().unwrap_or_else(PoisonError::into_inner);
        if probed.len() >= MAX_ENTRIES && !probed.contains_key(upload_id) {
            probed.retain(|_, e| !e.stale());
            if probed.len() >= MAX_ENTRIES {
                probed.clear();
            }
        }
        let entry = probed
            .entry(upload_id.to_owned())
            .or_insert_with(Entry::new);
        if entry.stale() {
            entry.outcome = Arc::new(OnceCell::new());
            entry.since = Instant::now();
        }
        entry.outcome.clone()
    };
    let mut ran = false;
    let length = *outcome
        .get_or_init(|| {
            ran = true;
            probe
        })
        .await;
    if ran {
        let mut probed = PROBED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = probed.get_mut(upload_id) {
            entry.runs += 1;
            entry.since = Instant::now();
        }
    }
    length
}

/// How many probes this process ran for `upload_id` (what shows the caching works).
pub fn runs(upload_id: &str) -> u32 {
    PROBED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(upload_id)
        .map_or(0, |e| e.runs)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failed_probe_runs_once_for_any_number_of_submissions() {
        let id = format!("upload-{}", uuid::Uuid::now_v7());
        let waits: Vec<_> = (0..5)
            .map(|_| {
                length(&id, async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    None
                })
            })
            .collect();
        let got = futures::future::join_all(waits).await;
        assert_eq!(got, [None; 5]);
        assert_eq!(length(&id, async { Some(1) }).await, None, "remembered");
        assert_eq!(runs(&id), 1);
    }
}
