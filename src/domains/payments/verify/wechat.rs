//! WeChat Pay API v3 notifications: RSA-SHA256 over `timestamp\nnonce\nbody\n` with the
//! platform key chosen by serial, then the `resource` decrypted with AEAD_AES_256_GCM.

use aws_lc_rs::aead;
use base64::Engine as _;

use super::{BASE64_ENGINE as BASE64, Refused, RsaPublicKey, fresh};

/// The `Wechatpay-*` headers of a notification.
#[derive(Debug, Clone)]
pub struct WechatHeaders<'a> {
    pub timestamp: &'a str,
    pub nonce: &'a str,
    pub signature: &'a str,
    pub serial: &'a str,
}

/// The encrypted `resource` of a WeChat Pay v3 notification.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct WechatResource {
    pub algorithm: String,
    pub ciphertext: String,
    #[serde(default)]
    pub associated_data: String,
    pub nonce: String,
}

/// A verified WeChat Pay notification: its id (the inbox key; empty if absent), its event
/// type and the decrypted `resource`.
#[derive(Debug, PartialEq, Eq)]
pub struct WechatNotification {
    pub id: String,
    pub event_type: String,
    pub plain: Vec<u8>,
}

/// Verifies a WeChat Pay v3 notification with the platform key named by the serial, then
/// decrypts its `resource` with the APIv3 key (32 bytes).
pub fn wechat(
    headers: &WechatHeaders<'_>,
    body: &[u8],
    platform_keys: &[(String, RsaPublicKey)],
    api_v3_key: &[u8],
    now: i64,
    window_secs: i64,
) -> Result<WechatNotification, Refused> {
    let t: i64 = headers
        .timestamp
        .parse()
        .map_err(|_| Refused::Malformed("Wechatpay-Timestamp is not a number"))?;
    fresh(t, now, window_secs)?;
    let key = platform_keys
        .iter()
        .find(|(serial, _)| serial == headers.serial)
        .map(|(_, k)| k)
        .ok_or(Refused::UnknownKey)?;
    let sig = BASE64
        .decode(headers.signature)
        .map_err(|_| Refused::Malformed("Wechatpay-Signature is not base64"))?;
    let mut signed = format!("{}\n{}\n", headers.timestamp, headers.nonce).into_bytes();
    signed.extend_from_slice(body);
    signed.push(b'\n');
    key.verify(&signed, &sig)?;
    #[derive(serde::Deserialize)]
    struct Notification {
        #[serde(default)]
        id: String,
        #[serde(default)]
        event_type: String,
        resource: WechatResource,
    }
    let n: Notification =
        serde_json::from_slice(body).map_err(|_| Refused::Malformed("not a notification"))?;
    Ok(WechatNotification {
        plain: decrypt_resource(&n.resource, api_v3_key)?,
        id: n.id,
        event_type: n.event_type,
    })
}

/// AEAD_AES_256_GCM with the APIv3 key: the resource's nonce (12 bytes) and associated
/// data; the ciphertext is base64 with the 16-byte tag at its end.
pub fn decrypt_resource(r: &WechatResource, api_v3_key: &[u8]) -> Result<Vec<u8>, Refused> {
    if r.algorithm != "AEAD_AES_256_GCM" {
        return Err(Refused::Malformed(
            "resource algorithm is not AEAD_AES_256_GCM",
        ));
    }
    let nonce = aead::Nonce::try_assume_unique_for_key(r.nonce.as_bytes())
        .map_err(|_| Refused::Malformed("resource nonce is not 12 bytes"))?;
    let key = aead::UnboundKey::new(&aead::AES_256_GCM, api_v3_key)
        .map_err(|_| Refused::Malformed("APIv3 key is not 32 bytes"))?;
    let mut data = BASE64
        .decode(&r.ciphertext)
        .map_err(|_| Refused::Malformed("ciphertext is not base64"))?;
    let plain = aead::LessSafeKey::new(key)
        .open_in_place(
            nonce,
            aead::Aad::from(r.associated_data.as_bytes()),
            &mut data,
        )
        .map_err(|_| Refused::BadSignature)?;
    Ok(plain.to_vec())
}
