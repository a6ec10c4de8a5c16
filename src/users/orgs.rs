//! Organisations: team accounts whose members share one plan, one set of limits and one
//! fair share. Every change here runs in a transaction with an audit row; the caller
//! announces it ([`crate::plans::notices`]) after the commit, so cached standings go.

use chrono::Utc;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder as _,
    QuerySelect as _, TransactionTrait,
};
use thiserror::Error;

use super::entity::{org, user};

pub use org::Model as Org;

/// Why an organisation change was refused.
#[derive(Debug, Error)]
pub enum OrgError {
    #[error("no such organisation")]
    NoSuchOrg,
    #[error("no such user")]
    NoSuchUser,
    #[error("the user already belongs to another organisation")]
    InAnother,
    #[error("the owner cannot leave their organisation")]
    Owner,
    #[error("the user is not a member of this organisation")]
    NotAMember,
    #[error("an organisation's name is 1 to 128 characters, not blank")]
    BadName,
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// Locks the rows of the organisations among `ids` (tenant ids: users' ids match none),
/// in id order, after the users' rows: the in-flight count of an organisation's members
/// runs one transaction at a time.
pub async fn lock_many(
    txn: &impl ConnectionTrait,
    ids: &std::collections::BTreeSet<&str>,
) -> Result<(), DbErr> {
    org::Entity::find()
        .select_only()
        .column(org::Column::Id)
        .filter(org::Column::Id.is_in(ids.iter().copied()))
        .order_by_asc(org::Column::Id)
        .lock(sea_orm::sea_query::LockType::Update)
        .into_tuple::<String>()
        .all(txn)
        .await?;
    Ok(())
}

pub async fn get(db: &impl ConnectionTrait, id: &str) -> Result<Option<Org>, DbErr> {
    org::Entity::find_by_id(id.to_owned()).one(db).await
}

/// The organisation's members, the owner among them, oldest account first.
pub async fn members(db: &impl ConnectionTrait, id: &str) -> Result<Vec<super::User>, DbErr> {
    user::Entity::find()
        .filter(user::Column::OrgId.eq(id))
        .order_by_asc(user::Column::CreatedAt)
        .all(db)
        .await
}

/// The user's row, locked: [`OrgError::NoSuchUser`] when there is none.
pub(super) async fn locked(
    txn: &impl ConnectionTrait,
    user_id: &str,
) -> Result<super::User, OrgError> {
    super::lock(txn, user_id).await.map_err(|e| match e {
        DbErr::RecordNotFound(_) => OrgError::NoSuchUser,
        e => OrgError::Db(e),
    })
}

/// Creates an organisation named `name` (trimmed) owned (and joined) by `owner_id`,
/// audited as `actor`.
pub async fn create(
    db: &sea_orm::DatabaseConnection,
    name: &str,
    owner_id: &str,
    actor: &str,
) -> Result<Org, OrgError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 128 {
        return Err(OrgError::BadName);
    }
    let txn = db.begin().await?;
    let owner = locked(&txn, owner_id).await?;
    if owner.org_id.is_some() {
        return Err(OrgError::InAnother);
    }
    let o = org::Model {
        id: uuid::Uuid::now_v7().to_string(),
        name: name.to_owned(),
        owner_id: owner_id.to_owned(),
        plan: None,
        created_at: Utc::now(),
    };
    org::Entity::insert(org::ActiveModel::from(o.clone()))
        .exec_without_returning(&txn)
        .await?;
    set_org(&txn, owner_id, Some(&o.id)).await?;
    super::audit::record(
        &txn,
        actor,
        "org.create",
        &format!("org:{}", o.id),
        serde_json::json!({ "name": name, "owner": owner_id }),
    )
    .await?;
    txn.commit().await?;
    Ok(o)
}

