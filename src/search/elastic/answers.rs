//! Reading the engine's answers: a bulk item's outcome, a search hit.

use serde_json::Value;

use crate::search::{Hit, Outcome};

pub(super) fn outcome(item: &Value) -> Outcome {
    let Some(result) = item.as_object().and_then(|o| o.values().next()) else {
        return Outcome::Failed {
            transient: true,
            reason: "no answer for the item".into(),
        };
    };
    let status = result["status"].as_u64().unwrap_or(0);
    match status {
        200..=299 => Outcome::Done,
        // A delete of a document never indexed still records its version.
        404 if item.get("delete").is_some() => Outcome::Done,
        409 => Outcome::Stale,
        _ => Outcome::Failed {
            transient: status == 429 || status >= 500,
            reason: result["error"].to_string(),
        },
    }
}

/// A search hit; `score` is set for a search by meaning.
pub(super) fn hit(h: &Value, score: Option<f32>) -> Hit {
    let s = &h["_source"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    Hit {
        id: text(&h["_id"]),
        kind: text(&s["kind"]),
        title: text(&s["title"]),
        tags: s["tags"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        created_at: s["created_at"]
            .as_i64()
            .and_then(chrono::DateTime::from_timestamp_millis)
            .unwrap_or_default(),
        version: s["version"].as_i64().unwrap_or_default(),
        highlight: text(&h["highlight"]["content"][0]),
        score,
    }
}
