//! Generated files: an image task's PNG, a 3D task's GLB and a video task's poster are
//! real objects in the store; the task and its material list them with URLs, and the
//! bytes behind each URL hash to the checksum the material records; deleting the
//! material removes them after the grace.

use chrono::{Duration, Utc};
use serde_json::json;
use sha2::{Digest as _, Sha256};

use super::*;
use crate::helpers::tasks;
use crate::on_every_store;

on_every_store!(a_tasks_generated_files_are_real_objects_its_material_lists);

async fn a_tasks_generated_files_are_real_objects_its_material_lists(backend: Backend) {
    let Some((env, app)) = media_app(backend, "media_generated").await else {
        return;
    };
    app.start_consumers();
    let (user, key) = app.user("maker", 100).await;
    let mut done_tasks = Vec::new();
    for (kind, content_type, magic) in [
        ("image", "image/png", &b"\x89PNG"[..]),
        ("model3d", "model/gltf-binary", &b"glTF"[..]),
        ("video", "image/png", &b"\x89PNG"[..]),
    ] {
        let id = tasks::submit_id(
            &app,
            &key,
            json!({"kind": kind, "prompt": format!("a {kind} of green tea")}),
        )
        .await;
        let task = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
        let files = task["files"].as_array().unwrap_or_else(|| panic!("{task}"));
        assert_eq!(files.len(), 1, "{task}");
        let f = &files[0];
        assert_eq!(f["content_type"], content_type, "{task}");
        let bytes = fetch(&app, f["url"].as_str().unwrap(), &[])
            .await
            .bytes()
            .await
            .unwrap();
        assert!(bytes.starts_with(magic), "{kind}: a real {content_type}");
        assert_eq!(f["size"], bytes.len() as u64);
        assert_eq!(
            f["sha256"],
            hex::encode(Sha256::digest(&bytes)),
            "the bytes are the checksummed ones"
        );
        if kind == "image" {
            assert_eq!(
                (f["width"].as_i64(), f["height"].as_i64()),
                (Some(512), Some(512))
            );
        }
        done_tasks.push((id, f["sha256"].clone(), bytes.len() as u64));
    }
    let me = app.get_json(&key, "/v1/me").await;
    let total: u64 = done_tasks.iter().map(|(_, _, n)| n).sum();
    assert_eq!(
        me["storage"]["used_bytes"], total,
        "generated files count: {me}"
    );

    // The material of the image task lists the same file.
    let (task_id, sha, _) = &done_tasks[0];
    let materials = app.get_json(&key, "/v1/materials?limit=10").await;
    let material = materials["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["task_id"] == task_id.as_str())
        .unwrap_or_else(|| panic!("{materials}"))
        .clone();
    let mid = material["id"].as_str().unwrap();
    let full = app.get_json(&key, &format!("/v1/materials/{mid}")).await;
    assert_eq!(full["files"][0]["sha256"], *sha, "{full}");

    // Deleting the material deletes its files: hidden now, bytes gone after the grace.
    let r = app
        .client
        .delete(app.url(&format!("/v1/materials/{mid}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let task = app.get_json(&key, &format!("/v1/tasks/{task_id}")).await;
    assert!(task.get("files").is_none(), "{task}");
    let later = Utc::now() + Duration::seconds(env.settings.storage.delete_grace_secs as i64 + 1);
    let swept = conveyor::storage::sweep::sweep(&app.platform.db, &app.platform.storage, later)
        .await
        .unwrap();
    assert_eq!(swept.removed, 1, "{swept:?}");
    let left = conveyor::storage::records::usage::used(&app.platform.db, &user.id)
        .await
        .unwrap();
    assert_eq!(left, total - done_tasks[0].2);
    media_done(env, app).await;
}
