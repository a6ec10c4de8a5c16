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
/// `v1,` entries read from one `webhook-signature`: a sender lists one, or two while a
/// secret rotates.
pub const MAX_SIGNATURES: usize = 4;
/// The longest `webhook-signature` read: [`MAX_SIGNATURES`] entries of 44 base64
/// characters fit with room to spare. A longer one is refused before anything is hashed.
pub const MAX_SIGNATURE_HEADER: usize = 512;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("the callback has no {0} header")]
    Missing(&'static str),
    #[error("the callback's timestamp is not within {TOLERANCE_SECS} s of now")]
    Stale,
    #[error("the callback's signature does not match")]
    Mismatch,
    #[error("the callback's webhook-signature is malformed: {0}")]
    Malformed(&'static str),
    #[error("the configured webhook_secret is not `whsec_` + base64")]
    BadSecret,
}

/// The secret's key bytes (`whsec_` + base64; a bare base64 is taken too).
fn key_of(secret: &str) -> Result<hmac::Key, SignatureError> {
    let b64 = secret.strip_prefix("whsec_").unwrap_or(secret);
    let bytes = BASE64.decode(b64).map_err(|_| SignatureError::BadSecret)?;
    Ok(hmac::Key::new(hmac::HMAC_SHA256, &bytes))
}

/// The tag of `{id}.{timestamp}.{body}`.
fn tag(key: &hmac::Key, id: &str, timestamp: i64, body: &[u8]) -> hmac::Tag {
    let mut ctx = hmac::Context::with_key(key);
    ctx.update(format!("{id}.{timestamp}.").as_bytes());
    ctx.update(body);
    ctx.sign()
}

/// The `webhook-signature` value for `body` (what a provider sends; the tests sign with it).
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<String, SignatureError> {
    let key = key_of(secret)?;
    Ok(format!(
        "v1,{}",
        BASE64.encode(tag(&key, id, timestamp, body).as_ref())
    ))
}

/// The `v1,` tags of a `webhook-signature`, read and bounded: at most
/// [`MAX_SIGNATURES`] of exactly 32 bytes. Reading costs no hashing, so a header built to
/// make the verifier work (thousands of entries) is refused for the price of a scan.
fn tags(header: &str) -> Result<Vec<[u8; 32]>, SignatureError> {
    if header.len() > MAX_SIGNATURE_HEADER {
        return Err(SignatureError::Malformed("longer than 512 bytes"));
    }
    let mut tags = Vec::new();
    // Other versions (v1a, …) are skipped, as the scheme says.
    for entry in header.split(' ').filter_map(|s| s.strip_prefix("v1,")) {
        if tags.len() == MAX_SIGNATURES {
            return Err(SignatureError::Malformed("more than 4 v1 entries"));
        }
        let mut tag = [0u8; 32];
        match BASE64.decode_slice(entry, &mut tag) {
            Ok(32) => tags.push(tag),
            _ => {
                return Err(SignatureError::Malformed(
                    "a v1 entry is not 32 bytes of base64",
                ));
            }
        }
    }
    if tags.is_empty() {
        return Err(SignatureError::Malformed("no v1 entry"));
    }
    Ok(tags)
}

/// Checks a callback's headers and body against `secret` at unix time `now`: one HMAC
/// however many entries are listed, compared with each in constant time.
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
    // abs_diff: the timestamp is the sender's number; one near i64::MIN must not overflow.
    if now.abs_diff(timestamp) > TOLERANCE_SECS.unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    let listed = tags(header("webhook-signature")?)?;
    let key = key_of(secret)?;
    let expected = tag(&key, id, timestamp, body);
    let matches = listed.iter().fold(false, |any, t| {
        any | bool::from(subtle::ConstantTimeEq::ct_eq(&t[..], expected.as_ref()))
    });
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
        let other = format!("v1,{}", BASE64.encode([7u8; 32]));
        verify(SECRET, &headers(&format!("{other} {SIG}"), TS), BODY, TS).unwrap();
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

    /// A header built to make the verifier work is refused before any hashing, and a
    /// timestamp at the ends of i64 is stale, not an overflow.
    #[test]
    fn entries_and_arithmetic_are_bounded() {
        let many = format!("{SIG} ").repeat(MAX_SIGNATURES + 1);
        assert!(matches!(
            verify(SECRET, &headers(many.trim(), TS), BODY, TS),
            Err(SignatureError::Malformed(_))
        ));
        let long = format!("v1x,{} {SIG}", "A".repeat(MAX_SIGNATURE_HEADER));
        assert!(matches!(
            verify(SECRET, &headers(&long, TS), BODY, TS),
            Err(SignatureError::Malformed(_))
        ));
        assert!(matches!(
            verify(SECRET, &headers("v1,AAAA", TS), BODY, TS),
            Err(SignatureError::Malformed(_))
        ));
        // Four listed: still one HMAC, any may match.
        let four = format!(
            "{} {SIG}",
            format!("v1,{} ", BASE64.encode([1u8; 32])).repeat(3)
        );
        verify(SECRET, &headers(four.trim(), TS), BODY, TS).unwrap();
        for ts in [i64::MIN, i64::MAX] {
            assert_eq!(
                verify(SECRET, &headers(SIG, ts), BODY, TS),
                Err(SignatureError::Stale)
            );
            assert_eq!(
                verify(SECRET, &headers(SIG, TS), BODY, ts),
                Err(SignatureError::Stale)
            );
        }
    }
}
