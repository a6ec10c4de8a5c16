//! The sync consumer: a batch of `search.sync` messages becomes one query for the rows
//! as they are now and one bulk request. The row, not the message, says what to write
//! (its version fences the write), so duplicates, reordering and late retries all end at
//! the newest version. Each message is settled from the outcome of its material's write:
//! done or stale → ack; a transient failure (the engine busy or away) → retry tier; a
//! rejection that can never succeed → dead letter with the engine's reason.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use super::backend::LazySearch;
use super::messages::SyncMessage;
use super::store;
use crate::broker::Envelope;
use crate::consumer::{BatchHandler, Context, HandlerError};
use crate::search::{Op, Outcome};

pub struct SyncHandler {
    pub search: Arc<LazySearch>,
}

#[async_trait]
impl BatchHandler for SyncHandler {
    async fn handle_batch(
        &self,
        ctx: &Context,
        messages: &[Envelope],
    ) -> Vec<Result<(), HandlerError>> {
        let parsed: Vec<Result<Vec<SyncMessage>, String>> =
            messages.iter().map(SyncMessage::parse).collect();
        let valid: Vec<&SyncMessage> = parsed
            .iter()
            .filter_map(|p| p.as_ref().ok())
            .flatten()
            .collect();
        let outcomes = self.sync(ctx, &valid).await;
        parsed
            .iter()
            .map(|p| match p {
                Err(e) => Err(HandlerError::Permanent(e.clone())),
                Ok(changes) => match &outcomes {
                    Err(e) => Err(HandlerError::Transient(e.clone())),
                    Ok(by_id) => settle_all(changes.iter().map(|m| by_id.get(&m.material_id))),
                },
            })
            .collect()
    }
}

/// A message of several changes is done when each is; a change to retry sends the whole
/// message to a retry tier (writing its done ones again is a no-op: the version fences
/// them), and one the engine rejects for good dead-letters it, with the reason.
fn settle_all<'a>(outcomes: impl Iterator<Item = Option<&'a Outcome>>) -> Result<(), HandlerError> {
    let mut rejected = None;
    for outcome in outcomes {
        match settle(outcome) {
            Ok(()) => {}
            Err(e @ HandlerError::Transient(_)) => return Err(e),
            Err(e) => {
                rejected.get_or_insert(e);
            }
        }
    }
    rejected.map_or(Ok(()), Err)
}

fn settle(outcome: Option<&Outcome>) -> Result<(), HandlerError> {
    match outcome {
        Some(Outcome::Done) | Some(Outcome::Stale) => Ok(()),
        Some(Outcome::Failed {
            transient: true,
            reason,
        }) => Err(HandlerError::Transient(reason.clone())),
        Some(Outcome::Failed {
            transient: false,
            reason,
        }) => Err(HandlerError::Permanent(format!(
            "the search engine rejected the document: {reason}"
        ))),
        None => Err(HandlerError::Transient(
            "no outcome for the material".into(),
        )),
    }
}

impl SyncHandler {
    /// Writes the current state of every material named in `messages` with one bulk
    /// request; the outcome per material id. `Err` when nothing could be written (the
    /// breaker is open, the database or the engine failed as a whole).
    async fn sync(
        &self,
        ctx: &Context,
        messages: &[&SyncMessage],
    ) -> Result<HashMap<String, Outcome>, String> {
        if messages.is_empty() {
            return Ok(HashMap::new());
        }
        let search = self.search.get().map_err(|e| format!("{e:#}"))?;
        if !search.breaker.allow() {
            return Err("search backend unavailable (circuit open)".into());
        }
        // One write per material: the newest version any message names (for a row that
        // no longer exists) and the row itself otherwise.
        let mut newest: HashMap<&str, &SyncMessage> = HashMap::new();
        for m in messages {
            let slot = newest.entry(m.material_id.as_str()).or_insert(m);
            if m.version > slot.version {
                *slot = m;
            }
        }
        let ids: Vec<String> = newest.keys().map(|id| (*id).to_owned()).collect();
        let rows = match store::load(&ctx.db, &ids).await {
            Ok(rows) => rows,
            // Not the engine's fault: the breaker does not hear of it (a trial it let
            // through and that ends here is retried after `breaker_open_ms`).
            Err(e) => return Err(format!("loading materials: {e}")),
        };
        let live: Vec<String> = rows
            .iter()
            .filter(|r| r.deleted_at.is_none())
            .map(|r| r.id.clone())
            .collect();
        let mut vectors = match super::vectors::of(&ctx.db, &live).await {
            Ok(v) => v,
            Err(e) => return Err(format!("loading vectors: {e}")),
        };
        let rows: HashMap<&str, &store::Material> =
            rows.iter().map(|r| (r.id.as_str(), r)).collect();
        let ops: Vec<Op> = ids
            .iter()
            .map(|id| match rows.get(id.as_str()) {
                Some(row) => store::op(row, vectors.remove(id).unwrap_or_default()),
                // Never inserted (its transaction rolled back after all) or purged: make
                // sure no document stays behind, fenced at the version the message named.
                None => Op::Delete {
                    id: id.clone(),
                    version: newest[id.as_str()].version.max(1),
                },
            })
            .collect();
        let kinds: Vec<&'static str> = ops
            .iter()
            .map(|op| match op {
                Op::Index(_) => "index",
                Op::Delete { .. } => "delete",
            })
            .collect();
        let started = std::time::Instant::now();
        let outcomes = match search.index.bulk(ops).await {
            Ok(o) => {
                search.breaker.succeeded();
                o
            }
            Err(e) => {
                search.breaker.failed();
                metrics::counter!("conveyor_search_sync_batches_total", "result" => "failed")
                    .increment(1);
                return Err(e.to_string());
            }
        };
        metrics::histogram!("conveyor_search_sync_bulk_seconds")
            .record(started.elapsed().as_secs_f64());
        metrics::counter!("conveyor_search_sync_batches_total", "result" => "written").increment(1);
        for (outcome, op) in outcomes.iter().zip(&kinds) {
            let label = match outcome {
                Outcome::Done => "done",
                Outcome::Stale => "stale",
                Outcome::Failed {
                    transient: true, ..
                } => "retry",
                Outcome::Failed { .. } => "rejected",
            };
            metrics::counter!("conveyor_search_sync_documents_total", "op" => *op, "outcome" => label)
                .increment(1);
        }
        Ok(ids.into_iter().zip(outcomes).collect())
    }
}
