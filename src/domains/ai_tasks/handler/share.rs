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
//!   this process's slots for the lane — its prefetch — whichever is more) are divided
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
//! [`WAITING_TTL`]), plus what this process's other batches admitted and have not
//! claimed yet ([`Admitting`]), so batches side by side do not each admit a whole share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::consumer::{Context, HandlerError};
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::store;

/// How long a lane's waiting tenants are trusted: a tenant that just started waiting is
/// weighed in within this. One read per lane and process per period, whatever the
/// batches (a read counts the lane's PENDING work, from the index alone on PostgreSQL).
pub const WAITING_TTL: Duration = Duration::from_secs(1);

/// A lane's waiting tenants: the plan each waits under (the heaviest, if several).
type Waiters = Arc<HashMap<String, String>>;

/// The waiting tenants of each lane, read at most every [`WAITING_TTL`].
#[derive(Default)]
pub struct Waiting {
    lanes: Mutex<HashMap<String, (Instant, Waiters)>>,
    /// One read at a time: batches that find the list stale together wait for one read.
    reading: tokio::sync::Mutex<()>,
}

impl Waiting {
    async fn of(
        &self,
        db: &sea_orm::DatabaseConnection,
        plans: &crate::plans::Plans,
        lane: &str,
    ) -> Result<Waiters, sea_orm::DbErr> {
        let fresh = || {
            self.lanes
                .lock()
                .ok()
                .and_then(|lanes| lanes.get(lane).cloned())
                .filter(|(at, _)| at.elapsed() < WAITING_TTL)
                .map(|(_, w)| w)
        };
        if let Some(w) = fresh() {
            return Ok(w);
        }
        let _reading = self.reading.lock().await;
        if let Some(w) = fresh() {
            return Ok(w);
        }
        let mut waiting: HashMap<String, String> = HashMap::new();
        for (tenant, plan) in store::waiting_tenants(db, lane).await? {
            let heavier = waiting
                .get(&tenant)
                .is_none_or(|p| plans.get(p).weight < plans.get(&plan).weight);
            if heavier {
                waiting.insert(tenant, plan);
            }
        }
        let waiting = Arc::new(waiting);
        if let Ok(mut lanes) = self.lanes.lock() {
            lanes.insert(lane.to_owned(), (Instant::now(), waiting.clone()));
        }
        Ok(waiting)
    }
}

/// What one more claim of a tenant meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Admit,
    /// At its plan's cap.
    OverCap {
        cap: u32,
    },
    /// At its weighted share while others wait.
    OverShare {
        share: u64,
    },
}

/// Divides `slots` among contenders `(weight, cap)` (cap 0: none) by weight, max-min
/// fair: a contender whose part would pass its cap gets the cap, and the rest is divided
/// again among the others.
pub fn allocate(slots: u64, contenders: &[(u32, u32)]) -> Vec<f64> {
    let mut parts = vec![0.0; contenders.len()];
    let mut open: Vec<usize> = (0..contenders.len()).collect();
    let mut left = slots as f64;
    while !open.is_empty() && left > 0.0 {
        let weights: f64 = open
            .iter()
            .map(|&i| f64::from(contenders[i].0.max(1)))
            .sum();
        let part = |i: usize| left * f64::from(contenders[i].0.max(1)) / weights;
        let capped: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&i| contenders[i].1 > 0 && part(i) >= f64::from(contenders[i].1))
            .collect();
        if capped.is_empty() {
            for &i in &open {
                parts[i] = part(i);
            }
            break;
        }
        for &i in &capped {
            parts[i] = f64::from(contenders[i].1);
            left -= parts[i];
        }
        open.retain(|i| !capped.contains(i));
    }
    parts
}

/// The rule for one more claim of a tenant running `running`, with its `cap` (0: none)
/// and its `part` of the lane (`None`: alone in it).
pub fn verdict(running: u64, cap: u32, part: Option<f64>) -> Verdict {
    if cap > 0 && running >= u64::from(cap) {
        return Verdict::OverCap { cap };
    }
    match part {
        // Rounded, at least 1: no tenant waits forever.
        Some(p) if running >= (p.round() as u64).max(1) => Verdict::OverShare {
            share: (p.round() as u64).max(1),
        },
        _ => Verdict::Admit,
    }
}

/// One lane as a batch weighs it.
struct Lane {
    /// Running (and admitted by this process's other batches), by tenant.
    running: HashMap<String, u64>,
    /// Running, by weight class.
    by_class: HashMap<u32, u64>,
    /// Each weight class's part of the lane's slots (two or more classes waiting).
    parts: HashMap<u32, f64>,
}

/// Claims admitted by this process's batches and not written yet, by (lane, tenant): a
/// batch weighing shares counts them as running.
#[derive(Default)]
pub struct Admitting(Mutex<HashMap<(String, String), u64>>);

