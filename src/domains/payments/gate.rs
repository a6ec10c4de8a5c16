//! Signature checks run off the async workers and a few at a time. Verifying costs CPU
//! in proportion to the body (an HMAC over it, an RSA check, an AES-GCM decryption) and
//! anyone can call a webhook: run inline, a burst of large forged requests would hold
//! the runtime's threads and stall every other request of the server (`/healthz`
//! included). Here each check runs on the blocking pool holding one of a few permits; a
//! caller that cannot get one soon is answered 503 (providers retry).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

/// How long a webhook waits for a permit before it is told to come back later.
const WAIT: Duration = Duration::from_secs(2);

/// Why a check did not give its answer.
#[derive(Debug, thiserror::Error)]
pub enum Busy {
    /// All permits were taken for [`WAIT`]; the check did not run.
    #[error("signature checks are busy; retry later")]
    Full,
    /// The check panicked (a bug, not load): answered as an internal error.
    #[error("a signature check failed unexpectedly")]
    Panicked,
}

#[derive(Clone)]
pub struct VerifyGate {
    permits: Arc<Semaphore>,
}

impl VerifyGate {
    /// At most `at_once` checks run at the same time.
    pub fn new(at_once: usize) -> Self {
        VerifyGate {
            permits: Arc::new(Semaphore::new(at_once.max(1))),
        }
    }

    /// Half the cores (at least one): checks never take the whole machine, however many
    /// requests arrive, so the rest of the API keeps answering.
    pub fn per_core() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self::new((cores / 2).max(1))
    }

    /// Runs `check` on the blocking pool under a permit.
    pub async fn run<T: Send + 'static>(
        &self,
        check: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Busy> {
        let permit = tokio::time::timeout(WAIT, self.permits.clone().acquire_owned())
            .await
            .map_err(|_| Busy::Full)?
            .map_err(|_| Busy::Full)?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            check()
        })
        .await
        .map_err(|_| Busy::Panicked)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn no_more_than_the_permits_run_at_once() {
        let gate = VerifyGate::new(2);
        let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let calls = (0..8).map(|_| {
            let (gate, running, most) = (gate.clone(), running.clone(), most.clone());
            async move {
                gate.run(move || {
                    let now = running.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                })
                .await
                .unwrap()
            }
        });
        futures::future::join_all(calls).await;
        assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
