//! `conveyor tasks list` and `conveyor tasks bulk`: finding tasks by filter (the owner's
//! own, or with `--user`/`--all` every tenant's, as an admin) and retrying or canceling
//! them in bulk through the admin API: counted first, then acted on in paced slices.

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use crate::client::Client;

/// The filter `list` and `bulk` share.
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// PENDING, PROCESSING, RETRYING, WAITING, SUCCESS, FAILED or CANCELED.
    #[arg(long)]
    pub status: Option<String>,
    #[arg(long)]
    pub kind: Option<String>,
    /// Created at or after (RFC 3339).
    #[arg(long)]
    pub since: Option<String>,
    /// Created before (RFC 3339).
    #[arg(long)]
    pub until: Option<String>,
    /// `key:value` of the tasks' metadata.
    #[arg(long)]
    pub metadata: Option<String>,
    /// One tenant's tasks (admins).
    #[arg(long)]
    pub user: Option<String>,
}

impl FilterArgs {
    fn pairs(&self) -> Vec<(&'static str, String)> {
        [
            ("status", &self.status),
            ("kind", &self.kind),
            ("since", &self.since),
            ("until", &self.until),
            ("metadata", &self.metadata),
            ("user_id", &self.user),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k, v)))
        .collect()
    }

    fn json(&self) -> Value {
        Value::Object(
            self.pairs()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), Value::String(v)))
                .collect(),
        )
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BulkAction {
    Retry,
    Cancel,
}

/// Prints the tasks `filter` finds, newest first (every tenant's with `all`).
pub async fn list(
    client: &Client,
    filter: &FilterArgs,
    all: bool,
    limit: u64,
) -> anyhow::Result<()> {
    let path = if all || filter.user.is_some() {
        "/v1/admin/tasks"
    } else {
        "/v1/tasks"
    };
    let mut query = filter.pairs();
    query.push(("limit", limit.clamp(1, 100).to_string()));
    let page = client.get(path, &query).await?;
    let items = page["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        println!("no tasks");
    }
    for t in items {
        println!(
            "{}  {:<10} {:<14} {}  {}",
            t["id"].as_str().unwrap_or_default(),
            t["status"].as_str().unwrap_or_default(),
            t["kind"].as_str().unwrap_or_default(),
            t["created_at"].as_str().unwrap_or_default(),
            t.get("metadata").map(Value::to_string).unwrap_or_default()
        );
    }
    Ok(())
}

/// Counts what `filter` matches, then (unless `dry_run`) acts on all of it in slices.
pub async fn bulk(
    client: &Client,
    action: BulkAction,
    filter: &FilterArgs,
    dry_run: bool,
) -> anyhow::Result<()> {
    let action = match action {
        BulkAction::Retry => "retry",
        BulkAction::Cancel => "cancel",
    };
    let body = |dry: bool| json!({ "action": action, "filter": filter.json(), "dry_run": dry, "limit": 100 });
    let counted = client.post("/v1/admin/tasks/bulk", &body(true)).await?;
    println!("{action}: {} tasks match", counted["matched"]);
    if dry_run {
        return Ok(());
    }
    let (mut acted, mut skipped) = (0u64, 0u64);
    loop {
        let slice = client.post("/v1/admin/tasks/bulk", &body(false)).await?;
        let done = slice["done"].as_array().cloned().unwrap_or_default();
        for d in &done {
            if d["outcome"] == "skipped" {
                skipped += 1;
            } else {
                acted += 1;
            }
        }
        let remaining = slice["remaining"].as_u64().unwrap_or(0);
        println!("{action}: {acted} done, {skipped} skipped, {remaining} remaining");
        // Nothing moved: what is left cannot be acted on (credits, caps).
        if remaining == 0 || done.iter().all(|d| d["outcome"] == "skipped") {
            return Ok(());
        }
    }
}
