//! The `conveyor` binary as a user runs it: config errors, SIGTERM, users.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use sea_orm::{ColumnTrait as _, EntityTrait as _, QueryFilter as _};
use std::time::{Duration, Instant};

use crate::helpers::process::*;
use crate::helpers::tasks;
use crate::helpers::{Backend, TestEnv};

#[test]
fn a_bad_config_value_exits_non_zero_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (key, value, expect) in [
        ("CONVEYOR__SERVER__PORT", "eighty", "server.port"),
        ("CONVEYOR__BROKER__KIND", "kafka", "broker.kind"),
        ("CONVEYOR__DATABASE__URL", "oracle://db", "database.url"),
    ] {
        let out = command(BIN, dir.path())
            .arg("serve")
            .env(key, value)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{key}={value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(expect), "{stderr}");
        assert!(!stderr.contains("panicked"));
    }
}

/// `consume` takes a group or `--queues`, never neither; an unknown queue is named, with
/// the ones there are.
#[test]
fn consume_names_what_it_cannot_consume() {
    let dir = tempfile::tempdir().unwrap();
    let out = command(BIN, dir.path()).arg("consume").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "neither a group nor queues");
    let out = command(BIN, dir.path())
        .args(["consume", "--queues", "ai.media.extract,ai.nope"])
        .env("CONVEYOR__BROKER__KIND", "rabbitmq")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown queue `ai.nope`") && stderr.contains("ai.media.asr"),
        "{stderr}"
    );
}

/// Fail closed: an empty, blank, short or repeated HMAC secret stops the start-up (an
/// empty one verifies a signature anyone can make), and so does a non-loopback bind
/// without an operator token or with a weak one.
#[test]
fn weak_secrets_and_an_open_bind_stop_the_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let real = "whsec_0123456789abcdef0123456789abcdef";
    let refused = [
        (
            "CONVEYOR__PAYMENTS__HMAC_SECRETS",
            String::new(),
            "payments.hmac_secrets",
        ),
        (
            "CONVEYOR__PAYMENTS__HMAC_SECRETS",
            " ".to_owned(),
            "payments.hmac_secrets",
        ),
        (
            "CONVEYOR__PAYMENTS__HMAC_SECRETS",
            format!("{real},"),
            "payments.hmac_secrets",
        ),
        (
            "CONVEYOR__PAYMENTS__HMAC_SECRETS",
            format!("{real}, ,"),
            "payments.hmac_secrets",
        ),
        (
            "CONVEYOR__PAYMENTS__HMAC_SECRETS",
            "whsec_short".to_owned(),
            "payments.hmac_secrets",
        ),
        (
            "CONVEYOR__PAYMENTS__HMAC_SECRETS",
            format!("{real},{real}"),
            "payments.hmac_secrets",
        ),
        (
            "CONVEYOR__SERVER__OPS_TOKEN",
            "tiny".to_owned(),
            "server.ops_token",
        ),
        (
            "CONVEYOR__LIMITS__NO_SUCH_LIMIT",
            "5".to_owned(),
            "no_such_limit",
        ),
        ("CONVEYOR__PLANS__FREE__WEIGHT", "0".to_owned(), "weight"),
        (
            "CONVEYOR__PLANS__MEMBER__LIMITS__NO_SUCH_LIMIT",
            "5".to_owned(),
            "no_such_limit",
        ),
    ];
    for (key, value, expect) in refused {
        let out = command(BIN, dir.path())
            .arg("serve")
            .env(key, &value)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}={value:?}: {stderr}");
        assert!(stderr.contains(expect), "{key}={value:?}: {stderr}");
        assert!(
            !stderr.contains(real),
            "the secret is never printed: {stderr}"
        );
    }
    // Reachable from the network without an operator token: refused before binding.
    let out = command(BIN, dir.path())
        .arg("serve")
        .env("CONVEYOR__SERVER__HOST", "0.0.0.0")
        .env("CONVEYOR__SERVER__PORT", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("server.ops_token"), "{stderr}");
    // A real secret with surrounding spaces is trimmed and accepted.
    let out = command(BIN, dir.path())
        .arg("config")
        .env("CONVEYOR__PAYMENTS__HMAC_SECRETS", format!(" {real} "))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn config_masks_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let out = command(BIN, dir.path())
        .arg("config")
        .env(
            "CONVEYOR__BROKER__URL",
            "amqp://app:hunter2@rabbit:5672/%2f",
        )
        .env(
            "CONVEYOR__DATABASE__URL",
            "postgres://db:5432/app?user=app&password=swordfish",
        )
        .env("CONVEYOR__DEDUPE__URL", "redis://:redispass@cache:6379/")
        .env(
            "CONVEYOR__AI__PROVIDERS__OPENAI__BASE_URL",
            "https://proxyuser:proxypass@llm.example.com/v1",
        )
        .env("CONVEYOR__AI__PROVIDERS__OPENAI__API_KEY", "sk-live-abcdef")
        .env(
            "CONVEYOR__PAYMENTS__HMAC_SECRETS",
            "whsec_one_0123456789abcdef0123456789,whsec_two_0123456789abcdef0123456789",
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("amqp://app:****@rabbit:5672"), "{text}");
    for secret in [
        "hunter2",
        "swordfish",
        "redispass",
        "proxypass",
        "sk-live-abcdef",
        "whsec_one",
        "whsec_two",
    ] {
        assert!(!text.contains(secret), "{secret} printed:\n{text}");
    }
    // What is not secret stays readable.
    assert!(
        text.contains("llm.example.com/v1") && text.contains("user=app"),
        "{text}"
    );
}

