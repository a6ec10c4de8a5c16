//! A finished job's outputs: every URL in its output (a string, a list, an object of
//! them), downloaded into the storage module (through its SSRF guard: the provider names
//! these URLs), streamed and checked by their bytes.

use serde_json::Value;

use crate::providers::{ExecError, Job, artifacts};
use crate::storage::Storage;
use crate::storage::ingest::IngestError;
use crate::storage::records::{Dimensions, GeneratedFile};
use crate::storage::sniff::{Kind, Purpose, check};

/// Files one job may hand back (a video and its poster, a model and its textures).
const MAX_FILES: usize = 8;

const GLB: Kind = Kind {
    content_type: "model/gltf-binary",
    extension: "glb",
};

/// The http(s) URLs in `output`, in order.
fn urls(output: &Value, into: &mut Vec<String>) {
    match output {
        Value::String(s) if s.starts_with("https://") || s.starts_with("http://") => {
            into.push(s.clone())
        }
        Value::Array(items) => items.iter().for_each(|v| urls(v, into)),
        Value::Object(fields) => fields.values().for_each(|v| urls(v, into)),
        _ => {}
    }
}

/// What a generated file may be: a video, an image, or a binary glTF model.
fn accept(head: &[u8]) -> Result<Kind, String> {
    if head.starts_with(b"glTF") {
        return Ok(GLB);
    }
    check(Purpose::Video, head).or_else(|_| check(Purpose::Image, head))
}

/// Downloads every output of a finished job into `job`'s files.
pub(super) async fn store(
    storage: &Storage,
    job: &Job<'_>,
    output: &Value,
) -> Result<Vec<GeneratedFile>, ExecError> {
    let mut found = Vec::new();
    urls(output, &mut found);
    if found.is_empty() {
        return Err(ExecError::Permanent(
            "the job succeeded with no output URL".into(),
        ));
    }
    let limit = storage.settings.max_video_bytes;
    let mut files = Vec::new();
    for (i, url) in found.iter().take(MAX_FILES).enumerate() {
        // One key per output: a retried check overwrites its own earlier download.
        let name = if i == 0 {
            job.step.to_owned()
        } else {
            format!("{}-{i}", job.step)
        };
        let key_for = |kind| artifacts::key_of(job.user_id, job.task_id, &name, kind);
        let written = storage
            .ingest(url, limit, accept, key_for)
            .await
            .map_err(|e| match e {
                IngestError::Refused(why) => ExecError::Permanent(why),
                e => ExecError::Transient(e.to_string()),
            })?;
        files.push(GeneratedFile::new(&written, Dimensions::default()));
    }
    Ok(files)
}
