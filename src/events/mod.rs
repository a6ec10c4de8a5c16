//! The event seam between domains. A domain reports what happened to it (a task ended,
//! an order was paid) by recording [`Event`]s in its own transaction through one call,
//! [`Events::record`]; the domains that react (webhooks writes deliveries, search sync
//! writes materials) register [`Listener`]s through the domain contract, and each hears
//! the events it wants inside that same transaction. The change and every reaction
//! commit together or not at all, and no domain calls another's internals for a side
//! effect: a new event type edits only its owner, which declares it
//! (`Domain::events`) and records it.
//!
//! Why in the transaction rather than on the bus: a lost or doubled reaction is a
//! webhook missed or sent twice. A listener that must reach outside writes outbox
//! messages, which the relay publishes once the transaction committed.
//!
//! What it costs: a recording asks each listener once which of the events' tenants it
//! cares about (an [`Interest`]: at most one indexed query each, webhooks' endpoints),
//! so an event nobody listens for costs that query and nothing more. A recorder whose
//! bodies are costly asks first ([`Events::interest`], [`Interest::wants`]) and builds
//! only what is wanted.
//!
//! Files: this one (types, the seam), `interest` (what listeners want, and the
//! recording rounds), [`listener`] (what a listener implements), [`txn`] (the
//! recorder's transaction as listeners see it).

mod interest;
pub mod listener;
pub mod txn;

use std::any::Any;
use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use sea_orm::{ConnectionTrait, DbErr};
use serde_json::Value;

pub use interest::Interest;
pub use listener::{AnyListener, Listener, Then, Wants};
pub use txn::Txn;

/// Rounds of events recorded by listeners in turn before the seam calls it a loop.
const MAX_ROUNDS: usize = 4;

/// An event type, declared by the domain that records it (`Domain::events`).
#[derive(Debug)]
pub struct EventType {
    /// `<thing>.<what happened>` (`task.succeeded`), unique in a build.
    pub name: &'static str,
    /// What it says, for the docs.
    pub description: &'static str,
    /// Offered to tenants (webhook endpoints subscribe to it); an internal type is heard
    /// only by the domains' listeners.
    pub public: bool,
}

impl EventType {
    /// A type tenants may subscribe to.
    pub const fn new(name: &'static str, description: &'static str) -> Self {
        EventType {
            name,
            description,
            public: true,
        }
    }

    /// A type only the domains' listeners hear.
    pub const fn internal(name: &'static str, description: &'static str) -> Self {
        EventType {
            name,
            description,
            public: false,
        }
    }
}

impl PartialEq for EventType {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for EventType {}

/// One thing that happened, to one tenant.
#[derive(Clone)]
pub struct Event {
    /// The tenant it happened to (the owner of the thing).
    pub user_id: String,
    pub kind: &'static EventType,
    /// What the API shows of the thing (its public view): a webhook's `data`. `Null` for
    /// an internal event.
    pub data: Value,
    /// What listeners read of an internal event, typed by its owner.
    detail: Option<Arc<dyn Any + Send + Sync>>,
}

impl Event {
    pub fn new(user_id: impl Into<String>, kind: &'static EventType, data: Value) -> Self {
        Event {
            user_id: user_id.into(),
            kind,
            data,
            detail: None,
        }
    }

    /// An event whose listeners read `detail` (a type its owner declares beside it).
    pub fn with_detail<T: Any + Send + Sync>(
        user_id: impl Into<String>,
        kind: &'static EventType,
        detail: T,
    ) -> Self {
        Event {
            user_id: user_id.into(),
            kind,
            data: Value::Null,
            detail: Some(Arc::new(detail)),
        }
    }

