//! `[telemetry]`: where spans go, how many are kept, how trace ids become links.

use serde::{Deserialize, Serialize};

/// `[telemetry]`: distributed traces ([`crate::traces`]). Off by default.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TraceSettings {
    /// The OTLP/HTTP base URL spans are sent to (`http://127.0.0.1:4318`; `/v1/traces` is
    /// appended). Empty: traces are off, unless the standard `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set.
    pub otlp_endpoint: String,
    /// The share of new traces recorded, 0 to 1. Parent-based: a message that arrives
    /// with a `traceparent` follows its producer's decision, and so does an HTTP request
    /// when `trust_incoming` is set.
    pub sample_ratio: f64,
    /// Whether an HTTP request's `traceparent` is trusted: its request becomes a child of
    /// the caller's span (same trace id, the caller's sampling decision). Off: any caller
    /// can send one, so the request starts a trace of its own, sampled by `sample_ratio`,
    /// with a link to the caller's span. Turn it on only when every caller that reaches
    /// the API is yours (a gateway that sets or strips the header).
    pub trust_incoming: bool,
    /// `service.name` of the spans.
    pub service_name: String,
    /// Finished spans waiting for the exporter; beyond it spans are dropped and counted
    /// (`conveyor_trace_spans_dropped_total`), never waited for.
    pub queue_size: usize,
    /// A URL template with `{trace_id}` (a Jaeger or Grafana page) that makes trace ids
    /// links on /ops. Empty: ids are shown as text.
    pub trace_link: String,
}

impl Default for TraceSettings {
    fn default() -> Self {
        TraceSettings {
            otlp_endpoint: String::new(),
            sample_ratio: 1.0,
            trust_incoming: false,
            service_name: "conveyor".into(),
            queue_size: 2048,
            trace_link: String::new(),
        }
    }
}

impl TraceSettings {
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        let invalid = |key, problem: &str| crate::config::ConfigError::Invalid {
            key,
            problem: problem.to_owned(),
        };
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(invalid("telemetry.sample_ratio", "must be between 0 and 1"));
        }
        let http = ["http://", "https://"]
            .iter()
            .any(|scheme| self.otlp_endpoint.starts_with(scheme));
        if !self.otlp_endpoint.is_empty() && !http {
            return Err(invalid(
                "telemetry.otlp_endpoint",
                "must be an http:// or https:// URL (OTLP/HTTP), or empty for no traces",
            ));
        }
        if self.service_name.trim().is_empty() {
            return Err(invalid("telemetry.service_name", "must not be blank"));
        }
        if !(1..=1_000_000).contains(&self.queue_size) {
            return Err(invalid("telemetry.queue_size", "must be 1 to 1,000,000"));
        }
        if !self.trace_link.is_empty() && !self.trace_link.contains("{trace_id}") {
            return Err(invalid(
                "telemetry.trace_link",
                "must contain {trace_id}, or be empty",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::TraceSettings;

    #[test]
    fn refuses_what_cannot_work_and_names_the_key() {
        assert!(TraceSettings::default().validate().is_ok());
        let on = TraceSettings {
            otlp_endpoint: "http://127.0.0.1:4318".into(),
            trace_link: "http://jaeger:16686/trace/{trace_id}".into(),
            ..Default::default()
        };
        assert!(on.validate().is_ok());
        for (bad, key) in [
            (
                TraceSettings {
                    sample_ratio: 1.5,
                    ..Default::default()
                },
                "telemetry.sample_ratio",
            ),
            (
                TraceSettings {
                    otlp_endpoint: "127.0.0.1:4317".into(),
                    ..Default::default()
                },
                "telemetry.otlp_endpoint",
            ),
            (
                TraceSettings {
                    service_name: " ".into(),
                    ..Default::default()
                },
                "telemetry.service_name",
            ),
            (
                TraceSettings {
                    queue_size: 0,
                    ..Default::default()
                },
                "telemetry.queue_size",
            ),
            (
                TraceSettings {
                    trace_link: "http://jaeger/trace".into(),
                    ..Default::default()
                },
                "telemetry.trace_link",
            ),
        ] {
            match bad.validate() {
                Err(crate::config::ConfigError::Invalid { key: k, .. }) => assert_eq!(k, key),
                other => panic!("{key}: {other:?}"),
            }
        }
    }
}
