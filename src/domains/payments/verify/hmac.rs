//! The Stripe-style scheme: `t=<unix>,v1=<hex hmac-sha256("t.body")>`, several `v1`
//! during a secret rotation, with a timestamp window.

use aws_lc_rs::hmac;

use super::{Refused, fresh};

/// The longest `conveyor-signature` header read: `t=` and [`MAX_SIGNATURES`] `v1=`
/// entries of 64 hex characters fit with room to spare. A longer one is malformed before
/// anything is hashed.
pub const MAX_SIGNATURE_HEADER: usize = 512;
/// `v1=` entries read from one header: a provider sends one, or two during a rotation.
pub const MAX_SIGNATURES: usize = 4;
/// Hex characters of one `v1=` entry (an HMAC-SHA256 tag).
const TAG_HEX: usize = 64;

/// A `t=…,v1=…[,v1=…]` header, read and bounded: at most [`MAX_SIGNATURES`] tags of
/// exactly 32 bytes each. Reading it costs no hashing, so a header built to make the
/// verifier work (thousands of entries, empty ones) is refused for the price of a scan.
#[derive(Debug, PartialEq, Eq)]
pub struct SignatureHeader {
    pub t: i64,
    tags: Vec<[u8; 32]>,
}

impl SignatureHeader {
    pub fn parse(header: &str) -> Result<Self, Refused> {
        if header.len() > MAX_SIGNATURE_HEADER {
            return Err(Refused::Malformed("signature header too long"));
        }
        let mut t = None;
        let mut tags = Vec::new();
        for part in header.split(',') {
            match part.trim().split_once('=') {
                Some(("t", v)) => {
                    if t.is_some() {
                        return Err(Refused::Malformed("more than one t="));
                    }
                    t = Some(
                        v.parse::<i64>()
                            .map_err(|_| Refused::Malformed("t is not a number"))?,
                    )
                }
                Some(("v1", v)) => {
                    if tags.len() == MAX_SIGNATURES {
                        return Err(Refused::Malformed("too many v1= entries"));
                    }
                    let mut tag = [0u8; 32];
                    if v.len() != TAG_HEX || hex::decode_to_slice(v, &mut tag).is_err() {
                        return Err(Refused::Malformed("v1 is not 64 hex characters"));
                    }
                    tags.push(tag);
                }
                Some(_) => {} // other schemes (v0, …) are ignored
                None => return Err(Refused::Malformed("expected k=v pairs")),
            }
        }
        let t = t.ok_or(Refused::Malformed("no t="))?;
        if tags.is_empty() {
            return Err(Refused::Malformed("no v1="));
        }
        Ok(SignatureHeader { t, tags })
    }
}

/// Verifies a `t=…,v1=…[,v1=…]` header over `body` with any of `secrets` (rotation);
/// `now` and `window_secs` in seconds: [`SignatureHeader::parse`], then
/// [`SignatureHeader::verify`].
pub fn hmac_sha256(
    header: &str,
    body: &[u8],
    secrets: &[&[u8]],
    now: i64,
    window_secs: i64,
) -> Result<(), Refused> {
    SignatureHeader::parse(header)?.verify(body, secrets, now, window_secs)
}

impl SignatureHeader {
    /// Checks the timestamp, then computes the tag once per secret (never once per
    /// candidate) and compares it with every candidate in constant time.
    pub fn verify(
        &self,
        body: &[u8],
        secrets: &[&[u8]],
        now: i64,
        window_secs: i64,
    ) -> Result<(), Refused> {
        fresh(self.t, now, window_secs)?;
        let t = self.t.to_string();
        for secret in secrets {
            let mut ctx = hmac::Context::with_key(&hmac::Key::new(hmac::HMAC_SHA256, secret));
            ctx.update(t.as_bytes());
            ctx.update(b".");
            ctx.update(body);
            let tag = ctx.sign();
            #[cfg(test)]
            super::tests::HMACS.with(|n| n.set(n.get() + 1));
            // Every candidate is compared, so the time taken says nothing of which matched.
            let matched = self.tags.iter().fold(false, |found, candidate| {
                let same =
                    aws_lc_rs::constant_time::verify_slices_are_equal(tag.as_ref(), candidate);
                found | same.is_ok()
            });
            if matched {
                return Ok(());
            }
        }
        Err(Refused::BadSignature)
    }
}
