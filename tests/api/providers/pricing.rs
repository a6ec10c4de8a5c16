//! Credits by usage: a copywriting kind priced by the token reserves its most (the
//! prompt's bytes plus an allowance in, `max_output_tokens` out) at submit, sends
//! `max_tokens` to the provider, and on success is charged exactly what the provider
//! reported, the rest given back in the same transaction (the ledger adds up to the
//! charge); a priced pipeline on the simulator is charged its steps' tokens summed.
//! `GET /v1/me/usage` sums it all by kind and provider and refuses bad ranges.

use serde_json::{Value, json};

use super::fake_openai::{self, PROMPT_TOKENS, tokens_for};
use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(a_task_priced_by_the_token_is_charged_what_the_provider_reported);

const FLAT: i64 = 1;
const PER_1K_IN: i64 = 500;
const PER_1K_OUT: i64 = 2000;
const MAX_OUT: u64 = 8;
const ALLOWANCE: i64 = 64;

fn ceil_k(milli: i64) -> i64 {
    (milli + 999) / 1000
}

async fn balance(app: &TestApp, key: &str) -> i64 {
    app.get_json(key, "/v1/me").await["credits"]
        .as_i64()
        .unwrap()
}

/// The ledger rows of a task (reserve, consume, refund).
async fn ledger_of(app: &TestApp, key: &str, task: &str) -> Vec<(String, i64)> {
    let page = app.get_json(key, "/v1/me/ledger?limit=100").await;
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["effect"].as_str().unwrap().ends_with(&format!(":{task}")))
        .map(|e| {
            (
                e["reason"].as_str().unwrap().to_owned(),
                e["delta"].as_i64().unwrap(),
            )
        })
        .collect()
}

