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
    /// The delivery's span, from admission to settlement (it ends when this is dropped).
    pub(super) span: tracing::Span,
}

impl Admitted {
    pub(super) fn new(
        delivery: Delivery,
        queue: crate::broker::topology::ResolvedQueue,
        envelope: Envelope,
    ) -> Self {
        let span = span_of(&queue, &envelope);
        Admitted {
            delivery,
            queue,
            envelope,
            token: None,
            span,
        }
    }

    /// (message id, claim token), when the dedupe store gave a claim.
    pub(super) fn claim(&self) -> Option<(&str, &str)> {
        self.token
            .as_deref()
            .map(|t| (self.envelope.id.as_str(), t))
    }

    // The span instruments futures rather than being entered: an entered guard held
    // across awaits follows the task to other threads and corrupts the span stack
    // (seen as a tracing-subscriber panic, "tried to clone a span that already closed").
    pub(super) fn span(&self) -> tracing::Span {
        self.span.clone()
    }

    /// The envelope as a batch handler gets it: in the delivery's trace (traces on), so
    /// what the handler does for it (an AI step) is the delivery's child.
    pub(super) fn handed(&self) -> Envelope {
        let mut e = self.envelope.clone();
        if let Some(t) = crate::traces::traceparent(&self.span) {
            e.traceparent = Some(t);
        }
        e
    }
}

/// A delivery's span; with traces on, a consumer span, the child of the span that sent
/// the message, with only what its name and children do not say (every attribute is an
/// allocation on every message: the queue is in the name, the kind in the step's).
fn span_of(queue: &crate::broker::topology::ResolvedQueue, e: &Envelope) -> tracing::Span {
    if !crate::traces::on() {
        return tracing::info_span!("message", queue = %queue.spec.key, id = %e.id, kind = %e.kind, attempt = e.attempt);
    }
    let span = tracing::info_span!(
        "message",
        otel.name = %format_args!("process {}", queue.spec.key),
        otel.kind = "consumer",
        id = %e.id,
        attempt = e.attempt
    );
    crate::traces::adopt(&span, e.traceparent.as_deref());
    span
}
