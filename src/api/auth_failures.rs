//! Failed authentication, kept cheap: a key that just failed is refused again from a
//! short negative cache (no database lookup), and a peer that failed too often in the
//! current minute is refused 429 before its keys are looked up at all. Without them,
//! every random key an attacker sends costs a database query, unbounded.
//!
//! The peer is the TCP peer. Behind a reverse proxy every client shares the proxy's
//! address: raise `auth.failed_per_minute` there (or set it to 0 and limit at the proxy).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a key that failed is refused without a lookup. Keys are random: one that
/// does not exist now will not exist in a minute, unless it was being created at that
/// very moment (then it works after this).
const NEGATIVE_TTL: Duration = Duration::from_secs(60);
/// The window failures are counted in.
const WINDOW: Duration = Duration::from_secs(60);
/// Above this many remembered keys or peers a map starts over (a bound, not an LRU).
const MAX_ENTRIES: usize = 10_000;

/// The TCP peer of a request, put in its extensions by the server loop.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub IpAddr);

pub struct Failures {
    /// Key hash → refused until.
    recent: Mutex<HashMap<String, Instant>>,
    /// Peer → (its window's start, failures in it).
    peers: Mutex<HashMap<IpAddr, (Instant, u32)>>,
    /// Failures a peer may have per window; 0: no limit.
    per_window: u32,
}

impl Failures {
    /// At most `per_minute` failed authentications per peer (0: no limit).
    pub fn new(per_minute: u32) -> Self {
        Failures {
            recent: Mutex::default(),
            peers: Mutex::default(),
            per_window: per_minute,
        }
    }

    /// Whether this key hash failed within the last minute.
    pub fn known_bad(&self, hash: &str) -> bool {
        self.recent
            .lock()
            .ok()
            .and_then(|r| r.get(hash).copied())
            .is_some_and(|until| Instant::now() < until)
    }

    /// How long the peer must wait, if it used up its failures in this window.
    pub fn peer_blocked(&self, peer: Option<Peer>) -> Option<Duration> {
        let Peer(ip) = peer?;
        if self.per_window == 0 {
            return None;
        }
        let peers = self.peers.lock().ok()?;
        let (start, count) = *peers.get(&ip)?;
        let left = WINDOW.checked_sub(start.elapsed())?;
        (count >= self.per_window).then_some(left)
    }

    /// Records one failure of `hash` from `peer`.
    pub fn record(&self, hash: &str, peer: Option<Peer>) {
        if let Ok(mut recent) = self.recent.lock() {
            if recent.len() >= MAX_ENTRIES {
                recent.clear();
            }
            recent.insert(hash.to_owned(), Instant::now() + NEGATIVE_TTL);
        }
        let Some(Peer(ip)) = peer else {
            return;
        };
        if let Ok(mut peers) = self.peers.lock() {
            if peers.len() >= MAX_ENTRIES {
                peers.retain(|_, (start, _)| start.elapsed() < WINDOW);
            }
            let entry = peers.entry(ip).or_insert((Instant::now(), 0));
            if entry.0.elapsed() >= WINDOW {
                *entry = (Instant::now(), 0);
            }
            entry.1 = entry.1.saturating_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_blocked_after_its_failures_and_a_bad_key_is_remembered() {
        let f = Failures::new(3);
        let peer = Some(Peer(IpAddr::from([10, 0, 0, 1])));
        let other = Some(Peer(IpAddr::from([10, 0, 0, 2])));
        for i in 0..3 {
            assert!(f.peer_blocked(peer).is_none(), "after {i}");
            f.record(&format!("k{i}"), peer);
        }
        let wait = f.peer_blocked(peer).expect("blocked");
        assert!(wait <= WINDOW && wait > Duration::from_secs(50));
        assert!(f.peer_blocked(other).is_none());
        assert!(f.peer_blocked(None).is_none());
        assert!(f.known_bad("k1") && !f.known_bad("k9"));
        assert!(Failures::new(0).peer_blocked(peer).is_none());
    }
}
