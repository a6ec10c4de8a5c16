//! The search-sync flow end to end: materials made by AI tasks, edited and deleted by
//! their owners, reach the search index through `search.sync` (embedded index on the
//! embedded stack and on RabbitMQ + MariaDB; the Elasticsearch adapter against the
//! OpenSearch node on RabbitMQ + PostgreSQL); owners only ever see their own; late and
//! repeated sync messages never overwrite a newer version; an outage of the engine
//! backs the messages up and they drain when it returns, with nothing dead-lettered; a
//! reindex while writes continue loses none and moves the alias.

use std::time::Duration;

use conveyor::domains::search_sync::messages::{SyncMessage, SyncOp};
use conveyor::domains::search_sync::queues::SEARCH_SYNC;
use conveyor::domains::search_sync::store::{self, NewMaterial};
use conveyor::search::elastic::ElasticIndex;
use sea_orm::TransactionTrait;
use serde_json::{Value, json};

use crate::helpers::tasks;
use crate::helpers::{Backend, Proxy, TestApp, TestEnv, opensearch, spawn_app, wait_until};
use crate::on_every_backend;

on_every_backend!(materials_reach_the_index_and_owners_see_only_their_own);

/// The engine behind the app, when it is the OpenSearch node.
struct Engine {
    url: String,
    alias: String,
}

impl Engine {
    async fn drop_indices(&self) {
        let idx = ElasticIndex::new(&self.url, &self.alias, false).unwrap();
        let _ = idx.drop_all().await;
    }

    /// The indices the alias points at.
    async fn alias_targets(&self) -> Vec<String> {
        let v: Value = reqwest::get(format!("{}/_alias/{}", self.url, self.alias))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        v.as_object().unwrap().keys().cloned().collect()
    }
}

/// Points the test's settings at the engine at `url` under an alias of its own.
fn use_engine(env: &mut TestEnv, url: &str) -> Engine {
    let alias = format!("{}-materials", env.settings.broker.namespace);
    let section = env
        .settings
        .sections
        .entry("search".into())
        .or_insert_with(|| json!({}));
    section["backend"] = json!("elasticsearch");
    section["url"] = json!(url);
    section["alias"] = json!(alias);
    Engine {
        url: url.to_owned(),
        alias,
    }
}

/// The test's environment: on RabbitMQ + PostgreSQL the search goes to OpenSearch.
async fn env_for(backend: Backend, test: &str) -> Option<(TestEnv, Option<Engine>)> {
    let mut env = TestEnv::new(backend, test).await?;
    let engine = if backend == Backend::RabbitPostgres {
        let url = opensearch(test).await?;
        Some(use_engine(&mut env, &url))
    } else {
        None
    };
    Some((env, engine))
}

async fn finish(env: TestEnv, app: TestApp, engine: Option<Engine>) {
    let platform = app.stop().await;
    if let Some(e) = engine {
        e.drop_indices().await;
    }
    env.cleanup(Some(&platform)).await;
}

async fn search(app: &TestApp, key: &str, query: &str) -> Value {
    app.get_json(key, &format!("/v1/materials/search?{query}"))
        .await
}