#[tokio::test]
async fn serve_on_embedded_defaults_answers_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    // A user created from the CLI can use the API the server then runs.
    let key = cli_user(dir.path(), "ada", 100);
    let out = command(BIN, dir.path())
        .args(["users", "create", "--name", "root", "--admin"])
        .output()
        .unwrap();
    let admin = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|w| w.starts_with("cvk_"))
        .unwrap_or_else(|| panic!("{out:?}"))
        .to_owned();

    let port = free_port();
    let mut child = Running(
        command(BIN, dir.path())
            .arg("serve")
            .env("CONVEYOR__SERVER__PORT", port.to_string())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_ready(port).await;
    let me: serde_json::Value = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/v1/me"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["credits"], 100);
    assert!(
        dir.path().join("data/conveyor.sqlite").exists(),
        "embedded database under ./data"
    );

    // The CLI submits a task and follows it over the WebSocket to its result.
    let server = format!("http://127.0.0.1:{port}");
    let server_args = ["--server", server.as_str(), "--key", key.as_str()];
    let out = command(BIN, dir.path())
        .args([
            "tasks",
            "submit",
            "--kind",
            "copywriting",
            "--prompt",
            "tea for summer",
            "--watch",
        ])
        .args(server_args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("tea for summer"),
        "the result is printed: {stdout}"
    );
    let out = command(BIN, dir.path())
        .args(["tasks", "watch", "no-such-task"])
        .args(server_args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "watching an unknown task fails");
    // Tasks found by their metadata, and counted for a bulk action (an admin's).
    let tagged: serde_json::Value = reqwest::Client::new()
        .post(format!("{server}/v1/tasks"))
        .bearer_auth(&key)
        .json(&serde_json::json!({ "kind": "copywriting", "prompt": "p", "metadata": { "campaign": "9" } }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let out = command(BIN, dir.path())
        .args(["tasks", "list", "--metadata", "campaign:9"])
        .args(server_args)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{listed}");
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains(tagged["id"].as_str().unwrap()), "{listed}");
    let out = command(BIN, dir.path())
        .args([
            "tasks",
            "bulk",
            "cancel",
            "--metadata",
            "campaign:9",
            "--dry-run",
        ])
        .args(["--server", server.as_str(), "--key", admin.as_str()])
        .output()
        .unwrap();
    let counted = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && counted.contains("tasks match"),
        "{counted}"
    );
    let out = command(BIN, dir.path())
        .args(["tasks", "bulk", "cancel", "--dry-run"])
        .args(server_args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "a tenant's key is not an admin's");

    sigterm(&child);
    let status = wait_exit(&mut child, Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_processes_stop_on_sigterm() {
    let Some(env) = TestEnv::new(
        Backend::RabbitPostgres,
        "consumer_processes_stop_on_sigterm",
    )
    .await
    else {
        return;
    };
    for bin in [BIN, CONSUMER_BIN] {
        let mut cmd = command(bin, env.dir.path());
        if bin == BIN {
            cmd.arg("consume");
        }
        let mut child = on_services(cmd.arg("ai"), &env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map(Running)
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let start = Instant::now();
        loop {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("consumer logs its start");
            if line.contains("consumer process started") {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(30));
        }
        sigterm(&child);
        let status = wait_exit(&mut child, Duration::from_secs(10));
        assert!(status.success(), "{bin}: {status:?}");
    }
    let platform = env.platform().await;
    env.cleanup(Some(&platform)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_listed_replayed_and_discarded_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = command(BIN, dir.path()).args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stdout, _) = run(&["dead-letters", "list"]);
    assert!(ok);
    assert!(stdout.contains("no dead letters"), "{stdout}");

    // A dead letter as the consumer runtime records it.
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("data/conveyor.sqlite").display()
    );
    let db = sea_orm::Database::connect(url).await.unwrap();
    let envelope = conveyor::broker::Envelope::new("ai.task.run", serde_json::json!({}));
    let info = conveyor::broker::DeadLetterInfo {
        reason: conveyor::broker::DeadReason::Exhausted,
        origin_queue: "ns.ai.short".into(),
        attempts: 3,
        last_error: "provider timed out".into(),
    };
    conveyor::dead_letters::record(
        &db,
        &envelope.id,
        "ai.short",
        &envelope.kind,
        &info,
        &[],
        &envelope.encode(usize::MAX).unwrap(),
        3,
    )
    .await
    .unwrap();
    let id = conveyor::dead_letters::list(&db, None, 1).await.unwrap()[0]
        .id
        .to_string();

    let (ok, stdout, _) = run(&["dead-letters", "list", "--status", "dead"]);
    assert!(ok);
    assert!(
        stdout.contains("ai.short") && stdout.contains("provider timed out"),
        "{stdout}"
    );
    let (ok, stdout, _) = run(&["dead-letters", "replay", &id]);
    assert!(ok);
    assert_eq!(stdout.trim(), format!("{id}: replayed"));
    let (ok, stdout, _) = run(&["dead-letters", "replay", "--queue", "ai.short"]);
    assert!(ok, "nothing left to replay is not an error");
    assert!(
        stdout.starts_with("0 dead letter(s) of ai.short to replay; 0 parked as needs_fix"),
        "{stdout}"
    );
    let (ok, stdout, _) = run(&["dead-letters", "replay", &id]);
    assert!(ok);
    assert_eq!(stdout.trim(), format!("{id}: already replayed"));
    let (ok, stdout, _) = run(&["dead-letters", "show", &id]);
    assert!(ok);
    assert!(stdout.contains("replay by cli:"), "{stdout}");
    let (ok, _, stderr) = run(&["dead-letters", "discard", &id, "424242"]);
    assert!(!ok, "one of them failed");
    assert!(stderr.contains("is replayed"), "{stderr}");
    assert!(stderr.contains("424242 not found"), "{stderr}");
    let (ok, _, stderr) = run(&["dead-letters", "list", "--status", "gone"]);
    assert!(!ok);
    assert!(stderr.contains("unknown --status"), "{stderr}");

    // The replay waits in the outbox for the next running relay.
    let pending = conveyor::outbox::entity::Entity::find()
        .all(&db)
        .await
        .unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].queue, "ai.short");
    assert!(pending[0].message_id.starts_with("replay-"));
    let sent = conveyor::broker::Envelope::decode(pending[0].body.as_bytes(), usize::MAX).unwrap();
    assert_eq!(
        sent.id, envelope.id,
        "the same message id: deduplicated downstream"
    );
    assert_eq!(sent.attempt, 0);

    // A letter parked as needs_fix: a filter counts it, skips it, and takes it with --force.
    let parked = conveyor::broker::Envelope::new("ai.task.run", serde_json::json!({}));
    conveyor::dead_letters::record(
        &db,
        &parked.id,
        "ai.short",
        &parked.kind,
        &info,
        &[],
        &parked.encode(usize::MAX).unwrap(),
        3,
    )
    .await
    .unwrap();
    conveyor::dead_letters::entity::Entity::update_many()
        .col_expr(
            conveyor::dead_letters::entity::Column::Status,
            sea_orm::sea_query::Expr::value("needs_fix"),
        )
        .filter(conveyor::dead_letters::entity::Column::MessageId.eq(parked.id.clone()))
        .exec(&db)
        .await
        .unwrap();
    let (ok, stdout, _) = run(&["dead-letters", "replay", "--queue", "ai.short", "--dry-run"]);
    assert!(ok);
    assert_eq!(
        stdout.trim(),
        "0 dead letter(s) of ai.short to replay; 1 parked as needs_fix skipped (--force to include)"
    );
    let (ok, stdout, _) = run(&["dead-letters", "replay", "--queue", "ai.short"]);
    assert!(ok);
    assert!(!stdout.contains(": replayed"), "skipped: {stdout}");
    let (ok, stdout, _) = run(&[
        "dead-letters",
        "replay",
        "--queue",
        "ai.short",
        "--force",
        "--dry-run",
    ]);
    assert!(ok);
    assert!(
        stdout.starts_with("1 dead letter(s) of ai.short to replay"),
        "{stdout}"
    );
    let (ok, stdout, _) = run(&["dead-letters", "replay", "--queue", "ai.short", "--force"]);
    assert!(ok);
    assert!(stdout.contains(": replayed"), "{stdout}");
}

