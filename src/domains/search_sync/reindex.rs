//! Reindex without downtime (`conveyor search reindex`): a new index is filled from the
//! database beside the live one while live sync keeps writing to the live one; rows
//! that changed since the copy began are replayed into the new index, the alias moves to
//! it in one atomic step, the old index is dropped, and the changed rows are replayed once
//! more through the alias (a change whose sync ran between the two replays went to the
//! old index). Every write carries its row's version, so replays are idempotent and the
//! order of live and replayed writes does not matter. A reindex killed before the swap
//! leaves the live alias untouched; the next one drops its half-built index.

use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;

use super::store::{self, Material};
use crate::search::{Op, Outcome, Rebuild, SearchIndex};

/// How far before its start a reindex replays changes: a transaction that stamped its
/// row before the copy began but committed after the copy read it is caught by this.
const REPLAY_MARGIN: chrono::Duration = chrono::Duration::minutes(5);
/// Attempts of one bulk request whose items failed transiently.
const BULK_ATTEMPTS: u32 = 5;

#[derive(Debug, Default)]
pub struct Report {
    /// Rows copied into the new index (deleted rows as versioned deletes).
    pub copied: u64,
    /// Changed rows replayed (before and after the swap).
    pub replayed: u64,
    /// Rows the engine refused for good (their ids are logged).
    pub rejected: u64,
    /// The new index, and the old ones dropped.
    pub target: String,
    pub dropped: Vec<String>,
}

/// Where writes go: the new index before the swap, the live alias after it.
enum Sink<'a> {
    New(&'a dyn Rebuild),
    Live(&'a dyn SearchIndex),
}

impl Sink<'_> {
    async fn bulk(&self, ops: Vec<Op>) -> Result<Vec<Outcome>, crate::search::SearchError> {
        match self {
            Sink::New(r) => r.bulk(ops).await,
            Sink::Live(i) => i.bulk(ops).await,
        }
    }
}

/// Rebuilds `index` from the materials table, `batch` rows per bulk request; `progress`
/// hears (rows written so far, rows to copy).
pub async fn reindex(
    db: &DatabaseConnection,
    index: &dyn SearchIndex,
    batch: u64,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> anyhow::Result<Report> {
    let since = Utc::now() - REPLAY_MARGIN;
    let total = store::count(db).await?;
    let rebuild = index.rebuild().await?;
    let mut report = Report {
        target: rebuild.target().to_owned(),
        ..Report::default()
    };
    let new = Sink::New(rebuild.as_ref());
    let mut rejected = 0;
    report.copied = copy(db, &new, None, batch, &mut rejected, &|n| {
        progress(n, total)
    })
    .await?;
    report.replayed += copy(db, &new, Some(since), batch, &mut rejected, &|_| {}).await?;
    report.dropped = rebuild.swap().await?;
    let live = Sink::Live(index);
    report.replayed += copy(db, &live, Some(since), batch, &mut rejected, &|_| {}).await?;
    report.rejected = rejected;
    Ok(report)
}

/// Writes every row, or those changed since `since`, into `sink` page by page; how many.
/// `progress` hears the count after each page.
async fn copy(
    db: &DatabaseConnection,
    sink: &Sink<'_>,
    since: Option<DateTime<Utc>>,
    batch: u64,
    rejected: &mut u64,
    progress: &(dyn Fn(u64) + Sync),
) -> anyhow::Result<u64> {
    let mut after: Option<String> = None;
    let mut n = 0;
    loop {
        let rows = store::page(db, since, after.as_deref(), batch).await?;
        let Some(last) = rows.last() else { break };
        after = Some(last.id.clone());
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let vectors = super::vectors::of(db, &ids).await?;
        *rejected += write(sink, &rows, &vectors).await?;
        n += rows.len() as u64;
        progress(n);
    }
    Ok(n)
}

/// One bulk request for `rows`, its transient failures retried; how many were rejected.
async fn write(
    sink: &Sink<'_>,
    rows: &[Material],
    vectors: &std::collections::HashMap<String, Vec<Vec<f32>>>,
) -> anyhow::Result<u64> {
    let mut pending: Vec<&Material> = rows.iter().collect();
    let mut rejected = 0;
    for attempt in 1..=BULK_ATTEMPTS {
        let ops = pending
            .iter()
            .map(|r| store::op(r, vectors.get(&r.id).cloned().unwrap_or_default()))
            .collect();
        let outcomes = match sink.bulk(ops).await {
            Ok(o) => o,
            Err(e) if attempt < BULK_ATTEMPTS => {
                tracing::warn!(error = %e, attempt, "reindex bulk failed; retrying");
                tokio::time::sleep(std::time::Duration::from_millis(200 << attempt)).await;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let mut retry = Vec::new();
        for (row, outcome) in pending.iter().zip(outcomes) {
            match outcome {
                Outcome::Done | Outcome::Stale => {}
                Outcome::Failed {
                    transient: true, ..
                } => retry.push(*row),
                Outcome::Failed { reason, .. } => {
                    tracing::warn!(material = %row.id, %reason, "the engine rejected a material");
                    rejected += 1;
                }
            }
        }
        if retry.is_empty() {
            return Ok(rejected);
        }
        pending = retry;
        tokio::time::sleep(std::time::Duration::from_millis(200 << attempt)).await;
    }
    anyhow::bail!(
        "{} materials still failed after {BULK_ATTEMPTS} attempts; the live index is untouched",
        pending.len()
    )
}
