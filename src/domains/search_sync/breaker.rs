//! The circuit breaker in front of the search backend: after `failures` bulk requests in
//! a row fail, batches stop reaching the backend for `open_for` (they go to the retry
//! tiers at once, so an outage costs the backend nothing); then one batch is let through
//! (half open): success closes the breaker, failure opens it again. Small and specific on
//! purpose: its state is also the backend's state for the gauges.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Closed,
    /// Refusing until the instant; then half open.
    Open(Instant),
    /// One trial request is out (since the instant; if it never reports, another is
    /// let through after `open_for`).
    HalfOpen(Instant),
}

pub struct Breaker {
    threshold: u32,
    open_for: Duration,
    inner: Mutex<Inner>,
}

struct Inner {
    failures: u32,
    state: State,
}

impl Breaker {
    pub fn new(threshold: u32, open_for: Duration) -> Self {
        // Closed from the start, and on /metrics so (dashboards read 0, not nothing).
        publish(false);
        Breaker {
            threshold: threshold.max(1),
            open_for,
            inner: Mutex::new(Inner {
                failures: 0,
                state: State::Closed,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves consistent plain data behind.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a request may go to the backend now.
    pub fn allow(&self) -> bool {
        let mut inner = self.lock();
        match inner.state {
            State::Closed => true,
            State::Open(until) | State::HalfOpen(until) if Instant::now() >= until => {
                inner.state = State::HalfOpen(Instant::now() + self.open_for);
                true
            }
            State::Open(_) | State::HalfOpen(_) => false,
        }
    }

    pub fn succeeded(&self) {
        let mut inner = self.lock();
        inner.failures = 0;
        inner.state = State::Closed;
        publish(false);
    }

    pub fn failed(&self) {
        let mut inner = self.lock();
        inner.failures = inner.failures.saturating_add(1);
        if matches!(inner.state, State::HalfOpen(_)) || inner.failures >= self.threshold {
            if !matches!(inner.state, State::Open(_)) {
                tracing::warn!(failures = inner.failures, open_for = ?self.open_for, "search backend failing: circuit open");
            }
            inner.state = State::Open(Instant::now() + self.open_for);
            publish(true);
        }
    }

    pub fn state(&self) -> State {
        self.lock().state
    }
}

fn publish(open: bool) {
    metrics::gauge!("conveyor_search_breaker_open").set(if open { 1.0 } else { 0.0 });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_the_threshold_and_closes_on_a_successful_trial() {
        let b = Breaker::new(2, Duration::from_millis(30));
        assert!(b.allow());
        b.failed();
        assert_eq!(b.state(), State::Closed, "one failure is not an outage");
        b.failed();
        assert!(matches!(b.state(), State::Open(_)));
        assert!(!b.allow(), "open: nothing reaches the backend");
        std::thread::sleep(Duration::from_millis(40));
        assert!(b.allow(), "after open_for one trial goes through");
        assert!(!b.allow(), "only one trial at a time");
        b.failed();
        assert!(
            matches!(b.state(), State::Open(_)),
            "a failed trial opens it again"
        );
        std::thread::sleep(Duration::from_millis(40));
        assert!(b.allow());
        b.succeeded();
        assert_eq!(b.state(), State::Closed);
        assert!(b.allow());
    }
}