    /// Its detail, if it is a `T`.
    pub fn detail<T: Any>(&self) -> Option<&T> {
        self.detail.as_deref()?.downcast_ref()
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("user_id", &self.user_id)
            .field("kind", &self.kind.name)
            .field("data", &self.data)
            .field("detail", &self.detail.is_some())
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error(transparent)]
    Db(#[from] DbErr),
    /// A listener failed for another reason (an outbox message it could not write).
    #[error("the {listener} listener: {message}")]
    Listener {
        listener: &'static str,
        message: String,
    },
    /// A listener was handed wants that are not its own (a bug in the seam).
    #[error("the {listener} listener was handed another listener's wants")]
    Mismatch { listener: &'static str },
    /// Listeners kept recording events in turn.
    #[error("events recorded in turn for more than {MAX_ROUNDS} rounds: a loop between listeners")]
    Loop,
    /// Two domains declare one name.
    #[error("event type `{0}` is declared twice")]
    Duplicate(&'static str),
}

/// Recorders answer in `DbErr`, like the rest of their transaction.
impl From<EventError> for DbErr {
    fn from(e: EventError) -> Self {
        match e {
            EventError::Db(e) => e,
            other => DbErr::Custom(other.to_string()),
        }
    }
}

/// What one domain brought to the seam.
#[derive(Clone)]
struct Entry {
    owner: &'static str,
    types: &'static [&'static EventType],
    listeners: Vec<AnyListener>,
}

/// The declared types and registered listeners of one process, per domain in the order
/// they were installed.
#[derive(Default)]
struct Registry {
    entries: Vec<Entry>,
    /// Every entry's listeners, in order.
    listeners: Vec<AnyListener>,
}

impl Registry {
    fn new(entries: Vec<Entry>) -> Self {
        let listeners = entries
            .iter()
            .flat_map(|e| e.listeners.iter().cloned())
            .collect();
        Registry { entries, listeners }
    }
}

/// The seam of one process (on the `Platform`): cheap to clone, held by whatever records.
/// The composition root fills it as it installs the domains.
#[derive(Clone, Default)]
pub struct Events {
    registry: Arc<RwLock<Arc<Registry>>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.registry();
        f.debug_struct("Events")
            .field(
                "types",
                &self.declared().iter().map(|t| t.name).collect::<Vec<_>>(),
            )
            .field("listeners", &r.listeners)
            .finish()
    }
}

impl Events {
    /// What domain `owner` brings: the event types it declares and the listeners its
    /// install step made. Installing a domain again (a second worker set on the same
    /// platform) replaces its own entry and leaves the others'.
    pub fn register(
        &self,
        owner: &'static str,
        types: &'static [&'static EventType],
        listeners: Vec<AnyListener>,
    ) -> Result<(), EventError> {
        let mut slot = self.registry.write().unwrap_or_else(|p| p.into_inner());
        let mut entries = slot.entries.clone();
        let entry = Entry {
            owner,
            types,
            listeners,
        };
        match entries.iter_mut().find(|e| e.owner == owner) {
            Some(e) => *e = entry,
            None => entries.push(entry),
        }
        let mut seen = HashSet::new();
        let mut all = entries.iter().flat_map(|e| e.types.iter());
        if let Some(twice) = all.find(|t| !seen.insert(t.name)) {
            return Err(EventError::Duplicate(twice.name));
        }
        *slot = Arc::new(Registry::new(entries));
        Ok(())
    }

    /// Every declared event type, in the order the domains were installed.
    pub fn declared(&self) -> Vec<&'static EventType> {
        self.registry()
            .entries
            .iter()
            .flat_map(|e| e.types.iter().copied())
            .collect()
    }

    fn registry(&self) -> Arc<Registry> {
        self.registry
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// What the listeners want of `users`' events (one query per listener at most; none
    /// without users), for a recorder that builds bodies only when wanted.
    pub async fn interest<C: ConnectionTrait>(
        &self,
        txn: &C,
        users: &[&str],
    ) -> Result<Interest, EventError> {
        let mut interest = Interest::new(self.registry());
        interest.cover(&Txn::new(txn), users).await?;
        Ok(interest)
    }

    /// Records `events` in `txn`: every listener hears those it wants, in `txn`.
    pub async fn record<C: ConnectionTrait>(
        &self,
        txn: &C,
        events: Vec<Event>,
    ) -> Result<(), EventError> {
        if events.is_empty() {
            return Ok(());
        }
        let users: Vec<&str> = events.iter().map(|e| e.user_id.as_str()).collect();
        let interest = self.interest(txn, &users).await?;
        interest.record(txn, events).await
    }
}

#[cfg(test)]
mod tests;
