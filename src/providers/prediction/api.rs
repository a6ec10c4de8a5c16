//! `[ai.providers.<name>.prediction]`: the shape of a prediction-style API (create a
//! job, get it, cancel it) as paths and JSON pointers, so a vendor with this shape plugs
//! in by configuration. Every field defaults to Replicate's predictions API, which
//! `protocol = "replicate"` speaks as documented.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Paths are under the provider's `base_url`; `{id}` is the job's id, `{model}` the
/// provider's `model`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PredictionApi {
    /// `POST` here creates a job.
    pub create_path: String,
    /// `GET` here reads a job.
    pub get_path: String,
    /// `POST` here cancels a job; empty: the API cannot cancel.
    pub cancel_path: String,
    /// Where the create body carries `model` (Replicate: the model version); empty:
    /// nowhere (the path names it).
    pub model_pointer: String,
    /// Where the create body carries the inputs (`inputs` of the provider); empty: at
    /// its top level.
    pub input_pointer: String,
    /// Where the create body carries the callback URL; empty: the API takes none (it
    /// is polled only).
    pub webhook_pointer: String,
    /// Merged into every create body first (fixed inputs, webhook event filters).
    pub extra_body: Value,
    /// In a job: its id, status, outputs, progress and error.
    pub id_pointer: String,
    pub status_pointer: String,
    pub output_pointer: String,
    /// A number (0-1 or 0-100) or text whose last `NN%` is the progress; empty: none.
    pub progress_pointer: String,
    pub error_pointer: String,
    /// Status values of a finished job; any other value means still running.
    pub succeeded: Vec<String>,
    pub failed: Vec<String>,
}

impl Default for PredictionApi {
    /// Replicate's predictions API.
    fn default() -> Self {
        PredictionApi {
            create_path: "/predictions".into(),
            get_path: "/predictions/{id}".into(),
            cancel_path: "/predictions/{id}/cancel".into(),
            model_pointer: "/version".into(),
            input_pointer: "/input".into(),
            webhook_pointer: "/webhook".into(),
            // Only the end matters: a check reads the job whole, so start, output and
            // log events would wake it for nothing.
            extra_body: json!({ "webhook_events_filter": ["completed"] }),
            id_pointer: "/id".into(),
            status_pointer: "/status".into(),
            output_pointer: "/output".into(),
            // Replicate reports no percent; its models' logs print progress bars.
            progress_pointer: "/logs".into(),
            error_pointer: "/error".into(),
            succeeded: vec!["succeeded".into()],
            failed: vec!["failed".into(), "canceled".into()],
        }
    }
}

impl PredictionApi {
    /// Replicate's preset for `model`: a version id goes in the body; an official
    /// model named `owner/name` is created through its own path instead.
    pub fn replicate(model: &str) -> Self {
        let api = PredictionApi::default();
        if model.contains('/') && !model.contains(':') {
            PredictionApi {
                create_path: "/models/{model}/predictions".into(),
                model_pointer: String::new(),
                ..api
            }
        } else {
            api
        }
    }

    /// The create body for a job: `extra_body`, the inputs at `input_pointer`, the model
    /// at `model_pointer`, the callback at `webhook_pointer`.
    pub fn create_body(&self, model: &str, inputs: Value, webhook: Option<&str>) -> Value {
        let mut body = match &self.extra_body {
            Value::Object(_) => self.extra_body.clone(),
            _ => json!({}),
        };
        if self.input_pointer.is_empty() {
            merge(&mut body, inputs);
        } else {
            set(&mut body, &self.input_pointer, inputs);
        }
        if !self.model_pointer.is_empty() && !model.is_empty() {
            set(&mut body, &self.model_pointer, model.into());
        }
        match webhook {
            Some(url) if !self.webhook_pointer.is_empty() => {
                set(&mut body, &self.webhook_pointer, url.into())
            }
            // No callback: a filter for one would be refused by some APIs.
            _ => {
                if let Some(o) = body.as_object_mut() {
                    o.remove("webhook_events_filter");
                }
            }
        }
        body
    }

    /// A path with its `{id}` and `{model}` filled in (the id percent-encoded: it comes
    /// from the provider).
    pub fn path(&self, template: &str, id: &str, model: &str) -> String {
        let id: String = form_urlencoded::byte_serialize(id.as_bytes()).collect();
        template.replace("{id}", &id).replace("{model}", model)
    }
}

