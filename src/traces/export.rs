//! The exporter: the OTLP/HTTP (protobuf) span exporter behind the SDK's batch processor.
//!
//! Exporting never slows the request path: finished spans go to the batch processor
//! (its own thread, a blocking HTTP client) through a bounded count; a span that finds
//! the queue full is dropped and counted (`conveyor_trace_spans_dropped_total`), exports
//! are counted by outcome (`conveyor_trace_spans_exported_total{outcome}`). A collector
//! that fails an export is left alone for a while, and for that while no spans are made
//! ([`paused`]: the layer sees none, and what would have carried a span's `traceparent`
//! carries the one it came in with): a dead collector costs neither the spans' making
//! nor their encoding. The first spans after the while try it again.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracer, SdkTracerProvider, SpanData,
    SpanExporter, SpanProcessor,
};
use tracing_opentelemetry::OpenTelemetryLayer;

use super::settings::TraceSettings;

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Until when (ms after [`epoch`]) spans are not made, the collector being taken for
/// down; 0 while it is not.
static PAUSED_UNTIL: AtomicU64 = AtomicU64::new(0);

fn epoch() -> std::time::Instant {
    static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

fn millis(at: std::time::Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(epoch()).as_millis()).unwrap_or(u64::MAX)
}

/// Whether span making is paused because the collector failed an export a moment ago
/// (no clock read while it has not).
pub fn paused() -> bool {
    match PAUSED_UNTIL.load(Ordering::Relaxed) {
        0 => false,
        until => millis(std::time::Instant::now()) < until,
    }
}

fn pause(until: Option<std::time::Instant>) {
    let ms = until.map_or(0, |t| millis(t).max(1));
    PAUSED_UNTIL.store(ms, Ordering::Relaxed);
    metrics::gauge!("conveyor_trace_collector_down").set(if ms == 0 { 0.0 } else { 1.0 });
}

/// The layer that exports spans, or `None` when traces are off. `process` names the
/// role in the spans' resource (`serve`, `consume ai`). Fails only on an exporter that
/// cannot be built (a malformed endpoint).
pub fn layer<S>(
    settings: &TraceSettings,
    process: &str,
) -> Result<Option<OpenTelemetryLayer<S, SdkTracer>>, String>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let from_env = [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .any(|k| std::env::var(k).is_ok_and(|v| !v.is_empty()));
    if settings.otlp_endpoint.is_empty() && !from_env {
        return Ok(None);
    }
    let endpoint = (!settings.otlp_endpoint.is_empty())
        .then(|| format!("{}/v1/traces", settings.otlp_endpoint.trim_end_matches('/')));
    // The blocking HTTP client starts a runtime of its own: built off the async runtime.
    let exporter = std::thread::spawn(move || {
        // No retries inside an export: the thread would sit in their backoff (0.7 s by
        // default) while spans keep coming; a failed export pauses spans instead
        // ([`Down`]), and the next batch tries again.
        let mut b = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_retry_policy(opentelemetry_otlp::RetryPolicy::default().with_max_retries(0))
            .with_timeout(Duration::from_secs(5));
        if let Some(url) = endpoint {
            b = b.with_endpoint(url);
        }
        b.build().map_err(|e| e.to_string())
    })
    .join()
    .map_err(|_| "building the OTLP exporter panicked".to_owned())??;
    let pending = Arc::new(AtomicUsize::new(0));
    let batch = BatchSpanProcessor::builder(Counted {
        inner: exporter,
        pending: pending.clone(),
        down: std::sync::Mutex::new(Down::default()),
    })
    .with_batch_config(
        BatchConfigBuilder::default()
            .with_max_queue_size(settings.queue_size)
            .with_scheduled_delay(Duration::from_millis(500))
            .build(),
    )
    .build();
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(settings.service_name.clone())
        .with_attribute(opentelemetry::KeyValue::new(
            "service.instance.id",
            crate::instance::name().to_owned(),
        ))
        .with_attribute(opentelemetry::KeyValue::new(
            "conveyor.process",
            process.to_owned(),
        ))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(Bounded {
            inner: batch,
            pending,
            max: settings.queue_size,
        })
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            settings.sample_ratio,
        ))))
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("conveyor");
    if PROVIDER.set(provider).is_err() {
        // A second init in one process (tests): the first provider stays.
        return Ok(None);
    }
    super::TRUST_INCOMING.store(settings.trust_incoming, Ordering::Relaxed);
    super::ON.store(true, Ordering::Relaxed);
    // Spans say what happened, not where in the source or on which thread: less to
    // record for every span. No context activation: nothing here reads OpenTelemetry's
    // current context (trace context is read from the tracing span), and activating it
    // costs a context switch on every poll of every instrumented future.
    Ok(Some(
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_level(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_context_activation(false),
    ))
}

