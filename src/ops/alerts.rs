//! Alert evaluation: each sample of the board is checked against the rules of
//! `[ops.alerts]` (the seeds' thresholds by default), per queue. A rule whose condition
//! has held for its `for_secs` fires: one `ops_alerts` row, a firing notice to every
//! receiver, `conveyor_alerts_firing{rule,queue}` at 1; when the condition clears, the
//! row gets its `resolved_at` and a resolved notice follows. Only the instance holding
//! the leader lease (a claim in the dedupe store, renewed every sample) evaluates, so
//! several API instances send each notice once; every instance reads the table.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait as _, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};

use super::entity;
use super::notify::{self, Notice};
use super::rules::{Reading, cleared, domain_reading, readings};
use super::snapshot::{AlertView, AlertsView, Snapshot};
use crate::dedupe::{Claim, DedupeStore};
use crate::ops::settings::AlertReceiver;
use crate::ops::settings::AlertSettings;
use crate::ops::settings::OpsSettings;

/// How many past episodes the view lists.
const HISTORY: u64 = 50;

/// Reads the alerts every instance shows.
pub async fn view(db: &DatabaseConnection) -> Result<AlertsView, sea_orm::DbErr> {
    let history: Vec<AlertView> = entity::Entity::find()
        .order_by_desc(entity::Column::FiredAt)
        .order_by_desc(entity::Column::Id)
        .limit(HISTORY)
        .all(db)
        .await?
        .into_iter()
        .map(AlertView::from)
        .collect();
    let active = entity::Entity::find()
        .filter(entity::Column::ResolvedAt.is_null())
        .order_by_asc(entity::Column::Id)
        .all(db)
        .await?
        .into_iter()
        .map(AlertView::from)
        .collect();
    Ok(AlertsView { active, history })
}

/// The evaluator of one instance.
pub struct Alerts {
    db: DatabaseConnection,
    dedupe: Arc<dyn DedupeStore>,
    settings: AlertSettings,
    receivers: Vec<AlertReceiver>,
    link: Option<String>,
    client: reqwest::Client,
    lease: Duration,
    /// Our leader lease's token, while we hold it.
    token: Option<String>,
    /// Since when each (rule, queue) condition has held.
    pending: HashMap<Key, DateTime<Utc>>,
    /// The firing episodes (rule, queue) → row, read from the table on becoming leader.
    firing: Option<HashMap<Key, i64>>,
}

/// An alert: a rule (by name) on a queue, or on a domain's subject.
type Key = (String, String);

const LEADER_KEY: &str = "ops:alerts-leader";

impl Alerts {
    pub fn new(
        db: DatabaseConnection,
        dedupe: Arc<dyn DedupeStore>,
        settings: &OpsSettings,
    ) -> Self {
        Alerts {
            db,
            dedupe,
            settings: settings.alerts.clone(),
            receivers: settings.receivers.clone(),
            link: (!settings.link.is_empty()).then(|| settings.link.clone()),
            client: notify::client(),
            // Three samples: a leader that died is replaced within that.
            lease: Duration::from_millis(settings.sample_interval_ms.max(50) * 3),
            token: None,
            pending: HashMap::new(),
            firing: None,
        }
    }

