//! `AuthUser`: the caller, from `Authorization: Bearer <api key>`. Identities are cached
//! for a few seconds per key hash, so a request costs no key lookup; balances are never
//! read from the cache (handlers that show credits re-read the user).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;

use super::Core;
use crate::error::ApiError;
use crate::users::{self, User};

/// How long a key → user mapping is trusted; a revoked key stops working within this.
const TTL: Duration = Duration::from_secs(10);
/// Above this many entries the cache starts over (a bound, not an LRU).
const MAX_ENTRIES: usize = 10_000;

#[derive(Debug, Clone)]
pub struct AuthUser(pub User);

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
            Err(ApiError::Forbidden)
        }
    }
}

#[derive(Debug, Default)]
pub struct AuthCache {
    entries: Mutex<HashMap<String, (User, Instant)>>,
}

impl AuthCache {
    fn get(&self, hash: &str) -> Option<User> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(hash)
            .filter(|(_, at)| at.elapsed() < TTL)
            .map(|(u, _)| u.clone())
    }

    fn put(&self, hash: String, user: User) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(hash, (user, Instant::now()));
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
        let key = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or(ApiError::Unauthorized)?;
        let hash = users::hash_key(key);
        if let Some(user) = state.auth_cache.get(&hash) {
            return Ok(AuthUser(user));
        }
        if !key.starts_with(users::KEY_PREFIX) {
            return Err(ApiError::Unauthorized);
        }
        // Hashed once above, for the cache and the lookup both.
        let user = users::authenticate_hash(&state.db, &hash)
            .await?
            .ok_or(ApiError::Unauthorized)?;
        state.auth_cache.put(hash, user.clone());
        Ok(AuthUser(user))
    }
}
