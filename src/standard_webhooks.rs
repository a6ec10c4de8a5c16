//! Signatures as Standard Webhooks define them (standardwebhooks.com; Replicate signs its
//! callbacks this way, as do Svix and the many APIs built on it, and conveyor signs its
//! outgoing webhooks so): `webhook-id`, `webhook-timestamp` and
//! `webhook-signature` headers; the signature is base64 HMAC-SHA256 of
//! `{id}.{timestamp}.{body}` with the secret (`whsec_` + base64), listed as `v1,<sig>`
//! (several, space-separated, while a secret rotates). A timestamp more than five
//! minutes away is refused, so a captured callback cannot be replayed later.

use aws_lc_rs::hmac;
use axum::http::HeaderMap;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

/// How far a callback's timestamp may be from now.
pub const TOLERANCE_SECS: i64 = 300;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("the callback has no {0} header")]
    Missing(&'static str),
    #[error("the callback's timestamp is not within {TOLERANCE_SECS} s of now")]
    Stale,
    #[error("the callback's signature does not match")]
    Mismatch,
    #[error("the configured webhook_secret is not `whsec_` + base64")]
    BadSecret,
}

/// The secret's key bytes (`whsec_` + base64; a bare base64 is taken too).
fn key_of(secret: &str) -> Result<hmac::Key, SignatureError> {
    let b64 = secret.strip_prefix("whsec_").unwrap_or(secret);
    let bytes = BASE64.decode(b64).map_err(|_| SignatureError::BadSecret)?;
    Ok(hmac::Key::new(hmac::HMAC_SHA256, &bytes))
}

/// The `webhook-signature` value for `body` (what a provider sends; the tests sign with it).
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<String, SignatureError> {
    let key = key_of(secret)?;
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(format!("{id}.{timestamp}.").as_bytes());
    ctx.update(body);
    Ok(format!("v1,{}", BASE64.encode(ctx.sign().as_ref())))
}

/// Checks a callback's headers and body against `secret` at unix time `now`.
pub fn verify(
    secret: &str,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let header = |name: &'static str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .ok_or(SignatureError::Missing(name))
    };
    let id = header("webhook-id")?;
    let timestamp: i64 = header("webhook-timestamp")?
        .parse()
        .map_err(|_| SignatureError::Stale)?;
    if (now - timestamp).abs() > TOLERANCE_SECS {
        return Err(SignatureError::Stale);
    }
    let key = key_of(secret)?;
    let mut signed = format!("{id}.{timestamp}.").into_bytes();
    signed.extend_from_slice(body);
    let matches = header("webhook-signature")?
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .filter_map(|s| BASE64.decode(s).ok())
        .any(|sig| hmac::verify(&key, &signed, &sig).is_ok());
    if matches {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Standard Webhooks' published example: this secret, id, timestamp and body sign to
    /// this value.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn headers(sig: &str, ts: i64) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("webhook-id", ID.parse().unwrap());
        h.insert("webhook-timestamp", ts.to_string().parse().unwrap());
        h.insert("webhook-signature", sig.parse().unwrap());
        h
    }

    #[test]
    fn the_published_example_verifies_and_tampering_does_not() {
        assert_eq!(sign(SECRET, ID, TS, BODY).unwrap(), SIG);
        verify(SECRET, &headers(SIG, TS), BODY, TS + 10).unwrap();
        // Rotation: any listed signature may match.
        verify(SECRET, &headers(&format!("v1,AAAA {SIG}"), TS), BODY, TS).unwrap();
        assert_eq!(
            verify(SECRET, &headers(SIG, TS), br#"{"test": 1}"#, TS),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(SECRET, &headers(SIG, TS), BODY, TS + TOLERANCE_SECS + 1),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify(SECRET, &HeaderMap::new(), BODY, TS),
            Err(SignatureError::Missing("webhook-id"))
        );
        assert_eq!(
            verify("whsec_***", &headers(SIG, TS), BODY, TS),
            Err(SignatureError::BadSecret)
        );
    }
}
