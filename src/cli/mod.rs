//! The `conveyor` command line.

mod dead_letters;
mod orgs;
mod queues;
mod users;

use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::app::{self, Application};
use crate::broker::settings::BrokerKind;
use crate::settings::Settings;
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
    /// Manage users, their API keys, limits and plan.
    #[command(subcommand)]
    Users(users::UsersCommand),
    /// Manage organisations (team accounts sharing a plan and limits).
    #[command(subcommand)]
    Orgs(orgs::OrgsCommand),
    /// List, inspect, replay or discard dead letters (on the database directly).
    #[command(subcommand)]
    DeadLetters(dead_letters::DeadLettersCommand),
    /// Change a queue's concurrency at run time (consumers follow without a restart).
    #[command(subcommand)]
    Queues(queues::QueuesCommand),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["group", "queues"])))]
pub struct ConsumeArgs {
    /// Consumer group (see `conveyor topology`): ai, orders, payments, search, …
    pub group: Option<String>,
    /// Only these queues, by key (`ai.media.extract,ai.media.asr`): a pool of its own for
    /// a stage (FFmpeg's CPU, a provider's calls).
    #[arg(long, value_delimiter = ',', conflicts_with = "group")]
    pub queues: Vec<String>,
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

/// The command line, parsed with every domain's subcommands mounted (`conveyor
/// payments …` is the payments domain's own), and run.
pub async fn main() -> Result<(), CliError> {
    let mut command = Cli::command();
    for cli in domains::ALL.iter().filter_map(|d| d.cli) {
        command = command.subcommand((cli.command)());
    }
    let matches = command.get_matches();
    let env = matches
        .get_one::<String>("env")
        .cloned()
        .unwrap_or_else(|| "local".to_owned());
    if let Some((name, sub)) = matches.subcommand()
        && let Some(cli) = domains::ALL
            .iter()
            .filter_map(|d| d.cli)
            .find(|c| (c.command)().get_name() == name)
    {
        let settings = load(&env)?;
        telemetry::init(&settings.log, telemetry::LogTo::Stderr, None);
        let topology = app::topology(&settings, domains::ALL);
        let context = domains::CliContext { settings, topology };
        return Ok((cli.run)(&context, sub).await?);
    }
    match Cli::from_arg_matches(&matches) {
        Ok(cli) => run(cli).await,
        Err(e) => e.exit(),
    }
}

/// The settings of `env`, with every section and limit key checked.
fn load(env: &str) -> Result<Settings, CliError> {
    let settings = Settings::load(Some(env), &app::sections(domains::ALL))?;
    settings.check_sections(&app::sections(domains::ALL))?;
    crate::limits::declared::check(&settings.limits, &app::limits(domains::ALL))?;
    let declared = app::limits(domains::ALL);
    crate::plans::settings::check(&settings.plans, &|l| {
        crate::limits::declared::check(l, &declared)
    })?;
    Ok(settings)
}

/// Runs one parsed command line (a platform command; see [`main`]).
pub async fn run(cli: Cli) -> Result<(), CliError> {
    let settings = load(&cli.env)?;
    let command = cli.command.unwrap_or(Command::Serve);
    // The services log to stdout and export their spans; one-shot commands do neither.
    match &command {
        Command::Serve => telemetry::init(
            &settings.log,
            telemetry::LogTo::Stdout,
            Some((&settings.telemetry, "serve")),
        ),
        Command::Consume(args) => {
            let process = match &args.group {
                Some(g) => format!("consume {g}"),
                None => format!("consume {}", args.queues.join(",")),
            };
            telemetry::init(
                &settings.log,
                telemetry::LogTo::Stdout,
                Some((&settings.telemetry, &process)),
            )
        }
        _ => telemetry::init(&settings.log, telemetry::LogTo::Stderr, None),
    }
    match command {
        Command::Serve => {
            settings.server.check_exposure()?;
            let app = Application::build(settings).await?;
            app.run_until(shutdown::on_signal()).await?;
            crate::traces::flush().await;
        }
        Command::Consume(args) => {
            consume(settings, &args, shutdown::on_signal()).await?;
            crate::traces::flush().await;
        }
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
        Command::DeadLetters(cmd) => dead_letters::run(&settings, cmd).await?,
        Command::Queues(cmd) => queues::run(&settings, cmd).await?,
        Command::Users(cmd) => users::run(&settings, cmd).await?,
        Command::Orgs(cmd) => orgs::run(&settings, cmd).await?,
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

/// `conveyor consume <group>` or `conveyor consume --queues <keys>`: one consumer process
/// against RabbitMQ.
pub async fn consume(
    settings: Settings,
    args: &ConsumeArgs,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let selected: Vec<String> = match &args.group {
        Some(group) => {
            let groups = app::groups(domains::ALL);
            if !groups.contains(&group.as_str()) {
                anyhow::bail!(
                    "unknown consumer group `{group}`; groups: {}",
                    groups.join(", ")
                );
            }
            vec![group.clone()]
        }
        None => {
            let known: Vec<&str> = domains::ALL
                .iter()
                .flat_map(|d| d.queues.iter().map(|q| q.key))
                .collect();
            if let Some(bad) = args.queues.iter().find(|q| !known.contains(&q.as_str())) {
                anyhow::bail!("unknown queue `{bad}`; queues: {}", known.join(", "));
            }
            args.queues.clone()
        }
    };
    let group = selected.join(",");
    let group = group.as_str();
    if settings.broker.kind != BrokerKind::Rabbitmq {
        anyhow::bail!(
            "`consume` needs broker.kind = \"rabbitmq\": the embedded broker lives inside `conveyor serve`, which already runs every consumer"
        );
    }
    let platform = app::platform(settings).await?;
    tracing::info!(group, "consumer process started");
    let result = app::run_workers(&platform, domains::ALL, Some(&selected), shutdown).await;
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
