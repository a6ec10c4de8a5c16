//! What types cannot check in `[ai]`, each problem naming its key.

use super::{AiSettings, Protocol};
use crate::config::ConfigError;
use crate::domains::ai_tasks::kinds::TaskKind;

impl AiSettings {
    /// Checks what types cannot, naming the offending key. `consumer_timeout_ms` is the
    /// broker's: a task that may run that long would have its delivery taken back mid-run.
    pub fn validate(&self, consumer_timeout_ms: u64) -> Result<(), ConfigError> {
        let ai = self;
        let bad = |key, problem: String| Err(ConfigError::Invalid { key, problem });
        if ai.heartbeat_ms == 0 || ai.stale_after_ms <= ai.heartbeat_ms * 2 {
            return bad(
                "ai.stale_after_ms",
                "must be more than twice ai.heartbeat_ms (and that above 0)".into(),
            );
        }
        if ai.cancel_refund_started_percent > 100 {
            return bad(
                "ai.cancel_refund_started_percent",
                "must be 0 to 100".into(),
            );
        }
        if !(10..=2000).contains(&ai.stream_coalesce_ms) {
            return bad("ai", "stream_coalesce_ms must be 10 to 2000".into());
        }
        if ai.reaper_interval_ms == 0 || ai.max_prompt_chars == 0 || ai.max_params_bytes == 0 {
            return bad(
                "ai",
                "reaper_interval_ms, max_prompt_chars and max_params_bytes must be above 0".into(),
            );
        }
        for kind in ["copywriting", "image", "video", "model3d", "video_analysis"] {
            let Some(k) = ai.kinds.get(kind) else {
                return bad("ai.kinds", format!("missing [ai.kinds.{kind}]"));
            };
            if k.cost < 0 {
                return bad(
                    "ai.kinds",
                    format!("ai.kinds.{kind}.cost must not be negative"),
                );
            }
            if let Some(p) = &k.pricing
                && (p.per_1k_input < 0 || p.per_1k_output < 0 || p.max_output_tokens == 0)
            {
                return bad(
                    "ai.kinds",
                    format!(
                        "ai.kinds.{kind}.pricing: prices must not be negative and max_output_tokens must be above 0"
                    ),
                );
            }
            // RabbitMQ closes a channel whose delivery stays unacked past consumer_timeout;
            // a kind whose providers park holds no delivery while its job runs (conveyor
            // enforces its deadline on the parked task).
            let parks = std::iter::once(&k.provider)
                .chain(k.steps.values())
                .filter_map(|p| ai.providers.get(p))
                .all(|p| p.protocol.parks());
            if k.deadline_secs == 0
                || (!parks && k.deadline_secs.saturating_mul(1000) >= consumer_timeout_ms)
            {
                return bad(
                    "ai.kinds",
                    format!(
                        "ai.kinds.{kind}.deadline_secs must be above 0 and below broker.consumer_timeout_ms ({consumer_timeout_ms} ms): \
                         the broker takes back a delivery unacked that long"
                    ),
                );
            }
        }
        for kind in &ai.shedding.kinds {
            if TaskKind::parse(kind).is_none_or(|k| k == TaskKind::VideoAnalysis) {
                return bad(
                    "ai.shedding.kinds",
                    format!(
                        "{kind:?}: name kinds other than video_analysis (the core path it protects)"
                    ),
                );
            }
        }
        for (kind, k) in &ai.kinds {
            let steps = TaskKind::parse(kind).map(|k| k.steps()).unwrap_or(&[]);
            for step in &k.approval_before {
                if !steps.iter().skip(1).any(|s| s == step) {
                    return bad(
                        "ai.kinds",
                        format!(
                            "ai.kinds.{kind}.approval_before: {step:?} is not a step of {kind} after its first ({})",
                            steps.join(", ")
                        ),
                    );
                }
            }
            if !k.approval_before.is_empty() && k.approval_timeout_secs == 0 {
                return bad(
                    "ai.kinds",
                    format!("ai.kinds.{kind}.approval_timeout_secs must be above 0"),
                );
            }
        }
        crate::providers::settings::validate(&ai.providers)?;
        for (kind, k) in &ai.kinds {
            for provider in std::iter::once(&k.provider).chain(k.steps.values()) {
                let Some(p) = ai.providers.get(provider) else {
                    return bad(
                        "ai.kinds",
                        format!(
                            "ai.kinds.{kind} names provider {provider:?}, which is not in [ai.providers]"
                        ),
                    );
                };
                let serves = match (p.protocol, kind.as_str()) {
                    (Protocol::Simulated, _) => true,
                    (Protocol::Openai, "copywriting") => !p.model.is_empty(),
                    (Protocol::Openai, "image") => !p.image_model.is_empty(),
                    (Protocol::Openai, _) => {
                        k.steps.values().any(|s| s == provider) && !p.model.is_empty()
                    }
                    // A workflow answers text: copywriting, or a pipeline's text steps.
                    (Protocol::Dify, "copywriting") => true,
                    (Protocol::Dify, _) => k.steps.values().any(|s| s == provider),
                    (Protocol::Ffmpeg, "video_analysis") => {
                        k.steps.get("extract_audio") == Some(provider) && k.provider != *provider
                    }
                    (Protocol::Ffmpeg, _) => false,
                    // A job answers files: images, videos, 3D models.
                    (Protocol::Replicate | Protocol::Prediction, kind) => {
                        matches!(kind, "image" | "video" | "model3d") && !p.base_url.is_empty()
                    }
                };
                if !serves {
                    return bad(
                        "ai.kinds",
                        format!(
                            "ai.kinds.{kind}: provider {provider:?} ({:?}) cannot serve it (text needs `model`, images `image_model`, jobs `base_url` and a media kind)",
                            p.protocol
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}
