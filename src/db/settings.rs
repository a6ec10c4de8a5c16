//! `[database]`: the database connection and its group commit.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `[database]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSettings {
    pub url: String,
    pub max_connections: u32,
    pub migrate_on_start: bool,
    /// Submission batches committing at once (group commit); SQLite always uses one.
    pub group_commit_writers: u32,
    /// How long a less-than-half-full submission batch waits for more.
    pub group_commit_linger_ms: u64,
}

impl DatabaseSettings {
    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let scheme = self.url.split(':').next().unwrap_or_default();
        if !["sqlite", "mysql", "mariadb", "postgres", "postgresql"].contains(&scheme) {
            return bad(
                "database.url",
                "must start with sqlite:, mysql:, mariadb:, postgres: or postgresql:",
            );
        }
        if self.max_connections == 0 {
            return bad("database.max_connections", "must be greater than 0");
        }
        if self.group_commit_writers == 0 || self.group_commit_writers > self.max_connections {
            return bad(
                "database.group_commit_writers",
                "must be between 1 and database.max_connections",
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
