//! Fair share at claim time, per lane (the queue a task waits in: copywriting's never
//! counts against a tenant's videos) and per tenant (an organisation, else a user: keys
//! and members of one organisation count together).
//!
//! Two rules, checked for every first claim of a task (later steps of a started task
//! pass):
//! - **the plan's cap** (`limits.tasks_running`, per plan, overridden per tenant): a
//!   tenant running that many in the lane is deferred (second retry tier), whoever else
//!   waits — the headroom that keeps a flood from taking every slot;
//! - **the weighted share**: while other tenants wait in the lane (PENDING tasks), a
//!   tenant gets `max(1, round(S × w / W))` of the lane's slots, where `S` is the lane's
//!   running tasks plus this claim or this process's slots for the lane (its prefetch),
//!   whichever is more, `w` its plan's weight and `W` the weights of every waiting
//!   tenant; above it, it yields (first retry tier: its turn comes again within a
//!   second). Alone in the lane, a tenant takes whatever is free. A waiting tenant's
//!   share is kept for it while its yielded work is in the first tier: up to that share
//!   of the slots may idle for up to a second, the price of not letting the heavier
//!   plan's backlog take them (measured: docs/performance.md).
//!
//! Counts come from the tasks table (one grouped count of the lane's running work per
//! batch; the waiting tenants of a lane cached for [`WAITING_TTL`]), so every consumer
//! process applies the same share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::consumer::{Context, HandlerError};
use crate::domains::ai_tasks::kinds::Status;
use crate::domains::ai_tasks::store;

/// How long a lane's waiting tenants are trusted: a tenant that just started waiting is
/// weighed in within this.
pub const WAITING_TTL: Duration = Duration::from_millis(250);

/// The waiting tenants of each lane, with their weights, read at most every
/// [`WAITING_TTL`].
#[derive(Default)]
pub struct Waiting {
    lanes: Mutex<HashMap<String, (Instant, Arc<HashMap<String, u32>>)>>,
}

impl Waiting {
    async fn of(
        &self,
        db: &sea_orm::DatabaseConnection,
        plans: &crate::plans::Plans,
        lane: &str,
    ) -> Result<Arc<HashMap<String, u32>>, sea_orm::DbErr> {
        if let Ok(lanes) = self.lanes.lock()
            && let Some((at, w)) = lanes.get(lane)
            && at.elapsed() < WAITING_TTL
        {
            return Ok(w.clone());
        }
        let mut weights: HashMap<String, u32> = HashMap::new();
        for (tenant, plan) in store::waiting_tenants(db, lane).await? {
            let w = plans.get(&plan).weight;
            let e = weights.entry(tenant).or_insert(w);
            *e = (*e).max(w);
        }
        let weights = Arc::new(weights);
        if let Ok(mut lanes) = self.lanes.lock() {
            lanes.insert(lane.to_owned(), (Instant::now(), weights.clone()));
        }
        Ok(weights)
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

/// The rule itself: `running` of the tenant, `slots` of the lane (its running work plus
/// this claim, or the process's slots if more), its `weight` and `cap` (0: none), and
/// `others`, the weights of every waiting tenant but this one.
pub fn verdict(running: u64, slots: u64, weight: u32, cap: u32, others: u64) -> Verdict {
    if cap > 0 && running >= u64::from(cap) {
        return Verdict::OverCap { cap };
    }
    if others == 0 {
        return Verdict::Admit;
    }
    let w = u64::from(weight.max(1));
    // round(slots × w / (w + others)), at least 1: no tenant waits forever.
    let share = ((slots * w * 2 + (w + others)) / ((w + others) * 2)).max(1);
    if running >= share {
        Verdict::OverShare { share }
    } else {
        Verdict::Admit
    }
}

impl AiTaskHandler {
    /// Applies both rules to the batch's first claims; the batch's own admissions count
    /// toward the shares of the claims after them. When a rule applies, the caller holds
    /// the returned turn until its claims are written: the process's batches weigh one
    /// after another, each seeing the claims of the one before (side by side, each would
    /// admit up to a tenant's whole share).
    pub(super) async fn fair_share(
        &self,
        ctx: &Context,
        candidates: Vec<Candidate>,
        answers: &mut [Option<Result<(), HandlerError>>],
    ) -> Result<(Vec<Candidate>, Option<ShareTurn<'_>>), sea_orm::DbErr> {
        let fresh = |c: &Candidate| c.task.status != Status::Processing;
        if !candidates.iter().any(fresh) {
            return Ok((candidates, None));
        }
        // Per lane: its running work by tenant and its waiting tenants' weights.
        let mut lanes: HashMap<String, (HashMap<String, u64>, u64, Arc<HashMap<String, u32>>)> =
            HashMap::new();
        let mut caps: HashMap<String, u32> = HashMap::new();
        for c in candidates.iter().filter(|c| fresh(c)) {
            let t = &c.task;
            if !caps.contains_key(&t.tenant_id) {
                let o = self.overrides.get(&ctx.db, &t.tenant_id).await;
                let plan = self.plans.get(&t.plan);
                let cap = crate::limits::layered(
                    &crate::domains::ai_tasks::limits::RUNNING,
                    self.running_cap,
                    plan,
                    &o,
                );
                caps.insert(t.tenant_id.clone(), cap);
            }
            if !lanes.contains_key(&t.lane) {
                let waiting = self.waiting.of(&ctx.db, &self.plans, &t.lane).await?;
                lanes.insert(t.lane.clone(), (HashMap::new(), 0, waiting));
            }
        }
        // Nothing to weigh: no cap, and no lane with two tenants waiting.
        if caps.values().all(|c| *c == 0) && lanes.values().all(|(_, _, w)| w.len() < 2) {
            return Ok((candidates, None));
        }
        let turn = self.share_turn.lock().await;
        for (lane, (running, total, _)) in lanes.iter_mut() {
            *running = store::running_by_tenant(&ctx.db, lane).await?;
            *total = running.values().sum();
        }
        let mut admitted = Vec::with_capacity(candidates.len());
        for c in candidates {
            if !fresh(&c) {
                admitted.push(c);
                continue;
            }
            let t = &c.task;
            let Some((running, total, waiting)) = lanes.get_mut(&t.lane) else {
                admitted.push(c);
                continue;
            };
            let weight = self.plans.get(&t.plan).weight;
            let others: u64 = waiting
                .iter()
                .filter(|(tenant, _)| **tenant != t.tenant_id)
                .map(|(_, w)| u64::from(*w))
                .sum();
            let cap = caps.get(&t.tenant_id).copied().unwrap_or(0);
            let slots = (*total + 1).max(self.lane_slots.get(&t.lane).copied().unwrap_or(0));
            let n = running.entry(t.tenant_id.clone()).or_default();
            match verdict(*n, slots, weight, cap, others) {
                Verdict::Admit => {
                    *n += 1;
                    *total += 1;
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
                        "tenant runs its share of {} ({n} of {share}) while others wait",
                        t.lane
                    ))));
                }
            }
        }
        Ok((admitted, Some(turn)))
    }
}

