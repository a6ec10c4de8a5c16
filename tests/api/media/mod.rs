//! Media storage from outside, on both stores: the local directory (with the embedded
//! backends) and a real S3 server, SeaweedFS (with RabbitMQ + MariaDB and with
//! RabbitMQ + PostgreSQL, so the usage and rows run on every database).

mod analysis;
mod bombs;
mod bounds;
mod cancel;
mod files;
mod generated;
mod ingest;
mod lifecycle;
pub use lifecycle::head_only_upload;
mod memory;
mod prefix;
mod presign;
mod probe;
mod raw;
mod uploads;

use conveyor::storage::settings::Backend as StoreBackend;
use futures::StreamExt as _;

use crate::helpers::*;

/// Each media test on each store.
#[macro_export]
macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use $crate::helpers::Backend;
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn local_embedded() { super::$name(Backend::Embedded).await }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn s3_mariadb() { super::$name(Backend::RabbitMariadb).await }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn s3_postgres() { super::$name(Backend::RabbitPostgres).await }
            }
        )*
    };
}

/// Settings for a media test: the local store with the embedded backends, the S3
/// server (a folder of the shared bucket per run) with the real ones.
pub async fn media_env(backend: Backend, test: &str) -> Option<TestEnv> {
    let mut env = TestEnv::new(backend, test).await?;
    if backend.is_real() {
        let endpoint = s3(test).await?;
        let s = &mut env.settings.storage;
        s.backend = StoreBackend::S3;
        s.endpoint = endpoint;
        s.bucket = "conveyor-test".into();
        s.access_key_id = "conveyor-test".into();
        s.secret_access_key = "conveyor-test-secret-key-0123456789".into();
        s.path_style = true;
        s.allow_http = true;
        s.prefix = env.settings.broker.namespace.clone();
    }
    Some(env)
}

pub async fn media_app(backend: Backend, test: &str) -> Option<(TestEnv, TestApp)> {
    let env = media_env(backend, test).await?;
    let app = spawn_app(&env).await;
    Some((env, app))
}

/// Removes the run's objects (its folder of the shared bucket), then what `done` does.
pub async fn media_done(env: TestEnv, app: TestApp) {
    let storage = app.platform.storage.clone();
    let mut listing = storage.list(None);
    while let Some(Ok(o)) = listing.next().await {
        let _ = storage.delete(&o.path).await;
    }
    done(env, app).await;
}

/// A file of `len` bytes starting with `head` (a format's signature), the rest a
/// pattern that makes every byte's position checkable.
pub fn file_of(head: &[u8], len: usize) -> Vec<u8> {
    let mut v = head.to_vec();
    v.extend((head.len()..len).map(|i| (i % 251) as u8));
    v.truncate(len);
    v
}

/// The start of an MP4 (an `ftyp` box).
pub const MP4: &[u8] = b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom";
/// The start of a PNG.
pub const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
/// The start of a Windows executable.
pub const EXE: &[u8] = b"MZ\x90\0\x03\0\0\0\x04\0\0\0\xff\xff\0\0\xb8\0\0\0\0\0\0\0@\0";

pub use crate::helpers::videos::upload;

/// GET a download URL (relative ones on this app), with optional headers.
pub async fn fetch(app: &TestApp, url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let url = if url.starts_with('/') {
        app.url(url)
    } else {
        url.to_owned()
    };
    let mut req = app.client.get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}
