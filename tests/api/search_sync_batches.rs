//! Materials committed together (a commit wave of AI tasks) announce themselves in one
//! `search.sync` message, and every one of them reaches the index.

use conveyor::domains::search_sync::messages::SyncMessage;
use conveyor::domains::search_sync::store::{self, NewMaterial};
use conveyor::outbox::entity as outbox;
use sea_orm::{ColumnTrait as _, EntityTrait as _, QueryFilter as _, TransactionTrait as _};

use crate::helpers::{Backend, TestEnv, spawn_app};
use crate::on_every_backend;
use crate::search_sync::search_until;

on_every_backend!(materials_committed_together_sync_as_one_message);

async fn materials_committed_together_sync_as_one_message(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "search_sync_batches").await else {
        return;
    };
    let app = spawn_app(&env).await;
    let (ada, ada_key) = app.user("ada", 100).await;
    let ada = ada.id;
    let new = (0..3)
        .map(|i| NewMaterial {
            user_id: ada.clone(),
            task_id: uuid::Uuid::now_v7().to_string(),
            kind: "copywriting".into(),
            title: format!("oolong {i}"),
            content: format!("copy number {i} about oolong"),
            vectors: None,
        })
        .collect();
    let txn = app.platform.db.begin().await.unwrap();
    let made = store::create_many(&txn, new).await.unwrap();
    txn.commit().await.unwrap();

    // One message for the three, naming each.
    let rows = outbox::Entity::find()
        .filter(outbox::Column::Queue.contains("search.sync"))
        .all(&app.platform.db)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "one search.sync message: {rows:?}");
    let envelope = conveyor::broker::Envelope::decode(rows[0].body.as_bytes(), usize::MAX).unwrap();
    let changes = SyncMessage::parse(&envelope).unwrap();
    let mut named: Vec<&str> = changes.iter().map(|c| c.material_id.as_str()).collect();
    let mut ids: Vec<&str> = made.iter().map(|m| m.id.as_str()).collect();
    named.sort_unstable();
    ids.sort_unstable();
    assert_eq!(named, ids);

    app.platform.relay.notify();
    app.start_consumers();
    let found = search_until(&app, &ada_key, "q=oolong", 3).await;
    assert_eq!(found["items"].as_array().unwrap().len(), 3, "{found}");
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}
