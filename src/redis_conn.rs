//! A Redis connection for a URL from the settings, the one way every Redis user of the
//! platform connects (the dedupe store, the tenants' rates, the providers' fleet limits,
//! a domain's own keys such as the flash-sale stock): the same bounded connect and
//! response times everywhere, so a Redis that does not answer never hangs a request, and
//! no module reaches into another's backend to borrow its connection code.

use std::time::Duration;

use redis::aio::ConnectionManager;

/// An auto-reconnecting multiplexed connection to `url`, with bounded connect and
/// response times; the error names the URL without its password.
pub async fn connection(url: &str) -> Result<ConnectionManager, String> {
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(3)))
        .set_response_timeout(Some(Duration::from_secs(3)));
    tokio::time::timeout(
        Duration::from_secs(5),
        client.get_connection_manager_with_config(config),
    )
    .await
    .map_err(|_| format!("connecting to {} timed out", crate::config::mask_url(url)))?
    .map_err(|e| e.to_string())
}