/// `conveyor orgs …` and `conveyor users plan` on the embedded defaults: an
/// organisation made, joined and given a plan; a user's plan set; unknown plans named.
#[test]
fn organisations_and_plans_are_managed_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = command(BIN, dir.path()).args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let user = |name: &str| {
        let (ok, stdout, stderr) = run(&["users", "create", "--name", name]);
        assert!(ok, "{stderr}");
        // "user NAME (ID) created …"
        stdout
            .split_once('(')
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(id, _)| id.to_owned())
            .unwrap()
    };
    let (owner, mate) = (user("owner"), user("mate"));
    let (ok, stdout, stderr) = run(&["orgs", "create", "--name", "Team", "--owner", &owner]);
    assert!(ok, "{stderr}");
    let org = stdout
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(id, _)| id.to_owned())
        .unwrap();
    let (ok, stdout, stderr) = run(&["orgs", "add", &org, &mate]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&mate) && stdout.contains("member"),
        "{stdout}"
    );
    let (ok, stdout, stderr) = run(&["orgs", "plan", &org, "member"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("plan member (set)"), "{stdout}");
    let (ok, _, stderr) = run(&["orgs", "remove", &org, &owner]);
    assert!(!ok && stderr.contains("owner"), "{stderr}");
    let (ok, _, stderr) = run(&["users", "plan", &mate, "gold"]);
    assert!(
        !ok && stderr.contains("free") && stderr.contains("member"),
        "{stderr}"
    );
    let (ok, stdout, stderr) = run(&["orgs", "remove", &org, &mate]);
    assert!(ok, "{stderr}");
    assert!(!stdout.contains(&mate), "{stdout}");
    let (ok, stdout, stderr) = run(&["users", "plan", &mate, "member"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("plan member (Admin)"), "{stdout}");
    let (ok, stdout, _) = run(&["users", "limits", &mate]);
    assert!(ok && stdout.starts_with("plan member"), "{stdout}");
}

#[test]
fn a_config_section_no_domain_reads_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = command(BIN, dir.path())
        .arg("config")
        .env("CONVEYOR__IA__EXECUTOR", "simulated")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[ia]"), "{stderr}");
}

