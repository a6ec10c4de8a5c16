//! This process run's name: `host:pid:run`, unique among the instances sharing a broker
//! (the run part tells a restarted process from the one before it under the same pid).
//! The ops reports name their process with it, and a message's failure history names
//! the consumer it failed in.

use std::sync::OnceLock;

/// Made once per process.
pub fn name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
        format!(
            "{host}:{}:{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        )
    })
}
