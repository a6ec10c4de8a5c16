//! Media storage: uploads and generated files in an object store, through the
//! `object_store` crate's one API over a local directory (the embedded default,
//! `./data/objects`) and S3-compatible services (AWS S3, Aliyun OSS, MinIO, R2,
//! SeaweedFS). Messages and rows carry keys, never bytes.
//!
//! - [`key`]: `<tenant>/<purpose>/<id>.<ext>`, every part checked.
//! - [`sniff`]: what a file is from its bytes; what each purpose accepts.
//! - [`write`]: streamed writes (size, SHA-256 and kind on the way, bounded memory).
//! - [`ingest`]: a provider's output URL streamed into the store (never handed on),
//!   through the SSRF guard.
//! - [`read`]: whole and ranged reads, heads, deletes, listings.
//! - [`signing`]: the local store's HMAC-signed download URLs; S3 presigns its own.
//! - [`presign`]: presigned uploads bound to their declared type, size and checksum.
//! - [`local`]: a stored file on this machine, for tools that read files (ffprobe).
//! - [`range`]: the `Range` header of a download.
//! - [`records`]: the `media_objects` rows and each tenant's bytes (`storage_usage`).
//! - [`view`]: a stored file as the API shows it (with a fresh signed URL).
//! - [`sweep`]: the collector (deleted, rejected, abandoned and orphaned bytes).
//! - [`settings`]: the `[storage]` section.

pub mod ingest;
pub mod key;
pub mod local;
pub mod presign;
pub mod range;
pub mod read;
pub mod records;
pub mod settings;
pub mod signing;
pub mod sniff;
pub mod sweep;
pub mod view;
pub mod write;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::local::LocalFileSystem;
use object_store::prefix::PrefixStore;
use object_store::signer::{SignedUrlOptions, Signer as _};
use object_store::{ObjectStore, ObjectStoreExt as _};

pub use key::Key;
use settings::{Backend, StorageSettings};
use signing::UrlSigner;

use crate::net::guard::Guard;
pub use write::{WriteError, Written};

/// What the store said, for callers that branch on it.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("no such object")]
    NotFound,
    #[error(transparent)]
    Key(#[from] key::KeyError),
    #[error("object store: {0}")]
    Store(object_store::Error),
    /// Writing a local copy failed.
    #[error("local copy: {0}")]
    Local(std::io::Error),
}

impl From<object_store::Error> for StorageError {
    fn from(e: object_store::Error) -> Self {
        match e {
            object_store::Error::NotFound { .. } => StorageError::NotFound,
            e => StorageError::Store(e),
        }
    }
}

/// A store failure as an HTTP answer: a 500 whose detail goes to the log (routes use
/// `?` on storage calls).
impl From<StorageError> for crate::error::ApiError {
    fn from(e: StorageError) -> Self {
        crate::error::ApiError::internal(anyhow::Error::new(e).context("media store"))
    }
}

/// The process's object store.
#[derive(Debug)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
    /// The same store, for presigning (S3 only).
    s3: Option<Arc<AmazonS3>>,
    /// `storage.prefix`: `store` adds it; presigned paths must say it themselves.
    prefix: String,
    signer: UrlSigner,
    /// What providers' output URLs may reach ([`ingest`]), and the client that fetches
    /// them through it.
    guard: Guard,
    ingest: reqwest::Client,
    pub settings: StorageSettings,
}

/// A URL a browser can use until `expires_at`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SignedUrl {
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

