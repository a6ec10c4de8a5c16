//! Signing secrets: `whsec_` + base64 of 24 random bytes, as Standard Webhooks' libraries
//! take them.

use base64::Engine as _;
use rand::RngCore as _;

pub fn generate() -> String {
    let mut key = [0u8; 24];
    rand::rng().fill_bytes(&mut key);
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(key)
    )
}
