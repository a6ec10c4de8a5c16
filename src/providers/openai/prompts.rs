//! What a chat call says, by step: copy from the prompt (copywriting and any step not
//! named here), a video's summary and tags from its transcript, a knowledge-base entry
//! from the summary. The pipeline's steps read the earlier steps' outputs (`previous`).

use serde_json::Value;

use crate::providers::Job;

/// Copywriting's instructions.
pub const COPY: &str = "You write short, punchy marketing copy for short videos.";
const SUMMARY: &str = "You summarise the transcript of a marketing video for a knowledge base: \
    a few sentences on what it shows and says, then one line of tags (`Tags: a, b, c`).";
const ENTRY: &str = "You turn a video's summary into a knowledge-base entry: a title line, then \
    the facts a marketer would search for, as short bullet points.";

/// The earlier step `step`'s text field `field` (or its `text`).
fn earlier<'a>(job: &'a Job<'_>, step: &str, field: &str) -> &'a str {
    let out = job.previous.get(step).unwrap_or(&Value::Null);
    out.get(field)
        .or_else(|| out.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// (system, user) messages for `job`.
pub fn messages(job: &Job<'_>) -> (&'static str, String) {
    match job.step {
        "summarize" => (
            SUMMARY,
            format!(
                "{}\n\nTranscript:\n{}",
                job.prompt,
                earlier(job, "transcribe", "transcript")
            ),
        ),
        "build_knowledge_entry" => (
            ENTRY,
            format!(
                "{}\n\nSummary:\n{}",
                job.prompt,
                earlier(job, "summarize", "summary")
            ),
        ),
        _ => (COPY, job.prompt.to_owned()),
    }
}
