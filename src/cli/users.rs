//! `conveyor users …`: create users; create, list, revoke and rotate their API keys; set
//! their limits and plan. On the database directly, audited with actor `cli`; a revocation is
//! announced on RabbitMQ to every API instance (beside the embedded broker, instances
//! forget the key within the auth cache's 10 s).

use anyhow::Context as _;
use clap::{Args, Subcommand};

use crate::account::keys as admin;
use crate::broker::settings::BrokerKind;
use crate::limits::Overrides;
use crate::settings::Settings;
use crate::{app, db, domains, users};

const ACTOR: &str = "cli";

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Create a user with initial credits and print its API key (shown only once).
    Create {
        /// Display name (1-128 characters).
        #[arg(long)]
        name: String,
        /// Initial credit balance, booked in the ledger as a grant.
        #[arg(long, default_value_t = 0)]
        credits: i64,
        /// May read every user's tasks and operate dead letters.
        #[arg(long)]
        admin: bool,
    },
    /// A user's API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Show a user's limits, or override some (0 turns one off; `--reset` drops every
    /// override).
    Limits(LimitsArgs),
    /// Set the plan of a user (`none`: clear it, memberships decide again); audited.
    Plan {
        user: String,
        /// A plan of `[plans]`, or `none`.
        plan: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Issue another key (shown once).
    Create { user: String },
    /// List the keys (prefixes, states; never the keys).
    List { user: String },
    /// Revoke a key at once.
    Revoke { user: String, key_id: String },
    /// Issue a new key; the old one works `auth.key_rotation_overlap_secs` more.
    Rotate { user: String, key_id: String },
}

#[derive(Debug, Args)]
pub struct LimitsArgs {
    pub user: String,
    /// Override one limit: `--set submits_per_sec=50` (0 turns it off); repeatable.
    /// Every limit of this build is listed when the command runs without it.
    #[arg(long, value_name = "KEY=VALUE", value_parser = key_value)]
    pub set: Vec<(String, u32)>,
    /// Drop one override (the configured value applies again); repeatable.
    #[arg(long, value_name = "KEY")]
    pub unset: Vec<String>,
    /// Drop every override first (the configured limits apply again).
    #[arg(long)]
    pub reset: bool,
}

fn key_value(s: &str) -> Result<(String, u32), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not KEY=VALUE"))?;
    let v = v
        .trim()
        .parse()
        .map_err(|_| format!("`{v}` is not a non-negative integer"))?;
    Ok((k.trim().to_owned(), v))
}

/// The shared broker to tell running API instances of a key change through, if there
/// is one.
pub(super) async fn announcer(
    settings: &Settings,
) -> anyhow::Result<Option<std::sync::Arc<dyn crate::broker::Broker>>> {
    Ok(match settings.broker.kind {
        BrokerKind::Rabbitmq => Some(
            crate::broker::connect(&settings.broker, app::topology(settings, domains::ALL))
                .await
                .context("connecting to RabbitMQ to announce the key change")?,
        ),
        BrokerKind::Embedded => None,
    })
}

