//! `[server]` (the HTTP listener) and `[auth]` (API keys, failed authentication): the
//! HTTP kit's settings and their checks.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `[server]`: the HTTP listener.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    pub host: String,
    pub port: u16,
    pub request_timeout_ms: u64,
    pub body_limit_bytes: usize,
    pub shutdown_grace_ms: u64,
    /// A client must send a whole request header within this, and a keep-alive
    /// connection idle this long between requests is closed.
    pub header_read_timeout_ms: u64,
    /// The largest request head (request line and headers) read; at least 8192.
    pub max_header_bytes: usize,
    /// Connections served at once; more are closed at accept.
    pub max_connections: usize,
    /// Operators' bearer token for `/metrics` and `/readyz` detail; empty: none.
    pub ops_token: String,
}

/// `[auth]`: API keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// A rotated key keeps working this long beside its successor.
    pub key_rotation_overlap_secs: u64,
    /// Requests with an invalid API key one address may make per minute; past it, the
    /// address is refused 429 until the minute ends (0: no limit).
    pub failed_per_minute: u32,
}

/// The shortest operator token accepted: a guessable one is no token.
const MIN_TOKEN_BYTES: usize = 16;

impl ServerSettings {
    /// A server reachable beyond this machine must have an operator token: without one
    /// `/metrics` (business counters, broker node addresses) is open to anyone who can
    /// reach the port. Checked by `serve`, which is what binds `server.host`.
    pub fn check_exposure(&self) -> Result<(), ConfigError> {
        let loopback = match self.host.as_str() {
            "localhost" => true,
            host => host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback()),
        };
        if loopback || !self.ops_token.is_empty() {
            return Ok(());
        }
        Err(ConfigError::Invalid {
            key: "server.ops_token",
            problem: format!(
                "must be set when server.host ({}) is not a loopback address: /metrics would be open to the network",
                self.host
            ),
        })
    }
}

impl ServerSettings {
    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.request_timeout_ms == 0 {
            return bad("server.request_timeout_ms", "must be greater than 0");
        }
        if self.header_read_timeout_ms == 0 || self.max_connections == 0 {
            return bad(
                "server.header_read_timeout_ms",
                "server.header_read_timeout_ms and server.max_connections must be above 0",
            );
        }
        let token = &self.ops_token;
        if !token.is_empty()
            && (token.len() < MIN_TOKEN_BYTES || token.contains(char::is_whitespace))
        {
            return bad(
                "server.ops_token",
                "must be empty (none) or at least 16 characters without spaces",
            );
        }
        // hyper's own floor: it refuses a smaller read buffer.
        if self.max_header_bytes < 8192 {
            return bad("server.max_header_bytes", "must be at least 8192");
        }
        if self.body_limit_bytes < 1024 {
            return bad("server.body_limit_bytes", "must be at least 1024");
        }
        Ok(())
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
}

impl AuthSettings {
    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        // A year at most: a later expiry does not fit every database's timestamp column.
        if self.key_rotation_overlap_secs > 366 * 24 * 3600 {
            return bad(
                "auth.key_rotation_overlap_secs",
                "must be at most a year (31622400)",
            );
        }
        Ok(())
    }
}

/// `Err` naming `key`.
fn bad(key: &'static str, problem: &str) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid {
        key,
        problem: problem.to_owned(),
    })
}