impl Admitting {
    fn snapshot(&self) -> HashMap<(String, String), u64> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }

    fn add(&self, keys: &[(String, String)]) {
        if let Ok(mut m) = self.0.lock() {
            for k in keys {
                *m.entry(k.clone()).or_default() += 1;
            }
        }
    }

    fn remove(&self, keys: &[(String, String)]) {
        if let Ok(mut m) = self.0.lock() {
            for k in keys {
                if let Some(n) = m.get_mut(k) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        m.remove(k);
                    }
                }
            }
        }
    }
}

/// A batch's admissions while their claims are being written: dropped after the claims
/// committed (or failed), they stop counting.
pub struct Admitted<'a> {
    admitting: &'a Admitting,
    keys: Vec<(String, String)>,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.admitting.remove(&self.keys);
    }
}

impl AiTaskHandler {
    /// The tenant's cap in a lane: its plan's `tasks_running`, overridden for it.
    async fn cap(&self, ctx: &Context, tenant: &str, plan: &str) -> u32 {
        let o = self.overrides.get(&ctx.db, tenant).await;
        crate::limits::layered(
            &crate::domains::ai_tasks::limits::RUNNING,
            self.running_cap,
            self.plans.get(plan),
            &o,
        )
    }

    /// Applies both rules to the batch's claims of tasks not yet running; the batch's
    /// own admissions count toward the shares of the claims after them. When a rule
    /// applied, the caller holds the returned admissions until its claims are written.
    pub(super) async fn fair_share(
        &self,
        ctx: &Context,
        candidates: Vec<Candidate>,
        answers: &mut [Option<Result<(), HandlerError>>],
    ) -> Result<(Vec<Candidate>, Option<Admitted<'_>>), sea_orm::DbErr> {
        let fresh = |c: &Candidate| c.task.status != Status::Processing;
        if !candidates.iter().any(fresh) {
            return Ok((candidates, None));
        }
        let weight = |plan: &str| self.plans.get(plan).weight;
        let mut caps: HashMap<String, u32> = HashMap::new();
        let mut waiting: HashMap<String, Waiters> = HashMap::new();
        for c in candidates.iter().filter(|c| fresh(c)) {
            let t = &c.task;
            if !caps.contains_key(&t.tenant_id) {
                let cap = self.cap(ctx, &t.tenant_id, &t.plan).await;
                caps.insert(t.tenant_id.clone(), cap);
            }
            if !waiting.contains_key(&t.lane) {
                let w = self.waiting.of(&ctx.db, &self.plans, &t.lane).await?;
                waiting.insert(t.lane.clone(), w);
            }
        }
        // The weight classes waiting in each lane (the batch's own among them).
        let classes = |lane: &str, waiters: &HashMap<String, String>| {
            let mut by_class: HashMap<u32, Vec<(String, String)>> = HashMap::new();
            for (tenant, plan) in waiters {
                by_class
                    .entry(weight(plan))
                    .or_default()
                    .push((tenant.clone(), plan.clone()));
            }
            for c in candidates
                .iter()
                .filter(|c| fresh(c) && c.task.lane == lane)
            {
                let class = by_class.entry(weight(&c.task.plan)).or_default();
                if !class.iter().any(|(t, _)| *t == c.task.tenant_id) {
                    class.push((c.task.tenant_id.clone(), c.task.plan.clone()));
                }
            }
            by_class
        };
        let weighed: HashMap<String, HashMap<u32, Vec<(String, String)>>> = waiting
            .iter()
            .map(|(lane, w)| (lane.clone(), classes(lane, w)))
            .filter(|(_, by_class)| by_class.len() >= 2)
            .collect();
        // Nothing to weigh: no cap, and no lane with two weight classes waiting.
        if caps.values().all(|c| *c == 0) && weighed.is_empty() {
            return Ok((candidates, None));
        }
        let elsewhere = self.admitting.snapshot();
        let mut lanes: HashMap<String, Lane> = HashMap::new();
        for lane in waiting.keys() {
            let mut running = store::running_by_tenant(&ctx.db, lane).await?;
            for ((l, tenant), n) in &elsewhere {
                if l == lane {
                    *running.entry(tenant.clone()).or_default() += n;
                }
            }
            let total: u64 = running.values().sum();
            let mut parts = HashMap::new();
            let mut by_class: HashMap<u32, u64> = HashMap::new();
            if let Some(classes) = weighed.get(lane) {
                let mut shape = Vec::with_capacity(classes.len());
                let mut order = Vec::with_capacity(classes.len());
                for (w, tenants) in classes {
                    // A class is capped when every tenant in it is: by the sum.
                    let mut cap = 0u32;
                    let mut capped = true;
                    for (tenant, plan) in tenants {
                        let c = match caps.get(tenant) {
                            Some(c) => *c,
                            None => self.cap(ctx, tenant, plan).await,
                        };
                        capped &= c > 0;
                        cap = cap.saturating_add(c);
                        if let Some(n) = running.get(tenant) {
                            *by_class.entry(*w).or_default() += n;
                        }
                    }
                    let n = u32::try_from(tenants.len()).unwrap_or(u32::MAX);
                    shape.push((w.saturating_mul(n), if capped { cap } else { 0 }));
                    order.push(*w);
                }
                let slots = (total + 1).max(self.lane_slots.get(lane).copied().unwrap_or(0));
                for (w, part) in order.into_iter().zip(allocate(slots, &shape)) {
                    parts.insert(w, part);
                }
            }
            lanes.insert(
                lane.clone(),
                Lane {
                    running,
                    by_class,
                    parts,
                },
            );
        }
        let mut admitted = Vec::with_capacity(candidates.len());
        let mut keys = Vec::new();
        for c in candidates {
            if !fresh(&c) {
                admitted.push(c);
                continue;
            }
            let t = &c.task;
            let Some(lane) = lanes.get_mut(&t.lane) else {
                admitted.push(c);
                continue;
            };
            let w = weight(&t.plan);
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
                    admitted.push(c);
                }
                Verdict::OverCap { cap } => {
                    answers[c.index] = Some(Err(HandlerError::Deferred(format!(
                        "tenant already runs {n} tasks in {} (limits.tasks_running {cap})",
                        t.lane
                    ))));
                }
                Verdict::OverShare { share } => {
                    answers[c.index] = Some(Err(HandlerError::Yielded(format!(
                        "plans of weight {w} run their share of {} ({class_running} of {share}) while others wait",
                        t.lane
                    ))));
                }
            }
        }
        self.admitting.add(&keys);
        Ok((
            admitted,
            Some(Admitted {
                admitting: &self.admitting,
                keys,
            }),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(slots: u64, contenders: &[(u32, u32)], i: usize) -> u64 {
        (allocate(slots, contenders)[i].round() as u64).max(1)
    }

    #[test]
    fn a_cap_defers_whoever_waits() {
        assert_eq!(verdict(4, 4, None), Verdict::OverCap { cap: 4 });
        assert_eq!(verdict(3, 4, None), Verdict::Admit);
    }

    #[test]
    fn alone_a_tenant_takes_whatever_is_free() {
        assert_eq!(verdict(100, 0, None), Verdict::Admit);
    }

    #[test]
    fn contended_shares_follow_the_weights_and_never_fall_to_zero() {
        // 8 slots, weights 3 and 1: 6 and 2.
        let lane = [(3, 0), (1, 0)];
        assert_eq!((share(8, &lane, 0), share(8, &lane, 1)), (6, 2));
        assert_eq!(verdict(6, 0, Some(6.0)), Verdict::OverShare { share: 6 });
        assert_eq!(verdict(5, 0, Some(6.0)), Verdict::Admit);
        // A light tenant beside a heavy crowd still gets one.
        assert_eq!(share(51, &[(1, 0), (1000, 0)], 0), 1);
        assert_eq!(verdict(0, 0, Some(0.05)), Verdict::Admit);
        assert_eq!(verdict(1, 0, Some(0.05)), Verdict::OverShare { share: 1 });
        // Simulated: two tenants always waiting fill 8 slots 6:2, in either order.
        for first_a in [true, false] {
            let (mut a, mut b) = (0u64, 0u64);
            for i in 0..32 {
                if a + b == 8 {
                    break;
                }
                let parts = allocate((a + b + 1).max(8), &lane);
                if (i % 2 == 0) == first_a {
                    if verdict(a, 0, Some(parts[0])) == Verdict::Admit {
                        a += 1;
                    }
                } else if verdict(b, 0, Some(parts[1])) == Verdict::Admit {
                    b += 1;
                }
            }
            assert_eq!((a, b), (6, 2));
        }
    }

    #[test]
    fn what_a_capped_tenant_cannot_use_goes_to_the_others() {
        // Weight 4 beside weight 1 capped at 1: 7 and 1, no slot left idle.
        let parts = allocate(8, &[(4, 0), (1, 1)]);
        assert_eq!(parts, vec![7.0, 1.0]);
        // Two capped below their parts, the third takes the rest.
        let parts = allocate(12, &[(1, 2), (1, 2), (1, 0)]);
        assert_eq!(parts, vec![2.0, 2.0, 8.0]);
        // Everyone capped: nobody gets more than the cap, what is left stays free.
        let parts = allocate(10, &[(1, 2), (5, 3)]);
        assert_eq!(parts, vec![2.0, 3.0]);
    }
}