pub async fn run(settings: &Settings, cmd: UsersCommand) -> anyhow::Result<()> {
    let conn = db::open(&settings.database).await?;
    match cmd {
        UsersCommand::Create {
            name,
            credits,
            admin,
        } => {
            if name.trim().is_empty() || name.len() > 128 {
                anyhow::bail!("--name must be 1 to 128 characters");
            }
            if credits < 0 {
                anyhow::bail!("--credits must not be negative");
            }
            let (user, key) = users::create(&conn, name.trim(), credits, admin)
                .await
                .context("creating the user")?;
            println!(
                "user {} ({}) created with {} credits",
                user.name, user.id, user.credits
            );
            println!("API key (shown once, store it now): {key}");
        }
        UsersCommand::Keys(KeysCommand::Create { user }) => {
            let (info, key) = admin::create(&conn, ACTOR, &user).await?;
            println!("key {} created", info.id);
            println!("API key (shown once, store it now): {key}");
        }
        UsersCommand::Keys(KeysCommand::List { user }) => {
            println!("{:<38} {:<12} {:<8} CREATED", "ID", "PREFIX", "STATE");
            let now = chrono::Utc::now();
            for k in admin::list(&conn, &user).await? {
                let state = match (k.revoked_at, k.expires_at) {
                    (Some(_), _) => "revoked".to_owned(),
                    (None, Some(at)) if at <= now => "expired".to_owned(),
                    (None, Some(at)) => format!("until {}", at.format("%Y-%m-%dT%H:%M:%SZ")),
                    (None, None) => "live".to_owned(),
                };
                println!(
                    "{:<38} {:<12} {:<8} {}",
                    k.id,
                    k.prefix,
                    state,
                    k.created_at.format("%Y-%m-%dT%H:%M:%SZ")
                );
            }
        }
        UsersCommand::Keys(KeysCommand::Revoke { user, key_id }) => {
            let broker = announcer(settings).await?;
            let info = admin::revoke(&conn, broker.as_ref(), ACTOR, &user, &key_id).await;
            if let Some(b) = &broker {
                b.close().await;
            }
            println!("key {} revoked", info?.id);
        }
        UsersCommand::Keys(KeysCommand::Rotate { user, key_id }) => {
            let overlap = std::time::Duration::from_secs(settings.auth.key_rotation_overlap_secs);
            let broker = announcer(settings).await?;
            let rotated =
                admin::rotate(&conn, broker.as_ref(), ACTOR, &user, &key_id, overlap).await;
            if let Some(b) = &broker {
                b.close().await;
            }
            let (new, key, old) = rotated?;
            println!(
                "key {} created; key {} works until {}",
                new.id,
                old.id,
                old.expires_at.map(|t| t.to_rfc3339()).unwrap_or_default()
            );
            println!("API key (shown once, store it now): {key}");
        }
        UsersCommand::Plan { user, plan } => {
            let plans = crate::plans::Plans::new(&settings.plans);
            let plan = (plan != "none").then_some(plan);
            if let Some(why) = plans.unknown(plan.as_deref()) {
                anyhow::bail!(why);
            }
            users::orgs::set_user_plan(&conn, &user, plan.as_deref(), ACTOR).await?;
            let broker = announcer(settings).await?;
            if let Some(b) = &broker {
                crate::plans::notices::announce(b.as_ref()).await;
                b.close().await;
            }
            let s = crate::plans::standing::resolve(&conn, &plans, &user).await?;
            println!("user {user} now on plan {} ({:?})", s.plan, s.why);
        }
        UsersCommand::Limits(args) => {
            let declared = crate::app::limits(crate::domains::ALL);
            let plans = crate::plans::Plans::new(&settings.plans);
            let standing = crate::plans::standing::resolve(&conn, &plans, &args.user).await?;
            let plan = plans.get(&standing.plan);
            let mut o = if args.reset {
                Overrides::default()
            } else {
                crate::limits::overrides::load(&conn, &standing.tenant_id).await?
            };
            let changed = args.reset || !args.set.is_empty() || !args.unset.is_empty();
            for key in &args.unset {
                o.0.remove(key);
            }
            o.0.extend(args.set);
            if let Some((key, problem)) = o.invalid(&declared) {
                anyhow::bail!("limit `{key}` {problem}");
            }
            if changed {
                admin::set_limits(&conn, ACTOR, &args.user, &standing, &o).await?;
            }
            println!("plan {} ({:?})", standing.plan, standing.why);
            println!(
                "{:<26} {:>10} {:>10} {:>10}  what",
                "limit", "configured", "plan", "effective"
            );
            for l in &declared {
                let configured = crate::limits::declared::configured(&settings.limits, l);
                let by_plan = plan.limits.get(l.key).copied().unwrap_or(configured);
                let effective = crate::limits::layered(l, configured, plan, &o);
                let mark = if o.0.contains_key(l.key) { "*" } else { " " };
                println!(
                    "{:<26} {configured:>10} {by_plan:>10} {effective:>9}{mark}  {}",
                    l.key, l.about
                );
            }
            println!("(* overridden for this tenant; 0 = off)");
        }
    }
    Ok(())
}
