//! In-process dedupe store: a map of key → (value, expiry) behind a mutex, swept of
//! expired entries as it grows.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{Claim, DONE, DedupeError, DedupeStore};

pub struct EmbeddedDedupe {
    prefix: String,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<String, (String, Instant)>,
    /// Size at which the next sweep of expired entries runs.
    sweep_at: usize,
}

fn poisoned<T>(_: T) -> DedupeError {
    DedupeError::Unavailable("embedded dedupe store poisoned by a panic".into())
}

impl EmbeddedDedupe {
    pub fn new(prefix: &str) -> Self {
        EmbeddedDedupe {
            prefix: format!("{prefix}:msg:"),
            entries: Mutex::new(Entries {
                map: HashMap::new(),
                sweep_at: 1024,
            }),
        }
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }
}

#[async_trait]
impl DedupeStore for EmbeddedDedupe {
    async fn claim(&self, key: &str, lease: Duration) -> Result<(Claim, String), DedupeError> {
        let token = uuid::Uuid::new_v4().to_string();
        let now = Instant::now();
        let mut e = self.entries.lock().map_err(poisoned)?;
        if e.map.len() >= e.sweep_at {
            e.map.retain(|_, (_, exp)| *exp > now);
            e.sweep_at = (e.map.len() * 2).max(1024);
        }
        let key = self.key(key);
        let claim = match e.map.get(&key) {
            Some((v, exp)) if *exp > now => {
                if v == DONE {
                    Claim::Done
                } else {
                    Claim::InProgress
                }
            }
            _ => {
                e.map.insert(key, (token.clone(), now + lease));
                Claim::Acquired
            }
        };
        Ok((claim, token))
    }

    async fn complete(&self, key: &str, ttl: Duration) -> Result<(), DedupeError> {
        let mut e = self.entries.lock().map_err(poisoned)?;
        e.map
            .insert(self.key(key), (DONE.to_owned(), Instant::now() + ttl));
        Ok(())
    }

    async fn renew(&self, key: &str, token: &str, lease: Duration) -> Result<bool, DedupeError> {
        let now = Instant::now();
        let mut e = self.entries.lock().map_err(poisoned)?;
        match e.map.get_mut(&self.key(key)) {
            Some((v, exp)) if v == token && *exp > now => {
                *exp = now + lease;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release(&self, key: &str, token: &str) -> Result<(), DedupeError> {
        let mut e = self.entries.lock().map_err(poisoned)?;
        let key = self.key(key);
        if e.map.get(&key).is_some_and(|(v, _)| v == token) {
            e.map.remove(&key);
        }
        Ok(())
    }

    async fn forget(&self, key: &str) -> Result<(), DedupeError> {
        self.entries
            .lock()
            .map_err(poisoned)?
            .map
            .remove(&self.key(key));
        Ok(())
    }

    async fn ping(&self) -> Result<(), DedupeError> {
        Ok(())
    }
}
