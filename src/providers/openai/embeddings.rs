//! `POST /embeddings`: one vector per input, in input order (the answer's `index` says
//! which), and the tokens it read.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::OpenAi;
use crate::providers::ExecError;

/// An embeddings call's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    /// One per input, in input order.
    pub vectors: Vec<Vec<f32>>,
    pub prompt_tokens: u64,
    pub model: String,
}

impl OpenAi {
    /// Embeds `inputs` in one call.
    pub async fn embed(
        &self,
        inputs: &[String],
        cancel: &CancellationToken,
    ) -> Result<Embeddings, ExecError> {
        if inputs.is_empty() {
            return Ok(Embeddings {
                vectors: Vec::new(),
                prompt_tokens: 0,
                model: self.embedding_model.clone(),
            });
        }
        let _slot = self.http.slot(cancel).await?;
        let body =
            json!({ "model": self.embedding_model, "input": inputs, "encoding_format": "float" });
        let estimate: usize = inputs.iter().map(|i| i.len().div_ceil(4)).sum();
        let resp = self
            .http
            .send(|| self.http.post("/embeddings", &body), estimate, cancel)
            .await?;
        let answer: Value = resp.json().await.map_err(|e| {
            ExecError::Transient(format!("reading the embeddings: {}", e.without_url()))
        })?;
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; inputs.len()];
        for item in answer
            .get("data")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = item
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(u64::MAX) as usize;
            let vector: Option<Vec<f32>> =
                item.get("embedding").and_then(Value::as_array).map(|v| {
                    v.iter()
                        .filter_map(Value::as_f64)
                        .map(|x| x as f32)
                        .collect()
                });
            if let (Some(slot), Some(v)) = (vectors.get_mut(index), vector) {
                *slot = Some(v);
            }
        }
        let vectors: Option<Vec<Vec<f32>>> = vectors.into_iter().collect();
        let vectors = vectors.ok_or_else(|| {
            ExecError::Permanent("the embeddings answer lacks a vector for an input".into())
        })?;
        Ok(Embeddings {
            vectors,
            prompt_tokens: answer
                .pointer("/usage/prompt_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            model: self.embedding_model.clone(),
        })
    }
}