/// One batch's turn at weighing shares (see [`AiTaskHandler::fair_share`]).
pub type ShareTurn<'a> = tokio::sync::MutexGuard<'a, ()>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_defers_whoever_waits() {
        assert_eq!(verdict(4, 5, 1, 4, 0), Verdict::OverCap { cap: 4 });
        assert_eq!(verdict(3, 11, 1, 4, 0), Verdict::Admit);
    }

    #[test]
    fn alone_a_tenant_takes_whatever_is_free() {
        assert_eq!(verdict(100, 100, 1, 0, 0), Verdict::Admit);
    }

    #[test]
    fn contended_shares_follow_the_weights_and_never_fall_to_zero() {
        // 8 slots, weights 3 and 1: 6 and 2.
        assert_eq!(verdict(6, 8, 3, 0, 1), Verdict::OverShare { share: 6 });
        assert_eq!(verdict(5, 8, 3, 0, 1), Verdict::Admit);
        assert_eq!(verdict(2, 8, 1, 0, 3), Verdict::OverShare { share: 2 });
        assert_eq!(verdict(1, 8, 1, 0, 3), Verdict::Admit);
        // A light tenant beside a heavy crowd still gets one.
        assert_eq!(verdict(0, 51, 1, 0, 1000), Verdict::Admit);
        assert_eq!(verdict(1, 51, 1, 0, 1000), Verdict::OverShare { share: 1 });
        // The heavier tenant keeps its share while the other's work is away (no
        // collapse as the lane empties): 8 slots of the process, one running.
        assert_eq!(verdict(1, 8, 3, 0, 1), Verdict::Admit);
        // Simulated: two tenants always waiting fill 8 slots 6:2, in either order.
        for first_a in [true, false] {
            let (mut a, mut b) = (0u64, 0u64);
            for i in 0..32 {
                if a + b == 8 {
                    break;
                }
                let slots = (a + b + 1).max(8);
                if (i % 2 == 0) == first_a {
                    if verdict(a, slots, 3, 0, 1) == Verdict::Admit {
                        a += 1;
                    }
                } else if verdict(b, slots, 1, 0, 3) == Verdict::Admit {
                    b += 1;
                }
            }
            assert_eq!((a, b), (6, 2));
        }
    }
}
