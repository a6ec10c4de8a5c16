//! What the rule counts besides the running tasks: each lane's waiting tenants (read
//! from the tasks table at most every [`WAITING_TTL`]) and the claims this process's
//! batches admitted and have not written yet ([`Admitting`]).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::domains::ai_tasks::store;

/// How long a lane's waiting tenants are trusted: a tenant that just started waiting is
/// weighed in within this. One read per lane and process per period, whatever the
/// batches (a read counts the lane's PENDING work, from the index alone on PostgreSQL).
pub const WAITING_TTL: Duration = Duration::from_secs(1);

/// A lane's waiting tenants: the plan each waits under (the heaviest, if several).
pub(super) type Waiters = Arc<HashMap<String, String>>;

/// The waiting tenants of each lane, read at most every [`WAITING_TTL`].
#[derive(Default)]
pub struct Waiting {
    lanes: Mutex<HashMap<String, (Instant, Waiters)>>,
    /// One read at a time: batches that find the list stale together wait for one read.
    reading: tokio::sync::Mutex<()>,
}

impl Waiting {
    pub(super) async fn of(
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

/// Claims admitted by this process's batches and not written yet, by (lane, tenant): a
/// batch weighing shares counts them as running.
///
/// A batch reads the table's counts (an await), then decides and adds its own admissions
/// in one step under this lock ([`Admitting::deciding`]), counting what other batches
/// hold now *and* what they wrote while it read ([`Mark`]: a claim written during the read
/// may be missing from it). Counting such a claim twice defers a task, never admits one
/// too many.
#[derive(Default)]
pub struct Admitting(Mutex<Ledger>);

type Key = (String, String);

#[derive(Default)]
pub(super) struct Ledger {
    /// Admitted, not written yet.
    live: HashMap<Key, u64>,
    /// Claims written while some batch was reading the table, numbered in order; kept
    /// only as long as a read that started before them is under way.
    written: VecDeque<(u64, Key)>,
    /// The number of the last claim written.
    seq: u64,
    /// Reads under way, by the number they started at.
    reading: BTreeMap<u64, usize>,
}

/// A batch's read of the table under way: what is written from now on counts for it
/// until [`Ledger::elsewhere`] (or a failed read's drop) lets it go.
pub(super) struct Mark<'a> {
    admitting: &'a Admitting,
    at: u64,
    open: bool,
}

impl Admitting {
    /// Taken before a batch reads the table's counts.
    pub(super) fn mark(&self) -> Mark<'_> {
        let mut l = self.deciding();
        let at = l.seq;
        *l.reading.entry(at).or_default() += 1;
        Mark {
            admitting: self,
            at,
            open: true,
        }
    }

    /// The ledger, held while a batch decides and adds its admissions (no await inside).
    pub(super) fn deciding(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn remove(&self, keys: &[Key]) {
        let mut l = self.deciding();
        for k in keys {
            if let Some(n) = l.live.get_mut(k) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    l.live.remove(k);
                }
            }
            // Only a read under way may have missed it.
            if !l.reading.is_empty() {
                l.seq += 1;
                let seq = l.seq;
                l.written.push_back((seq, k.clone()));
            }
        }
    }
}

impl Ledger {
    /// What other batches hold now, plus what they wrote during `mark`'s read (maybe
    /// after the table was read); ends the read.
    pub(super) fn elsewhere(&mut self, mark: &mut Mark<'_>) -> HashMap<Key, u64> {
        let mut all = self.live.clone();
        for (_, k) in self.written.iter().rev().take_while(|(s, _)| *s > mark.at) {
            *all.entry(k.clone()).or_default() += 1;
        }
        self.release(mark);
        all
    }

    fn release(&mut self, mark: &mut Mark<'_>) {
        if !std::mem::replace(&mut mark.open, false) {
            return;
        }
        if let Some(n) = self.reading.get_mut(&mark.at) {
            *n -= 1;
            if *n == 0 {
                self.reading.remove(&mark.at);
            }
        }
        // What no read under way started before is of use to none.
        match self.reading.keys().next().copied() {
            None => self.written.clear(),
            Some(oldest) => {
                while self.written.front().is_some_and(|(s, _)| *s <= oldest) {
                    self.written.pop_front();
                }
            }
        }
    }

    pub(super) fn add(&mut self, keys: &[Key]) {
        for k in keys {
            *self.live.entry(k.clone()).or_default() += 1;
        }
    }
}

impl Drop for Mark<'_> {
    /// A read that failed lets go here (a finished one already has).
    fn drop(&mut self) {
        if self.open {
            let admitting = self.admitting;
            admitting.deciding().release(self);
        }
    }
}

/// A batch's admissions while their claims are being written: dropped after the claims
/// committed (or failed), they stop counting.
pub struct Admitted<'a> {
    pub(super) admitting: &'a Admitting,
    pub(super) keys: Vec<(String, String)>,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.admitting.remove(&self.keys);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: &str) -> Key {
        ("ai.short".into(), t.into())
    }

    #[test]
    fn a_claim_written_while_a_batch_read_the_table_still_counts_for_it() {
        let admitting = Admitting::default();
        // Another batch holds one admission of tenant a.
        admitting.deciding().add(&[key("a")]);
        // This batch marks, then reads the table (which may predate the other's write)...
        let mut mark = admitting.mark();
        // ...while the other batch writes its claim and lets go.
        drop(Admitted {
            admitting: &admitting,
            keys: vec![key("a")],
        });
        let seen = admitting.deciding().elsewhere(&mut mark);
        assert_eq!(
            seen.get(&key("a")),
            Some(&1),
            "written during the read: counted"
        );
        // A batch that marks after the write finds it in the table, not here.
        let mut later = admitting.mark();
        assert!(admitting.deciding().elsewhere(&mut later).is_empty());
    }

    #[test]
    fn writes_are_kept_only_while_a_read_that_may_have_missed_them_is_under_way() {
        let admitting = Admitting::default();
        let key = || ("ai.short".to_owned(), "a".to_owned());
        // No read under way: nothing to remember.
        admitting.deciding().add(&[key()]);
        drop(Admitted {
            admitting: &admitting,
            keys: vec![key()],
        });
        assert!(admitting.deciding().written.is_empty());
        // A read that fails (dropped without deciding) lets go of what it pinned.
        let failed = admitting.mark();
        admitting.deciding().add(&[key()]);
        drop(Admitted {
            admitting: &admitting,
            keys: vec![key()],
        });
        assert_eq!(admitting.deciding().written.len(), 1);
        drop(failed);
        let l = admitting.deciding();
        assert!(l.written.is_empty() && l.reading.is_empty());
    }
}
