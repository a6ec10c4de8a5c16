//! Alipay's asynchronous notifies: form parameters, RSA2 (SHA256withRSA, base64) over
//! every parameter but `sign` and `sign_type`, sorted by key, `k=v` joined by `&`.

use std::collections::BTreeMap;

use super::{BASE64_ENGINE as BASE64, Refused, RsaPublicKey};
use base64::Engine as _;

/// The string Alipay signs: every parameter but `sign` and `sign_type`, non-empty
/// values, sorted by key, `k=v` joined by `&`.
pub fn alipay_signed_string(params: &BTreeMap<String, String>) -> String {
    params
        .iter()
        .filter(|(k, v)| k.as_str() != "sign" && k.as_str() != "sign_type" && !v.is_empty())
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// A verified notify's parameters, and whether a key was given more than once (the
/// last one is kept; the caller refuses such a notify).
#[derive(Debug, PartialEq, Eq)]
pub struct AlipayParams {
    pub params: BTreeMap<String, String>,
    pub repeated: bool,
}

impl AlipayParams {
    pub fn get(&self, key: &str) -> Option<&String> {
        self.params.get(key)
    }
}

/// Verifies an Alipay asynchronous notify (form-encoded `body`) with Alipay's public key;
/// returns its parameters.
pub fn alipay(body: &[u8], key: &RsaPublicKey) -> Result<AlipayParams, Refused> {
    let mut params = BTreeMap::new();
    let mut repeated = false;
    for (k, v) in form_urlencoded::parse(body).into_owned() {
        repeated |= params.insert(k, v).is_some();
    }
    if params.get("sign_type").is_some_and(|t| t != "RSA2") {
        return Err(Refused::Malformed("sign_type is not RSA2"));
    }
    let sig = params
        .get("sign")
        .ok_or(Refused::Malformed("no sign"))
        .and_then(|s| {
            BASE64
                .decode(s)
                .map_err(|_| Refused::Malformed("sign is not base64"))
        })?;
    key.verify(alipay_signed_string(&params).as_bytes(), &sig)?;
    Ok(AlipayParams { params, repeated })
}
