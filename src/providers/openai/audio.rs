//! Speech to text, `POST /audio/transcriptions` (multipart: the audio `file`, `model`,
//! `response_format=verbose_json`, optional `language`): the transcript's text and the
//! audio's duration (billed by the second; newer APIs report `usage.seconds`, older ones
//! the `duration` of the verbose answer).

use bytes::Bytes;
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::OpenAi;
use crate::providers::ExecError;

/// A transcription's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub text: String,
    /// The audio's length, when the provider said.
    pub seconds: Option<f64>,
    pub model: String,
}

impl OpenAi {
    /// Transcribes `audio` (named `filename`, whose extension tells the format).
    pub async fn transcribe(
        &self,
        audio: Bytes,
        filename: &str,
        language: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Transcript, ExecError> {
        let _slot = self.http.slot(cancel).await?;
        let form = || {
            let mut form = Form::new()
                .part(
                    "file",
                    Part::stream(audio.clone()).file_name(filename.to_owned()),
                )
                .text("model", self.audio_model.clone())
                .text("response_format", "verbose_json");
            if let Some(l) = language {
                form = form.text("language", l.to_owned());
            }
            form
        };
        let resp = self
            .http
            .send(
                || self.http.post_form("/audio/transcriptions", form()),
                0,
                cancel,
            )
            .await?;
        let answer: Value = resp.json().await.map_err(|e| {
            ExecError::Transient(format!("reading the transcription: {}", e.without_url()))
        })?;
        let text = answer
            .get("text")
            .and_then(Value::as_str)
            .ok_or_else(|| ExecError::Permanent("the transcription has no text".into()))?;
        let seconds = answer
            .pointer("/usage/seconds")
            .or_else(|| answer.get("duration"))
            .and_then(Value::as_f64);
        Ok(Transcript {
            text: text.to_owned(),
            seconds,
            model: self.audio_model.clone(),
        })
    }
}
