//! Logging (tracing: pretty locally, JSON in production), the Prometheus recorder and
//! the [`gauges`] sampled at each scrape, and the [`report`] each process sends the API
//! instances of its [`tally`](crate::tally).

pub mod gauges;
pub mod help;
pub mod report;
pub mod settings;

use std::io::IsTerminal as _;
use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::fmt::writer::EitherWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::telemetry::settings::LogFormat;

use crate::telemetry::settings::LogSettings;
use crate::traces::{self, TraceSettings, log_fields};

/// Where logs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogTo {
    /// Services (`serve`, `consume`): the event stream on stdout, as platforms collect it.
    Stdout,
    /// One-shot commands: stdout is the command's answer, so logs stay out of it.
    Stderr,
}

/// Installs the global subscriber once; later calls (tests) are no-ops. `RUST_LOG` wins
/// over `log.level`. With `traces` (the services: `serve`, `consume`), spans are exported
/// as the `[telemetry]` section says; `process` names the role in them.
pub fn init(settings: &LogSettings, to: LogTo, traces: Option<(&TraceSettings, &str)>) {
    // Called for every event: `EitherWriter` picks the stream without allocating.
    let writer = move || match to {
        LogTo::Stdout => EitherWriter::A(std::io::stdout()),
        LogTo::Stderr => EitherWriter::B(std::io::stderr()),
    };
    // Colours for a terminal only, not for log files and pipes.
    let ansi = match to {
        LogTo::Stdout => std::io::stdout().is_terminal(),
        LogTo::Stderr => std::io::stderr().is_terminal(),
    };
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let (exporting, refused) = match traces.map(|(t, process)| traces::export::layer(t, process)) {
        Some(Ok(layer)) => (layer, None),
        Some(Err(e)) => (None, Some(e)),
        None => (None, None),
    };
    // Each layer filters for itself: the log's level says what is printed, and the
    // exported spans are conveyor's own at info, whatever the log's level, except while
    // a collector that failed is left alone (none made then).
    let traced = tracing_subscriber::filter::FilterExt::and(
        tracing_subscriber::filter::Targets::new().with_target("conveyor", tracing::Level::INFO),
        // Dynamic: asked at every span (a plain `filter_fn` is asked once per callsite).
        // Its level hint keeps the process's maximum level at info: without one it is
        // trace, and every `debug!`/`trace!` of every dependency (through `log` too)
        // would be built and asked for.
        tracing_subscriber::filter::dynamic_filter_fn(|_, _| !traces::export::paused())
            .with_max_level_hint(tracing::level_filters::LevelFilter::INFO),
    );
    let registry =
        tracing_subscriber::registry().with(exporting.map(|layer| layer.with_filter(traced)));
    let _ = match settings.format {
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(writer)
                    .event_format(log_fields::WithTraceIds(
                        tracing_subscriber::fmt::format()
                            .json()
                            .with_current_span(true),
                    ))
                    .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
                    .with_filter(filter),
            )
            .try_init(),
        LogFormat::Pretty => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(writer)
                    .with_ansi(ansi)
                    .with_target(false)
                    .compact()
                    .with_filter(filter),
            )
            .try_init(),
    };
    if let Some(e) = refused {
        tracing::warn!(error = %e, "traces are off: the OTLP exporter could not be built");
    }
}

/// The process-wide Prometheus recorder, installed on first use.
pub fn metrics() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = with_buckets(PrometheusBuilder::new()).build_recorder();
        let handle = recorder.handle();
        // Fails only if another recorder is installed; ours then renders empty.
        let _ = metrics::set_global_recorder(recorder);
        help::describe();
        gauges::register(&[]);
        handle
    })
}

/// The distributions exported as histograms with buckets (they sum across processes, by
/// their bounded labels); the rest render as summaries.
fn with_buckets(builder: PrometheusBuilder) -> PrometheusBuilder {
    const SECONDS: &[f64] = &[
        0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0,
    ];
    const ATTEMPTS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0];
    let mut b = builder;
    for (name, buckets) in [
        ("conveyor_task_seconds", SECONDS),
        ("conveyor_task_queue_wait_seconds", SECONDS),
        ("conveyor_task_step_seconds", SECONDS),
        ("conveyor_provider_call_seconds", SECONDS),
        ("conveyor_message_attempts", ATTEMPTS),
    ] {
        let matcher = metrics_exporter_prometheus::Matcher::Full(name.to_owned());
        b = match b.set_buckets_for_metric(matcher, buckets) {
            Ok(next) => next,
            // Only an empty bucket list is refused; these are constants.
            Err(e) => {
                tracing::warn!(error = %e, metric = name, "histogram buckets not set");
                return PrometheusBuilder::new();
            }
        };
    }
    b
}
