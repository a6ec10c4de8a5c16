//! The extraction's files into the store, within the owner's storage quota: every file
//! is measured and named, and their bytes reserved together (all or none, one
//! conditional update) before the first byte is stored. Nothing is stored for a task
//! whose files would cross the quota; it fails with `storage_quota`. What a failed step
//! reserved is given back at once (and, if its future is dropped mid-way — a cancel, the
//! deadline — as soon as it is).

use std::path::{Path, PathBuf};

use sea_orm::DatabaseConnection;
use tokio::io::AsyncReadExt as _;

use super::bounds::Refused;
use crate::providers::{ExecError, Job, artifacts};
use crate::storage::Storage;
use crate::storage::records::reserved::{self, Planned};
use crate::storage::records::{Dimensions, GeneratedFile, usage};
use crate::storage::sniff::{Kind, SNIFF_BYTES, sniff};

/// A file FFmpeg wrote, to be stored as the step's file `name`.
#[derive(Debug, Clone)]
pub struct Output {
    pub path: PathBuf,
    pub name: String,
    pub dims: Dimensions,
}

/// Stores `outputs` for `job` within `quota`: the files, in order.
pub async fn keep_all(
    db: &DatabaseConnection,
    storage: &Storage,
    job: &Job<'_>,
    outputs: &[Output],
    quota: u64,
) -> Result<Vec<GeneratedFile>, ExecError> {
    let mut planned = Vec::with_capacity(outputs.len());
    for o in outputs {
        let (kind, size) = measure(&o.path).await?;
        let key = artifacts::key_of(job.user_id, job.task_id, &o.name, kind)
            .map_err(|e| ExecError::Transient(format!("naming {}: {e}", o.name)))?;
        planned.push((Planned { key, size }, kind));
    }
    let wanted: u64 = planned.iter().map(|(p, _)| p.size).sum();
    let plans: Vec<Planned> = planned.iter().map(|(p, _)| p.clone()).collect();
    let room = reserved::reserve(db, job.user_id, job.task_id, &plans, quota)
        .await
        .map_err(|e| ExecError::Transient(format!("reserving storage: {e}")))?;
    if !room {
        let used = usage::used(db, job.user_id).await.unwrap_or_default();
        return Err(Refused::StorageQuota {
            wanted,
            quota,
            used,
        }
        .into());
    }
    let mut held = Held {
        db: db.clone(),
        task_id: job.task_id.to_owned(),
        keys: plans.iter().map(|p| p.key.to_string()).collect(),
        armed: true,
    };
    let mut files = Vec::with_capacity(outputs.len());
    for (o, (p, kind)) in outputs.iter().zip(planned) {
        match store(storage, o, p, kind).await {
            Ok(f) => files.push(f),
            Err(e) => {
                held.release().await;
                return Err(e);
            }
        }
    }
    // Stored: the step's commit makes the rows READY.
    held.armed = false;
    Ok(files)
}

/// A file's kind (sniffed from its first bytes, as the store will) and size.
async fn measure(path: &Path) -> Result<(Kind, u64), ExecError> {
    let io = |e: std::io::Error| ExecError::Transient(format!("reading {}: {e}", path.display()));
    let mut file = tokio::fs::File::open(path).await.map_err(io)?;
    let size = file.metadata().await.map_err(io)?.len();
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .await
        .map_err(io)?;
    let kind = sniff(&head).ok_or_else(|| {
        ExecError::Transient(format!(
            "{}: FFmpeg wrote something unrecognisable",
            path.display()
        ))
    })?;
    Ok((kind, size))
}

/// Stores one measured file at its reserved key, streamed (a 10-minute segment is
/// ~19 MB; it never sits in memory whole), and no more bytes than were reserved.
async fn store(
    storage: &Storage,
    o: &Output,
    p: Planned,
    kind: Kind,
) -> Result<GeneratedFile, ExecError> {
    let file = tokio::fs::File::open(&o.path)
        .await
        .map_err(|e| ExecError::Transient(format!("reading {}: {e}", o.path.display())))?;
    let body = tokio_util::io::ReaderStream::with_capacity(file, 256 * 1024);
    let name = &o.name;
    let accept = |head: &[u8]| {
        sniff(head)
            .filter(|k| *k == kind)
            .ok_or_else(|| format!("{name}: changed since it was measured"))
    };
    let key = p.key;
    let written = storage
        .write_stream(body, p.size, accept, move |_| Ok(key))
        .await
        .map_err(|e| ExecError::Transient(format!("storing {name}: {e}")))?;
    Ok(GeneratedFile::new(&written, o.dims))
}

/// What a step reserved and has not stored yet: given back when the step fails, or when
/// its future is dropped before it could say.
struct Held {
    db: DatabaseConnection,
    task_id: String,
    keys: Vec<String>,
    armed: bool,
}

impl Held {
    async fn release(&mut self) {
        self.armed = false;
        if let Err(e) = reserved::release(&self.db, &self.task_id, &self.keys).await {
            // Left PENDING: the collector gives it back as abandoned.
            tracing::warn!(task_id = %self.task_id, error = %e, "giving back reserved storage failed");
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut rest = Held {
            db: self.db.clone(),
            task_id: std::mem::take(&mut self.task_id),
            keys: std::mem::take(&mut self.keys),
            armed: false,
        };
        rt.spawn(async move { rest.release().await });
    }
}
