//! `conveyor search reindex`: rebuilds the search index from the database with a
//! progress bar while the API and the sync keep running, then moves the alias.

use anyhow::Context as _;
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use futures::future::BoxFuture;
use indicatif::{ProgressBar, ProgressStyle};

use super::backend::Search;
use super::reindex;
use super::settings::SearchSettings;
use crate::db;
use crate::domains::{Cli, CliContext};
use crate::settings::Settings;

/// `conveyor search …`, mounted by the registry.
pub const CLI: Cli = Cli {
    command: SearchArgs::command,
    run,
};

/// Search index operations.
#[derive(Debug, Parser)]
#[command(name = "search")]
pub struct SearchArgs {
    #[command(subcommand)]
    pub command: SearchCommand,
}

fn run<'a>(
    context: &'a CliContext,
    matches: &'a clap::ArgMatches,
) -> BoxFuture<'a, anyhow::Result<()>> {
    Box::pin(async move {
        let args = SearchArgs::from_arg_matches(matches)?;
        reindex_all(&context.settings, args.command).await
    })
}

#[derive(Debug, Subcommand)]
pub enum SearchCommand {
    /// Build a new index from the materials table and swap the alias to it atomically
    /// (Elasticsearch); on the embedded index, rewrite every row in place. Live sync
    /// keeps writing meanwhile; rows changed during the copy are replayed.
    Reindex {
        /// Rows per bulk request.
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=5000))]
        batch: u64,
    },
}

async fn reindex_all(settings: &Settings, cmd: SearchCommand) -> anyhow::Result<()> {
    let SearchCommand::Reindex { batch } = cmd;
    let search = Search::open(SearchSettings::from_settings(settings)?)?;
    let conn = db::connect(&settings.database).await?;
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} materials {per_sec} eta {eta}")
            .context("progress bar template")?,
    );
    let report = reindex::reindex(&conn, search.index.as_ref(), batch, &|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .await
    .context("reindexing (the live index is untouched unless the swap happened)")?;
    bar.finish();
    println!(
        "reindexed into {}: {} copied, {} replayed, {} rejected; dropped {}",
        report.target,
        report.copied,
        report.replayed,
        report.rejected,
        if report.dropped.is_empty() {
            "nothing".to_owned()
        } else {
            report.dropped.join(", ")
        }
    );
    if report.rejected > 0 {
        anyhow::bail!("{} materials were rejected (see the log)", report.rejected);
    }
    Ok(())
}
