//! What a provider reports it used, read from a finished step's output: tokens in and
//! out (as OpenAI, Dify and the simulator name them), images, media seconds, the model
//! and the provider's name ([`Provider`](super::Provider) stamps it). Pricing it and
//! recording it are the caller's (the AI-task flow's usage).

use serde_json::Value;

/// What one step consumed, read from its output (`usage` as the provider reported it,
/// `provider` as [`Provider`](super::Provider) stamped it, `model`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    pub provider: String,
    pub model: Option<String>,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// At least input + output; more when a provider reports only a total (Dify).
    pub total_tokens: i64,
    pub images: i64,
    pub media_ms: i64,
}

impl Usage {
    /// The usage in a step's output. OpenAI names tokens `prompt_tokens` /
    /// `completion_tokens` (chat) or `input_tokens` / `output_tokens` (newer APIs); both
    /// are read. Anything missing counts as zero.
    pub fn of(output: &Value) -> Usage {
        let u = output.get("usage").unwrap_or(&Value::Null);
        let n = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| u.get(*k).and_then(Value::as_i64))
                .unwrap_or(0)
                .max(0)
        };
        let input_tokens = n(&["prompt_tokens", "input_tokens"]);
        let output_tokens = n(&["completion_tokens", "output_tokens"]);
        let seconds = u.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
        Usage {
            provider: output
                .get("provider")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            model: output
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_owned),
            input_tokens,
            output_tokens,
            total_tokens: n(&["total_tokens"]).max(input_tokens + output_tokens),
            images: n(&["images"]),
            media_ms: (seconds.max(0.0) * 1000.0) as i64,
        }
    }

    /// Whether the step consumed anything worth a row.
    pub fn is_empty(&self) -> bool {
        self.total_tokens == 0 && self.images == 0 && self.media_ms == 0
    }

    /// Its token counts.
    pub fn tokens(&self) -> Tokens {
        Tokens {
            input: self.input_tokens,
            output: self.output_tokens,
            total: self.total_tokens,
        }
    }
}

/// Token counts: of a step, or of a task (its steps added up).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: i64,
    pub output: i64,
    /// At least input + output.
    pub total: i64,
}

impl std::ops::Add for Tokens {
    type Output = Tokens;
    fn add(self, o: Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_add(o.input),
            output: self.output.saturating_add(o.output),
            total: self.total.saturating_add(o.total),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_both_namings_and_a_bare_total() {
        let chat = Usage::of(&json!({ "provider": "openai", "model": "gpt-4o-mini",
            "usage": { "prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42 } }));
        assert_eq!(
            (chat.input_tokens, chat.output_tokens, chat.total_tokens),
            (12, 30, 42)
        );
        assert_eq!(chat.provider, "openai");
        let newer = Usage::of(&json!({ "usage": { "input_tokens": 3, "output_tokens": 4 } }));
        assert_eq!(newer.total_tokens, 7);
        let dify = Usage::of(&json!({ "usage": { "total_tokens": 99 } }));
        assert_eq!((dify.input_tokens, dify.total_tokens), (0, 99));
        assert!(Usage::of(&json!({ "text": "no usage" })).is_empty());
        let asr = Usage::of(&json!({ "usage": { "seconds": 12.5 } }));
        assert_eq!(asr.media_ms, 12_500);
    }
}