/// `conveyor flash-sales …` against the real stock store (Redis) and a local database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flash_sales_are_created_shown_listed_and_reconciled_from_the_cli() {
    let Some(env) = TestEnv::new(Backend::RabbitPostgres, "cli_flash_sales").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = command(BIN, dir.path())
            .args(args)
            .env("CONVEYOR__DEDUPE__KIND", "redis")
            .env("CONVEYOR__DEDUPE__URL", &env.settings.dedupe.url)
            .env(
                "CONVEYOR__DEDUPE__KEY_PREFIX",
                &env.settings.dedupe.key_prefix,
            )
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let created: serde_json::Value = serde_json::from_str(&run(&[
        "flash-sales",
        "create",
        "--item",
        "tea set",
        "--price",
        "5",
        "--stock",
        "7",
        "--limit",
        "1",
    ]))
    .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["remaining"], 7);
    let shown: serde_json::Value =
        serde_json::from_str(&run(&["flash-sales", "show", &id])).unwrap();
    assert_eq!(shown["remaining"], 7, "loaded into Redis by create");
    assert!(run(&["flash-sales", "list"]).contains(&id));
    let report: serde_json::Value =
        serde_json::from_str(&run(&["flash-sales", "reconcile", &id])).unwrap();
    assert_eq!(report["drift"], 0);
    assert_eq!(report["live_orders"], 0);
    env.cleanup(None).await;
}

