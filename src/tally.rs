//! Per-queue totals one platform counted since it started (messages processed,
//! dead-lettered, published), kept beside the Prometheus counters of the same name so
//! the process can read them back: its [`report`](crate::telemetry::report) carries them to the API
//! instances, which turn the totals of every process into the ops console's rates. One
//! per [`Platform`](crate::platform::Platform), not a global: tests run several
//! platforms, each in its own namespace, in one process.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a total counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum What {
    /// Handled and acked (fenced as done).
    Processed,
    /// Sent to the dead-letter queue.
    Dead,
    /// Published by the outbox relay.
    Published,
}

#[derive(Debug, Default)]
pub struct Tally {
    totals: Mutex<BTreeMap<(&'static str, What), u64>>,
    /// Queues consumed here, with their prefetch (summed over this platform's consumers).
    consuming: Mutex<BTreeMap<&'static str, u16>>,
    /// Whether a reporter runs for this tally (one per platform, however many times the
    /// workers are started on it).
    reporting: AtomicBool,
    /// Deliveries handed to a handler and not settled yet, per queue.
    busy: Mutex<BTreeMap<&'static str, u64>>,
}

/// `n` deliveries of a queue being handled; dropping it says they were settled.
pub struct Busy {
    tally: std::sync::Arc<Tally>,
    queue: &'static str,
    n: u64,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut busy = self.tally.busy.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = busy.get_mut(self.queue) {
            *b = b.saturating_sub(self.n);
        }
    }
}

impl Tally {
    /// Adds `n` to `queue`'s total of `what` (a short lock per settled batch).
    pub fn add(&self, queue: &'static str, what: What, n: u64) {
        // Poisoned only if a thread panicked mid-add: the map is still sound.
        let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        *totals.entry((queue, what)).or_default() += n;
    }

    /// A consumer of `queue` with `prefetch` started (`on`) or stopped.
    pub fn consuming(&self, queue: &'static str, prefetch: u16, on: bool) {
        let mut c = self.consuming.lock().unwrap_or_else(|p| p.into_inner());
        let n = c.entry(queue).or_default();
        *n = if on {
            n.saturating_add(prefetch)
        } else {
            n.saturating_sub(prefetch)
        };
        if *n == 0 {
            c.remove(queue);
        }
    }

    /// A consumer of `queue` went from prefetch `from` to `to`, in one step (a reader
    /// never sees the queue unconsumed in between).
    pub fn reconsuming(&self, queue: &'static str, from: u16, to: u16) {
        let mut c = self.consuming.lock().unwrap_or_else(|p| p.into_inner());
        let n = c.entry(queue).or_default();
        *n = n.saturating_sub(from).saturating_add(to);
        if *n == 0 {
            c.remove(queue);
        }
    }

    /// The queues consumed here and their prefetch.
    pub fn consumed(&self) -> Vec<(&'static str, u16)> {
        let c = self.consuming.lock().unwrap_or_else(|p| p.into_inner());
        c.iter().map(|(k, v)| (*k, *v)).collect()
    }

    /// The prefetch `queue` is consumed with here now (summed over this platform's
    /// consumers of it); `None` when nothing consumes it.
    pub fn prefetch(&self, queue: &str) -> Option<u16> {
        let c = self.consuming.lock().unwrap_or_else(|p| p.into_inner());
        c.get(queue).copied()
    }

    /// `n` deliveries of `queue` handed to a handler, until the guard drops.
    pub fn busy(self: &std::sync::Arc<Self>, queue: &'static str, n: u64) -> Busy {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        *busy.entry(queue).or_default() += n;
        Busy {
            tally: self.clone(),
            queue,
            n,
        }
    }

    /// Deliveries of `queue` being handled here now (what a queue's depth does not show:
    /// they left the broker's ready count and are not settled yet).
    pub fn in_flight(&self, queue: &str) -> u64 {
        let busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        busy.get(queue).copied().unwrap_or(0)
    }

    /// True for the first caller only: it runs the reporter.
    pub fn take_reporter(&self) -> bool {
        !self.reporting.swap(true, Ordering::SeqCst)
    }

    /// Every total so far.
    pub fn totals(&self) -> BTreeMap<(&'static str, What), u64> {
        self.totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
