//! Fair share at claim time, per lane (the queue a task waits in: copywriting's never
//! counts against a tenant's videos) and per tenant (an organisation, else a user: keys
//! and members of one organisation count together).
//!
//! Two rules, checked for every claim of a task not yet running (a first claim, or a
//! retry's; later steps of a running task pass):
//! - **the plan's cap** (`limits.tasks_running`, per plan, overridden per tenant): a
//!   tenant running that many in the lane is deferred (second retry tier), whoever else
//!   waits. This is how tenants of one plan share a lane: the headroom that keeps one
//!   tenant's flood from taking every slot.
//! - **the weights between plans**: while tenants of plans of different weights wait in
//!   the lane (PENDING tasks), the lane's `S` slots (its running tasks plus this claim, or
//!   this process's slots for the lane — its prefetch as the consumer runs it now,
//!   configured or set at run time — whichever is more) are divided
//!   among the weight classes by weight × waiting tenants, max-min fair: a class held
//!   below its part by its tenants' caps gets their caps, and what it leaves goes to the
//!   others ([`allocate`]). A claim of a class over its part (rounded, at least 1)
//!   yields (first retry tier: its turn comes again within a second). One weight class
//!   waiting — the common case — weighs nothing: the claim costs no count.
//!   A waiting class's part is kept for it while its yielded work is in the first tier:
//!   up to that part of the slots may idle for up to a second.
//!
//! Counts come from the tasks table (one grouped count of the lane's running work per
//! batch when a rule applies; the waiting tenants of a lane cached for
//! [`WAITING_TTL`](super::waiting::WAITING_TTL), and not read at all when every plan
//! weighs the same), plus what this process's other batches admitted and have not
//! claimed yet ([`Admitting`]), so batches side by side do not each admit a whole share.
//! The rule itself is the plans' ([`crate::plans::share`]).

use std::collections::HashMap;
use std::sync::Arc;

use sea_orm::{DatabaseConnection, DbErr};

use super::waiting::{Admitted, Admitting, Waiters, Waiting};
use crate::consumer::HandlerError;
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::limits::RUNNING;
use crate::domains::ai_tasks::store::{self, Task};
use crate::plans::share::{Verdict, allocate, verdict};

/// One lane as a batch weighs it.
struct Lane {
    /// Running (and admitted by this process's other batches), by tenant.
    running: HashMap<String, u64>,
    /// Running, by weight class.
    by_class: HashMap<u32, u64>,
    /// Each weight class's part of the lane's slots (two or more classes waiting).
    parts: HashMap<u32, f64>,
}

/// The tenants waiting in a lane, by weight class: (tenant, plan).
type Classes = HashMap<u32, Vec<(String, String)>>;

/// The fair share of this process's claims: what the rules count besides the tasks table.
pub struct FairShare {
    /// Each tenant's `limits.tasks_running` (configured, its plan's, its override) and
    /// the plans' weights.
    limits: crate::limits::Values,
    /// This process's consumers, with each lane's worker slots as they run now (the
    /// prefetch configured, or set at run time and followed): the least a contended
    /// lane's shares are cut from.
    consumers: Arc<crate::tally::Tally>,
    /// Each lane's waiting tenants.
    waiting: Waiting,
    /// What this process's batches admitted and have not claimed yet.
    admitting: Admitting,
}

impl FairShare {
    pub fn new(limits: crate::limits::Values, consumers: Arc<crate::tally::Tally>) -> Self {
        FairShare {
            limits,
            consumers,
            waiting: Waiting::default(),
            admitting: Admitting::default(),
        }
    }

    fn weight(&self, plan: &str) -> u32 {
        self.limits.plans().get(plan).weight
    }

    /// The tenant's cap in a lane: `tasks_running` as configured, its plan's, its
    /// override.
    async fn cap(&self, tenant: &str, plan: &str) -> u32 {
        self.limits.of(&RUNNING, tenant, plan).await
    }

    /// The weight classes waiting in `lane`: the table's waiting tenants and the batch's.
    fn classes(&self, lane: &str, waiters: &Waiters, fresh: &[&Task]) -> Classes {
        let mut by_class = Classes::new();
        let batch = fresh
            .iter()
            .filter(|t| t.lane == lane)
            .map(|t| (&t.tenant_id, &t.plan));
        for (tenant, plan) in waiters.iter().chain(batch) {
            let class = by_class.entry(self.weight(plan)).or_default();
            if !class.iter().any(|(t, _)| t == tenant) {
                class.push((tenant.clone(), plan.clone()));
            }
        }
        by_class
    }