/// Sets (or clears) the user's organisation; the caller audits it.
pub(super) async fn set_org(
    txn: &impl ConnectionTrait,
    user_id: &str,
    org: Option<&str>,
) -> Result<(), DbErr> {
    user::Entity::update_many()
        .col_expr(user::Column::OrgId, Expr::value(org.map(str::to_owned)))
        .filter(user::Column::Id.eq(user_id))
        .exec(txn)
        .await
        .map(|_| ())
}

/// Adds `user_id` to the organisation (a user belongs to one at most), audited: for
/// operators only (the admin API, the CLI), who act with authority. An owner invites
/// instead ([`super::invitations`]), and the user joins by accepting.
pub async fn add(
    db: &sea_orm::DatabaseConnection,
    org_id: &str,
    user_id: &str,
    actor: &str,
) -> Result<(), OrgError> {
    membership(db, org_id, user_id, true, actor).await
}

/// Removes `user_id` from the organisation (never its owner), audited.
pub async fn remove(
    db: &sea_orm::DatabaseConnection,
    org_id: &str,
    user_id: &str,
    actor: &str,
) -> Result<(), OrgError> {
    membership(db, org_id, user_id, false, actor).await
}

/// Adds (`join`) or removes a member, with the rules of each, in one audited transaction.
async fn membership(
    db: &sea_orm::DatabaseConnection,
    org_id: &str,
    user_id: &str,
    join: bool,
    actor: &str,
) -> Result<(), OrgError> {
    let txn = db.begin().await?;
    let o = get(&txn, org_id).await?.ok_or(OrgError::NoSuchOrg)?;
    if !join && o.owner_id == user_id {
        return Err(OrgError::Owner);
    }
    let u = locked(&txn, user_id).await?;
    let member = u.org_id.as_deref() == Some(org_id);
    match (join, u.org_id.as_deref()) {
        (true, _) if member => return Ok(()),
        (true, Some(_)) => return Err(OrgError::InAnother),
        (false, _) if !member => return Err(OrgError::NotAMember),
        _ => {}
    }
    set_org(&txn, user_id, join.then_some(org_id)).await?;
    super::audit::record(
        &txn,
        actor,
        if join {
            "org.add_member"
        } else {
            "org.remove_member"
        },
        &format!("org:{org_id}"),
        serde_json::json!({ "user": user_id }),
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// Sets (or clears) the plan of the organisation, audited with the plan before.
pub async fn set_plan(
    db: &sea_orm::DatabaseConnection,
    org_id: &str,
    plan: Option<&str>,
    actor: &str,
) -> Result<(), OrgError> {
    let txn = db.begin().await?;
    let o = get(&txn, org_id).await?.ok_or(OrgError::NoSuchOrg)?;
    org::Entity::update_many()
        .col_expr(org::Column::Plan, Expr::value(plan.map(str::to_owned)))
        .filter(org::Column::Id.eq(org_id))
        .exec(&txn)
        .await?;
    plan_set(txn, actor, &format!("org:{org_id}"), o.plan, plan).await
}

/// Sets (or clears) the plan an admin chose for a user, audited with the plan before.
pub async fn set_user_plan(
    db: &sea_orm::DatabaseConnection,
    user_id: &str,
    plan: Option<&str>,
    actor: &str,
) -> Result<(), OrgError> {
    let txn = db.begin().await?;
    let u = locked(&txn, user_id).await?;
    user::Entity::update_many()
        .col_expr(user::Column::Plan, Expr::value(plan.map(str::to_owned)))
        .filter(user::Column::Id.eq(user_id))
        .exec(&txn)
        .await?;
    plan_set(txn, actor, &format!("user:{user_id}"), u.plan, plan).await
}

/// Audits a plan change (`plan.set`, with the plan before) and commits it.
async fn plan_set(
    txn: sea_orm::DatabaseTransaction,
    actor: &str,
    target: &str,
    before: Option<String>,
    after: Option<&str>,
) -> Result<(), OrgError> {
    super::audit::record(
        &txn,
        actor,
        "plan.set",
        target,
        serde_json::json!({ "before": before, "after": after }),
    )
    .await?;
    txn.commit().await?;
    Ok(())
}
