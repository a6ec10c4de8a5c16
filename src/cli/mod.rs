//! The `conveyor` command line.

mod dead_letters;
mod flash_sales;
mod payments;
mod queues;
mod search;
mod users;

use clap::{Args, Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::app::{self, Application};
use crate::config::{BrokerKind, Settings};
use crate::{db, domains, shutdown, telemetry};

#[derive(Debug, Parser)]
#[command(
    name = "conveyor",
    version,
    about = "Async task platform for AI SaaS products, built on RabbitMQ"
)]
pub struct Cli {
    /// Configuration overlay: config/<ENV>.toml over the built-in defaults
    /// (also CONVEYOR_ENV; any key can be set as CONVEYOR__SECTION__KEY).
    #[arg(long, global = true, env = "CONVEYOR_ENV", default_value = "local")]
    pub env: String,
    /// What to run; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API. On the embedded broker it also runs every consumer in-process.
    Serve,
    /// Run the consumers of one group against RabbitMQ (groups: see `conveyor topology`).
    Consume(ConsumeArgs),
    /// Apply pending database migrations and exit.
    Migrate,
    /// Print the effective configuration, secrets masked.
    Config,
    /// Print the broker topology (queues, retry tiers, dead-letter queues).
    Topology {
        /// Print it as a Mermaid flowchart instead.
        #[arg(long)]
        mermaid: bool,
    },
    /// Manage users and their API keys.
    #[command(subcommand)]
    Users(users::UsersCommand),
    /// Submit and watch tasks through a running server's API.
    Tasks(TasksArgs),
    /// List, inspect, replay or discard dead letters (on the database directly).
    #[command(subcommand)]
    DeadLetters(dead_letters::DeadLettersCommand),
    /// Create, show, list and reconcile flash sales (database and stock store directly).
    #[command(subcommand)]
    FlashSales(flash_sales::FlashSalesCommand),
    /// Payment helpers: sign a provider event with the configured test keys.
    #[command(subcommand)]
    Payments(payments::PaymentsCommand),
    /// Change a queue's concurrency at run time (consumers follow without a restart).
    #[command(subcommand)]
    Queues(queues::QueuesCommand),
    /// Search index operations.
    #[command(subcommand)]
    Search(search::SearchCommand),
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
}

#[derive(Debug, Args)]
pub struct ConsumeArgs {
    /// Consumer group (see `conveyor topology`): ai or orders.
    pub group: String,
}

/// A failure the CLI reports as one line and an exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("{0:#}")]
    Other(#[from] anyhow::Error),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Config(_) => 2,
            CliError::Other(_) => 1,
        }
    }
}

/// Runs one parsed command line.
pub async fn run(cli: Cli) -> Result<(), CliError> {
    let settings = Settings::load(Some(&cli.env))?;
    settings.check_sections(&app::sections(domains::ALL))?;
    crate::limits::declared::check(&settings, &app::limits(domains::ALL))?;
    let command = cli.command.unwrap_or(Command::Serve);
    let logs = match command {
        Command::Serve | Command::Consume(_) => telemetry::LogTo::Stdout,
        _ => telemetry::LogTo::Stderr,
    };
    telemetry::init(&settings.log, logs);
    match command {
        Command::Serve => {
            settings.server.check_exposure()?;
            let app = Application::build(settings).await?;
            app.run_until(shutdown::on_signal()).await?;
        }
        Command::Consume(args) => consume(settings, &args.group, shutdown::on_signal()).await?,
        Command::Migrate => {
            let conn = db::connect(&settings.database).await?;
            db::migrate(&conn).await?;
            println!(
                "migrations applied to {}",
                crate::config::mask_url(&settings.database.url)
            );
        }
        Command::Config => {
            let text = toml_string(&settings.masked())?;
            print!("{text}");
        }
        Command::Topology { mermaid } => {
            let t = app::topology(&settings, domains::ALL);
            print!("{}", if mermaid { t.mermaid() } else { t.describe() });
        }
        Command::Tasks(args) => tasks(&settings, args).await?,
        Command::DeadLetters(cmd) => dead_letters::run(&settings, cmd).await?,
        Command::FlashSales(cmd) => flash_sales::run(&settings, cmd).await?,
        Command::Payments(cmd) => payments::run(&settings, cmd)?,
        Command::Search(cmd) => search::run(&settings, cmd).await?,
        Command::Queues(cmd) => queues::run(&settings, cmd).await?,
        Command::Users(cmd) => users::run(&settings, cmd).await?,
    }
    Ok(())
}

/// Who an operator at the command line is in audit records: `cli:<login>`.
fn actor() -> String {
    format!(
        "cli:{}",
        std::env::var("USER").unwrap_or_else(|_| "unknown".into())
    )
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

/// `conveyor consume <group>`: one consumer process against RabbitMQ.
pub async fn consume(
    settings: Settings,
    group: &str,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let groups = app::groups(domains::ALL);
    if !groups.contains(&group) {
        anyhow::bail!(
            "unknown consumer group `{group}`; groups: {}",
            groups.join(", ")
        );
    }
    if settings.broker.kind != BrokerKind::Rabbitmq {
        anyhow::bail!(
            "`consume` needs broker.kind = \"rabbitmq\": the embedded broker lives inside `conveyor serve`, which already runs every consumer"
        );
    }
    let platform = app::platform(settings).await?;
    tracing::info!(group, "consumer process started");
    let result =
        app::run_workers(&platform, domains::ALL, Some(&[group.to_owned()]), shutdown).await;
    platform.broker.close().await;
    tracing::info!(group, "consumer process stopped");
    result
}

fn toml_string(value: &serde_json::Value) -> anyhow::Result<String> {
    // The config crate has no writer; JSON → TOML through serde keeps key names.
    let mut out = String::new();
    write_toml(&mut out, "", value);
    Ok(out)
}

fn write_toml(out: &mut String, path: &str, v: &serde_json::Value) {
    let serde_json::Value::Object(map) = v else {
        return;
    };
    for (k, v) in map {
        if !v.is_object() {
            out.push_str(&format!("{k} = {v}\n"));
        }
    }
    for (k, v) in map {
        if v.is_object() {
            let p = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            out.push_str(&format!("\n[{p}]\n"));
            write_toml(out, &p, v);
        }
    }
}
