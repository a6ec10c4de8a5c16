//! Payment webhooks at 50 concurrent clients, for each scheme (Stripe-style HMAC, Alipay
//! RSA2, WeChat Pay v3), against PostgreSQL + RabbitMQ, next to a floor measured in the
//! same run: a bare axum handler that inserts the raw body as one row and commits on the
//! same database (the submit bench's). Every request is a new, validly signed event (signed before the clock
//! starts), so each one takes the accepted path: verify, look the payment up, inbox row +
//! outbox message in one transaction, answer. Floor and webhook take turns in three
//! rounds. Then what verification alone costs per request (CPU), and how fast the
//! `payments.apply` consumer drains the inbox the load left behind.
//!
//!     cargo bench --bench webhooks            # 3000 requests per scheme
//!     cargo bench --bench webhooks -- 6000

// Bench code: a failed unwrap is a failed run, which is what it should be.
#![allow(clippy::unwrap_used)]

mod common;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aws_lc_rs::encoding::AsDer as _;
use aws_lc_rs::signature::{KeyPair as _, RsaKeyPair};
use base64::Engine as _;
use common::{Round, floor_server, summary};
use conveyor::app::Application;
use conveyor::domains::payments::sign::{self, RsaSigner};
use conveyor::domains::payments::store::{self, NewPayment};
use conveyor::domains::payments::verify::{self, RsaPublicKey, WechatHeaders};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const CLIENTS: usize = 50;
const API_V3: &str = "0123456789abcdef0123456789abcdef";
const SECRET: &str = "whsec_bench_0123456789abcdef0123456789";

/// One prepared request: its headers and body.
#[derive(Clone)]
struct Req {
    headers: Vec<(&'static str, String)>,
    body: String,
}

/// `CLIENTS` clients post `reqs[from..to]` to `url`, each answer must be a 200.
async fn load(url: &str, reqs: Arc<Vec<Req>>, from: usize, to: usize) -> Round {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(CLIENTS)
        .build()
        .unwrap();
    let next = Arc::new(AtomicUsize::new(from));
    let start = Instant::now();
    let workers = (0..CLIENTS).map(|_| {
        let (client, next, url, reqs) =
            (client.clone(), next.clone(), url.to_owned(), reqs.clone());
        tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= to {
                    return lat;
                }
                let r = &reqs[i];
                let t = Instant::now();
                let mut req = client.post(&url).body(r.body.clone());
                for (k, v) in &r.headers {
                    req = req.header(*k, v);
                }
                let answer = req.send().await.unwrap();
                let status = answer.status();
                let text = answer.text().await.unwrap_or_default();
                assert_eq!(status, 200, "{text}");
                lat.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        })
    });
    let latencies = futures::future::join_all(workers)
        .await
        .into_iter()
        .flat_map(|r| r.unwrap())
        .collect();
    Round {
        latencies,
        secs: start.elapsed().as_secs_f64(),
    }
}

fn keypair() -> (RsaSigner, String) {
    let pair = RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let public = base64::engine::general_purpose::STANDARD
        .encode(pair.public_key().as_der().unwrap().as_ref());
    (RsaSigner::from_pair(pair), public)
}

