//! One listener per API instance, routing live events to the connections that follow
//! them: the bus's [`EVENTS`] topic, decoded only while a connection of this instance
//! listens, and each event handed only to the connections following its thing (by id)
//! or its owner (a `subscribe all`), framed once for all of them. A thousand connections
//! each following its own stream cost one lookup per event, not a thousand wake-ups.
//!
//! A connection [`Hub::listen`]s and gets two halves: [`Taps`], what it follows (it must
//! tap a thing *before* reading its snapshot, so nothing falls in between), and
//! [`Events`], its queue. A queue that fills (a connection that stopped reading) drops
//! what does not fit and says so once ([`Recv::Lagged`]): the connection re-reads the
//! store, as every follower that fell behind does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::event::{Body, EVENTS, Shared};
use crate::bus::Bus;

/// Events waiting per connection before it counts as lagging.
const QUEUE: usize = 1024;

#[derive(Clone)]
pub struct Hub {
    routes: Arc<Routes>,
    bus: Bus,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("listeners", &self.routes.listeners.load(Ordering::Relaxed))
            .finish()
    }
}

/// One connection's way in.
#[derive(Clone)]
struct Tap {
    conn: u64,
    tx: mpsc::Sender<Arc<Shared>>,
    lagged: Arc<AtomicBool>,
}

#[derive(Default)]
struct Routes {
    by_id: Mutex<HashMap<String, Vec<Tap>>>,
    by_owner: Mutex<HashMap<String, Vec<Tap>>>,
    listeners: AtomicUsize,
    next: AtomicU64,
}

impl Routes {
    /// Hands `event` to every connection following its thing or its owner, once each.
    /// Sent while the routes are locked (`try_send` never waits): no copy of the
    /// routing lists per event, which at ten thousand followers cost more than the sends.
    fn route(&self, event: super::Event) {
        let (Ok(by_id), Ok(by_owner)) = (self.by_id.lock(), self.by_owner.lock()) else {
            return;
        };
        let of_id = by_id.get(&event.id).map_or(&[][..], Vec::as_slice);
        let of_owner = by_owner.get(&event.owner).map_or(&[][..], Vec::as_slice);
        if of_id.is_empty() && of_owner.is_empty() {
            return;
        }
        // The push, as a span of the trace that made the event (traces on).
        let span = match event.traceparent.as_deref().filter(|_| crate::traces::on()) {
            Some(tp) => {
                let span = tracing::info_span!("push", otel.name = %format_args!("push {}", event.stream), stream = %event.stream, seq = event.seq, subscribers = of_id.len() + of_owner.len());
                crate::traces::adopt(&span, Some(tp));
                span
            }
            None => tracing::Span::none(),
        };
        let _pushing = span.enter();
        let shared = Shared::new(event);
        let send = |tap: &Tap| {
            if let Err(mpsc::error::TrySendError::Full(_)) = tap.tx.try_send(shared.clone()) {
                tap.lagged.store(true, Ordering::Release);
            }
        };
        of_id.iter().for_each(send);
        // A connection on both routes gets one copy. The thing's followers are few (a
        // connection under `all` is not also tapped by id for its owner's things), so a
        // scan of them beats building a set, up to a point.
        let many = (of_id.len() > 16).then(|| {
            of_id
                .iter()
                .map(|t| t.conn)
                .collect::<std::collections::HashSet<_>>()
        });
        let sent = |conn: u64| match &many {
            Some(set) => set.contains(&conn),
            None => of_id.iter().any(|t| t.conn == conn),
        };
        of_owner.iter().filter(|t| !sent(t.conn)).for_each(send);
    }
}

fn listen(routes: &Arc<Routes>) -> (Taps, Events) {
    let (tx, rx) = mpsc::channel(QUEUE);
    let lagged = Arc::new(AtomicBool::new(false));
    let conn = routes.next.fetch_add(1, Ordering::Relaxed);
    routes.listeners.fetch_add(1, Ordering::Relaxed);
    let taps = Taps {
        tap: Tap {
            conn,
            tx: tx.clone(),
            lagged: lagged.clone(),
        },
        routes: routes.clone(),
        ids: Vec::new(),
        owners: Vec::new(),
    };
    (
        taps,
        Events {
            rx,
            lagged,
            _tx: tx,
        },
    )
}

fn add(map: &Mutex<HashMap<String, Vec<Tap>>>, key: &str, tap: &Tap) {
    if let Ok(mut m) = map.lock() {
        let taps = m.entry(key.to_owned()).or_default();
        if !taps.iter().any(|t| t.conn == tap.conn) {
            taps.push(tap.clone());
        }
    }
}

fn remove(map: &Mutex<HashMap<String, Vec<Tap>>>, key: &str, conn: u64) {
    if let Ok(mut m) = map.lock()
        && let Some(taps) = m.get_mut(key)
    {
        taps.retain(|t| t.conn != conn);
        if taps.is_empty() {
            m.remove(key);
        }
    }
}

impl Hub {
    /// Takes this instance's live events from `bus`.
    pub fn start(bus: &Bus) -> Self {
        let routes = Arc::new(Routes::default());
        let r = routes.clone();
        bus.on(&EVENTS, move |body| {
            // Nobody listening on this instance: skip decoding.
            if r.listeners.load(Ordering::Relaxed) == 0 {
                return;
            }
            match serde_json::from_slice::<Body>(body) {
                Ok(Body::One(event)) => r.route(event),
                Ok(Body::Many(batch)) => batch.into_iter().for_each(|e| r.route(e)),
                Err(e) => tracing::debug!(error = %e, "ignored a message that is not a live event"),
            }
        });
        Hub {
            routes,
            bus: bus.clone(),
        }
    }

