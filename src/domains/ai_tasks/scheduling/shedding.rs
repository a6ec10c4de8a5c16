//! Protecting the core path under a heavy backlog (seed 000: "at a heavy backlog, serve
//! the core stages first"). When the video-analysis pipeline's extraction and
//! speech-to-text queues hold `[ai.shedding] backlog` messages or more, submissions of
//! the kinds in `kinds` are answered 503 `shedding_load` with `Retry-After`, while video
//! analysis (and every kind not listed) is still taken and the pipeline's consumers keep
//! running. The backlog is read from the broker once a second by each API process, not
//! per request. Off (`backlog = 0`) by default.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::broker::Broker;
use crate::domains::ai_tasks::kinds::TaskKind;
use crate::domains::ai_tasks::queues::{AI_MEDIA_ASR, AI_MEDIA_EXTRACT};
use crate::domains::ai_tasks::settings::SheddingSettings;
use crate::error::ApiError;

/// The API process's view of the pipeline's backlog.
#[derive(Clone)]
pub struct Shedding {
    settings: Arc<SheddingSettings>,
    backlog: Arc<AtomicU64>,
}

impl Shedding {
    /// Starts reading the backlog every second (when shedding is on) until `shutdown`.
    pub fn start(
        settings: &SheddingSettings,
        broker: Arc<dyn Broker>,
        shutdown: CancellationToken,
    ) -> Self {
        let shedding = Shedding {
            settings: Arc::new(settings.clone()),
            backlog: Arc::default(),
        };
        if settings.backlog > 0 {
            let backlog = shedding.backlog.clone();
            tokio::spawn(async move {
                let names =
                    [&AI_MEDIA_EXTRACT, &AI_MEDIA_ASR].map(|q| broker.topology().queue(q).name);
                loop {
                    let mut n = 0;
                    for name in &names {
                        n += broker.depth(name).await.unwrap_or(0);
                    }
                    backlog.store(n, Ordering::Relaxed);
                    metrics::gauge!("conveyor_ai_pipeline_backlog").set(n as f64);
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
            });
        }
        shedding
    }

    /// Whether a submission of `kind` is taken now: 503 `shedding_load` while the
    /// pipeline is too far behind and `kind` is one that gives way.
    pub fn admit(&self, kind: TaskKind) -> Result<(), ApiError> {
        let s = &self.settings;
        let n = self.backlog.load(Ordering::Relaxed);
        if s.backlog == 0 || n < s.backlog || !s.kinds.iter().any(|k| k == kind.as_str()) {
            return Ok(());
        }
        metrics::counter!("conveyor_ai_shed_total", "kind" => kind.as_str()).increment(1);
        Err(ApiError::overloaded(
            "shedding_load",
            format!(
                "the video-analysis pipeline is {n} messages behind (ai.shedding.backlog {}): {} tasks are not taken for now",
                s.backlog,
                kind.as_str()
            ),
            s.retry_after_secs,
        ))
    }
}
