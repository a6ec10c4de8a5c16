//! `conveyor tasks …`: submit and watch tasks through a running server's API (with a
//! progress bar), mounted by the registry; finding tasks by filter and acting on them in
//! bulk is [`find`].

pub mod find;

use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use futures::future::BoxFuture;

use crate::domains::{Cli, CliContext};
use crate::settings::Settings;

pub const CLI: Cli = Cli {
    command: TasksCli::command,
    run,
};

/// Submit and watch tasks through a running server's API.
#[derive(Debug, Parser)]
#[command(name = "tasks")]
pub struct TasksCli {
    #[command(flatten)]
    pub args: TasksArgs,
}

fn run<'a>(
    context: &'a CliContext,
    matches: &'a clap::ArgMatches,
) -> BoxFuture<'a, anyhow::Result<()>> {
    Box::pin(async move {
        let cli = TasksCli::from_arg_matches(matches)?;
        tasks(&context.settings, cli.args).await
    })
}

#[derive(Debug, Args)]
pub struct TasksArgs {
    /// The API's base URL (default: http://<server.host>:<server.port>).
    #[arg(long, global = true)]
    pub server: Option<String>,
    /// An API key (from `conveyor users create`).
    #[arg(long, global = true, env = "CONVEYOR_API_KEY", hide_env_values = true)]
    pub key: Option<String>,
    #[command(subcommand)]
    pub command: TasksCommand,
}

#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// Submit a task; with --watch, follow it to the end with a progress bar.
    Submit {
        /// copywriting, image, video, model3d or video_analysis.
        #[arg(long)]
        kind: String,
        #[arg(long)]
        prompt: String,
        /// Task parameters as a JSON object.
        #[arg(long)]
        params: Option<String>,
        #[arg(long)]
        watch: bool,
    },
    /// Follow a task to its end with a progress bar, then print its result or error.
    Watch { id: String },
    /// Find tasks by status, kind, creation time and metadata, newest first (yours; with
    /// --user or --all, every tenant's: an admin's key).
    List {
        #[command(flatten)]
        filter: find::FilterArgs,
        /// Every tenant's tasks (admins).
        #[arg(long)]
        all: bool,
        #[arg(long, default_value_t = 20)]
        limit: u64,
    },
    /// Retry (FAILED ones, each once) or cancel (active ones) every task a filter finds:
    /// counted first, then done in paced slices (an admin's key).
    Bulk {
        #[arg(value_enum)]
        action: find::BulkAction,
        #[command(flatten)]
        filter: find::FilterArgs,
        /// Count only.
        #[arg(long)]
        dry_run: bool,
    },
}

async fn tasks(settings: &Settings, args: TasksArgs) -> anyhow::Result<()> {
    let key = args
        .key
        .ok_or_else(|| anyhow::anyhow!("an API key is needed: --key or CONVEYOR_API_KEY"))?;
    let server = args
        .server
        .unwrap_or_else(|| format!("http://{}:{}", settings.server.host, settings.server.port));
    let client = crate::client::Client::new(&server, &key);
    let (id, watch) = match args.command {
        TasksCommand::Submit {
            kind,
            prompt,
            params,
            watch,
        } => {
            let params = params
                .map(|p| serde_json::from_str(&p))
                .transpose()
                .map_err(|e| anyhow::anyhow!("--params is not JSON: {e}"))?;
            let task = client.submit(&kind, &prompt, params).await?;
            let id = task["id"].as_str().unwrap_or_default().to_owned();
            println!("task {id} {}", task["status"].as_str().unwrap_or_default());
            (id, watch)
        }
        TasksCommand::Watch { id } => (id, true),
        TasksCommand::List { filter, all, limit } => {
            return find::list(&client, &filter, all, limit).await;
        }
        TasksCommand::Bulk {
            action,
            filter,
            dry_run,
        } => return find::bulk(&client, action, &filter, dry_run).await,
    };
    if watch {
        let task = client.watch(&id).await?;
        match task["status"].as_str() {
            Some("SUCCESS") => println!("{}", serde_json::to_string_pretty(&task["result"])?),
            other => anyhow::bail!(
                "task {id} ended {}: {}",
                other.unwrap_or("?"),
                task["error"].as_str().unwrap_or("")
            ),
        }
    }
    Ok(())
}