impl Storage {
    /// Opens the configured store (creating the local directory).
    pub fn open(settings: &StorageSettings) -> anyhow::Result<Arc<Storage>> {
        let (store, s3): (Arc<dyn ObjectStore>, _) = match settings.backend {
            Backend::Local => {
                std::fs::create_dir_all(&settings.root)
                    .with_context(|| format!("creating storage.root {}", settings.root))?;
                let fs = LocalFileSystem::new_with_prefix(&settings.root)
                    .with_context(|| format!("opening storage.root {}", settings.root))?
                    .with_automatic_cleanup(true);
                (Arc::new(fs), None)
            }
            Backend::S3 => {
                let mut b = AmazonS3Builder::new()
                    .with_bucket_name(&settings.bucket)
                    .with_region(&settings.region)
                    .with_access_key_id(&settings.access_key_id)
                    .with_secret_access_key(&settings.secret_access_key)
                    .with_virtual_hosted_style_request(!settings.path_style)
                    .with_allow_http(settings.allow_http);
                if !settings.endpoint.is_empty() {
                    b = b.with_endpoint(&settings.endpoint);
                }
                let s3 = Arc::new(b.build().context("configuring the S3 store")?);
                (s3.clone() as Arc<dyn ObjectStore>, Some(s3))
            }
        };
        let store: Arc<dyn ObjectStore> = if settings.prefix.is_empty() {
            store
        } else {
            Arc::new(PrefixStore::new(store, settings.prefix.as_str()))
        };
        if settings.url_secret.is_empty() && settings.backend == Backend::Local {
            tracing::warn!(
                "storage.url_secret is empty: download URLs are signed with a random key \
                 and stop working when this process stops; set it when more than one \
                 instance serves the API"
            );
        }
        let guard = Guard::new(settings.ingest_private_addresses.clone());
        Ok(Arc::new(Storage {
            store,
            s3,
            prefix: settings.prefix.clone(),
            signer: UrlSigner::new(&settings.url_secret),
            ingest: ingest::client(&guard).context("building the ingest client")?,
            guard,
            settings: settings.clone(),
        }))
    }

    /// The underlying store, for measuring it alone (the storage bench's floor).
    pub fn object_store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    pub fn backend(&self) -> Backend {
        self.settings.backend
    }

    /// Whether browsers upload straight to the bucket ([`Storage::upload_url`]).
    pub fn presigns(&self) -> bool {
        self.s3.is_some()
    }

    /// A download URL for `key`: presigned GET on S3, an HMAC-signed
    /// `/v1/files/<key>?exp=&sig=` (relative: served by this API) on the local store.
    /// The S3 one makes the bucket answer with the type the key's extension names,
    /// whatever the object's metadata says (no stored object is ever served as HTML).
    pub async fn download_url(&self, key: &Key) -> Result<SignedUrl, StorageError> {
        let ttl = Duration::from_secs(self.settings.url_ttl_secs);
        let expires_at = Utc::now() + ttl;
        let url = match &self.s3 {
            Some(s3) => {
                let served_as = sniff::content_type_of(key.extension());
                let options =
                    SignedUrlOptions::default().with_query([("response-content-type", served_as)]);
                s3.signed_url_opts(
                    object_store::signer::Method::GET,
                    &self.full_path(key),
                    ttl,
                    &options,
                )
                .await?
                .to_string()
            }
            None => format!("/v1/files/{key}?{}", self.signer.query(key, expires_at)),
        };
        Ok(SignedUrl { url, expires_at })
    }

    /// A presigned PUT for a browser-to-bucket upload, bound to `terms`
    /// ([`presign`]); `None` on the local store.
    pub async fn upload_url(
        &self,
        key: &Key,
        terms: &presign::UploadTerms<'_>,
    ) -> Result<Option<presign::PresignedPut>, StorageError> {
        let Some(s3) = &self.s3 else {
            return Ok(None);
        };
        let ttl = Duration::from_secs(self.settings.presign_ttl_secs);
        let put = presign::put_url(
            s3,
            &self.settings,
            &self.full_path(key),
            terms,
            ttl,
            Utc::now(),
        )
        .await?;
        Ok(Some(put))
    }

    /// Copies `from` to `to` inside the store (S3: server-side, one request): what `to`
    /// holds is `from` as it was at that moment, whatever is written to `from` later.
    pub async fn copy(&self, from: &Key, to: &Key) -> Result<(), StorageError> {
        self.store.copy(&from.path(), &to.path()).await?;
        Ok(())
    }

    /// `key`'s path in the bucket, with `storage.prefix`.
    fn full_path(&self, key: &Key) -> object_store::path::Path {
        if self.prefix.is_empty() {
            key.path()
        } else {
            object_store::path::Path::from(format!("{}/{key}", self.prefix))
        }
    }

    /// Checks a local download URL's signature and expiry.
    pub fn verify_url(&self, key: &Key, exp: i64, sig: &str) -> Result<(), signing::UrlError> {
        self.signer.verify(key, exp, sig, Utc::now())
    }
}
