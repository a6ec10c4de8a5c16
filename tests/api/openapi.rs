//! The OpenAPI document: complete (every routed path is in it, every documented route
//! is served), and the cross-tenant access matrix generated from it.

use serde_json::{Value, json};

use crate::helpers::tasks;
use crate::helpers::{Backend, TestEnv, spawn_app};
use crate::on_every_backend;

on_every_backend!(every_documented_id_route_hides_other_users_resources);

/// Paths the source routes, read off its `.route("…"` calls.
fn routed_paths() -> Vec<String> {
    fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for part in text.split(".route(\"").skip(1) {
                    if let Some(end) = part.find('"') {
                        // A wildcard `{*key}` is documented as `{key}`.
                        out.push(part[..end].replace("{*", "{"));
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut out,
    );
    out
}

async fn spec(app: &crate::helpers::TestApp) -> Value {
    let r = app
        .client
        .get(app.url("/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_covers_every_route_and_every_documented_route_is_served() {
    let env = TestEnv::new(Backend::Embedded, "openapi_complete")
        .await
        .unwrap();
    let app = spawn_app(&env).await;
    let doc = spec(&app).await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."), "{doc}");
    let paths = doc["paths"].as_object().unwrap();
    let routed = routed_paths();
    assert!(routed.len() >= 15, "found the routes: {routed:?}");
    for p in &routed {
        assert!(paths.contains_key(p), "{p} is routed but not documented");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["api_key"]["scheme"],
        "bearer"
    );
    // The configuration's names are the document's enums: exactly one of a configured
    // product and an order.
    let payment = &doc["components"]["schemas"]["PaymentRequest"]["oneOf"];
    let products: Vec<&str> = payment[0]["properties"]["product"]["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("{payment}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let configured: Vec<String> = env.settings.sections["payments"]["products"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(products, configured, "{payment}");
    assert_eq!(payment[1]["required"], serde_json::json!(["order"]));
    // A tag's own bounds, not only the list's.
    assert_eq!(doc["components"]["schemas"]["Tag"]["maxLength"], 50);
    // What the extractors answer for every route is documented for every route: a body
    // that is not JSON (400) or not the operation's (422), a query that cannot be read.
    for (path, ops) in paths {
        for (method, op) in ops.as_object().unwrap() {
            let responses = &op["responses"];
            if op.get("requestBody").is_some() {
                for status in ["400", "422"] {
                    assert!(
                        responses.get(status).is_some(),
                        "{method} {path} does not document {status}"
                    );
                }
            }
            let query = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["in"] == "query");
            if query {
                assert!(
                    responses.get("400").is_some(),
                    "{method} {path} reads a query and does not document 400"
                );
            }
        }
    }
    for (path, ops) in paths {
        for method in ops.as_object().unwrap().keys() {
            let url = app.url(&path.replace("{id}", "1"));
            let r = app
                .client
                .request(method.to_uppercase().parse().unwrap(), url)
                .send()
                .await
                .unwrap();
            assert_ne!(r.status(), 405, "{method} {path}");
            let body = r.text().await.unwrap();
            assert!(
                !body.contains("route not found"),
                "{method} {path} is documented but not served"
            );
        }
    }
    let r = app.client.get(app.url("/docs/")).send().await.unwrap();
    assert_eq!(r.status(), 200, "Swagger UI");
    assert!(r.text().await.unwrap().contains("swagger"));
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// BOLA/BFLA: for every documented route with an `{id}`, another user gets 404 for the
/// owner's task (existence stays private), and a non-admin gets 403 on admin routes.
async fn every_documented_id_route_hides_other_users_resources(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "openapi_access_matrix").await else {
        return;
    };
    let app = spawn_app(&env).await;
    let (_, owner) = app.user("owner", 100).await;
    let (_, other) = app.user("other", 100).await;
    let task_id = tasks::submit_id(
        &app,
        &owner,
        json!({ "kind": "copywriting", "prompt": "mine" }),
    )
    .await;
    let doc = spec(&app).await;
    let mut checked = 0;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let admin_only = op["tags"].as_array().unwrap().contains(&json!("admin"));
            if !path.contains("{id}") && !admin_only {
                continue;
            }
            let url = app.url(&path.replace("{id}", &task_id));
            let r = app
                .client
                .request(method.to_uppercase().parse().unwrap(), url)
                .bearer_auth(&other)
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap();
            let expected = if admin_only { 403 } else { 404 };
            assert_eq!(r.status(), expected, "{method} {path} as another user");
            let body: Value = r.json().await.unwrap();
            assert!(body["error"]["code"].is_string(), "{method} {path}: {body}");
            checked += 1;
        }
    }
    assert!(checked >= 7, "the matrix covered {checked} routes");
    // The owner still sees it: the 404s above were about access, not existence.
    let r = app
        .client
        .get(app.url(&format!("/v1/tasks/{task_id}")))
        .bearer_auth(&owner)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// Every `$ref` of the document names a schema it has (two types sharing one schema
/// name once left `#/components/schemas/Status` dangling, so fuzzers could not use it),
/// and every operation has an id no other has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reference_resolves_and_every_operation_has_its_own_id() {
    let env = TestEnv::new(Backend::Embedded, "openapi_refs")
        .await
        .unwrap();
    let app = spawn_app(&env).await;
    let doc = spec(&app).await;
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => out.push(r.clone()),
                        _ => refs(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| refs(i, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(
        all.len() > 20,
        "the document uses references: {}",
        all.len()
    );
    for r in &all {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{r}"));
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "{r} does not resolve"
        );
    }
    // Every operation has an id of its own (client generators name functions after them,
    // and refuse a document where two share one: seven `create`s once did).
    let mut ids = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if let Some(id) = op["operationId"].as_str()
                && let Some(first) = ids.insert(id.to_owned(), format!("{method} {path}"))
            {
                panic!("operationId {id} is used by {first} and {method} {path}");
            }
        }
    }
    assert!(ids.len() > 60, "{} operations have ids", ids.len());
    // The two status enums are told apart.
    let schemas = &doc["components"]["schemas"];
    assert!(
        schemas["TaskStatus"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "PENDING")
    );
    assert!(
        schemas["DeadLetterStatus"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "dead")
    );
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// Parameters are where the document says: a path parameter is in the path's template,
/// and list queries (`cursor`, `limit`) are query parameters, never path ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_are_where_the_document_says() {
    let env = TestEnv::new(Backend::Embedded, "openapi_params")
        .await
        .unwrap();
    let app = spawn_app(&env).await;
    let doc = spec(&app).await;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap();
                if p["in"] == "path" {
                    assert!(
                        path.contains(&format!("{{{name}}}")),
                        "{method} {path}: `{name}` documented in the path"
                    );
                }
            }
        }
    }
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}
