//! [`Interest`]: what the listeners want of some tenants' events, asked once per
//! recording, and the recording itself in rounds: the events, then what listeners
//! recorded in turn while they heard them, all in the recorder's transaction.

use std::collections::HashSet;
use std::sync::Arc;

use sea_orm::ConnectionTrait;

use super::listener::Found;
use super::{AnyListener, Event, EventError, EventType, MAX_ROUNDS, Registry, Then, Txn};

/// What the listeners want of some tenants' events, asked once per recording.
pub struct Interest {
    registry: Arc<Registry>,
    /// Per listener (in registry order), what it wants; `None` before it was asked.
    found: Vec<Option<Found>>,
    covered: HashSet<String>,
}

impl Interest {
    pub(super) fn new(registry: Arc<Registry>) -> Self {
        Interest {
            found: registry.listeners.iter().map(|_| None).collect(),
            registry,
            covered: HashSet::new(),
        }
    }

    /// Whether any listener wants `user`'s events of type `kind` (true for a tenant not
    /// asked about: the recording asks before anyone hears).
    pub fn wants(&self, user: &str, kind: &EventType) -> bool {
        if !self.covered.contains(user) {
            return true;
        }
        self.each().any(|(l, f)| l.0.wants(f, user, kind))
    }

    /// No listener wants anything of the tenants asked about.
    pub fn is_empty(&self) -> bool {
        self.each().all(|(l, f)| l.0.is_empty(f))
    }

    fn each(&self) -> impl Iterator<Item = (&AnyListener, &Found)> {
        self.registry
            .listeners
            .iter()
            .zip(&self.found)
            .filter_map(|(l, f)| f.as_ref().map(|f| (l, f)))
    }

    /// Asks every listener about those of `users` not asked about yet.
    pub(super) async fn cover(&mut self, txn: &Txn<'_>, users: &[&str]) -> Result<(), EventError> {
        let mut new: Vec<&str> = users
            .iter()
            .copied()
            .filter(|u| !self.covered.contains(*u))
            .collect();
        new.sort_unstable();
        new.dedup();
        if new.is_empty() {
            return Ok(());
        }
        for (l, slot) in self.registry.listeners.iter().zip(self.found.iter_mut()) {
            let found = l.0.interest(txn, &new).await?;
            match slot {
                Some(have) => l.0.merge(have, found)?,
                None => *slot = Some(found),
            }
        }
        self.covered.extend(new.into_iter().map(str::to_owned));
        Ok(())
    }

    /// Records `events` in `txn` for the listeners that want them; events they record in
    /// turn are heard next, in the same transaction.
    pub async fn record<C: ConnectionTrait>(
        mut self,
        txn: &C,
        events: Vec<Event>,
    ) -> Result<(), EventError> {
        let txn = Txn::new(txn);
        let mut round = events;
        for _ in 0..MAX_ROUNDS {
            if round.is_empty() {
                return Ok(());
            }
            let users: Vec<&str> = round.iter().map(|e| e.user_id.as_str()).collect();
            self.cover(&txn, &users).await?;
            let mut more = Vec::new();
            for (l, found) in self.each() {
                let theirs: Vec<&Event> = round
                    .iter()
                    .filter(|e| l.0.wants(found, &e.user_id, e.kind))
                    .collect();
                if theirs.is_empty() {
                    continue;
                }
                let mut then = Then {
                    interest: &self,
                    more: &mut more,
                };
                l.0.hear(&txn, found, &theirs, &mut then).await?;
            }
            round = more;
        }
        if round.is_empty() {
            Ok(())
        } else {
            Err(EventError::Loop)
        }
    }
}