/// Sets `value` at `pointer` (`/a/b`), making the objects on the way; what is already
/// there at the end is merged into when both are objects.
fn set(body: &mut Value, pointer: &str, value: Value) {
    let mut at = body;
    for part in pointer.trim_start_matches('/').split('/') {
        if !at.is_object() {
            *at = json!({});
        }
        let Some(o) = at.as_object_mut() else { return };
        at = o.entry(part.to_owned()).or_insert(Value::Null);
    }
    if at.is_object() && value.is_object() {
        merge(at, value);
    } else {
        *at = value;
    }
}

/// `from`'s fields into `into`, deeply for objects.
fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

/// The percent a job reports at `progress` (see [`PredictionApi::progress_pointer`]).
pub fn percent_of(progress: Option<&Value>) -> Option<i32> {
    match progress? {
        Value::Number(n) => {
            let f = n.as_f64()?;
            let p = if f <= 1.0 { f * 100.0 } else { f };
            Some(p.clamp(0.0, 100.0) as i32)
        }
        Value::String(s) => last_percent(s),
        _ => None,
    }
}

/// The last `NN%` in a log (a progress bar's latest line).
fn last_percent(log: &str) -> Option<i32> {
    let bytes = log.as_bytes();
    let mut found = None;
    for (i, b) in bytes.iter().enumerate() {
        if *b != b'%' {
            continue;
        }
        let digits = bytes[..i]
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if (1..=3).contains(&digits)
            && let Ok(n) = log[i - digits..i].parse::<i32>()
            && n <= 100
        {
            found = Some(n);
        }
    }
    found
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn replicate_bodies_are_built_as_documented() {
        let api = PredictionApi::default();
        let body = api.create_body(
            "5c7d5dc6",
            json!({ "prompt": "a cat" }),
            Some("https://x/cb"),
        );
        assert_eq!(
            body,
            json!({ "version": "5c7d5dc6", "input": { "prompt": "a cat" },
                "webhook": "https://x/cb", "webhook_events_filter": ["completed"] })
        );
        let polled = api.create_body("5c7d5dc6", json!({ "prompt": "a cat" }), None);
        assert!(polled.get("webhook_events_filter").is_none(), "{polled}");
        let official = PredictionApi::replicate("black-forest-labs/flux-schnell");
        assert_eq!(
            official.path(&official.create_path, "", "black-forest-labs/flux-schnell"),
            "/models/black-forest-labs/flux-schnell/predictions"
        );
        let body = official.create_body("owner/name", json!({ "prompt": "p" }), None);
        assert_eq!(body, json!({ "input": { "prompt": "p" } }));
        assert_eq!(api.path(&api.get_path, "a b/c", ""), "/predictions/a+b%2Fc");
    }

    #[test]
    fn a_flat_api_takes_inputs_at_the_top_and_fixed_fields_merge() {
        let api = PredictionApi {
            input_pointer: String::new(),
            model_pointer: "/model".into(),
            webhook_pointer: "/callback_url".into(),
            extra_body: json!({ "mode": "pro", "input": { "fps": 24 } }),
            ..PredictionApi::default()
        };
        let body = api.create_body("kling-v1", json!({ "prompt": "p" }), Some("u"));
        assert_eq!(
            body,
            json!({ "mode": "pro", "input": { "fps": 24 }, "prompt": "p", "model": "kling-v1", "callback_url": "u" })
        );
        let nested = PredictionApi {
            extra_body: json!({ "input": { "fps": 24 } }),
            ..PredictionApi::default()
        };
        let body = nested.create_body("v", json!({ "prompt": "p" }), None);
        assert_eq!(body["input"], json!({ "fps": 24, "prompt": "p" }));
    }

    #[test]
    fn progress_is_read_from_numbers_and_progress_bars() {
        assert_eq!(percent_of(Some(&json!(0.45))), Some(45));
        assert_eq!(percent_of(Some(&json!(70))), Some(70));
        let logs = "loading\n 10%|█         | 1/10\n 40%|████      | 4/10\n";
        assert_eq!(percent_of(Some(&json!(logs))), Some(40));
        assert_eq!(percent_of(Some(&json!("no bars"))), None);
        assert_eq!(percent_of(Some(&json!("1000% sure"))), None);
        assert_eq!(percent_of(None), None);
    }
}
