//! Live progress over WebSocket and SSE.

use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use crate::helpers::tasks;
use crate::helpers::{Backend, TestApp, TestEnv, done, spawn_app};
use crate::on_every_backend;

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

on_every_backend!(
    snapshot_then_events_then_terminal,
    resume_after_a_disconnect_has_no_gap_and_no_duplicate,
    tickets_and_origins_are_checked_before_the_upgrade,
    another_users_task_gets_an_error_frame,
    an_oversized_frame_closes_the_socket,
    sse_resumes_from_last_event_id,
);

async fn ticket(app: &TestApp, key: &str) -> String {
    let r = app
        .client
        .post(app.url("/v1/ws-tickets"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    r.json::<Value>().await.unwrap()["ticket"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub async fn connect(app: &TestApp, key: &str) -> Ws {
    let url = format!("ws://{}/v1/ws?ticket={}", app.addr, ticket(app, key).await);
    tokio_tungstenite::connect_async(url)
        .await
        .expect("websocket connects")
        .0
}

pub async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

/// The next JSON frame (pings are answered by the library).
pub async fn next(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a frame in time");
        match msg {
            Some(Ok(Message::Text(t))) => return serde_json::from_str(&t).unwrap(),
            Some(Ok(Message::Close(c))) => {
                return json!({ "type": "closed", "frame": format!("{c:?}") });
            }
            Some(Ok(_)) => continue,
            None | Some(Err(_)) => return json!({ "type": "closed" }),
        }
    }
}

async fn submit(app: &TestApp, key: &str, step_ms: u64) -> String {
    tasks::submit_id(
        app,
        key,
        json!({ "kind": "image", "prompt": "x", "params": { "simulate": { "step_ms": step_ms } } }),
    )
    .await
}

async fn app(backend: Backend, test: &str) -> Option<(TestEnv, TestApp)> {
    let env = TestEnv::new(backend, test).await?;
    let app = spawn_app(&env).await;
    app.start_consumers();
    Some((env, app))
}

async fn snapshot_then_events_then_terminal(backend: Backend) {
    let Some((env, app)) = app(backend, "ws_snapshot_events_terminal").await else {
        return;
    };
    let (_, key) = app.user("ada", 100).await;
    let id = submit(&app, &key, 800).await;
    let mut ws = connect(&app, &key).await;
    send(&mut ws, json!({ "op": "subscribe", "task_id": id })).await;
    let snap = next(&mut ws).await;
    assert_eq!(snap["type"], "snapshot", "{snap}");
    assert_eq!(snap["task"]["id"], id.as_str());
    let mut last = snap["seq"].as_i64().unwrap();
    let mut saw_progress = false;
    loop {
        let f = next(&mut ws).await;
        match f["type"].as_str().unwrap() {
            "event" => {
                let seq = f["seq"].as_i64().unwrap();
                assert!(seq > last, "sequence grows: {seq} after {last}");
                last = seq;
                saw_progress |= f["progress"].as_i64().unwrap() > 0 && f["status"] == "PROCESSING";
            }
            "unsubscribed" => {
                assert_eq!(f["reason"], "terminal");
                break;
            }
            other => panic!("unexpected frame {other}: {f}"),
        }
    }
    assert!(saw_progress);
    let t = tasks::task(&app, &key, &id).await;
    assert_eq!(t["status"], "SUCCESS");
    done(env, app).await;
}

async fn resume_after_a_disconnect_has_no_gap_and_no_duplicate(backend: Backend) {
    let Some((env, app)) = app(backend, "ws_resume").await else {
        return;
    };
    let (_, key) = app.user("ada", 100).await;
    let id = submit(&app, &key, 1000).await;
    let mut ws = connect(&app, &key).await;
    send(&mut ws, json!({ "op": "subscribe", "task_id": id })).await;
    let snap = next(&mut ws).await;
    let mut seqs = vec![snap["seq"].as_i64().unwrap()];
    let first = next(&mut ws).await;
    assert_eq!(first["type"], "event");
    seqs.push(first["seq"].as_i64().unwrap());
    drop(ws); // the page closes
    tasks::wait_status(&app, &key, &id, "SUCCESS").await;

    let mut ws = connect(&app, &key).await;
    send(
        &mut ws,
        json!({ "op": "subscribe", "task_id": id, "after_seq": seqs.last() }),
    )
    .await;
    loop {
        let f = next(&mut ws).await;
        match f["type"].as_str().unwrap() {
            "event" => seqs.push(f["seq"].as_i64().unwrap()),
            "unsubscribed" => break,
            other => panic!("unexpected frame {other}: {f}"),
        }
    }
    let expected: Vec<i64> = (seqs[0]..=*seqs.last().unwrap()).collect();
    assert_eq!(seqs, expected, "every event exactly once");
    let stored = conveyor::domains::ai_tasks::store::events_after(&app.platform.db, &id, 0)
        .await
        .unwrap();
    assert_eq!(*seqs.last().unwrap(), i64::from(stored.last().unwrap().seq));
    done(env, app).await;
}

async fn tickets_and_origins_are_checked_before_the_upgrade(backend: Backend) {
    let Some((env, app)) = app(backend, "ws_tickets_origins").await else {
        return;
    };
    let (_, key) = app.user("ada", 100).await;
    let status = |r: Result<_, tokio_tungstenite::tungstenite::Error>| match r {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => resp.status().as_u16(),
        Ok(_) => 101,
        Err(e) => panic!("{e}"),
    };
    let base = format!("ws://{}/v1/ws", app.addr);
    assert_eq!(
        status(
            tokio_tungstenite::connect_async(base.clone())
                .await
                .map(|_| ())
        ),
        401,
        "no ticket"
    );
    assert_eq!(
        status(
            tokio_tungstenite::connect_async(format!("{base}?ticket=wst_forged"))
                .await
                .map(|_| ())
        ),
        401
    );
    let t = ticket(&app, &key).await;
    assert_eq!(
        status(
            tokio_tungstenite::connect_async(format!("{base}?ticket={t}"))
                .await
                .map(|_| ())
        ),
        101
    );
    assert_eq!(
        status(
            tokio_tungstenite::connect_async(format!("{base}?ticket={t}"))
                .await
                .map(|_| ())
        ),
        401,
        "single use"
    );
    let t = ticket(&app, &key).await;
    let mut req = format!("{base}?ticket={t}").into_client_request().unwrap();
    req.headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    assert_eq!(
        status(tokio_tungstenite::connect_async(req).await.map(|_| ())),
        403,
        "foreign origin"
    );
    let mut req = format!("{base}?ticket={t}").into_client_request().unwrap();
    req.headers_mut()
        .insert("origin", "http://localhost:8080".parse().unwrap());
    assert_eq!(
        status(tokio_tungstenite::connect_async(req).await.map(|_| ())),
        101,
        "allowed origin; the refused attempt did not use the ticket"
    );
    // A page the server itself serves (the demo, the console) on any port: its own origin
    // is always allowed, though `live.allowed_origins` names only :8080.
    let t = ticket(&app, &key).await;
    let mut req = format!("{base}?ticket={t}").into_client_request().unwrap();
    req.headers_mut()
        .insert("origin", format!("http://{}", app.addr).parse().unwrap());
    assert_eq!(
        status(tokio_tungstenite::connect_async(req).await.map(|_| ())),
        101,
        "the server's own origin"
    );
    // Expired: a ticket from a server whose tickets live 0 seconds.
    let mut env2 = TestEnv::new(backend, "ws_tickets_expired").await.unwrap();
    env2.settings.live.ticket_ttl_secs = 0;
    let app2 = spawn_app(&env2).await;
    let (_, key2) = app2.user("bo", 1).await;
    let t = ticket(&app2, &key2).await;
    assert_eq!(
        status(
            tokio_tungstenite::connect_async(format!("ws://{}/v1/ws?ticket={t}", app2.addr))
                .await
                .map(|_| ())
        ),
        401,
        "expired"
    );
    done(env2, app2).await;
    done(env, app).await;
}

async fn another_users_task_gets_an_error_frame(backend: Backend) {
    let Some((env, app)) = app(backend, "ws_cross_user").await else {
        return;
    };
    let (_, alice) = app.user("alice", 100).await;
    let (_, bob) = app.user("bob", 100).await;
    let id = submit(&app, &alice, 300).await;
    let mut ws = connect(&app, &bob).await;
    send(&mut ws, json!({ "op": "subscribe", "task_id": id })).await;
    let f = next(&mut ws).await;
    assert_eq!(f["type"], "error");
    assert_eq!(f["code"], "not_found");
    // Nothing of alice's task arrives, even with "all my tasks".
    send(&mut ws, json!({ "op": "subscribe", "all": true })).await;
    assert_eq!(next(&mut ws).await["type"], "subscribed");
    tasks::wait_status(&app, &alice, &id, "SUCCESS").await;
    let quiet = tokio::time::timeout(Duration::from_millis(500), ws.next()).await;
    assert!(
        quiet.is_err() || matches!(quiet, Ok(Some(Ok(Message::Ping(_))))),
        "no frames for another user's task: {quiet:?}"
    );
    done(env, app).await;
}

async fn an_oversized_frame_closes_the_socket(backend: Backend) {
    let Some((env, app)) = app(backend, "ws_oversized_frame").await else {
        return;
    };
    let (_, key) = app.user("ada", 100).await;
    let mut ws = connect(&app, &key).await;
    let _ = ws.send(Message::Text("x".repeat(64 * 1024).into())).await;
    let f = next(&mut ws).await;
    assert_eq!(f["type"], "closed", "{f}");
    done(env, app).await;
}

async fn sse_resumes_from_last_event_id(backend: Backend) {
    let Some((env, app)) = app(backend, "sse_resume").await else {
        return;
    };
    let (_, key) = app.user("ada", 100).await;
    let id = submit(&app, &key, 300).await;
    tasks::wait_status(&app, &key, &id, "SUCCESS").await;
    let r = app
        .client
        .get(app.url(&format!("/v1/tasks/{id}/events")))
        .bearer_auth(&key)
        .header("last-event-id", "2")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let body = tokio::time::timeout(Duration::from_secs(20), r.text())
        .await
        .expect("the stream ends after the terminal event")
        .unwrap();
    let ids: Vec<i64> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|s| s.parse().unwrap())
        .collect();
    let stored = conveyor::domains::ai_tasks::store::events_after(&app.platform.db, &id, 2)
        .await
        .unwrap();
    assert_eq!(
        ids,
        stored.iter().map(|e| i64::from(e.seq)).collect::<Vec<_>>(),
        "{body}"
    );
    assert_eq!(ids.first(), Some(&3));
    assert!(body.contains("SUCCESS"));
    // The last event says the task is over (a client does not resume it).
    assert!(
        body.trim_end()
            .ends_with("event: end\ndata: {\"reason\":\"terminal\"}"),
        "{body}"
    );
    // Another user's task is 404 here too.
    let (_, bob) = app.user("bob", 1).await;
    let r = app
        .client
        .get(app.url(&format!("/v1/tasks/{id}/events")))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    done(env, app).await;
}

/// Two API instances on one RabbitMQ: a subscriber on B sees a task submitted through A.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_cross_api_instances() {
    let Some(env) = TestEnv::new(Backend::RabbitPostgres, "events_cross_api_instances").await
    else {
        return;
    };
    let a = spawn_app(&env).await;
    let b = spawn_app(&env).await;
    a.start_consumers();
    let (_, key) = a.user("ada", 100).await;
    let id = submit(&a, &key, 1000).await;
    let mut ws = connect(&b, &key).await;
    send(&mut ws, json!({ "op": "subscribe", "task_id": id })).await;
    assert_eq!(next(&mut ws).await["type"], "snapshot");
    let mut statuses = Vec::new();
    loop {
        let f = next(&mut ws).await;
        match f["type"].as_str().unwrap() {
            "event" => statuses.push(f["status"].as_str().unwrap().to_owned()),
            "unsubscribed" => break,
            other => panic!("unexpected {other}: {f}"),
        }
    }
    assert_eq!(statuses.last().map(String::as_str), Some("SUCCESS"));
    assert!(
        statuses.iter().any(|s| s == "PROCESSING"),
        "live events reached instance B: {statuses:?}"
    );
    let _ = b.stop().await;
    let platform = a.stop().await;
    env.cleanup(Some(&platform)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_sockets_with_a_close_frame_and_the_pages_load_the_client() {
    let env = TestEnv::new(Backend::Embedded, "ws_shutdown_close")
        .await
        .unwrap();
    let app = spawn_app(&env).await;
    // The pages load the TypeScript client's bundle and carry no live code of their own.
    let script = r#"<script src="/assets/conveyor-client.js"></script>"#;
    for path in ["/demo", "/ops"] {
        let page = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(page.status(), 200);
        let page = page.text().await.unwrap();
        assert!(page.contains(script), "{path} loads the client");
        for own in [
            "WebSocket(",
            "EventSource",
            "getReader",
            "/v1/ws-tickets",
            "TextDecoder",
        ] {
            assert!(!page.contains(own), "{path} has its own live code: {own}");
        }
    }
    let js = app
        .client
        .get(app.url("/assets/conveyor-client.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(js.status(), 200);
    assert_eq!(
        js.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let js = js.text().await.unwrap();
    for part in [
        "var Conveyor=",
        "/v1/ws-tickets",
        "last-event-id",
        "after_seq",
    ] {
        assert!(js.contains(part), "the bundle has {part}");
    }
    let (_, key) = app.user("ada", 1).await;
    let mut ws = connect(&app, &key).await;
    send(&mut ws, json!({ "op": "subscribe", "all": true })).await;
    assert_eq!(next(&mut ws).await["type"], "subscribed");
    app.shutdown.cancel();
    let f = next(&mut ws).await;
    assert_eq!(f["type"], "closed");
    assert!(
        f["frame"].as_str().unwrap().contains("Away"),
        "close code 1001: {f}"
    );
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}

/// A client that stops reading is closed once its socket backs up; a client reading
/// the same events meanwhile gets all of them, without waiting for the slow one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_is_closed_and_does_not_delay_a_fast_one() {
    let env = TestEnv::new(Backend::Embedded, "ws_slow_reader")
        .await
        .unwrap();
    let app = spawn_app(&env).await;
    let (user, key) = app.user("ada", 1).await;
    // The slow reader's socket has a small receive buffer, so the server backs up soon.
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let stream = sock.connect(app.addr).await.unwrap();
    let url = format!(
        "ws://{}/v1/ws?ticket={}",
        app.addr,
        ticket(&app, &key).await
    );
    let (mut slow, _) = tokio_tungstenite::client_async(url, stream).await.unwrap();
    let mut fast = connect(&app, &key).await;
    let subscribe = json!({ "op": "subscribe", "all": true }).to_string();
    slow.send(Message::Text(subscribe.clone().into()))
        .await
        .unwrap();
    assert!(matches!(slow.next().await, Some(Ok(Message::Text(_)))));
    send(&mut fast, json!({ "op": "subscribe", "all": true })).await;
    assert_eq!(next(&mut fast).await["type"], "subscribed");
    // Many distinct tasks, so nothing can be coalesced away: ~20 MB of frames.
    let n = 60_000;
    let broker = app.platform.broker.clone();
    let uid = user.id.clone();
    let emitter = tokio::spawn(async move {
        for i in 0..n {
            let ev = conveyor::domains::ai_tasks::messages::TaskEvent {
                task_id: format!("slow-{i:06}"),
                user_id: uid.clone(),
                seq: 1,
                status: conveyor::domains::ai_tasks::Status::Processing,
                progress: 50,
                step: Some("x".repeat(200)),
                message: None,
                at: chrono::Utc::now(),
                kind: Default::default(),
                delta: None,
            };
            broker
                .publish_events(
                    conveyor::live::EVENTS.name,
                    vec![serde_json::to_vec(&ev.live()).unwrap()],
                )
                .await
                .unwrap();
            // Paced (20,000/s) so readers keep up with the fan-out instead of lagging.
            if i % 1000 == 999 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    // The fast reader keeps up and sees events to the end.
    let mut got = 0usize;
    let start = std::time::Instant::now();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), fast.next()).await {
            Ok(Some(Ok(Message::Text(_)))) => got += 1,
            Ok(Some(Ok(_))) => {}
            _ => break,
        }
        if got >= 1000 && emitter.is_finished() && start.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    emitter.await.unwrap();
    assert!(got >= 1000, "the fast reader kept receiving ({got} frames)");
    // The slow one, reading only now, finds its socket closed by the server.
    let mut closed = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(5), slow.next()).await {
            Ok(Some(Ok(Message::Close(_)))) | Ok(None) | Ok(Some(Err(_))) => {
                closed = true;
                break;
            }
            Ok(Some(Ok(_))) => {}
            Err(_) => break,
        }
    }
    assert!(closed, "the server closed the slow reader");
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}