    /// Evaluates `snapshot` if this instance leads, then reads the view.
    pub async fn round(&mut self, snapshot: &Snapshot) -> AlertsView {
        if self.lead().await
            && let Err(e) = self.evaluate(snapshot).await
        {
            tracing::warn!(error = %e, "alert evaluation failed");
            // Re-read what fired from the table next time rather than trust memory.
            self.firing = None;
        }
        view(&self.db).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "alerts not read");
            AlertsView::default()
        })
    }

    /// Holds or takes the leader lease; false while another instance holds it.
    async fn lead(&mut self) -> bool {
        if let Some(token) = &self.token {
            match self.dedupe.renew(LEADER_KEY, token, self.lease).await {
                Ok(true) => return true,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "alerts leader lease not renewed");
                    return false;
                }
            }
            self.token = None;
            self.firing = None;
        }
        match self.dedupe.claim(LEADER_KEY, self.lease).await {
            Ok((Claim::Acquired, token)) => {
                self.token = Some(token);
                self.firing = None;
                true
            }
            Ok(_) => false,
            Err(e) => {
                tracing::warn!(error = %e, "alerts leader lease not claimed");
                false
            }
        }
    }

    async fn evaluate(&mut self, snapshot: &Snapshot) -> Result<(), sea_orm::DbErr> {
        if self.firing.is_none() {
            let open = entity::Entity::find()
                .filter(entity::Column::ResolvedAt.is_null())
                .all(&self.db)
                .await?;
            // A rule this build does not evaluate (another version fired it) is left
            // alone: nothing reads it, so nothing resolves it.
            self.firing = Some(
                open.into_iter()
                    .map(|m| ((m.rule, m.queue), m.id))
                    .collect(),
            );
        }
        let now = snapshot.at;
        for q in &snapshot.queues {
            for r in readings(&self.settings, q) {
                self.judge((r.rule.to_owned(), q.queue.clone()), &r, now)
                    .await?;
            }
        }
        for panel in &snapshot.panels {
            for c in &panel.conditions {
                self.judge(
                    (c.rule.to_owned(), c.subject.clone()),
                    &domain_reading(c),
                    now,
                )
                .await?;
            }
            // A rule of the panel's whose subject it no longer lists has cleared.
            for rule in panel.rules {
                let gone: Vec<Key> = self
                    .firing
                    .iter()
                    .flat_map(|f| f.keys())
                    .chain(self.pending.keys())
                    .filter(|(r, subject)| {
                        r == rule
                            && !panel
                                .conditions
                                .iter()
                                .any(|c| c.rule == *rule && c.subject == *subject)
                    })
                    .cloned()
                    .collect();
                for key in gone {
                    self.judge(key, &cleared(rule), now).await?;
                }
            }
        }
        Ok(())
    }

    /// Fires `key` once its condition has held for the reading's hold; resolves it when
    /// the condition clears.
    async fn judge(
        &mut self,
        key: Key,
        r: &Reading,
        now: DateTime<Utc>,
    ) -> Result<(), sea_orm::DbErr> {
        let since = if r.on {
            Some(*self.pending.entry(key.clone()).or_insert(now))
        } else {
            self.pending.remove(&key);
            None
        };
        let held = since.is_some_and(|s| (now - s).to_std().unwrap_or_default() >= r.hold);
        match self.firing.as_ref().and_then(|f| f.get(&key)).copied() {
            None if held => self.fire(key, r, now).await?,
            Some(id) if !r.on => self.resolve(id, &key, now).await?,
            _ => {}
        }
        Ok(())
    }

    async fn fire(
        &mut self,
        key: Key,
        r: &Reading,
        now: DateTime<Utc>,
    ) -> Result<(), sea_orm::DbErr> {
        let row = entity::ActiveModel {
            rule: Set(r.rule.to_owned()),
            queue: Set(key.1.clone()),
            summary: Set(r.summary.clone()),
            value: Set(r.value),
            threshold: Set(r.threshold),
            fired_at: Set(now),
            resolved_at: Set(None),
            ..Default::default()
        }
        .insert(&self.db)
        .await?;
        tracing::warn!(rule = %row.rule, queue = %row.queue, summary = %row.summary, "alert firing");
        metrics::gauge!("conveyor_alerts_firing", "rule" => r.rule, "queue" => row.queue.clone())
            .set(1.0);
        if let Some(f) = self.firing.as_mut() {
            f.insert(key, row.id);
        }
        notify::send(&self.client, &self.receivers, self.notice("firing", row));
        Ok(())
    }

    async fn resolve(
        &mut self,
        id: i64,
        key: &Key,
        now: DateTime<Utc>,
    ) -> Result<(), sea_orm::DbErr> {
        let Some(row) = entity::Entity::find_by_id(id).one(&self.db).await? else {
            if let Some(f) = self.firing.as_mut() {
                f.remove(key);
            }
            return Ok(());
        };
        let mut active: entity::ActiveModel = row.into();
        active.resolved_at = Set(Some(now));
        let row = active.update(&self.db).await?;
        tracing::info!(rule = %row.rule, queue = %row.queue, "alert resolved");
        metrics::gauge!("conveyor_alerts_firing", "rule" => row.rule.clone(), "queue" => row.queue.clone())
            .set(0.0);
        if let Some(f) = self.firing.as_mut() {
            f.remove(key);
        }
        notify::send(&self.client, &self.receivers, self.notice("resolved", row));
        Ok(())
    }

    fn notice(&self, status: &'static str, row: entity::Model) -> Notice {
        Notice {
            status,
            id: row.id,
            rule: row.rule,
            queue: row.queue,
            summary: row.summary,
            value: row.value,
            threshold: row.threshold,
            fired_at: row.fired_at,
            resolved_at: row.resolved_at,
            link: self.link.clone(),
        }
    }
}
