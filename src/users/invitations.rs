//! Invitations to an organisation (issue 55). User ids are not secret (they are in every
//! file URL), so an owner naming one must not be enough to take that user in: their plan
//! and limits would be pooled without their say. The owner invites; the user joins only
//! by accepting, before the invitation expires and unless the owner revoked it. Every
//! change runs in a transaction with an audit row on the organisation (`org:<id>`); the
//! caller announces an acceptance ([`crate::plans::notices`]) after the commit.

use chrono::{DateTime, Duration, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait as _, QueryFilter,
    QueryOrder as _, QuerySelect as _, TransactionTrait,
};
use thiserror::Error;

use super::entity::{org, user};
use super::orgs::{self, OrgError};

pub mod entity {
    use sea_orm::entity::prelude::*;

    /// One invitation of one user to one organisation.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
    #[sea_orm(table_name = "org_invitations")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub org_id: String,
        /// Who is invited: the only one who may accept or decline it.
        pub user_id: String,
        /// The owner who invited.
        pub invited_by: String,
        /// `pending`, `accepted`, `declined` or `revoked` (see [`super::State`]).
        pub status: String,
        pub created_at: DateTimeUtc,
        /// Pending past this, it is expired: it can no longer be accepted.
        pub expires_at: DateTimeUtc,
        pub answered_at: Option<DateTimeUtc>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub use entity::Model as Invitation;

/// How long an invitation may be accepted: long enough for a colleague back from a
/// week away, short enough that a forgotten one does not stay a standing offer.
pub const TTL_DAYS: i64 = 7;

/// Open invitations one organisation may hold at once: an owner cannot flood users'
/// lists (or the table) by inviting every id they come across.
pub const MAX_OPEN: u64 = 100;

/// What a user's list shows at most (newest first); each organisation holds one open
/// invitation per user, so this is a hundred organisations asking at once.
const LIST_MAX: u64 = 100;

const PENDING: &str = "pending";
const ACCEPTED: &str = "accepted";
const DECLINED: &str = "declined";
const REVOKED: &str = "revoked";

/// Where an invitation stands, as its views show it (`expired` is read off the clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = InvitationStatus)]
pub enum State {
    Pending,
    Accepted,
    Declined,
    Revoked,
    Expired,
}

impl State {
    pub fn of(i: &Invitation, now: DateTime<Utc>) -> State {
        match i.status.as_str() {
            ACCEPTED => State::Accepted,
            DECLINED => State::Declined,
            REVOKED => State::Revoked,
            _ if i.expires_at <= now => State::Expired,
            _ => State::Pending,
        }
    }
}

/// Why an invitation change was refused.
#[derive(Debug, Error)]
pub enum InvitationError {
    /// None of that id for this caller (another user's does not exist to them).
    #[error("no such invitation")]
    NoSuchInvitation,
    #[error("the invitation expired; the owner may send a new one")]
    Expired,
    #[error("the owner revoked the invitation")]
    Revoked,
    #[error("the invitation was already answered ({0})")]
    Answered(&'static str),
    #[error("the user is already a member of this organisation")]
    AlreadyMember,
    #[error(
        "the organisation holds {MAX_OPEN} open invitations; revoke some or wait for them to expire"
    )]
    TooMany,
    #[error(transparent)]
    Org(#[from] OrgError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// The invitation may still be answered: else why not.
fn open(i: &Invitation, now: DateTime<Utc>) -> Result<(), InvitationError> {
    match State::of(i, now) {
        State::Pending => Ok(()),
        State::Expired => Err(InvitationError::Expired),
        State::Revoked => Err(InvitationError::Revoked),
        State::Accepted => Err(InvitationError::Answered(ACCEPTED)),
        State::Declined => Err(InvitationError::Answered(DECLINED)),
    }
}

/// Pending invitations not yet expired.
fn open_ones(db: &impl ConnectionTrait, now: DateTime<Utc>) -> sea_orm::Select<entity::Entity> {
    entity::Entity::find()
        .filter(entity::Column::Status.eq(PENDING))
        .filter(entity::Column::ExpiresAt.gt(crate::db::utc_value(db, now)))
}

/// Invites `user_id` to the organisation on behalf of `inviter` (its owner, checked by
/// the caller), audited as `org.invite`. An open invitation of the same user is returned
/// as it is (`false`: nothing new), so a repeated request sends nothing twice.
///
/// A user in another organisation may be invited (they would leave it first): refusing
/// here would tell any owner which users belong to an organisation.
pub async fn invite(
    db: &sea_orm::DatabaseConnection,
    org_id: &str,
    user_id: &str,
    inviter: &str,
) -> Result<(Invitation, bool), InvitationError> {
    let txn = db.begin().await?;
    // The organisation's row lock makes the open count and the repeat check exact under
    // concurrent invitations.
    orgs::lock_many(&txn, &[org_id].into()).await?;
    orgs::get(&txn, org_id).await?.ok_or(OrgError::NoSuchOrg)?;
    let invitee = user::Entity::find_by_id(user_id.to_owned())
        .one(&txn)
        .await?
        .ok_or(OrgError::NoSuchUser)?;
    if invitee.org_id.as_deref() == Some(org_id) {
        return Err(InvitationError::AlreadyMember);
    }
    let now = Utc::now();
    let of_org = open_ones(&txn, now).filter(entity::Column::OrgId.eq(org_id));
    if let Some(same) = of_org
        .clone()
        .filter(entity::Column::UserId.eq(user_id))
        .one(&txn)
        .await?
    {
        return Ok((same, false));
    }
    if of_org.count(&txn).await? >= MAX_OPEN {
        return Err(InvitationError::TooMany);
    }
    let i = Invitation {
        id: uuid::Uuid::now_v7().to_string(),
        org_id: org_id.to_owned(),
        user_id: user_id.to_owned(),
        invited_by: inviter.to_owned(),
        status: PENDING.to_owned(),
        created_at: now,
        expires_at: now + Duration::days(TTL_DAYS),
        answered_at: None,
    };
    entity::Entity::insert(entity::ActiveModel::from(i.clone()))
        .exec_without_returning(&txn)
        .await?;
    super::audit::record(
        &txn,
        &format!("user:{inviter}"),
        "org.invite",
        &format!("org:{org_id}"),
        serde_json::json!({ "user": user_id, "invitation": i.id, "expires_at": i.expires_at }),
    )
    .await?;
    txn.commit().await?;
    Ok((i, true))
}

/// The invitation `id` of `user_id`, its row locked: another user's does not exist.
async fn theirs(
    txn: &impl ConnectionTrait,
    id: &str,
    user_id: &str,
) -> Result<Invitation, InvitationError> {
    entity::Entity::find_by_id(id.to_owned())
        .filter(entity::Column::UserId.eq(user_id))
        .lock(sea_orm::sea_query::LockType::Update)
        .one(txn)
        .await?
        .ok_or(InvitationError::NoSuchInvitation)
}

/// Closes an open invitation as `status`, answered now.
async fn close(
    txn: &impl ConnectionTrait,
    id: &str,
    status: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    entity::Entity::update_many()
        .col_expr(entity::Column::Status, Expr::value(status))
        .col_expr(
            entity::Column::AnsweredAt,
            Expr::value(crate::db::utc_value(txn, now)),
        )
        .filter(entity::Column::Id.eq(id))
        .exec(txn)
        .await
        .map(|_| ())
}

/// `user_id` accepts their invitation `id` and joins its organisation (audited as
/// `org.add_member`, actor the user, with the invitation). Refused when it is not
/// theirs, expired, revoked or answered, or while they belong to another organisation.
/// Returns the organisation's id.
pub async fn accept(
    db: &sea_orm::DatabaseConnection,
    id: &str,
    user_id: &str,
) -> Result<String, InvitationError> {
    let txn = db.begin().await?;
    // The user's row first, as every membership change takes it (then the invitation's).
    let me = orgs::locked(&txn, user_id).await?;
    let i = theirs(&txn, id, user_id).await?;
    let now = Utc::now();
    open(&i, now)?;
    org::Entity::find_by_id(i.org_id.clone())
        .one(&txn)
        .await?
        .ok_or(OrgError::NoSuchOrg)?;
    match me.org_id.as_deref() {
        // An admin added them meanwhile: the invitation is answered, nothing else moves.
        Some(o) if o == i.org_id => {}
        Some(_) => return Err(OrgError::InAnother.into()),
        None => {
            orgs::set_org(&txn, user_id, Some(&i.org_id)).await?;
            super::audit::record(
                &txn,
                &format!("user:{user_id}"),
                "org.add_member",
                &format!("org:{}", i.org_id),
                serde_json::json!({ "user": user_id, "invitation": i.id, "invited_by": i.invited_by }),
            )
            .await?;
        }
    }
    close(&txn, &i.id, ACCEPTED, now).await?;
    txn.commit().await?;
    Ok(i.org_id)
}

/// `user_id` declines their invitation `id` (audited as `org.invite_decline`).
pub async fn decline(
    db: &sea_orm::DatabaseConnection,
    id: &str,
    user_id: &str,
) -> Result<Invitation, InvitationError> {
    let txn = db.begin().await?;
    let i = theirs(&txn, id, user_id).await?;
    let now = Utc::now();
    open(&i, now)?;
    close(&txn, &i.id, DECLINED, now).await?;
    super::audit::record(
        &txn,
        &format!("user:{user_id}"),
        "org.invite_decline",
        &format!("org:{}", i.org_id),
        serde_json::json!({ "user": user_id, "invitation": i.id }),
    )
    .await?;
    txn.commit().await?;
    Ok(Invitation {
        status: DECLINED.to_owned(),
        answered_at: Some(now),
        ..i
    })
}

/// The organisation's owner (checked by the caller) revokes its open invitation `id`
/// (audited as `org.invite_revoke`); one of another organisation does not exist here.
pub async fn revoke(
    db: &sea_orm::DatabaseConnection,
    org_id: &str,
    id: &str,
    actor: &str,
) -> Result<Invitation, InvitationError> {
    let txn = db.begin().await?;
    let i = entity::Entity::find_by_id(id.to_owned())
        .filter(entity::Column::OrgId.eq(org_id))
        .lock(sea_orm::sea_query::LockType::Update)
        .one(&txn)
        .await?
        .ok_or(InvitationError::NoSuchInvitation)?;
    let now = Utc::now();
    open(&i, now)?;
    close(&txn, &i.id, REVOKED, now).await?;
    super::audit::record(
        &txn,
        actor,
        "org.invite_revoke",
        &format!("org:{org_id}"),
        serde_json::json!({ "user": i.user_id, "invitation": i.id }),
    )
    .await?;
    txn.commit().await?;
    Ok(Invitation {
        status: REVOKED.to_owned(),
        answered_at: Some(now),
        ..i
    })
}

/// The user's open invitations, newest first, with their organisations' names.
pub async fn of_user(
    db: &impl ConnectionTrait,
    user_id: &str,
) -> Result<Vec<(Invitation, Option<org::Model>)>, DbErr> {
    let list = open_ones(db, Utc::now())
        .filter(entity::Column::UserId.eq(user_id))
        .order_by_desc(entity::Column::CreatedAt)
        .limit(LIST_MAX)
        .all(db)
        .await?;
    with_orgs(db, list).await
}

/// The organisation's open invitations, newest first (at most [`MAX_OPEN`]).
pub async fn of_org(db: &impl ConnectionTrait, org_id: &str) -> Result<Vec<Invitation>, DbErr> {
    open_ones(db, Utc::now())
        .filter(entity::Column::OrgId.eq(org_id))
        .order_by_desc(entity::Column::CreatedAt)
        .limit(MAX_OPEN)
        .all(db)
        .await
}

/// Each invitation with its organisation, read in one query.
pub async fn with_orgs(
    db: &impl ConnectionTrait,
    list: Vec<Invitation>,
) -> Result<Vec<(Invitation, Option<org::Model>)>, DbErr> {
    if list.is_empty() {
        return Ok(Vec::new());
    }
    let ids: std::collections::BTreeSet<&str> = list.iter().map(|i| i.org_id.as_str()).collect();
    let orgs: std::collections::HashMap<String, org::Model> = org::Entity::find()
        .filter(org::Column::Id.is_in(ids))
        .all(db)
        .await?
        .into_iter()
        .map(|o| (o.id.clone(), o))
        .collect();
    Ok(list
        .into_iter()
        .map(|i| {
            let o = orgs.get(&i.org_id).cloned();
            (i, o)
        })
        .collect())
}