/// PKCS#8 PEM of a new RSA key and the base64 DER of its public half.
fn rsa_test_key() -> (String, String) {
    use aws_lc_rs::encoding::{AsDer as _, Pkcs8V1Der};
    use aws_lc_rs::signature::KeyPair as _;
    use base64::Engine as _;
    let b64 = &base64::engine::general_purpose::STANDARD;
    let pair =
        aws_lc_rs::signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let pkcs8: Pkcs8V1Der = pair.as_der().unwrap();
    let body = b64.encode(pkcs8.as_ref());
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        lines.join("\n")
    );
    let public = b64.encode(pair.public_key().as_der().unwrap().as_ref());
    (pem, public)
}

/// `conveyor payments sign` prints a curl command; run as printed, each provider's
/// webhook accepts it and the payment is granted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payments_sign_prints_a_curl_the_webhook_accepts() {
    use crate::helpers::{spawn_app, wait_until};
    use serde_json::json;
    const API_V3: &str = "0123456789abcdef0123456789abcdef";
    let Some(mut env) = TestEnv::new(Backend::Embedded, "cli_payments_sign").await else {
        return;
    };
    let (ali_private, ali_public) = rsa_test_key();
    let (wx_private, wx_public) = rsa_test_key();
    let payments = env.settings.sections.get_mut("payments").unwrap();
    payments["hmac_secrets"] = json!(["whsec_cli_0123456789abcdef0123456789"]);
    payments["alipay"] = json!({ "app_id": "2021001", "public_key": ali_public });
    payments["wechat"] =
        json!({ "mchid": "m1", "api_v3_key": API_V3, "platform_keys": { "PUB1": wx_public } });
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("payer", 0).await;
    let dir = tempfile::tempdir().unwrap();
    let sign = |provider: &str, event: serde_json::Value| {
        let file = dir.path().join(format!("{provider}.json"));
        std::fs::write(&file, event.to_string()).unwrap();
        let out = command(BIN, dir.path())
            .args(["payments", "sign", "--provider", provider, "--file"])
            .arg(&file)
            .args(["--url", &app.url("")])
            .env(
                "CONVEYOR__PAYMENTS__HMAC_SECRETS",
                "whsec_cli_0123456789abcdef0123456789",
            )
            .env("CONVEYOR__PAYMENTS__ALIPAY__TEST_SIGNING_KEY", &ali_private)
            .env("CONVEYOR__PAYMENTS__WECHAT__API_V3_KEY", API_V3)
            .env("CONVEYOR__PAYMENTS__WECHAT__TEST_SIGNING_KEY", &wx_private)
            .env("CONVEYOR__PAYMENTS__WECHAT__TEST_SIGNING_SERIAL", "PUB1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let curl = String::from_utf8(out.stdout).unwrap();
        assert!(curl.starts_with("curl "), "{curl}");
        assert!(
            !curl.contains("PRIVATE KEY") && !curl.contains("whsec_cli_0123456789abcdef0123456789"),
            "no secret printed"
        );
        let ran = Command::new("sh")
            .arg("-c")
            .arg(curl.trim())
            .output()
            .unwrap();
        String::from_utf8(ran.stdout).unwrap()
    };
    let mut paid = Vec::new();
    for provider in ["hmac", "alipay", "wechat"] {
        let r = app
            .client
            .post(app.url("/v1/payments"))
            .bearer_auth(&key)
            .json(&json!({ "product": "credits_100" }))
            .send()
            .await
            .unwrap();
        let p: serde_json::Value = r.json().await.unwrap();
        let out_trade_no = p["out_trade_no"].as_str().unwrap().to_owned();
        let answer = match provider {
            "hmac" => sign(
                "hmac",
                json!({ "id": "cli-1", "type": "payment.succeeded",
                "data": { "out_trade_no": out_trade_no, "amount": 990, "currency": "CNY" } }),
            ),
            "alipay" => sign(
                "alipay",
                json!({ "app_id": "2021001", "notify_id": "cli-2",
                "out_trade_no": out_trade_no, "total_amount": "9.90", "trade_status": "TRADE_SUCCESS" }),
            ),
            _ => sign(
                "wechat",
                json!({ "mchid": "m1", "out_trade_no": out_trade_no, "trade_state": "SUCCESS",
                "amount": { "total": 990, "currency": "CNY" } }),
            ),
        };
        let accepted = match provider {
            "hmac" => answer.contains("\"received\":true"),
            "alipay" => answer == "success",
            _ => answer.contains("SUCCESS"),
        };
        assert!(accepted, "{provider}: {answer}");
        paid.push(out_trade_no);
    }
    wait_until(Duration::from_secs(30), "three grants", || async {
        app.credits(&user.id).await == 300
    })
    .await;
    // Without a key configured, it says what is missing instead of signing.
    let file = dir.path().join("x.json");
    std::fs::write(&file, "{}").unwrap();
    let out = command(BIN, dir.path())
        .args(["payments", "sign", "--provider", "alipay", "--file"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("test_signing_key"));
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// `conveyor search reindex` rebuilds the index from the table: live rows indexed,
/// deleted ones not, with a summary line (here on an embedded index in a directory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_reindex_rebuilds_the_index_from_the_database() {
    use conveyor::domains::search_sync::store;
    use conveyor::search::SearchIndex as _;
    use sea_orm::TransactionTrait as _;
    let env = TestEnv::new(Backend::Embedded, "cli_search_reindex")
        .await
        .unwrap();
    let platform = env.platform().await;
    let txn = platform.db.begin().await.unwrap();
    let mut ids = Vec::new();
    for i in 0..5 {
        let m = store::create(
            &txn,
            store::NewMaterial {
                user_id: "ada".into(),
                task_id: format!("task-{i}"),
                kind: "copywriting".into(),
                title: format!("reindexed {i}"),
                content: "green tea".into(),
                // The reindex copies vectors too.
                vectors: Some(conveyor::search::semantic::Embedded {
                    model: "simulated-hashed-512".into(),
                    vectors: vec![conveyor::search::semantic::hashed("green tea reindexed")],
                }),
            },
        )
        .await
        .unwrap();
        ids.push(m.id);
    }
    txn.commit().await.unwrap();
    store::delete(&platform.db, "ada", &ids[0], chrono::Duration::seconds(60))
        .await
        .unwrap()
        .unwrap();
    let index_dir = env.dir.path().join("search");
    let out = command(BIN, env.dir.path())
        .args(["search", "reindex", "--batch", "2"])
        .env("CONVEYOR__DATABASE__URL", &env.settings.database.url)
        .env("CONVEYOR__SEARCH__PATH", index_dir.to_str().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("5 copied"), "{stdout}");
    let index = conveyor::search::embedded::EmbeddedIndex::open(Some(&index_dir)).unwrap();
    let hits = index
        .search(&conveyor::search::Query {
            owner: "ada".into(),
            text: "reindexed".into(),
            kind: None,
            semantic: None,
            min_score: 0.0,
            offset: 0,
            limit: 10,
        })
        .await
        .unwrap();
    let by_meaning = index
        .search(&conveyor::search::Query {
            owner: "ada".into(),
            text: String::new(),
            kind: None,
            semantic: Some(conveyor::search::semantic::hashed("green tea")),
            min_score: 0.3,
            offset: 0,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(hits.total, 4, "the deleted one is not indexed: {hits:?}");
    assert!(hits.hits.iter().all(|h| h.id != ids[0]));
    assert_eq!(
        by_meaning.total, 4,
        "the vectors were copied: {by_meaning:?}"
    );
    env.cleanup(Some(&platform)).await;
}

/// Recovery in seconds (issue 16): a consumer process killed with SIGKILL while it holds
/// dozens of running tasks; a second consumer finishes every one of them, each once, within
/// 10 s of the kill plus their own run time. The lease settings are the defaults of
/// config/base.toml (the test overlay's are shorter), so this bounds what users get.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_killed_mid_work_is_recovered_in_seconds() {
    use sea_orm::{ColumnTrait as _, PaginatorTrait as _, QueryFilter as _};
    let Some(mut env) = TestEnv::new(Backend::RabbitPostgres, "kill9_recovery").await else {
        return;
    };
    // The defaults users run with.
    let defaults = [
        ("CONVEYOR__DEDUPE__LEASE_MS", "10000"),
        ("CONVEYOR__AI__HEARTBEAT_MS", "1000"),
        ("CONVEYOR__AI__STALE_AFTER_MS", "5000"),
        ("CONVEYOR__AI__REAPER_INTERVAL_MS", "1000"),
        ("CONVEYOR__BROKER__RETRY_TIERS_MS", "1000,5000,30000"),
    ];
    env.settings.dedupe.lease_ms = 10_000;
    // The same retry tiers as the consumer processes, so the app's clean-up knows (and
    // deletes) the retry queues they declare.
    env.settings.broker.retry_tiers_ms = vec![1000, 5000, 30000];
    let app = crate::helpers::spawn_app(&env).await;
    let consumer = |env: &TestEnv| {
        let mut cmd = command(BIN, env.dir.path());
        on_services(cmd.args(["consume", "ai"]), env)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in defaults {
            cmd.env(k, v);
        }
        cmd.spawn().map(Running).unwrap()
    };
    let mut first = consumer(&env);
    let (user, key) = app.user("writer", 1000).await;
    let n = 60;
    let run_ms = 2000;
    for i in 0..n {
        let r = tasks::submit(
            &app,
            &key,
            serde_json::json!({ "kind": "copywriting", "prompt": format!("task {i}"),
                                    "params": { "simulate": { "step_ms": run_ms } } }),
        )
        .await;
        assert_eq!(r.status(), 202);
    }
    use conveyor::domains::ai_tasks::entity::task;
    use conveyor::domains::ai_tasks::kinds::Status;
    let count = |status: Status| {
        task::Entity::find()
            .filter(task::Column::Status.eq(status))
            .count(&app.platform.db)
    };
    crate::helpers::wait_until(Duration::from_secs(30), "tasks running", || async {
        count(Status::Processing).await.unwrap() >= 20
    })
    .await;
    let in_flight = count(Status::Processing).await.unwrap();
    first.kill().unwrap();
    first.wait().unwrap();
    let killed = Instant::now();
    let second = consumer(&env);
    crate::helpers::wait_until(Duration::from_secs(60), "every task finished", || async {
        count(Status::Success).await.unwrap() == n
    })
    .await;
    let took = killed.elapsed();
    eprintln!("kill -9 with {in_flight} tasks running: all {n} done {took:?} after the kill");
    // The tasks still to run after the kill need about (n / 32 + 1) waves of run_ms.
    let bound = Duration::from_secs(10) + Duration::from_millis(run_ms * 3);
    assert!(took <= bound, "recovered in {took:?}, bound {bound:?}");
    // Each once: one material per task, the credits consumed once.
    use conveyor::domains::search_sync::entity::material;
    assert_eq!(
        material::Entity::find()
            .count(&app.platform.db)
            .await
            .unwrap(),
        n
    );
    assert_eq!(app.credits(&user.id).await, 1000 - n as i64);
    // Stopped before the clean-up: a live consumer re-declares the queues deleted under
    // it, which left this test's topology behind on the shared broker.
    drop(second);
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}