    /// The lane's running work (`running`, the table's, plus what `elsewhere` counts) and,
    /// when two weight classes wait, each class's part of its slots. `caps` holds every
    /// tenant of `classes`.
    fn weigh(
        &self,
        lane: &str,
        mut running: HashMap<String, u64>,
        classes: Option<&Classes>,
        caps: &HashMap<String, u32>,
        elsewhere: &HashMap<(String, String), u64>,
    ) -> Lane {
        for ((l, tenant), n) in elsewhere {
            if l == lane {
                *running.entry(tenant.clone()).or_default() += n;
            }
        }
        let mut w = Lane {
            running,
            by_class: HashMap::new(),
            parts: HashMap::new(),
        };
        let Some(classes) = classes else {
            return w;
        };
        let mut shape = Vec::with_capacity(classes.len());
        for (weight, tenants) in classes {
            // A class is capped when every tenant in it is: by the sum of their caps.
            let (mut cap, mut capped) = (0u32, true);
            for (tenant, _) in tenants {
                let c = caps.get(tenant).copied().unwrap_or(0);
                capped &= c > 0;
                cap = cap.saturating_add(c);
                *w.by_class.entry(*weight).or_default() +=
                    w.running.get(tenant).copied().unwrap_or(0);
            }
            let n = u32::try_from(tenants.len()).unwrap_or(u32::MAX);
            shape.push((
                *weight,
                weight.saturating_mul(n),
                if capped { cap } else { 0 },
            ));
        }
        let total: u64 = w.running.values().sum();
        // The lane's slots as this process consumes it now: an operator's change of its
        // concurrency counts from the poll that followed it.
        let here = self.consumers.prefetch(lane).map_or(0, u64::from);
        let slots = (total + 1).max(here);
        let contenders: Vec<(u32, u32)> = shape.iter().map(|(_, w, c)| (*w, *c)).collect();
        for ((weight, ..), part) in shape.iter().zip(allocate(slots, &contenders)) {
            w.parts.insert(*weight, part);
        }
        w
    }

    /// Applies both rules to a batch's claims of `tasks` (in order) not yet running; the
    /// batch's own admissions count toward the shares of the claims after them. What
    /// each claim meets: `None` (admitted), or why it waits. When a rule applied, the
    /// caller holds the returned admissions until its claims are written.
    pub async fn admit(
        &self,
        db: &DatabaseConnection,
        tasks: &[&Task],
    ) -> Result<(Vec<Option<HandlerError>>, Option<Admitted<'_>>), DbErr> {
        let mut refused: Vec<Option<HandlerError>> = tasks.iter().map(|_| None).collect();
        let is_fresh = |t: &Task| t.status != Status::Processing;
        let fresh: Vec<&Task> = tasks.iter().copied().filter(|t| is_fresh(t)).collect();
        if fresh.is_empty() {
            return Ok((refused, None));
        }
        let mut caps: HashMap<String, u32> = HashMap::new();
        for t in &fresh {
            if !caps.contains_key(&t.tenant_id) {
                let cap = self.cap(&t.tenant_id, &t.plan).await;
                caps.insert(t.tenant_id.clone(), cap);
            }
        }
        let mut lanes: Vec<&str> = fresh.iter().map(|t| t.lane.as_str()).collect();
        lanes.sort_unstable();
        lanes.dedup();
        // Lanes where two weight classes wait (never, when every plan weighs the same).
        let mut weighed: HashMap<&str, Classes> = HashMap::new();
        if self.limits.plans().weights_differ() {
            for lane in &lanes {
                let waiters = self.waiting.of(db, self.limits.plans(), lane).await?;
                let classes = self.classes(lane, &waiters, &fresh);
                if classes.len() >= 2 {
                    weighed.insert(lane, classes);
                }
            }
        }
        if caps.values().all(|c| *c == 0) && weighed.is_empty() {
            return Ok((refused, None));
        }
        for (tenant, plan) in weighed.values().flatten().flat_map(|(_, t)| t.iter()) {
            if !caps.contains_key(tenant) {
                let cap = self.cap(tenant, plan).await;
                caps.insert(tenant.clone(), cap);
            }
        }
        // The table's counts, then (without an await) what other batches hold or wrote
        // meanwhile, the decisions and this batch's admissions: one step under the lock.
        let mut mark = self.admitting.mark();
        let mut read = Vec::with_capacity(lanes.len());
        for lane in lanes {
            read.push((lane, store::running_by_tenant(db, lane).await?));
        }
        let mut ledger = self.admitting.deciding();
        let elsewhere = ledger.elsewhere(&mut mark);
        let mut weighing: HashMap<String, Lane> = HashMap::new();
        for (lane, running) in read {
            let w = self.weigh(lane, running, weighed.get(lane), &caps, &elsewhere);
            weighing.insert(lane.to_owned(), w);
        }
        let mut keys = Vec::new();
        for (t, refusal) in tasks.iter().zip(&mut refused) {
            let lane = match weighing.get_mut(&t.lane) {
                Some(lane) if is_fresh(t) => lane,
                _ => continue,
            };
            let w = self.weight(&t.plan);
            let cap = caps.get(&t.tenant_id).copied().unwrap_or(0);
            let class_running = lane.by_class.get(&w).copied().unwrap_or(0);
            let n = lane.running.get(&t.tenant_id).copied().unwrap_or(0);
            let verdict = match verdict(n, cap, None) {
                Verdict::Admit => verdict(class_running, 0, lane.parts.get(&w).copied()),
                over => over,
            };
            match verdict {
                Verdict::Admit => {
                    *lane.running.entry(t.tenant_id.clone()).or_default() += 1;
                    *lane.by_class.entry(w).or_default() += 1;
                    keys.push((t.lane.clone(), t.tenant_id.clone()));
                }
                Verdict::OverCap { cap } => {
                    *refusal = Some(HandlerError::Deferred(format!(
                        "tenant already runs {n} tasks in {} (limits.tasks_running {cap})",
                        t.lane
                    )));
                }
                Verdict::OverShare { share } => {
                    *refusal = Some(HandlerError::Yielded(format!(
                        "plans of weight {w} run their share of {} ({class_running} of {share}) while others wait",
                        t.lane
                    )));
                }
            }
        }
        ledger.add(&keys);
        drop(ledger);
        Ok((
            refused,
            Some(Admitted {
                admitting: &self.admitting,
                keys,
            }),
        ))
    }
}
