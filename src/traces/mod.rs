//! Distributed traces: `tracing` spans exported as OpenTelemetry spans over OTLP/HTTP
//! when `[telemetry] otlp_endpoint` (or `OTEL_EXPORTER_OTLP_ENDPOINT`) is set
//! ([`export`]), and the W3C `traceparent` that carries a trace from process to process:
//! in the envelope (so the outbox row, retries and dead letters keep it) and in the AMQP
//! headers. With traces off no layer is installed and every function here is a no-op.
//!
//! A leaf: it knows no other module of the platform but [`crate::instance`].

pub mod export;
pub mod log_fields;
pub mod settings;

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::TraceContextExt as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

pub use export::flush;
pub use settings::TraceSettings;

/// Set once the exporting layer is installed.
static ON: AtomicBool = AtomicBool::new(false);
/// `telemetry.trust_incoming`, set with the layer.
static TRUST_INCOMING: AtomicBool = AtomicBool::new(false);

/// The header (AMQP, HTTP) and envelope field a trace travels in.
pub const TRACEPARENT: &str = "traceparent";

/// Whether spans are recorded and exported in this process now: traces are on and the
/// collector is not taken for down ([`export::paused`]).
pub fn on() -> bool {
    ON.load(Ordering::Relaxed) && !export::paused()
}

/// The W3C `traceparent` of `span`: `None` with traces off or for a span not recorded.
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    if !on() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

/// The `traceparent` of the current span.
pub fn current() -> Option<String> {
    traceparent(&tracing::Span::current())
}

/// The current span's `traceparent` or, while spans are not made here (traces off, or
/// paused for a collector that is down), the one the work `came_in` with: what it sends
/// next stays in that trace.
pub fn current_or(came_in: Option<&str>) -> Option<String> {
    current().or_else(|| came_in.map(str::to_owned))
}

/// Makes `span` a child of the span `traceparent` names (a message's producer, an HTTP
/// caller). Call before the span is first entered; a malformed value is ignored.
pub fn adopt(span: &tracing::Span, traceparent: Option<&str>) {
    if let Some(cx) = traceparent.filter(|_| on()).and_then(remote) {
        let _ = span.set_parent(cx);
    }
}

/// Continues an HTTP caller's trace in `span` as far as callers are trusted
/// (`telemetry.trust_incoming`): as its child when they are, else by a link only, so a
/// caller can neither choose the request's trace id nor force it to be sampled.
pub fn continue_caller(span: &tracing::Span, traceparent: Option<&str>) {
    if TRUST_INCOMING.load(Ordering::Relaxed) {
        adopt(span, traceparent);
    } else {
        link(span, traceparent);
    }
}

/// Links `span` to the span `traceparent` names, without making it its parent (a batch
/// linked to each message's trace).
pub fn link(span: &tracing::Span, traceparent: Option<&str>) {
    if let Some(cx) = traceparent.filter(|_| on()).and_then(remote) {
        span.add_link(cx.span().span_context().clone());
    }
}

/// The remote span a `traceparent` names (version 00: `00-<trace>-<span>-<flags>`), read
/// without the propagator's carrier map: this runs for every message consumed.
fn remote(traceparent: &str) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    let (trace, span, flags) = parts(traceparent)?;
    let sc = SpanContext::new(
        TraceId::from_hex(trace).ok()?,
        SpanId::from_hex(span).ok()?,
        TraceFlags::new(u8::from_str_radix(flags, 16).ok()?),
        true,
        TraceState::default(),
    );
    sc.is_valid()
        .then(|| opentelemetry::Context::new().with_remote_span_context(sc))
}

/// The trace id in a `traceparent` (32 hex digits, not all zero), if it is well formed.
pub fn trace_id(traceparent: &str) -> Option<&str> {
    let (id, ..) = parts(traceparent)?;
    (id.bytes().all(|b| b.is_ascii_hexdigit()) && id.bytes().any(|b| b != b'0')).then_some(id)
}

/// A version-00 `traceparent`'s (trace id, span id, flags), by their lengths; the hex is
/// the caller's to read.
fn parts(traceparent: &str) -> Option<(&str, &str, &str)> {
    let mut parts = traceparent.split('-');
    match (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) {
        (Some("00"), Some(trace), Some(span), Some(flags), None)
            if trace.len() == 32 && span.len() == 16 && flags.len() == 2 =>
        {
            Some((trace, span, flags))
        }
        _ => None,
    }
}

/// The trace and span ids of the span `id` (for log lines), if it is recorded.
pub fn ids_of(id: &tracing::span::Id) -> Option<(String, String)> {
    if !on() {
        return None;
    }
    let cx = tracing::dispatcher::get_default(|d| tracing_opentelemetry::get_otel_context(id, d))?;
    let sc = cx.span().span_context().clone();
    sc.is_valid()
        .then(|| (sc.trace_id().to_string(), sc.span_id().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_trace_id_of_a_traceparent() {
        assert_eq!(
            trace_id("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(trace_id("00-xyz-00f067aa0ba902b7-01"), None);
        assert_eq!(
            trace_id("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
            None
        );
        assert_eq!(trace_id("garbage"), None);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod remote_tests {
    use opentelemetry::trace::TraceContextExt as _;

    #[test]
    fn reads_a_w3c_traceparent_and_refuses_malformed_ones() {
        let cx = super::remote("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        let sc = cx.span().span_context().clone();
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled() && sc.is_remote());
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473x-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
        ] {
            assert!(super::remote(bad).is_none(), "{bad}");
        }
    }
}
