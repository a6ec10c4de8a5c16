//! `AuthUser`: the caller, from `Authorization: Bearer <api key>`. Identities are cached
//! for a few seconds per key hash, so a request costs no key lookup; balances are never
//! read from the cache (handlers that show credits re-read the user).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;

use super::Core;
use super::auth_failures::{Failures, Peer};
use crate::error::ApiError;
use crate::users::{self, User};

/// How long a key → user mapping is trusted. A revocation is announced to every instance
/// (which drops the entry at once); this bounds it when the announcement is lost.
const TTL: Duration = Duration::from_secs(10);
/// Above this many entries the cache starts over (a bound, not an LRU).
const MAX_ENTRIES: usize = 10_000;

#[derive(Debug, Clone)]
pub struct AuthUser(pub User);

/// The SHA-256 of the caller's bearer key (not checked: put it after [`AuthUser`]), for
/// what must end when that key is revoked (a ticket's socket, an SSE stream).
#[derive(Debug, Clone)]
pub struct CallerKey(pub String);

impl<S: Send + Sync> FromRequestParts<S> for CallerKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        bearer(&parts.headers)
            .map(|key| CallerKey(users::hash_key(key)))
            .ok_or(ApiError::unauthorized())
    }
}

/// The bearer token of `Authorization: Bearer <token>`, trimmed.
pub(crate) fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// The caller, who must be an admin (`users create --admin`): 401 without a valid key,
/// 403 for anyone else.
#[derive(Debug, Clone)]
pub struct Admin(pub User);

impl<S> FromRequestParts<S> for Admin
where
    Core: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let AuthUser(user) = AuthUser::from_request_parts(parts, state).await?;
        if user.role() == users::Role::Admin {
            Ok(Admin(user))
        } else {
            Err(ApiError::forbidden())
        }
    }
}

pub struct AuthCache {
    /// Key hash → (user, trusted until).
    entries: Mutex<HashMap<String, (User, Instant)>>,
    /// Bumped by every forget: a lookup that began before one must not store what it
    /// read (the key may have been revoked after the read and before the store).
    generation: std::sync::atomic::AtomicU64,
    /// Keys that just failed, and peers that fail too often.
    failures: Failures,
}

impl AuthCache {
    /// At most `failed_per_minute` failed authentications per peer (0: no limit).
    pub fn new(failed_per_minute: u32) -> Self {
        AuthCache {
            entries: Mutex::default(),
            generation: Default::default(),
            failures: Failures::new(failed_per_minute),
        }
    }

    fn get(&self, hash: &str) -> Option<User> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(hash)
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(u, _)| u.clone())
    }

    /// The failed-authentication budget (shared with other credentials: WebSocket tickets).
    pub fn failures(&self) -> &Failures {
        &self.failures
    }

    /// Drops a key's identity (it was revoked): its next request is checked again.
    pub fn forget(&self, hash: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            entries.remove(hash);
        }
    }

    /// Drops every cached identity.
    pub fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            entries.clear();
        }
    }

    fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Trusts the identity for the TTL, or until the key expires if that is sooner;
    /// not at all if a forget happened since `read_at` (the generation before the read).
    fn put(
        &self,
        hash: String,
        user: User,
        key_expires: Option<chrono::DateTime<chrono::Utc>>,
        read_at: u64,
    ) {
        let mut ttl = TTL;
        if let Some(at) = key_expires {
            let left = (at - chrono::Utc::now()).to_std().unwrap_or_default();
            ttl = ttl.min(left);
        }
        if let Ok(mut entries) = self.entries.lock() {
            if self.generation() != read_at {
                return;
            }
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(hash, (user, Instant::now() + ttl));
        }
    }
}

impl<S> FromRequestParts<S> for AuthUser
where
    Core: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = Core::from_ref(state);
        let key = bearer(&parts.headers).ok_or(ApiError::unauthorized())?;
        let hash = users::hash_key(key);
        let cache = &state.auth_cache;
        if let Some(user) = cache.get(&hash) {
            return Ok(AuthUser(user));
        }
        // Below, every answer but a known key's costs a lookup: bounded per peer (a key
        // that worked here lately is still looked up from a blocked address).
        let peer = parts.extensions.get::<Peer>().copied();
        if let Some(wait) = cache.failures.peer_blocked(peer)
            && !cache.failures.known_good(&hash)
        {
            metrics::counter!("conveyor_limit_refusals_total", "limit" => "failed_auth")
                .increment(1);
            return Err(ApiError::too_many(
                "too_many_failed_authentications",
                "too many requests with invalid API keys from this address".into(),
                wait.as_secs().max(1),
            ));
        }
        if !key.starts_with(users::KEY_PREFIX) || cache.failures.known_bad(&hash) {
            cache.failures.record(&hash, peer);
            return Err(ApiError::unauthorized());
        }
        // Hashed once above, for the cache and the lookup both.
        let read_at = cache.generation();
        let Some((user, key_expires)) = users::authenticate_key(&state.db, &hash).await? else {
            cache.failures.record(&hash, peer);
            return Err(ApiError::unauthorized());
        };
        cache.failures.succeeded(&hash);
        cache.put(hash, user.clone(), key_expires, read_at);
        Ok(AuthUser(user))
    }
}
