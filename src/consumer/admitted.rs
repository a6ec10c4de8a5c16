//! A delivery cleared to run (decoded, claimed, not yet processed): what admission
//! hands to the handler and settlement settles.

use crate::broker::{Delivery, Envelope};

/// A delivery cleared to run: decoded, claimed, not yet processed.
pub(super) struct Admitted {
    pub(super) delivery: Delivery,
    pub(super) queue: crate::broker::topology::ResolvedQueue,
    pub(super) envelope: Envelope,
    /// The dedupe claim's token (`None` when the dedupe store was down).
    pub(super) token: Option<String>,
}

impl Admitted {
    /// (message id, claim token), when the dedupe store gave a claim.
    pub(super) fn claim(&self) -> Option<(&str, &str)> {
        self.token
            .as_deref()
            .map(|t| (self.envelope.id.as_str(), t))
    }

    // The span instruments futures rather than being entered: an entered guard held
    // across awaits follows the task to other threads and corrupts the span stack
    // (seen as a tracing-subscriber panic, "tried to clone a span that already closed").
    //
    // With traces on it is a consumer span, the child of the span that sent the message.
    pub(super) fn span(&self) -> tracing::Span {
        let e = &self.envelope;
        if !crate::traces::on() {
            return tracing::info_span!("message", queue = %self.queue.spec.key, id = %e.id, kind = %e.kind, attempt = e.attempt);
        }
        let span = tracing::info_span!(
            "message",
            otel.name = %format_args!("process {}", self.queue.spec.key),
            otel.kind = "consumer",
            queue = %self.queue.spec.key,
            id = %e.id,
            kind = %e.kind,
            attempt = e.attempt
        );
        crate::traces::adopt(&span, e.traceparent.as_deref());
        span
    }
}
