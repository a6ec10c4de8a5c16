//! `conveyor dead-letters …`: the operator's view of dead letters, straight on the
//! database (no server needed). A replay writes an outbox row; whichever `serve` or
//! consumer process runs the relay publishes it within its poll interval.

use anyhow::Context as _;
use clap::Subcommand;

use crate::dead_letters::{self, DeadLetter, Filter, OperateError, Status};
use crate::settings::Settings;

#[derive(Debug, Subcommand)]
pub enum DeadLettersCommand {
    /// List dead letters, newest first.
    List {
        /// Only this queue (`ai.short`, …; see `conveyor topology`).
        #[arg(long)]
        queue: Option<String>,
        /// dead, replayed or discarded.
        #[arg(long)]
        status: Option<String>,
        /// malformed, permanent, exhausted or crash_loop.
        #[arg(long)]
        reason: Option<String>,
        /// What the message was about: a task, order, payment, material or webhook
        /// delivery id.
        #[arg(long)]
        business_id: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: u64,
    },
    /// Print one dead letter: body, failure history and audit trail.
    Show { id: i64 },
    /// Send dead letters back to their origin queue, paced by
    /// dead_letters.replay_per_second.
    Replay {
        /// The dead letters to replay.
        ids: Vec<i64>,
        /// Instead of ids: every dead letter (state `dead`) of this queue.
        #[arg(long, conflicts_with = "ids")]
        queue: Option<String>,
        /// With --queue: only this reason.
        #[arg(long, requires = "queue")]
        reason: Option<String>,
        /// With --queue: also the letters parked as `needs_fix` (replayed
        /// dead_letters.needs_fix_after_replays times and dead again).
        #[arg(long, requires = "queue")]
        force: bool,
        /// With --queue: print how many would be replayed, send nothing.
        #[arg(long, requires = "queue")]
        dry_run: bool,
    },
    /// Mark dead letters as dropped on purpose.
    Discard {
        #[arg(required = true)]
        ids: Vec<i64>,
    },
}

/// Runs one `dead-letters` command; fails if any dead letter could not be acted on.
pub async fn run(settings: &Settings, cmd: DeadLettersCommand) -> anyhow::Result<()> {
    let db = crate::db::open(&settings.database).await?;
    let actor = super::actor();
    match cmd {
        DeadLettersCommand::List {
            queue,
            status,
            reason,
            business_id,
            limit,
        } => {
            let status = status
                .map(|s| {
                    Status::parse(&s).with_context(|| {
                        format!("unknown --status `{s}`; expected {}", Status::names())
                    })
                })
                .transpose()?;
            let filter = Filter {
                queue: queue.as_deref(),
                status,
                reason: reason.as_deref(),
                business_id: business_id.as_deref(),
                ..Filter::default()
            };
            let rows = dead_letters::search(&db, &filter, None, limit.clamp(1, 1000)).await?;
            if rows.is_empty() {
                println!("no dead letters");
            }
            for d in rows {
                println!("{}", line(&d));
            }
        }
        DeadLettersCommand::Show { id } => {
            let d = dead_letters::get(&db, id)
                .await?
                .with_context(|| format!("dead letter {id} not found"))?;
            println!("{}", line(&d));
            println!("message {} kind {}", d.message_id, d.kind);
            println!("last error: {}", d.last_error);
            let history: serde_json::Value = serde_json::from_str(&d.history).unwrap_or_default();
            println!("history: {}", serde_json::to_string_pretty(&history)?);
            println!("body: {}", d.body);
            for a in dead_letters::actions(&db, id).await? {
                println!("{} {} by {}", a.at.to_rfc3339(), a.action, a.actor);
            }
        }
        DeadLettersCommand::Replay {
            ids,
            queue,
            reason,
            force,
            dry_run,
        } => {
            let ids = match queue {
                Some(q) => {
                    let plan = dead_letters::replay_plan(&db, &q, reason.as_deref(), force).await?;
                    // The count first, so an operator sees what a filter sends before it does.
                    println!(
                        "{} dead letter(s) of {q} to replay; {} parked as needs_fix {}",
                        plan.ids.len(),
                        plan.parked,
                        if force {
                            "included (--force)"
                        } else {
                            "skipped (--force to include)"
                        }
                    );
                    if dry_run {
                        return Ok(());
                    }
                    plan.ids
                }
                None if ids.is_empty() => anyhow::bail!("name dead letter ids, or --queue"),
                None => ids,
            };
            let limiter =
                dead_letters::operate::replay_limiter(settings.dead_letters.replay_per_second);
            let max_payload = settings.broker.max_payload_bytes;
            let topology = crate::app::topology(settings, crate::domains::ALL);
            let mut failed = 0;
            for id in &ids {
                limiter.until_ready().await;
                let result = dead_letters::replay(&db, &topology, *id, &actor, max_payload).await;
                failed += report(*id, "replayed", result);
            }
            finish(ids.len(), failed)?;
        }
        DeadLettersCommand::Discard { ids } => {
            let mut failed = 0;
            for id in &ids {
                let result = dead_letters::discard(&db, *id, &actor).await;
                failed += report(*id, "discarded", result);
            }
            finish(ids.len(), failed)?;
        }
    }
    Ok(())
}

fn line(d: &DeadLetter) -> String {
    format!(
        "{:>6}  {:<9}  {:<12}  {:<9}  attempts {}  about {}  {}  {}",
        d.id,
        d.status,
        d.queue,
        d.reason,
        d.attempts,
        d.business_id.as_deref().unwrap_or("-"),
        d.created_at.format("%Y-%m-%d %H:%M:%S"),
        d.last_error.chars().take(80).collect::<String>()
    )
}

/// Ids of every dead letter matching `filter`, oldest first (replay order).
/// Prints one outcome; 1 if it failed.
fn report(id: i64, past: &str, result: Result<dead_letters::Operated, OperateError>) -> usize {
    match result {
        Ok(o) if o.already => {
            println!("{id}: already {past}");
            0
        }
        Ok(_) => {
            println!("{id}: {past}");
            0
        }
        Err(e) => {
            eprintln!("{id}: {e}");
            1
        }
    }
}

fn finish(total: usize, failed: usize) -> anyhow::Result<()> {
    if failed > 0 {
        anyhow::bail!("{failed} of {total} dead letters could not be acted on");
    }
    Ok(())
}