/// Sends what is queued and stops the exporter (at the end of `serve`/`consume`); waits
/// at most a few seconds for a collector that does not answer.
pub async fn flush() {
    let Some(provider) = PROVIDER.get() else {
        return;
    };
    let done =
        tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(Duration::from_secs(3)));
    if let Ok(Ok(Err(e))) = tokio::time::timeout(Duration::from_secs(5), done).await {
        tracing::debug!(error = %e, "trace exporter shutdown");
    }
}

/// Counts what the batch processor holds, and drops (counted) beyond `max` instead of
/// letting the SDK drop silently.
#[derive(Debug)]
struct Bounded {
    inner: BatchSpanProcessor,
    pending: Arc<AtomicUsize>,
    max: usize,
}

impl SpanProcessor for Bounded {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.pending.fetch_add(1, Ordering::Relaxed) >= self.max {
            self.pending.fetch_sub(1, Ordering::Relaxed);
            metrics::counter!("conveyor_trace_spans_dropped_total").increment(1);
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

/// The OTLP exporter, counting each batch's spans out of [`Bounded`]'s count and by
/// outcome. After a failed export the collector is taken for down for a while, one
/// second doubling to [`DOWN_MAX`]: no spans are made ([`paused`]) and what was made
/// before is dropped unsent (`outcome="skipped"`). Making and encoding spans for a
/// collector that refuses them cost 5–8 % of a busy process's throughput, for nothing.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    pending: Arc<AtomicUsize>,
    down: std::sync::Mutex<Down>,
}

/// The longest a down collector goes untried.
const DOWN_MAX: Duration = Duration::from_secs(30);

/// When a failed collector is tried again, and how long the next wait is if it fails.
#[derive(Debug, Default)]
struct Down {
    until: Option<std::time::Instant>,
    wait: Duration,
}

impl Down {
    fn skipping(&self, now: std::time::Instant) -> bool {
        self.until.is_some_and(|t| now < t)
    }

    fn failed(&mut self, now: std::time::Instant) {
        self.wait = (self.wait * 2).clamp(Duration::from_secs(1), DOWN_MAX);
        self.until = Some(now + self.wait);
    }

    fn succeeded(&mut self) {
        *self = Down::default();
    }
}

impl<E> Counted<E> {
    fn down(&self) -> std::sync::MutexGuard<'_, Down> {
        // A poisoned lock only means a panic elsewhere; the state is still usable.
        self.down.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        if self.down().skipping(std::time::Instant::now()) {
            self.pending.fetch_sub(n, Ordering::Relaxed);
            metrics::counter!("conveyor_trace_spans_exported_total", "outcome" => "skipped")
                .increment(n as u64);
            return Ok(());
        }
        let result = self.inner.export(batch).await;
        self.pending.fetch_sub(n, Ordering::Relaxed);
        let outcome = if result.is_ok() { "ok" } else { "failed" };
        let until = {
            let mut down = self.down();
            match &result {
                Ok(()) => down.succeeded(),
                Err(_) => down.failed(std::time::Instant::now()),
            }
            down.until
        };
        // Mirrored where every span asks, without the lock.
        pause(until);
        metrics::counter!("conveyor_trace_spans_exported_total", "outcome" => outcome)
            .increment(n as u64);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_paused_until_the_collector_is_tried_again() {
        assert!(!paused());
        pause(Some(std::time::Instant::now() + Duration::from_millis(200)));
        assert!(paused());
        std::thread::sleep(Duration::from_millis(250));
        assert!(!paused(), "tried again once the while is over");
        pause(Some(std::time::Instant::now() + Duration::from_secs(5)));
        assert!(paused());
        pause(None);
        assert!(!paused(), "an export that went through ends the pause");
    }

    #[test]
    fn a_failed_collector_is_left_alone_for_a_doubling_while() {
        let t0 = std::time::Instant::now();
        let mut d = Down::default();
        assert!(!d.skipping(t0));
        d.failed(t0);
        assert!(d.skipping(t0 + Duration::from_millis(900)));
        assert!(!d.skipping(t0 + Duration::from_millis(1001)));
        d.failed(t0);
        assert_eq!(d.wait, Duration::from_secs(2));
        for _ in 0..10 {
            d.failed(t0);
        }
        assert_eq!(d.wait, DOWN_MAX);
        d.succeeded();
        assert!(!d.skipping(t0));
        d.failed(t0);
        assert_eq!(d.wait, Duration::from_secs(1));
    }
}