async fn a_task_priced_by_the_token_is_charged_what_the_provider_reported(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "pricing").await else {
        return;
    };
    let (url, _fake) = fake_openai::start(0).await;
    let ai = env.settings.sections.get_mut("ai").unwrap();
    ai["providers"]["openai"]["base_url"] = json!(url);
    ai["providers"]["openai"]["api_key"] = json!("sk-test");
    let pricing = json!({ "per_1k_input": PER_1K_IN, "per_1k_output": PER_1K_OUT,
        "max_output_tokens": MAX_OUT, "input_allowance": ALLOWANCE });
    ai["kinds"]["copywriting"]["provider"] = json!("openai");
    ai["kinds"]["copywriting"]["cost"] = json!(FLAT);
    ai["kinds"]["copywriting"]["pricing"] = pricing.clone();
    ai["kinds"]["video_analysis"]["cost"] = json!(FLAT);
    ai["kinds"]["video_analysis"]["pricing"] = pricing;
    let app = spawn_app(&env).await;
    app.start_consumers();

    let prompt = "spring green tea";
    let reserve =
        FLAT + ceil_k((prompt.len() as i64 + ALLOWANCE) * PER_1K_IN + MAX_OUT as i64 * PER_1K_OUT);
    // A balance below the most the task can cost is refused with what it needs.
    let (_, poor) = app.user("poor", reserve - 1).await;
    let r = tasks::submit(
        &app,
        &poor,
        json!({"kind": "copywriting", "prompt": prompt}),
    )
    .await;
    assert_eq!(r.status(), 402);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["needed"], reserve, "{body}");

    let (_, key) = app.user("writer", 1000).await;
    let id = tasks::submit_id(&app, &key, json!({"kind": "copywriting", "prompt": prompt})).await;
    let task = tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    assert_eq!(task["cost"], reserve, "the task shows what it reserved");
    // The model was told its limit and stopped there.
    let written: Vec<String> = tokens_for(prompt)
        .into_iter()
        .take(MAX_OUT as usize)
        .collect();
    assert_eq!(task["result"]["text"], written.concat());
    let usage = &task["result"]["usage"];
    assert_eq!(usage["prompt_tokens"], PROMPT_TOKENS);
    assert_eq!(usage["completion_tokens"], MAX_OUT);
    assert_eq!(task["result"]["provider"], "openai");
    let charge = FLAT
        + ceil_k(
            usage["prompt_tokens"].as_i64().unwrap() * PER_1K_IN
                + usage["completion_tokens"].as_i64().unwrap() * PER_1K_OUT,
        );
    assert!(charge < reserve, "{charge} < {reserve}");
    assert_eq!(
        balance(&app, &key).await,
        1000 - charge,
        "charged the usage exactly"
    );
    let mut rows = ledger_of(&app, &key, &id).await;
    rows.sort();
    assert_eq!(
        rows,
        [
            ("consume".to_owned(), 0),
            ("refund".to_owned(), reserve - charge),
            ("reserve".to_owned(), -reserve)
        ],
        "the ledger adds up to the charge"
    );

    // A pipeline on the simulator: its steps' tokens summed, then priced once.
    let upload = crate::helpers::videos::analysable(&app, &key).await;
    let va = tasks::submit_id(
        &app,
        &key,
        json!({"kind": "video_analysis", "prompt": "unbox the new blender",
            "params": {"upload_id": upload}}),
    )
    .await;
    tasks::wait_status(&app, &key, &va, "SUCCESS").await;
    let report = app.get_json(&key, "/v1/me/usage").await;
    let items = report["items"].as_array().unwrap();
    let line = |kind: &str| {
        items
            .iter()
            .find(|l| l["kind"] == kind)
            .unwrap_or_else(|| panic!("{kind} in {report}"))
            .clone()
    };
    let copy = line("copywriting");
    assert_eq!(copy["provider"], "openai");
    assert_eq!(
        (
            copy["tasks"].as_i64(),
            copy["input_tokens"].as_u64(),
            copy["output_tokens"].as_u64()
        ),
        (Some(1), Some(PROMPT_TOKENS), Some(MAX_OUT))
    );
    assert_eq!(copy["credits"], charge);
    // The pipeline's extraction ran on FFmpeg (media seconds, no tokens), its other
    // steps on the simulator.
    let pipe = items
        .iter()
        .find(|i| i["kind"] == "video_analysis" && i["provider"] == "simulated")
        .unwrap_or_else(|| panic!("{report}"));
    let (pin, pout) = (
        pipe["input_tokens"].as_i64().unwrap(),
        pipe["output_tokens"].as_i64().unwrap(),
    );
    assert!(pin > 0 && pout > 0, "{pipe}");
    let pipe_charge = FLAT + ceil_k(pin * PER_1K_IN + pout * PER_1K_OUT);
    assert_eq!(
        pipe["credits"], pipe_charge,
        "the steps' tokens, priced once"
    );
    let pipe_ledger: i64 = ledger_of(&app, &key, &va)
        .await
        .iter()
        .map(|(_, d)| d)
        .sum();
    assert_eq!(pipe_ledger, -pipe_charge);
    assert_eq!(report["credits"], charge + pipe_charge);
    assert_eq!(balance(&app, &key).await, 1000 - charge - pipe_charge);

    // A range before the work has nothing; bad ranges are refused with the field named.
    let empty = app
        .get_json(
            &key,
            "/v1/me/usage?from=2020-01-01T00:00:00Z&to=2020-02-01T00:00:00Z",
        )
        .await;
    assert_eq!(empty["items"], json!([]));
    assert_eq!(empty["credits"], 0);
    for (query, field) in [
        ("from=yesterday", "from"),
        ("from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"),
        ("from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"),
        ("to=soon", "to"),
        ("user=someone", ""),
    ] {
        let r = app
            .client
            .get(app.url(&format!("/v1/me/usage?{query}")))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{query}");
        let body: Value = r.json().await.unwrap();
        if !field.is_empty() {
            assert_eq!(body["error"]["field"], field, "{query}: {body}");
        }
    }
    done(env, app).await;
}
