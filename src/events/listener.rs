//! What a domain implements to react to events: a [`Listener`] (asked once per recording
//! which of its tenants' events it wants, then handed those events in the recorder's
//! transaction) and its [`Wants`]. [`AnyListener`] is a listener as the seam keeps it,
//! whatever its `Wants` type.

use std::any::Any;
use std::sync::Arc;

use super::txn::Txn;
use super::{Event, EventError, EventType, Interest};

/// What a listener wants of the events of the tenants it was asked about.
pub trait Wants: Send + Sync + 'static {
    /// Whether it wants `user`'s events of type `kind`.
    fn wants(&self, user: &str, kind: &EventType) -> bool;

    /// It wants nothing at all (a caller with costly bodies builds none).
    fn is_empty(&self) -> bool;

    /// Adds what was looked up for more tenants (events recorded by a listener in turn,
    /// for a tenant the recorder did not name).
    fn merge(&mut self, more: Self)
    where
        Self: Sized;
}

/// A domain's reaction to events, in the transaction that records them. Registered by
/// the domain's install step (`Installed::listener`).
#[async_trait::async_trait]
pub trait Listener: Send + Sync + 'static {
    type Wants: Wants;

    /// For errors.
    fn name(&self) -> &'static str;

    /// What it wants of `users`' events: at most one indexed query in `txn` (none for a
    /// listener that wants every event of its types), never called with no users.
    async fn interest(&self, txn: &Txn<'_>, users: &[&str]) -> Result<Self::Wants, EventError>;

    /// Hears `events` (those `wants` wants) in the recorder's transaction. Events it
    /// records in turn go to [`Then::record`]; every listener hears them next.
    async fn hear(
        &self,
        txn: &Txn<'_>,
        wants: &Self::Wants,
        events: &[&Event],
        then: &mut Then<'_>,
    ) -> Result<(), EventError>;
}

/// What a listener records in turn while it hears (search sync: the materials it made
/// from tasks' outputs), and whether anyone wants it, so its body is built only then.
pub struct Then<'a> {
    pub(super) interest: &'a Interest,
    pub(super) more: &'a mut Vec<Event>,
}

impl Then<'_> {
    /// Whether a listener wants `user`'s events of type `kind` (true for a tenant not
    /// looked up yet: it will be before the event is heard).
    pub fn wants(&self, user: &str, kind: &EventType) -> bool {
        self.interest.wants(user, kind)
    }

    /// Records `event` after this round, in the same transaction.
    pub fn record(&mut self, event: Event) {
        self.more.push(event);
    }
}

/// A listener's wants, whatever its type.
pub(super) type Found = Box<dyn Any + Send + Sync>;

/// A listener as the seam keeps it: its `Wants` type erased.
#[derive(Clone)]
pub struct AnyListener(pub(super) Arc<dyn Erased>);

impl AnyListener {
    pub fn new(listener: impl Listener) -> Self {
        AnyListener(Arc::new(listener))
    }
}

impl std::fmt::Debug for AnyListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AnyListener").field(&self.0.name()).finish()
    }
}

/// [`Listener`] with its `Wants` behind `Any`.
#[async_trait::async_trait]
pub(super) trait Erased: Send + Sync {
    fn name(&self) -> &'static str;
    async fn interest(&self, txn: &Txn<'_>, users: &[&str]) -> Result<Found, EventError>;
    fn wants(&self, found: &Found, user: &str, kind: &EventType) -> bool;
    fn is_empty(&self, found: &Found) -> bool;
    fn merge(&self, into: &mut Found, more: Found) -> Result<(), EventError>;
    async fn hear(
        &self,
        txn: &Txn<'_>,
        found: &Found,
        events: &[&Event],
        then: &mut Then<'_>,
    ) -> Result<(), EventError>;
}

fn mine<'f, W: Wants>(name: &'static str, found: &'f Found) -> Result<&'f W, EventError> {
    found
        .downcast_ref::<W>()
        .ok_or(EventError::Mismatch { listener: name })
}

#[async_trait::async_trait]
impl<L: Listener> Erased for L {
    fn name(&self) -> &'static str {
        Listener::name(self)
    }

    async fn interest(&self, txn: &Txn<'_>, users: &[&str]) -> Result<Found, EventError> {
        Ok(Box::new(Listener::interest(self, txn, users).await?))
    }

    fn wants(&self, found: &Found, user: &str, kind: &EventType) -> bool {
        mine::<L::Wants>(Listener::name(self), found).is_ok_and(|w| w.wants(user, kind))
    }

    fn is_empty(&self, found: &Found) -> bool {
        mine::<L::Wants>(Listener::name(self), found).map_or(true, Wants::is_empty)
    }

    fn merge(&self, into: &mut Found, more: Found) -> Result<(), EventError> {
        let name = Listener::name(self);
        let more = more
            .downcast::<L::Wants>()
            .map_err(|_| EventError::Mismatch { listener: name })?;
        into.downcast_mut::<L::Wants>()
            .ok_or(EventError::Mismatch { listener: name })?
            .merge(*more);
        Ok(())
    }

    async fn hear(
        &self,
        txn: &Txn<'_>,
        found: &Found,
        events: &[&Event],
        then: &mut Then<'_>,
    ) -> Result<(), EventError> {
        let wants = mine::<L::Wants>(Listener::name(self), found)?;
        Listener::hear(self, txn, wants, events, then).await
    }
}
