//! Presigned uploads (S3): a PUT URL signed (SigV4, query string) over the host, the
//! `Content-Type`, the `Content-Length` and, when the client declared one, the
//! `x-amz-checksum-sha256`. The store refuses a PUT whose headers differ from what was
//! declared (403), so a URL cannot carry another type or size than the one the quota and
//! the checks saw; where the store checks the checksum (AWS S3 does) it refuses other
//! bytes too.
//!
//! Signed here rather than by `object_store`, whose `signed_url_opts` reserves
//! `content-length` for its own requests; the URL itself (endpoint, virtual host or path
//! style, the object's path) is still `object_store`'s.

use std::fmt::Write as _;
use std::time::Duration;

use aws_lc_rs::{digest, hmac};
use base64::Engine as _;
use chrono::{DateTime, Utc};
use object_store::aws::AmazonS3;
use object_store::signer::Signer as _;

use super::StorageError;
use super::settings::StorageSettings;

/// What the PUT must carry, each part signed into its URL.
#[derive(Debug, Clone)]
pub struct UploadTerms<'a> {
    pub content_type: &'a str,
    pub content_length: u64,
    /// Hex SHA-256 of the bytes, if the client declared it.
    pub sha256: Option<&'a str>,
}

/// A presigned PUT and the headers it must be sent with (`Content-Length` is not
/// listed: every client sets it from the body, and browsers do not let scripts set it).
#[derive(Debug, Clone)]
pub struct PresignedPut {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub expires_at: DateTime<Utc>,
}

/// The checksum header's value: base64 of the digest, as S3 takes it.
pub fn checksum_header(sha256_hex: &str) -> Option<String> {
    let bytes = hex::decode(sha256_hex).ok().filter(|b| b.len() == 32)?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// RFC 3986 encoding as SigV4 wants it: unreserved characters as they are, the rest
/// `%XX` in upper case.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(digest::digest(&digest::SHA256, data).as_ref())
}

fn hmac_sha256(key: &[u8], data: &str) -> Vec<u8> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    hmac::sign(&key, data.as_bytes()).as_ref().to_vec()
}

/// A PUT of `path` under `terms`, good for `ttl` from `now`.
pub(super) async fn put_url(
    s3: &AmazonS3,
    settings: &StorageSettings,
    path: &object_store::path::Path,
    terms: &UploadTerms<'_>,
    ttl: Duration,
    now: DateTime<Utc>,
) -> Result<PresignedPut, StorageError> {
    // object_store's own presign, for the URL only: its query is replaced below.
    let mut url = s3
        .signed_url(object_store::signer::Method::PUT, path, ttl)
        .await?;
    url.set_query(None);
    let host = url[url::Position::BeforeHost..url::Position::AfterPort].to_owned();

    let mut required: Vec<(&'static str, String)> =
        vec![("Content-Type", terms.content_type.trim().to_owned())];
    let mut signed: Vec<(&str, String)> = vec![
        ("content-length", terms.content_length.to_string()),
        ("content-type", terms.content_type.trim().to_owned()),
        ("host", host),
    ];
    if let Some(sum) = terms.sha256 {
        let value = checksum_header(sum).ok_or_else(|| {
            StorageError::Store(object_store::Error::Generic {
                store: "S3",
                source: "a SHA-256 must be 64 hex digits".into(),
            })
        })?;
        required.push(("x-amz-checksum-sha256", value.clone()));
        signed.push(("x-amz-checksum-sha256", value));
    }
    signed.sort_by(|a, b| a.0.cmp(b.0));
    let signed_names = signed.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(";");
    let canonical_headers: String = signed.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();

    let date = now.format("%Y%m%d").to_string();
    let stamp = now.format("%Y%m%dT%H%M%SZ").to_string();
    let scope = format!("{date}/{}/s3/aws4_request", settings.region);
    let mut query = [
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256".to_owned()),
        (
            "X-Amz-Credential",
            format!("{}/{scope}", settings.access_key_id),
        ),
        ("X-Amz-Date", stamp.clone()),
        ("X-Amz-Expires", ttl.as_secs().to_string()),
        ("X-Amz-SignedHeaders", signed_names.clone()),
    ];
    query.sort_by(|a, b| a.0.cmp(b.0));
    let canonical_query = query
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    // The path as the URL carries it (S3 encodes it once, and object_store did).
    let canonical_request = format!(
        "PUT\n{}\n{canonical_query}\n{canonical_headers}\n{signed_names}\nUNSIGNED-PAYLOAD",
        url.path()
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let mut key = hmac_sha256(
        format!("AWS4{}", settings.secret_access_key).as_bytes(),
        &date,
    );
    for part in [settings.region.as_str(), "s3", "aws4_request"] {
        key = hmac_sha256(&key, part);
    }
    let signature = hex::encode(hmac_sha256(&key, &string_to_sign));
    url.set_query(Some(&format!(
        "{canonical_query}&X-Amz-Signature={signature}"
    )));
    Ok(PresignedPut {
        url: url.to_string(),
        headers: required,
        expires_at: now + ttl,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_sigv4_wants() {
        assert_eq!(encode("a-b_c.d~e"), "a-b_c.d~e");
        assert_eq!(encode("k/2026;x y"), "k%2F2026%3Bx%20y");
    }

    #[test]
    fn checksums_are_base64_of_the_digest() {
        // SHA-256 of the empty string.
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(
            checksum_header(hex).unwrap(),
            "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
        assert!(checksum_header("zz").is_none());
        assert!(checksum_header("abcd").is_none());
    }
}
