//! The local store's download URLs: `/v1/files/<key>?exp=<unix seconds>&sig=<hex>`, where
//! `sig` is HMAC-SHA256 over the key and the expiry under `storage.url_secret`. A URL
//! is good for exactly one key until `exp`; altering either breaks the signature, and
//! verification is constant-time (`aws_lc_rs::hmac::verify`).

use aws_lc_rs::hmac;
use chrono::{DateTime, Utc};

use super::key::Key;

/// Why a signed URL was refused (all answered 403, the reason only logged).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UrlError {
    #[error("the URL has expired")]
    Expired,
    #[error("the signature does not match")]
    BadSignature,
}

#[derive(Clone)]
pub struct UrlSigner {
    key: hmac::Key,
}

impl std::fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UrlSigner(..)")
    }
}

fn message(key: &Key, exp: i64) -> String {
    format!("GET\n{key}\n{exp}")
}

impl UrlSigner {
    /// Signs with `secret`; an empty one gets a random key (URLs then die with the
    /// process: the settings say so).
    pub fn new(secret: &str) -> Self {
        let secret = secret.trim();
        let bytes: Vec<u8> = if secret.is_empty() {
            rand::random::<[u8; 32]>().to_vec()
        } else {
            secret.as_bytes().to_vec()
        };
        UrlSigner {
            key: hmac::Key::new(hmac::HMAC_SHA256, &bytes),
        }
    }

    /// `?exp=&sig=` for `key` until `exp`.
    pub fn query(&self, key: &Key, exp: DateTime<Utc>) -> String {
        let exp = exp.timestamp();
        let sig = hmac::sign(&self.key, message(key, exp).as_bytes());
        format!("exp={exp}&sig={}", hex::encode(sig.as_ref()))
    }

    /// Whether `sig` signs `key` until `exp`, and `exp` is still ahead of `now`.
    pub fn verify(
        &self,
        key: &Key,
        exp: i64,
        sig: &str,
        now: DateTime<Utc>,
    ) -> Result<(), UrlError> {
        let tag = hex::decode(sig).map_err(|_| UrlError::BadSignature)?;
        hmac::verify(&self.key, message(key, exp).as_bytes(), &tag)
            .map_err(|_| UrlError::BadSignature)?;
        if now.timestamp() >= exp {
            return Err(UrlError::Expired);
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_good_for_one_key_until_it_expires() {
        let s = UrlSigner::new("a-url-secret-of-at-least-32-characters!");
        let k = Key::new("u1", "image", "a", "png").unwrap();
        let other = Key::new("u2", "image", "a", "png").unwrap();
        let now = Utc::now();
        let q = s.query(&k, now + chrono::Duration::seconds(60));
        let (exp, sig) = q.split_once('&').unwrap();
        let exp: i64 = exp.trim_start_matches("exp=").parse().unwrap();
        let sig = sig.trim_start_matches("sig=");
        assert_eq!(s.verify(&k, exp, sig, now), Ok(()));
        assert_eq!(s.verify(&other, exp, sig, now), Err(UrlError::BadSignature));
        assert_eq!(
            s.verify(&k, exp + 3600, sig, now),
            Err(UrlError::BadSignature)
        );
        assert_eq!(s.verify(&k, exp, "zz", now), Err(UrlError::BadSignature));
        assert_eq!(
            s.verify(&k, exp, sig, now + chrono::Duration::seconds(61)),
            Err(UrlError::Expired)
        );
        // Another secret (another deployment) does not accept it.
        let s2 = UrlSigner::new("another-url-secret-of-32-characters!!");
        assert_eq!(s2.verify(&k, exp, sig, now), Err(UrlError::BadSignature));
    }
}
