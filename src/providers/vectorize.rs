//! An output's vectors: when a step asks for them ([`Job::vectors`]: a video's knowledge
//! entry, the analysis pipeline's last step), the provider that ran it embeds the
//! earlier `summarize` step's summary, the output's text and chunks of the `transcribe`
//! step's transcript, and what the step made is found by them in a search by meaning.
//! The vectors ride in the step's output under [`KEY`] only as far as the caller's
//! commit, which takes them out ([`take`]) and writes them beside what is searched,
//! never into the result.
//!
//! [`QueryEmbedder`] embeds a search query with the same provider and model.

use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{ExecError, Executor, Job, Provider};
use crate::search::semantic::{self, EmbedError, Embedded, Embedder};

/// The output key they ride under.
pub const KEY: &str = "vectors";
/// Characters of transcript per vector, and the most chunks one video gets.
const CHUNK_CHARS: usize = 1_000;
const MAX_CHUNKS: usize = 16;

static WARNED: AtomicBool = AtomicBool::new(false);

/// The texts a video is found by: its summary, its entry, chunks of its transcript.
fn texts(job: &Job<'_>, output: &Value) -> Vec<String> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").trim().to_owned();
    let mut out = vec![
        text(job.previous.pointer("/summarize/summary")),
        text(output.get("text")),
    ];
    out.extend(semantic::chunks(
        &text(job.previous.pointer("/transcribe/transcript")),
        CHUNK_CHARS,
        MAX_CHUNKS,
    ));
    out.retain(|t| !t.is_empty());
    out
}

/// `output` with the vectors of `job`'s texts, embedded by `exec` (provider `name`, the
/// one that ran the step). A provider without embeddings leaves the output as it is
/// (what it made is found by its words only); a failed call fails the step like any
/// other.
pub async fn attach(
    exec: &dyn Executor,
    name: &str,
    job: &Job<'_>,
    mut output: Value,
    cancel: &CancellationToken,
) -> Result<Value, ExecError> {
    let texts = texts(job, &output);
    if texts.is_empty() {
        return Ok(output);
    }
    match exec.embed_texts(&texts, cancel).await? {
        Some(e) => {
            if let Some(o) = output.as_object_mut() {
                o.insert(
                    KEY.into(),
                    json!({ "model": e.model, "vectors": e.vectors }),
                );
            }
        }
        None if !WARNED.swap(true, Ordering::Relaxed) => tracing::warn!(
            provider = name,
            kind = job.kind,
            step = job.step,
            "the provider of a step that asks for vectors has no embeddings: what it makes is not found by meaning"
        ),
        None => {}
    }
    Ok(output)
}

/// Takes the vectors out of a step's output (they are written beside the material, not
/// kept in the result).
pub fn take(output: &mut Value) -> Option<Embedded> {
    let v = output.as_object_mut()?.remove(KEY)?;
    parse(&v)
}

/// The vectors a step's output carries, read where they are (the commit writes them
/// beside the material without copying the output).
pub fn of(output: &Value) -> Option<Embedded> {
    parse(output.get(KEY)?)
}

fn parse(v: &Value) -> Option<Embedded> {
    let model = v.get("model")?.as_str()?.to_owned();
    let vectors = v
        .get("vectors")?
        .as_array()?
        .iter()
        .map(|v| {
            v.as_array().map(|xs| {
                xs.iter()
                    .filter_map(Value::as_f64)
                    .map(|x| x as f32)
                    .collect()
            })
        })
        .collect::<Option<Vec<Vec<f32>>>>()?;
    Some(Embedded { model, vectors })
}

/// Embeds search queries with one provider (the one that embedded what is searched).
pub struct QueryEmbedder(pub Provider);

#[async_trait]
impl Embedder for QueryEmbedder {
    async fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let embedded = self
            .0
            .embed_texts(&[text.to_owned()], &CancellationToken::new())
            .await
            .map_err(|e| EmbedError::Failed(e.to_string()))?
            .ok_or_else(|| {
                EmbedError::Unsupported(format!(
                    "the embedding provider {:?} has no embeddings",
                    self.0.name()
                ))
            })?;
        embedded
            .vectors
            .into_iter()
            .next()
            .ok_or_else(|| EmbedError::Failed("no vector for the query".into()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_vectors_leave_the_output_whole() {
        let mut out =
            json!({ "text": "entry", KEY: { "model": "m", "vectors": [[0.6, 0.8], [1.0, 0.0]] } });
        let e = take(&mut out).unwrap();
        assert_eq!(e.model, "m");
        assert_eq!(e.vectors, vec![vec![0.6, 0.8], vec![1.0, 0.0]]);
        assert_eq!(out, json!({ "text": "entry" }));
        assert_eq!(take(&mut out), None);
    }
}
