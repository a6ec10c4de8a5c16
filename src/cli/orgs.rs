//! `conveyor orgs …`: organisations (team accounts) on the database directly, audited
//! with actor `cli`; each change is announced on RabbitMQ so running API instances read
//! the members' new standing at once (beside the embedded broker, within the standing
//! cache's 2 s).

use clap::Subcommand;

use super::users::announcer;
use crate::settings::Settings;
use crate::users::orgs;
use crate::{db, plans};

const ACTOR: &str = "cli";

#[derive(Debug, Subcommand)]
pub enum OrgsCommand {
    /// Create an organisation owned (and joined) by a user.
    Create {
        #[arg(long)]
        name: String,
        /// The owner's user id (may belong to no other organisation).
        #[arg(long)]
        owner: String,
    },
    /// Show an organisation: its plan and members.
    Show { org: String },
    /// Add a user to an organisation at once, without an invitation: an operator's act
    /// (audited). Owners invite over the API, and the user accepts.
    Add { org: String, user: String },
    /// Remove a member (never the owner).
    Remove { org: String, user: String },
    /// Set the organisation's plan (`none`: its owner's applies).
    Plan { org: String, plan: String },
}

pub async fn run(settings: &Settings, cmd: OrgsCommand) -> anyhow::Result<()> {
    let conn = db::open(&settings.database).await?;
    let catalogue = plans::Plans::new(&settings.plans);
    let org_id = match cmd {
        OrgsCommand::Create { name, owner } => {
            let o = orgs::create(&conn, &name, &owner, ACTOR).await?;
            println!("organisation {} ({}) created", o.name, o.id);
            o.id
        }
        OrgsCommand::Show { org } => org,
        OrgsCommand::Add { org, user } => {
            orgs::add(&conn, &org, &user, ACTOR).await?;
            org
        }
        OrgsCommand::Remove { org, user } => {
            orgs::remove(&conn, &org, &user, ACTOR).await?;
            org
        }
        OrgsCommand::Plan { org, plan } => {
            let plan = (plan != "none").then_some(plan);
            if let Some(why) = catalogue.unknown(plan.as_deref()) {
                anyhow::bail!(why);
            }
            orgs::set_plan(&conn, &org, plan.as_deref(), ACTOR).await?;
            org
        }
    };
    if let Some(b) = announcer(settings).await? {
        plans::notices::announce(b.as_ref()).await;
        b.close().await;
    }
    let o = orgs::get(&conn, &org_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no organisation {org_id}"))?;
    // The organisation's plan, not the owner's standing: a member (the owner too) whose
    // own plan weighs more keeps theirs.
    let plan = plans::standing::org_plan(&conn, &catalogue, &o, None).await?;
    println!(
        "{} ({}): plan {}{}",
        o.name,
        o.id,
        plan,
        if o.plan.is_some() {
            " (set)"
        } else {
            " (the owner's)"
        }
    );
    for m in orgs::members(&conn, &o.id).await? {
        let role = if m.id == o.owner_id {
            "owner"
        } else {
            "member"
        };
        println!("  {:<38} {:<8} {}", m.id, role, m.name);
    }
    Ok(())
}
