//! `[storage]`: where files live (a local directory or an S3-compatible bucket), how
//! download URLs are signed, and the size limits and quota uploads meet.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Files under `storage.root`: nothing to install.
    Local,
    /// An S3-compatible bucket: AWS S3, Aliyun OSS, MinIO, Cloudflare R2, SeaweedFS.
    S3,
}

/// `[storage]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSettings {
    pub backend: Backend,
    /// The local store's directory.
    pub root: String,
    /// A folder inside the store that holds everything of this deployment (several
    /// deployments, or test runs, sharing one bucket); empty: the store's top, on the
    /// local store only (S3 refuses it at start-up: the collector would sweep the bucket).
    pub prefix: String,
    /// The S3 endpoint (`https://oss-cn-hangzhou.aliyuncs.com`, `http://127.0.0.1:8333`);
    /// empty: AWS's, from `region`.
    pub endpoint: String,
    pub region: String,
    pub bucket: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    /// `bucket` in the path (MinIO, SeaweedFS) instead of the host name (AWS, OSS).
    pub path_style: bool,
    /// Lets `endpoint` be plain http (a store on the same host or network only).
    pub allow_http: bool,
    /// HMAC key of the local store's download URLs (`/v1/files/...?exp=&sig=`), 32+
    /// characters. Empty: a random key per process, so URLs die with the process and one
    /// instance's URLs fail on another; set it when more than one API instance serves.
    pub url_secret: String,
    /// How long a download URL works.
    pub url_ttl_secs: u64,
    /// How long a presigned upload URL (S3) works.
    pub presign_ttl_secs: u64,
    /// Largest upload by purpose.
    pub max_image_bytes: u64,
    pub max_video_bytes: u64,
    pub max_audio_bytes: u64,
    /// Bytes a tenant may keep (uploads and generated files).
    pub quota_bytes: u64,
    /// Part size of multipart writes: the most of one upload held in memory at once.
    pub part_bytes: usize,
    /// A deleted file's bytes are removed this long after the delete.
    pub delete_grace_secs: u64,
    /// An upload still PENDING this long is abandoned: its reservation and bytes go.
    pub pending_ttl_secs: u64,
    /// How often the collector runs (removals due, abandoned uploads, orphaned objects).
    pub sweep_secs: u64,
    /// Addresses a provider's output URL may be fetched from although they are not public
    /// (a provider on the private network; loopback in tests). Empty: public addresses
    /// only, on the first URL and on every redirect (`crate::net::guard`).
    pub ingest_private_addresses: Vec<std::net::IpAddr>,
}

impl StorageSettings {
    /// The largest upload of `purpose`.
    pub fn max_bytes(&self, purpose: super::sniff::Purpose) -> u64 {
        use super::sniff::Purpose;
        match purpose {
            Purpose::Image => self.max_image_bytes,
            Purpose::Video => self.max_video_bytes,
            Purpose::Audio => self.max_audio_bytes,
        }
    }

    /// What types cannot say, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, problem: &str| {
            Err(ConfigError::Invalid {
                key,
                problem: problem.into(),
            })
        };
        if self.backend == Backend::Local && self.root.trim().is_empty() {
            return invalid("storage.root", "must name a directory");
        }
        if self.backend == Backend::S3 {
            if self.bucket.is_empty() {
                return invalid("storage.bucket", "must be set with backend = \"s3\"");
            }
            if self.access_key_id.is_empty() || self.secret_access_key.is_empty() {
                return invalid(
                    "storage.secret_access_key",
                    "access_key_id and secret_access_key must be set with backend = \"s3\"",
                );
            }
            // The collector removes objects no row knows: at the top of a bucket other
            // applications share, those would be theirs.
            if self.prefix.is_empty() {
                return invalid(
                    "storage.prefix",
                    "must be set with backend = \"s3\": the collector removes every object \
                     under it that no row knows, so conveyor needs a folder of its own",
                );
            }
        }
        if !self.prefix.is_empty()
            && !self
                .prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return invalid(
                "storage.prefix",
                "may hold only letters, digits, '-' and '_'",
            );
        }
        if !self.url_secret.is_empty() && self.url_secret.trim().len() < 32 {
            return invalid(
                "storage.url_secret",
                "must be empty or at least 32 characters",
            );
        }
        if self.url_ttl_secs == 0 || self.presign_ttl_secs == 0 {
            return invalid(
                "storage.url_ttl_secs",
                "URL lifetimes must be greater than 0",
            );
        }
        // S3 refuses parts under 5 MiB (but the last); the local store does not care.
        if self.part_bytes < 5 * 1024 * 1024 {
            return invalid(
                "storage.part_bytes",
                "must be at least 5242880 (S3's minimum part)",
            );
        }
        if self.sweep_secs == 0 {
            return invalid("storage.sweep_secs", "must be greater than 0");
        }
        Ok(())
    }
}
