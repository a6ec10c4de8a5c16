//! Webhook signature verification for the three schemes payment providers use, on the
//! raw body before anything parses it, with aws-lc-rs (already compiled in as rustls'
//! provider) for RSA, HMAC and AES-GCM; every comparison is constant-time.
//!
//! - [`hmac_sha256`]: Stripe-style `t=<unix>,v1=<hex hmac-sha256("t.body")>` (several
//!   `v1` for secret rotation), with a timestamp window.
//! - [`alipay`]: form parameters, RSA2 (SHA256withRSA, base64) over every parameter but
//!   `sign` and `sign_type`, sorted by key, `k=v` joined by `&`.
//! - [`wechat`]: WeChat Pay API v3, RSA-SHA256 over `timestamp\nnonce\nbody\n` with the
//!   platform key chosen by serial, then the `resource` decrypted with AEAD_AES_256_GCM.

mod alipay;
mod hmac;
#[cfg(test)]
mod tests;
mod wechat;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
pub(super) use base64::engine::general_purpose::STANDARD as BASE64_ENGINE;
use rustls_pki_types::SubjectPublicKeyInfoDer;
use rustls_pki_types::pem::PemObject as _;

pub use alipay::{AlipayParams, alipay, alipay_signed_string};
pub use hmac::{MAX_SIGNATURE_HEADER, MAX_SIGNATURES, SignatureHeader, hmac_sha256};
pub use wechat::{WechatHeaders, WechatNotification, WechatResource, decrypt_resource, wechat};

/// Why a webhook was refused. The reason is logged and counted; nothing of the body is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("malformed: {0}")]
    Malformed(&'static str),
    #[error("signature does not verify")]
    BadSignature,
    #[error("timestamp outside the allowed window")]
    Expired,
    #[error("unknown key serial")]
    UnknownKey,
}

impl Refused {
    /// The metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            Refused::Malformed(_) => "malformed",
            Refused::BadSignature => "bad_signature",
            Refused::Expired => "expired",
            Refused::UnknownKey => "unknown_key",
        }
    }
}

/// An RSA public key from a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) block, or from the
/// bare base64 of its DER (how Alipay hands its key out). Checked when it is read, so a
/// bad key in the configuration stops the start-up, not the first webhook.
#[derive(Clone)]
pub struct RsaPublicKey(Vec<u8>);

impl RsaPublicKey {
    pub fn from_pem_or_base64(text: &str) -> Result<Self, &'static str> {
        let der = match SubjectPublicKeyInfoDer::from_pem_slice(text.as_bytes()) {
            Ok(spki) => spki.as_ref().to_vec(),
            Err(_) => {
                let compact: String = text.split_whitespace().collect();
                BASE64
                    .decode(compact)
                    .map_err(|_| "not a PEM public key nor base64 DER")?
            }
        };
        aws_lc_rs::rsa::PublicEncryptingKey::from_der(&der)
            .map_err(|_| "not an RSA public key (SubjectPublicKeyInfo)")?;
        Ok(RsaPublicKey(der))
    }

    pub(super) fn verify(&self, message: &[u8], sig: &[u8]) -> Result<(), Refused> {
        aws_lc_rs::signature::UnparsedPublicKey::new(
            &aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256,
            &self.0,
        )
        .verify(message, sig)
        .map_err(|_| Refused::BadSignature)
    }
}

/// Whether `t` (unix seconds) is within `window_secs` of `now` (either side: a clock a
/// little ahead is fine, a replay from an hour ago is not).
pub fn fresh(t: i64, now: i64, window_secs: i64) -> Result<(), Refused> {
    // abs_diff: a `t` near i64::MIN must not overflow (it is the sender's number).
    if now.abs_diff(t) <= window_secs.unsigned_abs() {
        Ok(())
    } else {
        Err(Refused::Expired)
    }
}
