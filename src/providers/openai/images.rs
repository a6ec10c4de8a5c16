//! `/images/generations`: the image comes back as `b64_json` or a `url`; either way its
//! bytes become our own stored file (a provider's URL expires and is never handed on).

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::OpenAi;
use crate::providers::{ExecError, Job, Progress, Report, artifacts};
use crate::storage::records::{Dimensions, GeneratedFile};
use crate::storage::sniff::{Purpose, check};

impl OpenAi {
    pub(super) async fn image(
        &self,
        job: &Job<'_>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Value, ExecError> {
        let body = json!({ "model": self.image_model, "prompt": job.prompt, "n": 1, "size": "1024x1024", "response_format": "b64_json" });
        let resp = self
            .http
            .send(|| self.http.post("/images/generations", &body), 0, cancel)
            .await?;
        let answer: Value = resp.json().await.map_err(|e| {
            ExecError::Transient(format!("reading the images answer: {}", e.without_url()))
        })?;
        let _ = progress.send(Report::Progress(60, Some("storing the image".into())));
        let first = answer.pointer("/data/0").cloned().unwrap_or(Value::Null);
        let accept = |head: &[u8]| check(Purpose::Image, head);
        let key_for = |kind| artifacts::key_of(job.user_id, job.task_id, job.step, kind);
        // The provider's bytes become our file; its URL (which expires) is never handed on.
        let written = if let Some(b64) = first.get("b64_json").and_then(Value::as_str) {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| ExecError::Permanent(format!("the image is not base64: {e}")))?;
            let kind = accept(&bytes).map_err(ExecError::Permanent)?;
            let key = key_for(kind)
                .map_err(|e: crate::storage::StorageError| ExecError::Transient(e.to_string()))?;
            self.storage
                .put(&key, Bytes::from(bytes), kind)
                .await
                .map_err(|e| ExecError::Transient(format!("storing the image: {e}")))?
        } else if let Some(url) = first.get("url").and_then(Value::as_str) {
            let limit = self.storage.settings.max_image_bytes;
            self.storage
                .ingest(url, limit, accept, key_for)
                .await
                .map_err(|e| match e {
                    crate::storage::ingest::IngestError::Refused(why) => ExecError::Permanent(why),
                    e => ExecError::Transient(e.to_string()),
                })?
        } else {
            return Err(ExecError::Permanent(
                "the images answer has no data[0].b64_json or url".into(),
            ));
        };
        let file = GeneratedFile::new(&written, Dimensions::default());
        Ok(json!({ "files": [file], "model": self.image_model, "usage": { "images": 1 } }))
    }
}
