//! Failed authentication, kept cheap: a key that just failed is refused again from a
//! short negative cache (no database lookup), and a peer that failed too often in the
//! current minute is refused 429 before its keys are looked up at all. Without them,
//! every random key an attacker sends costs a database query, unbounded.
//!
//! A blocked address does not lock its honest users out: a key that authenticated on this
//! instance within the last day is still looked up (random keys never are), so a tenant
//! behind the same NAT as an attacker keeps working. The peer is the TCP peer, IPv6
//! counted per /64 (one host's usual allocation). Behind a reverse proxy every client
//! shares the proxy's address: raise `auth.failed_per_minute` there (or set it to 0 and
//! limit at the proxy).

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
/// How long a key that authenticated is still looked up from a blocked address.
const KNOWN_GOOD: Duration = Duration::from_secs(24 * 3600);
/// Above this many remembered keys or peers a map starts over (a bound, not an LRU).
const MAX_ENTRIES: usize = 10_000;

/// The TCP peer of a request, put in its extensions by the server loop.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub IpAddr);

pub struct Failures {
    /// Key hash → refused until.
    recent: Mutex<HashMap<String, Instant>>,
    /// Key hash → when it last authenticated (see the module doc).
    good: Mutex<HashMap<String, Instant>>,
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
            good: Mutex::default(),
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

    /// Whether this key hash authenticated here within [`KNOWN_GOOD`].
    pub fn known_good(&self, hash: &str) -> bool {
        self.good
            .lock()
            .ok()
            .and_then(|g| g.get(hash).copied())
            .is_some_and(|at| at.elapsed() < KNOWN_GOOD)
    }

    /// Records a key hash that authenticated.
    pub fn succeeded(&self, hash: &str) {
        if let Ok(mut good) = self.good.lock() {
            if good.len() >= MAX_ENTRIES * 10 {
                good.retain(|_, at| at.elapsed() < KNOWN_GOOD);
                if good.len() >= MAX_ENTRIES * 10 {
                    good.clear();
                }
            }
            good.insert(hash.to_owned(), Instant::now());
        }
    }

    /// How long the peer must wait, if it used up its failures in this window.
    pub fn peer_blocked(&self, peer: Option<Peer>) -> Option<Duration> {
        let ip = counted(peer?);
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
        let Some(peer) = peer else {
            return;
        };
        let ip = counted(peer);
        if let Ok(mut peers) = self.peers.lock() {
            if peers.len() >= MAX_ENTRIES {
                peers.retain(|_, (start, _)| start.elapsed() < WINDOW);
                // Still full of live windows (an attack from many addresses): start over
                // rather than scan this map on every failure.
                if peers.len() >= MAX_ENTRIES {
                    peers.clear();
                }
            }
            let entry = peers.entry(ip).or_insert((Instant::now(), 0));
            if entry.0.elapsed() >= WINDOW {
                *entry = (Instant::now(), 0);
            }
            entry.1 = entry.1.saturating_add(1);
        }
    }
}

/// The address failures are counted under: IPv4 as it is, IPv6 by its /64.
fn counted(Peer(ip): Peer) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(std::net::Ipv6Addr::from(prefix))
            }
        },
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
        // IPv6 hosts of one /64 share a budget.
        let v6 = |last: u16| Some(Peer(IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, last])));
        for i in 0..3 {
            f.record(&format!("v6-{i}"), v6(i));
        }
        assert!(f.peer_blocked(v6(99)).is_some());
        assert!(
            f.peer_blocked(Some(Peer(IpAddr::from([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]))))
                .is_none()
        );
        f.succeeded("good");
        assert!(f.known_good("good") && !f.known_good("k1"));
    }
}