/// `n` distinct, validly signed events of each scheme for payment `id` (990 fen).
fn events(
    n: usize,
    id: &str,
    alipay: &RsaSigner,
    wechat: &RsaSigner,
) -> [(&'static str, Vec<Req>); 3] {
    let now = chrono::Utc::now().timestamp();
    let hmac = (0..n)
        .map(|i| {
            let body = json!({ "id": format!("evt-{i}"), "type": "payment.succeeded",
                "data": { "out_trade_no": id, "amount": 990, "currency": "CNY" } })
            .to_string();
            Req {
                headers: vec![
                    ("content-type", "application/json".into()),
                    (
                        "conveyor-signature",
                        sign::hmac_header(SECRET.as_bytes(), now, body.as_bytes()),
                    ),
                ],
                body,
            }
        })
        .collect();
    let ali = (0..n)
        .map(|i| {
            let params: BTreeMap<String, String> = [
                ("app_id", "2021001".to_owned()),
                ("notify_id", format!("n-{i}")),
                ("trade_no", format!("t-{i}")),
                ("out_trade_no", id.to_owned()),
                ("total_amount", "9.90".to_owned()),
                ("trade_status", "TRADE_SUCCESS".to_owned()),
                ("gmt_payment", "2026-12-03 10:00:00".to_owned()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
            Req {
                headers: vec![("content-type", "application/x-www-form-urlencoded".into())],
                body: sign::alipay_form(&params, alipay).unwrap(),
            }
        })
        .collect();
    let resource = json!({ "appid": "wx1", "mchid": "m1", "out_trade_no": id,
        "trade_state": "SUCCESS", "amount": { "total": 990, "currency": "CNY" } })
    .to_string();
    let wx = (0..n)
        .map(|i| {
            let note = sign::wechat_notification(
                &format!("wx-{i}"),
                "TRANSACTION.SUCCESS",
                resource.as_bytes(),
                API_V3.as_bytes(),
                wechat,
                "S1",
                now,
            )
            .unwrap();
            let mut headers = vec![("content-type", "application/json".to_owned())];
            headers.extend(note.headers);
            Req {
                headers,
                body: note.body,
            }
        })
        .collect();
    [("hmac", hmac), ("alipay", ali), ("wechat", wx)]
}

/// Microseconds of CPU per verification of each scheme, in this process.
fn verify_cost(reqs: &[(&'static str, Vec<Req>); 3], alipay: &RsaPublicKey, wechat: &RsaPublicKey) {
    let now = chrono::Utc::now().timestamp();
    let keys = [("S1".to_owned(), wechat.clone())];
    for (scheme, list) in reqs {
        let n = list.len().min(1000);
        let start = Instant::now();
        for r in &list[..n] {
            let h = |k: &str| {
                r.headers
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.as_str())
                    .unwrap_or_default()
            };
            let ok = match *scheme {
                "hmac" => verify::hmac_sha256(
                    h("conveyor-signature"),
                    r.body.as_bytes(),
                    &[SECRET.as_bytes()],
                    now,
                    300,
                )
                .is_ok(),
                "alipay" => verify::alipay(r.body.as_bytes(), alipay).is_ok(),
                _ => {
                    let headers = WechatHeaders {
                        timestamp: h("wechatpay-timestamp"),
                        nonce: h("wechatpay-nonce"),
                        signature: h("wechatpay-signature"),
                        serial: h("wechatpay-serial"),
                    };
                    verify::wechat(
                        &headers,
                        r.body.as_bytes(),
                        &keys,
                        API_V3.as_bytes(),
                        now,
                        300,
                    )
                    .is_ok()
                }
            };
            assert!(ok, "{scheme} does not verify");
        }
        let us = start.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!("verify {scheme:<7} {us:>8.1} µs per event (one core)");
    }
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let total: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3000);
    let Some(stack) = common::Stack::start("webhooks").await else {
        return;
    };
    let mut s = stack.settings.clone();
    let (alipay_signer, alipay_public) = keypair();
    let (wechat_signer, wechat_public) = keypair();
    let payments = s.sections.get_mut("payments").unwrap();
    payments["hmac_secrets"] = json!([SECRET]);
    payments["alipay"] = json!({ "app_id": "2021001", "public_key": alipay_public });
    payments["wechat"] = json!({ "appid": "wx1", "mchid": "m1", "api_v3_key": API_V3,
        "platform_keys": { "S1": wechat_public } });

    let app = Application::build(s.clone()).await.unwrap();
    let addr = app.addr();
    let platform = app.platform().clone();
    let stop = CancellationToken::new();
    let server = tokio::spawn(app.run_until(stop.clone()));
    let (user, _) = conveyor::users::create(&platform.db, "payer", 0, false)
        .await
        .unwrap();
    let payment = store::create(
        &platform.db,
        &user.id,
        NewPayment {
            product: "credits_100".into(),
            credits: 100,
            membership_months: 0,
            plan: None,
            order_id: None,
            amount: 990,
            currency: "CNY".into(),
        },
    )
    .await
    .unwrap();
    let (floor_url, floor_stop) = floor_server(platform.db.clone()).await;
    let signing = Instant::now();
    let schemes = events(total, &payment.id, &alipay_signer, &wechat_signer);
    println!(
        "[PostgreSQL + RabbitMQ] {total} distinct signed events per scheme (signed in {:.1} s, before the clock), {CLIENTS} clients, intake only",
        signing.elapsed().as_secs_f64()
    );
    println!(
        "{:<34} {:>8} {:>7} {:>7} {:>11} {:>10}",
        "", "req/s", "p50 ms", "p99 ms", "x floor rate", "x floor p99"
    );
    const ROUNDS: usize = 3;
    for (scheme, reqs) in &schemes {
        let reqs = Arc::new(reqs.clone());
        let url = format!("http://{addr}/v1/webhooks/payments/{scheme}");
        let (mut floor, mut ours) = (Vec::new(), Vec::new());
        let per = total / ROUNDS;
        for round in 0..ROUNDS {
            let (from, to) = (round * per, (round + 1) * per);
            floor.push(load(&floor_url, reqs.clone(), from, to).await);
            ours.push(load(&url, reqs.clone(), from, to).await);
        }
        let (fr, f50, f99) = summary(floor);
        let (r, p50, p99) = summary(ours);
        println!(
            "{:<34} {fr:>8.0} {f50:>7.1} {f99:>7.1}",
            format!("floor insert+commit ({scheme} bodies)")
        );
        println!(
            "{:<34} {r:>8.0} {p50:>7.1} {p99:>7.1} {:>11.2} {:>10.2}",
            format!("POST …/payments/{scheme}"),
            r / fr,
            p99 / f99
        );
    }
    verify_cost(
        &schemes,
        &RsaPublicKey::from_pem_or_base64(&alipay_public).unwrap(),
        &RsaPublicKey::from_pem_or_base64(&wechat_public).unwrap(),
    );

    // The consumer drains what the load recorded (one grant, the rest already paid).
    let (pending, _) = store::backlog(&platform.db).await.unwrap();
    let start = Instant::now();
    let workers = {
        let (p, token) = (platform.clone(), stop.clone());
        tokio::spawn(async move {
            let groups = ["payments".to_owned()];
            conveyor::app::run_workers(&p, conveyor::domains::ALL, Some(&groups), token).await
        })
    };
    loop {
        let (left, _) = store::backlog(&platform.db).await.unwrap();
        if left == 0 {
            break;
        }
        if start.elapsed() > Duration::from_secs(300) {
            println!("only {}/{pending} events applied in 300 s", pending - left);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "apply: {pending} recorded events applied by the payments consumer in {secs:.2} s = {:.0} events/s",
        pending as f64 / secs
    );
    let balance = <conveyor::users::entity::user::Entity as sea_orm::EntityTrait>::find_by_id(
        user.id.clone(),
    )
    .one(&platform.db)
    .await
    .unwrap()
    .unwrap()
    .credits;
    assert_eq!(
        balance,
        100,
        "{} events of one payment granted once",
        3 * total
    );

    floor_stop.cancel();
    stop.cancel();
    let _ = server.await;
    let _ = workers.await;
    drop(platform);
    stack.teardown().await;
}
