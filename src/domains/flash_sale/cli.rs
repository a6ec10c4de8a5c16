//! `conveyor flash-sales …`: create, show, list and reconcile sales, on the database and
//! the stock store directly (no server needed with Redis; with the embedded backend only
//! the serving process sees its stock: use `POST /v1/admin/flash-sales/{id}/reconcile`).

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use futures::future::BoxFuture;

use super::service::Sales;
use super::store::{self, NewSale};
use crate::domains::{Cli, CliContext};

/// `conveyor flash-sales …`, mounted by the registry.
pub const CLI: Cli = Cli {
    command: FlashSalesArgs::command,
    run,
};

/// Create, show, list and reconcile flash sales (database and stock store directly).
#[derive(Debug, Parser)]
#[command(name = "flash-sales")]
pub struct FlashSalesArgs {
    #[command(subcommand)]
    pub command: FlashSalesCommand,
}

fn run<'a>(
    context: &'a CliContext,
    matches: &'a clap::ArgMatches,
) -> BoxFuture<'a, anyhow::Result<()>> {
    Box::pin(async move {
        let args = FlashSalesArgs::from_arg_matches(matches)?;
        execute(context, args.command).await
    })
}

#[derive(Debug, Subcommand)]
pub enum FlashSalesCommand {
    /// Create a sale and load it into the stock store.
    Create {
        #[arg(long)]
        item: String,
        /// Price of one unit in the minor unit of `flash_sale.currency` (fen for CNY), 1 or more.
        #[arg(long)]
        price: i64,
        /// Units for sale.
        #[arg(long)]
        stock: i32,
        /// Units one buyer may hold.
        #[arg(long, default_value_t = 1)]
        limit: i32,
        /// RFC 3339 start (default: now).
        #[arg(long)]
        starts: Option<DateTime<Utc>>,
        /// How long it runs.
        #[arg(long, default_value_t = 60)]
        minutes: i64,
    },
    /// Print one sale with its units left.
    Show { id: String },
    /// List sales, newest first.
    List {
        #[arg(long, default_value_t = 20)]
        limit: u64,
    },
    /// Check stock = units left + live orders; with --repair, set units left to
    /// stock − live orders (only on a quiet sale: orders in flight count as drift).
    Reconcile {
        id: String,
        #[arg(long)]
        repair: bool,
    },
}

async fn execute(context: &CliContext, cmd: FlashSalesCommand) -> anyhow::Result<()> {
    let settings = &context.settings;
    let db = crate::db::open(&settings.database).await?;
    let sales = Sales::connect(settings, &context.topology).await?;
    let print = |v: serde_json::Value| -> anyhow::Result<()> {
        println!("{}", serde_json::to_string_pretty(&v)?);
        Ok(())
    };
    match cmd {
        FlashSalesCommand::Create {
            item,
            price,
            stock,
            limit,
            starts,
            minutes,
        } => {
            anyhow::ensure!(
                stock > 0 && limit > 0 && price > 0 && minutes > 0,
                "stock, limit, price (a minor unit of flash_sale.currency) and minutes must be above 0"
            );
            let starts_at = starts.unwrap_or_else(Utc::now);
            let sale = store::create_sale(
                &db,
                NewSale {
                    item,
                    price,
                    stock,
                    per_user_limit: limit,
                    starts_at,
                    ends_at: starts_at + chrono::Duration::minutes(minutes),
                },
            )
            .await?;
            sales.warm(&db, &sale).await?;
            print(sale_json(&sale, Some(i64::from(sale.stock))))
        }
        FlashSalesCommand::Show { id } => {
            let sale = store::get_sale(&db, &id)
                .await?
                .with_context(|| format!("no flash sale {id}"))?;
            let left = sales.stock.remaining(&id).await?;
            print(sale_json(&sale, left))
        }
        FlashSalesCommand::List { limit } => {
            for s in store::list_sales(&db, None, limit.clamp(1, 1000)).await? {
                println!(
                    "{}  {:<24} stock {:>6}  sold {:>6}  limit {}  {} → {}",
                    s.id, s.item, s.stock, s.sold, s.per_user_limit, s.starts_at, s.ends_at
                );
            }
            Ok(())
        }
        FlashSalesCommand::Reconcile { id, repair } => {
            let sale = store::get_sale(&db, &id)
                .await?
                .with_context(|| format!("no flash sale {id}"))?;
            let report = sales.reconcile(&db, &sale, repair).await?;
            print(serde_json::to_value(&report)?)
        }
    }
}

fn sale_json(s: &store::Sale, remaining: Option<i64>) -> serde_json::Value {
    serde_json::json!({
        "id": s.id, "item": s.item, "price": s.price, "stock": s.stock,
        "per_user_limit": s.per_user_limit, "sold": s.sold, "remaining": remaining,
        "starts_at": s.starts_at, "ends_at": s.ends_at,
    })
}