    /// A new connection's halves: what it follows, and its queue.
    pub fn listen(&self) -> (Taps, Events) {
        listen(&self.routes)
    }

    /// The bus the hub listens on (streams also watch key notices on it).
    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    /// The ids followed on this instance, at most `max` of them from the `skip`-th on
    /// (wrapping around), so successive rounds over many ids cover them all.
    pub fn followed(&self, skip: usize, max: usize) -> Vec<String> {
        self.routes
            .by_id
            .lock()
            .map(|m| {
                let n = m.len().max(1);
                m.keys()
                    .cycle()
                    .skip(skip % n)
                    .take(max.min(m.len()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Hands events computed on this instance (never published: only its own
    /// connections follow them here) to the connections following their things.
    pub fn deliver(&self, events: Vec<super::Event>) {
        for e in events {
            self.routes.route(e);
        }
    }
}

/// What one connection follows; dropping it stops them all.
pub struct Taps {
    tap: Tap,
    routes: Arc<Routes>,
    ids: Vec<String>,
    owners: Vec<String>,
}

impl Taps {
    /// Receives the events of thing `id` from now on.
    pub fn follow(&mut self, id: &str) {
        if !self.ids.iter().any(|i| i == id) {
            add(&self.routes.by_id, id, &self.tap);
            self.ids.push(id.to_owned());
        }
    }

    pub fn unfollow(&mut self, id: &str) {
        if let Some(at) = self.ids.iter().position(|i| i == id) {
            self.ids.swap_remove(at);
            remove(&self.routes.by_id, id, self.tap.conn);
        }
    }

    /// Receives the events of everything `owner` owns from now on.
    pub fn follow_owner(&mut self, owner: &str) {
        if !self.owners.iter().any(|o| o == owner) {
            add(&self.routes.by_owner, owner, &self.tap);
            self.owners.push(owner.to_owned());
        }
    }

    pub fn unfollow_owner(&mut self, owner: &str) {
        if let Some(at) = self.owners.iter().position(|o| o == owner) {
            self.owners.swap_remove(at);
            remove(&self.routes.by_owner, owner, self.tap.conn);
        }
    }
}

impl Drop for Taps {
    fn drop(&mut self) {
        for id in std::mem::take(&mut self.ids) {
            remove(&self.routes.by_id, &id, self.tap.conn);
        }
        for owner in std::mem::take(&mut self.owners) {
            remove(&self.routes.by_owner, &owner, self.tap.conn);
        }
        self.routes.listeners.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One connection's queue of live events.
pub struct Events {
    rx: mpsc::Receiver<Arc<Shared>>,
    lagged: Arc<AtomicBool>,
    /// Keeps the queue open while nothing is followed.
    _tx: mpsc::Sender<Arc<Shared>>,
}

/// What [`Events::recv`] gives.
pub enum Recv {
    Event(Arc<Shared>),
    /// Events were dropped because the queue was full: re-read the store.
    Lagged,
}

impl Events {
    pub async fn recv(&mut self) -> Recv {
        if self.lagged.swap(false, Ordering::AcqRel) {
            return Recv::Lagged;
        }
        match self.rx.recv().await {
            Some(e) => Recv::Event(e),
            // Unreachable while `_tx` lives; a connection treats it as a lag.
            None => Recv::Lagged,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn event(id: &str, owner: &str, seq: i64) -> super::super::Event {
        super::super::Event::new("task", id, owner, seq, serde_json::Map::new())
    }

    async fn next(ev: &mut Events) -> Option<(String, i64)> {
        match tokio::time::timeout(std::time::Duration::from_millis(50), ev.recv()).await {
            Ok(Recv::Event(s)) => Some((s.event.id.clone(), s.event.seq)),
            Ok(Recv::Lagged) => Some(("lagged".into(), 0)),
            Err(_) => None,
        }
    }

    #[tokio::test]
    async fn events_reach_only_their_followers_and_a_full_queue_says_it_lagged() {
        let routes = Arc::new(Routes::default());
        let (mut a, mut a_events) = listen(&routes);
        let (mut b, mut b_events) = listen(&routes);
        a.follow("t1");
        b.follow_owner("u2");
        b.follow("t1");
        routes.route(event("t1", "u1", 1));
        routes.route(event("t2", "u2", 1));
        routes.route(event("t3", "u3", 1));
        assert_eq!(next(&mut a_events).await, Some(("t1".into(), 1)));
        assert_eq!(next(&mut a_events).await, None, "not t2 nor t3");
        assert_eq!(next(&mut b_events).await, Some(("t1".into(), 1)));
        assert_eq!(next(&mut b_events).await, Some(("t2".into(), 1)));
        assert_eq!(next(&mut b_events).await, None);
        // Both routes to one connection: one copy.
        b.follow_owner("u1");
        routes.route(event("t1", "u1", 2));
        assert_eq!(next(&mut b_events).await, Some(("t1".into(), 2)));
        assert_eq!(next(&mut b_events).await, None);
        assert_eq!(next(&mut a_events).await, Some(("t1".into(), 2)));
        a.unfollow("t1");
        routes.route(event("t1", "u1", 3));
        assert_eq!(next(&mut a_events).await, None, "unfollowed");
        // A connection that stops reading: what does not fit is dropped, once said.
        a.follow("t9");
        for seq in 0..(QUEUE as i64 + 10) {
            routes.route(event("t9", "u9", seq));
        }
        assert_eq!(next(&mut a_events).await, Some(("lagged".into(), 0)));
        assert_eq!(next(&mut a_events).await, Some(("t9".into(), 0)));
        drop(b);
        assert_eq!(routes.listeners.load(Ordering::Relaxed), 1);
        assert!(
            routes.by_owner.lock().unwrap().is_empty(),
            "b's routes gone"
        );
    }
}