/// Waits until the search `query` answers `total` hits, and returns the answer.
pub(crate) async fn search_until(app: &TestApp, key: &str, query: &str, total: u64) -> Value {
    let mut last = Value::Null;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        last = search(app, key, query).await;
        if last["total"] == total {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("search `{query}` never answered {total} hits; last: {last}");
}

async fn send(
    app: &TestApp,
    method: reqwest::Method,
    key: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = app.client.request(method, app.url(path)).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Materials written straight into the store (as a finished task would), `n` of them
/// for `user_id`, in one transaction; their ids.
async fn materials(app: &TestApp, user_id: &str, title: &str, n: usize) -> Vec<String> {
    let txn = app.platform.db.begin().await.unwrap();
    let mut ids = Vec::new();
    for i in 0..n {
        let m = store::create(
            &txn,
            NewMaterial {
                user_id: user_id.to_owned(),
                task_id: uuid::Uuid::now_v7().to_string(),
                kind: "copywriting".into(),
                title: format!("{title} {i}"),
                content: format!("copy number {i} about green tea"),
                vectors: None,
            },
        )
        .await
        .unwrap();
        ids.push(m.id);
    }
    txn.commit().await.unwrap();
    app.platform.relay.notify();
    ids
}

async fn queue_depth(app: &TestApp) -> u64 {
    let name = app.platform.broker.topology().queue(&SEARCH_SYNC).name;
    app.platform.broker.depth(&name).await.unwrap()
}

async fn materials_reach_the_index_and_owners_see_only_their_own(backend: Backend) {
    let Some((env, engine)) = env_for(backend, "search_sync_flow").await else {
        return;
    };
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (ada, ada_key) = app.user("ada", 100).await;
    let (_bob, bob_key) = app.user("bob", 100).await;

    // A finished task becomes a material titled by its prompt, searchable by its owner.
    let task_id = tasks::submit_id(
        &app,
        &ada_key,
        json!({ "kind": "copywriting", "prompt": "春季新品 launch for Lantern tea\nmore detail" }),
    )
    .await;
    tasks::wait_status(&app, &ada_key, &task_id, "SUCCESS").await;
    let list = app.get_json(&ada_key, "/v1/materials").await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list}");
    let id = items[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(items[0]["task_id"], task_id.as_str());
    assert_eq!(items[0]["title"], "春季新品 launch for Lantern tea");
    assert_eq!(items[0]["version"], 1);
    let found = search_until(&app, &ada_key, "q=lantern", 1).await;
    assert_eq!(found["items"][0]["id"], id.as_str());
    assert_eq!(found["items"][0]["version"], 1);
    search_until(&app, &ada_key, "q=%E6%96%B0%E5%93%81&kind=copywriting", 1).await;
    assert_eq!(
        search(&app, &ada_key, "q=lantern&kind=image").await["total"],
        0
    );

    // Another user sees nothing of it, whatever the route.
    assert_eq!(search(&app, &bob_key, "q=lantern").await["total"], 0);
    assert_eq!(search(&app, &bob_key, "").await["total"], 0);
    let bobs = app.get_json(&bob_key, "/v1/materials").await;
    assert_eq!(bobs["items"].as_array().unwrap().len(), 0);
    let path = format!("/v1/materials/{id}");
    for (method, body) in [
        (reqwest::Method::GET, None),
        (reqwest::Method::PATCH, Some(json!({ "title": "mine now" }))),
        (reqwest::Method::DELETE, None),
    ] {
        let (status, answer) = send(&app, method.clone(), &bob_key, &path, body).await;
        assert_eq!(status, 404, "{method} by another user: {answer}");
    }

    // Bad input is refused with its reason.
    for (body, status, field) in [
        (json!({}), 422, "title"),
        (json!({ "title": "  " }), 422, "title"),
        (json!({ "tags": ["ok", ""] }), 422, "tags"),
        (
            json!({ "tags": (0..21).map(|i| format!("t{i}")).collect::<Vec<_>>() }),
            422,
            "tags",
        ),
        (json!({ "title": "x", "owner": "bob" }), 422, "owner"),
    ] {
        let (got, answer) = send(&app, reqwest::Method::PATCH, &ada_key, &path, Some(body)).await;
        assert_eq!(got, status, "{answer}");
        if !field.is_empty() {
            assert_eq!(answer["error"]["field"], field, "{answer}");
        }
    }
    for query in [
        "cursor=abc",
        "cursor=99999999",
        "kind=Po%20em",
        "limit=0",
        "owner=bob",
        // Query syntax is refused, never passed to an engine (it was a 503 on tantivy).
        "q=id%3A%2A",
        "q=owner%3Abob",
        "q=tea%2A",
        "q=version%3A%5B1%20TO%209%5D",
        // By meaning: not with words, not blank, a cosine for the least score.
        "q=tea&semantic=tea",
        "semantic=%20%20",
        "semantic=tea&min_score=2",
        "semantic=tea&min_score=abc",
    ] {
        let r = app
            .client
            .get(app.url(&format!("/v1/materials/search?{query}")))
            .bearer_auth(&ada_key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{query}");
    }
    // Copy is not embedded: a search by meaning lists none of it.
    let near = search(&app, &ada_key, "semantic=green%20tea&min_score=-1").await;
    assert_eq!(near["total"], 0, "{near}");

    // An edit: a new version, searchable by its new title and tags.
    let (status, edited) = send(
        &app,
        reqwest::Method::PATCH,
        &ada_key,
        &path,
        Some(json!({ "title": "Summer campaign", "tags": ["夏季", "promo", "promo"] })),
    )
    .await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(edited["version"], 2);
    assert_eq!(edited["tags"], json!(["夏季", "promo"]));
    let found = search_until(&app, &ada_key, "q=summer", 1).await;
    assert_eq!(found["items"][0]["version"], 2);
    assert_eq!(found["items"][0]["tags"], json!(["夏季", "promo"]));
    search_until(&app, &ada_key, "q=promo", 1).await;

    // A stale sync message (a replay of version 1) changes nothing.
    let stale = SyncMessage {
        material_id: id.clone(),
        op: SyncOp::Upsert,
        version: 1,
    };
    app.platform
        .broker
        .publish(
            conveyor::broker::Target::Queue(&SEARCH_SYNC),
            &stale.envelope().with_id(uuid::Uuid::now_v7().to_string()),
        )
        .await
        .unwrap();
    // Settled: the stale message has been weighed and dropped.
    app.drain(&SEARCH_SYNC).await;
    let found = search(&app, &ada_key, "q=summer").await;
    assert_eq!(found["items"][0]["version"], 2, "{found}");

    // A delete: gone from the list at once, from search when the sync ran.
    let (status, _) = send(&app, reqwest::Method::DELETE, &ada_key, &path, None).await;
    assert_eq!(status, 204);
    let (status, _) = send(&app, reqwest::Method::DELETE, &ada_key, &path, None).await;
    assert_eq!(status, 404, "deleted once");
    let list = app.get_json(&ada_key, "/v1/materials").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 0);
    search_until(&app, &ada_key, "q=summer", 0).await;
    search_until(&app, &ada_key, "", 0).await;

    // Paging through a user's matches, and through their list.
    let ids = materials(&app, &ada.id, "bulk", 25).await;
    let first = search_until(&app, &ada_key, "q=green&limit=10", 25).await;
    let mut seen: Vec<String> = Vec::new();
    let mut page = first;
    loop {
        for h in page["items"].as_array().unwrap() {
            seen.push(h["id"].as_str().unwrap().to_owned());
        }
        let Some(next) = page["next_cursor"].as_str() else {
            break;
        };
        page = search(&app, &ada_key, &format!("q=green&limit=10&cursor={next}")).await;
    }
    seen.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(seen, want, "every match once across the pages");
    let listed = app.get_json(&ada_key, "/v1/materials?limit=20").await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 20);
    assert!(listed["next_cursor"].is_string());

    // The queue does not grow: every message was consumed, none dead-lettered.
    wait_until(
        Duration::from_secs(10),
        "the search.sync queue drained",
        || async { queue_depth(&app).await == 0 },
    )
    .await;
    let dead = conveyor::dead_letters::list(&app.platform.db, Some("search.sync"), 10)
        .await
        .unwrap();
    assert!(dead.is_empty(), "{dead:?}");
    finish(env, app, engine).await;
}

/// The engine goes away (a TCP proxy in front of the OpenSearch node is taken down):
/// batches go to the retry tiers behind the open breaker, readiness says so, nothing is
/// dead-lettered; when it returns, the backlog drains and every document is right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_of_the_engine_backs_up_and_drains_with_nothing_lost() {
    let test = "search_sync_outage";
    let Some(mut env) = TestEnv::new(Backend::RabbitPostgres, test).await else {
        return;
    };
    if opensearch(test).await.is_none() {
        return;
    }
    let proxy = Proxy::start("127.0.0.1:9200").await;
    let engine = use_engine(&mut env, &format!("http://127.0.0.1:{}", proxy.port));
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (ada, key) = app.user("ada", 0).await;
    let before = materials(&app, &ada.id, "before", 5).await;
    search_until(&app, &key, "q=before", 5).await;

    proxy.down();
    let during = materials(&app, &ada.id, "during", 40).await;
    for id in &before[..3] {
        let (status, _) = send(
            &app,
            reqwest::Method::PATCH,
            &key,
            &format!("/v1/materials/{id}"),
            Some(json!({ "tags": ["outage"] })),
        )
        .await;
        assert_eq!(status, 200);
    }
    for id in &during[..10] {
        let (status, _) = send(
            &app,
            reqwest::Method::DELETE,
            &key,
            &format!("/v1/materials/{id}"),
            None,
        )
        .await;
        assert_eq!(status, 204);
    }
    // Readiness reports the engine, without taking the API out of service.
    wait_until(
        Duration::from_secs(10),
        "readiness to see the outage",
        || async {
            let (_, r) = app.readyz(None).await;
            r["status"] == "degraded" && r["checks"]["search"]["error"].is_string()
        },
    )
    .await;
    let r = app
        .client
        .get(app.url("/v1/materials/search?q=x"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        503,
        "search answers 503 while the engine is away"
    );
    // Batches cycle through the retry tiers behind the breaker; a scrape that lands on
    // one of its half-open trials reads it closed, so the metrics are awaited.
    wait_until(
        Duration::from_secs(15),
        "the metrics to show the outage",
        || async {
            let metrics = app.metrics(None).await;
            metrics.contains("conveyor_dependency_up{dependency=\"search\"} 0")
                && metrics.contains("conveyor_search_breaker_open 1")
        },
    )
    .await;
    // Fixed wait: batches cycle through the retry tiers for a while (what the drain
    // below and its no-dead-letter check are about). The outage's length is the test's
    // input; no event marks "retried long enough" (the retry counter is the process's,
    // shared with the tests running beside this one).
    tokio::time::sleep(Duration::from_secs(2)).await;

    proxy.up();
    search_until(&app, &key, "q=during", 30).await;
    search_until(&app, &key, "q=outage", 3).await;
    search_until(&app, &key, "", 35).await;
    wait_until(Duration::from_secs(10), "the backlog drained", || async {
        queue_depth(&app).await == 0
    })
    .await;
    let dead = conveyor::dead_letters::list(&app.platform.db, Some("search.sync"), 10)
        .await
        .unwrap();
    assert!(
        dead.is_empty(),
        "nothing dead-lettered for an outage: {dead:?}"
    );
    let (_, r) = app.readyz(None).await;
    assert_eq!(r["status"], "ready", "{r}");
    drop(proxy);
    finish(env, app, Some(engine)).await;
}

/// A reindex while owners keep editing: every document ends at its row's version, the
/// alias moved to the new index and the old one is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reindex_while_writes_continue_loses_nothing_and_moves_the_alias() {
    let test = "search_sync_reindex";
    let Some((env, Some(engine))) = env_for(Backend::RabbitPostgres, test).await else {
        return;
    };
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (ada, key) = app.user("ada", 0).await;
    let ids = materials(&app, &ada.id, "reindexed", 300).await;
    search_until(&app, &key, "q=reindexed", 300).await;
    let old = engine.alias_targets().await;
    assert_eq!(old.len(), 1);

    // Edits and deletes run while the reindex copies.
    let writer = {
        let (client, base, key, ids) = (app.client.clone(), app.url(""), key.clone(), ids.clone());
        tokio::spawn(async move {
            for (i, id) in ids.iter().enumerate().take(120) {
                let url = format!("{base}/v1/materials/{id}");
                let r = if i % 4 == 0 {
                    client.delete(url).bearer_auth(&key).send().await.unwrap()
                } else {
                    client
                        .patch(url)
                        .bearer_auth(&key)
                        .json(&json!({ "title": format!("renamed {i}") }))
                        .send()
                        .await
                        .unwrap()
                };
                assert!(r.status().is_success(), "{}", r.status());
            }
        })
    };
    let backend = conveyor::domains::search_sync::backend::Search::open(
        conveyor::domains::search_sync::settings::SearchSettings::from_settings(&env.settings)
            .unwrap(),
    )
    .unwrap();
    let report = conveyor::domains::search_sync::reindex::reindex(
        &app.platform.db,
        backend.index.as_ref(),
        50,
        &|_, _| {},
    )
    .await
    .unwrap();
    writer.await.unwrap();
    assert_eq!(report.copied, 300);
    assert_eq!(report.rejected, 0);
    assert_eq!(report.dropped, old, "the old index is dropped");
    let now = engine.alias_targets().await;
    assert_eq!(now, vec![report.target.clone()], "the alias moved");

    // 30 deleted, 90 renamed, 180 untouched; each at its row's version.
    search_until(&app, &key, "", 270).await;
    search_until(&app, &key, "q=renamed", 90).await;
    let rows = store::load(&app.platform.db, &ids).await.unwrap();
    let mut cursor = None::<String>;
    let mut checked = 0;
    loop {
        let q = match &cursor {
            Some(c) => format!("limit=100&cursor={c}"),
            None => "limit=100".into(),
        };
        let page = search(&app, &key, &q).await;
        for h in page["items"].as_array().unwrap() {
            let row = rows
                .iter()
                .find(|r| r.id == h["id"].as_str().unwrap())
                .unwrap();
            assert!(row.deleted_at.is_none());
            assert_eq!(h["version"], row.version, "{h}");
            assert_eq!(h["title"], row.title.as_str());
            checked += 1;
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(checked, 270);
    finish(env, app, Some(engine)).await;
}

/// A document the engine can never take (here the index's mapping disagrees with it) is
/// dead-lettered with the engine's reason at once, not retried for days; the batch's
/// other messages are settled on their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_the_engine_rejects_is_dead_lettered_with_its_reason() {
    let test = "search_sync_rejected";
    let Some((env, Some(engine))) = env_for(Backend::RabbitPostgres, test).await else {
        return;
    };
    // The alias exists already, on an index whose mapping refuses our documents.
    let r = reqwest::Client::new()
        .put(format!("{}/{}-v1", engine.url, engine.alias))
        .json(&json!({
            "mappings": { "dynamic": "strict", "properties": { "created_at": { "type": "boolean" } } },
            "aliases": { engine.alias.clone(): {} },
        }))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (ada, _key) = app.user("ada", 0).await;
    let ids = materials(&app, &ada.id, "refused", 3).await;
    let list = || conveyor::dead_letters::list(&app.platform.db, Some("search.sync"), 10);
    wait_until(Duration::from_secs(20), "three dead letters", || async {
        list().await.unwrap().len() == 3
    })
    .await;
    for d in list().await.unwrap() {
        assert_eq!(d.reason, "permanent");
        assert!(
            d.last_error.contains("rejected the document") && d.last_error.contains("exception"),
            "{}",
            d.last_error
        );
        assert!(ids.iter().any(|id| d.message_id.contains(id.as_str())));
    }
    wait_until(Duration::from_secs(10), "the queue drained", || async {
        queue_depth(&app).await == 0
    })
    .await;
    finish(env, app, Some(engine)).await;
}
