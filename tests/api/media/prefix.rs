//! On S3 the collector removes every object no row knows under `storage.prefix`: with an
//! empty prefix on a bucket other applications share, those would be theirs. So an S3
//! store without a prefix is refused at start-up, naming the key, and the collector only
//! ever takes keys of conveyor's own shape (`<tenant>/<purpose>/<id>.<ext>`).

use bytes::Bytes;
use chrono::{Duration, Utc};
use conveyor::config::ConfigError;
use conveyor::settings::Settings;
use conveyor::storage::{Key, sweep};
use object_store::ObjectStoreExt as _;

use super::*;
use crate::on_every_store;

/// The S3 settings of the test server, as a deployment sets them (environment).
fn s3_vars(endpoint: &str, prefix: Option<&str>) -> Vec<(String, String)> {
    let mut vars = vec![
        ("CONVEYOR__STORAGE__BACKEND", "s3"),
        ("CONVEYOR__STORAGE__ENDPOINT", endpoint),
        ("CONVEYOR__STORAGE__BUCKET", "conveyor-test"),
        ("CONVEYOR__STORAGE__ACCESS_KEY_ID", "conveyor-test"),
        (
            "CONVEYOR__STORAGE__SECRET_ACCESS_KEY",
            "conveyor-test-secret-key-0123456789",
        ),
        ("CONVEYOR__STORAGE__PATH_STYLE", "true"),
        ("CONVEYOR__STORAGE__ALLOW_HTTP", "true"),
    ];
    if let Some(p) = prefix {
        vars.push(("CONVEYOR__STORAGE__PREFIX", p));
    }
    vars.into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[tokio::test]
async fn an_s3_store_without_a_prefix_is_refused_at_start_up() {
    let Some(endpoint) = s3("media_prefix").await else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let err = Settings::load_from(&dir, "test", s3_vars(&endpoint, None)).unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::Invalid {
                key: "storage.prefix",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("storage.prefix"), "{err}");
    let settings = Settings::load_from(&dir, "test", s3_vars(&endpoint, Some("conveyor")))
        .expect("with a prefix");
    assert_eq!(settings.storage.prefix, "conveyor");
}

on_every_store!(the_collector_removes_only_keys_of_its_own_shape);

async fn the_collector_removes_only_keys_of_its_own_shape(backend: Backend) {
    let Some((env, app)) = media_app(backend, "media_sweep_shape").await else {
        return;
    };
    let storage = &app.platform.storage;
    // Another application's files under the same folder, and a stray of conveyor's own.
    let store = storage.object_store();
    for foreign in ["README.txt", "site/index.html", "backups/2026/12/db.sql.gz"] {
        store
            .put(
                &foreign.into(),
                Bytes::from_static(b"not conveyor's").into(),
            )
            .await
            .unwrap();
    }
    let stray = Key::new("tenant1", "image", "stray", "png").unwrap();
    storage
        .put(
            &stray,
            Bytes::from(file_of(PNG, 500)),
            conveyor::storage::sniff::sniff(PNG).unwrap(),
        )
        .await
        .unwrap();
    let later = Utc::now() + Duration::seconds(env.settings.storage.delete_grace_secs as i64 + 1);
    let swept = sweep::sweep(&app.platform.db, storage, later)
        .await
        .unwrap();
    assert_eq!(swept.orphans, 1, "{swept:?}");
    let mut listing = storage.list(None);
    let mut left = Vec::new();
    while let Some(o) = listing.next().await {
        left.push(o.unwrap().path);
    }
    left.sort();
    assert_eq!(
        left,
        vec!["README.txt", "backups/2026/12/db.sql.gz", "site/index.html"],
        "only conveyor's stray went"
    );
    media_done(env, app).await;
}
