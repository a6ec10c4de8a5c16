//! Videos' lengths read at submission, remembered per upload in this process. The first
//! submission naming an upload runs the probe; those at the same moment wait for it; later
//! ones take its outcome, a failed probe's too (for [`FAILED_TTL`]), so a video ffprobe
//! cannot read costs one run, not one per retry of its submission. A length read is also
//! kept on the upload's row, which every instance sees.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

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

/// `upload_id`'s length: `probe`'s outcome, run at most once per upload (per
/// [`FAILED_TTL`] when it failed) whatever the submissions naming it.
pub(super) async fn length(
    upload_id: &str,
    probe: impl Future<Output = Option<i64>>,
) -> Option<i64> {
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
