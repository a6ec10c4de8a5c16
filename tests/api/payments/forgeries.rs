//! Forged webhooks of every provider are never accepted.

use super::alipay::{Alipay, post_alipay};
use super::wechat::{Wechat, post_wechat};
use super::*;

/// Random forgeries over HTTP for each scheme — bodies, headers, timestamps, serials,
/// signatures and keys changed after signing: not one is accepted, nothing is recorded
/// or granted; then the genuine events are (the harness can tell an accept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_webhooks_are_never_accepted() {
    use rand::Rng as _;
    const EACH: usize = 1000;
    let Some(mut env) = TestEnv::new(Backend::Embedded, "payments_forgeries").await else {
        return;
    };
    with_secret(&mut env);
    let alipay = Alipay::new(&mut env);
    let wechat = Wechat::new(&mut env);
    let other_alipay = Alipay {
        pair: aws_lc_rs::signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap(),
    };
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("payer", 0).await;
    let payment = intent(&app, &key).await;
    let mut rng = rand::rng();
    let flip = |bytes: &mut Vec<u8>, rng: &mut rand::rngs::ThreadRng| {
        let i = rng.random_range(0..bytes.len());
        let was = bytes[i];
        while bytes[i] == was {
            bytes[i] = rng.random_range(0x20..0x7f);
        }
    };

    // HMAC: body byte, timestamp, signature, secret, stale.
    let now = chrono::Utc::now().timestamp();
    let hmac_body = event("f-hmac", &payment, 990);
    let sig = signature(&hmac_body, now);
    for n in 0..EACH {
        let (b, h) = match n % 5 {
            0 => {
                let mut b = hmac_body.clone().into_bytes();
                flip(&mut b, &mut rng);
                (String::from_utf8_lossy(&b).into_owned(), sig.clone())
            }
            1 => {
                let t = now + rng.random_range(1..100) * if rng.random_bool(0.5) { 1 } else { -1 };
                (
                    hmac_body.clone(),
                    sig.replacen(&format!("t={now}"), &format!("t={t}"), 1),
                )
            }
            2 => {
                let mut h = sig.clone().into_bytes();
                let i = rng.random_range(h.len() - 64..h.len());
                h[i] = if h[i] == b'0' { b'1' } else { b'0' };
                (hmac_body.clone(), String::from_utf8(h).unwrap())
            }
            3 => (
                hmac_body.clone(),
                signature_with(&format!("whsec_{}", rng.random::<u64>()), &hmac_body, now),
            ),
            _ => (
                hmac_body.clone(),
                signature(&hmac_body, now - 301 - rng.random_range(0..10_000)),
            ),
        };
        let (status, answer) = deliver(&app, &b, &h).await;
        assert_ne!(status, 200, "HMAC forgery {n} accepted: {answer}");
    }

    // Alipay: a signed value, a dropped or added parameter, the signature, another key.
    let id = payment["out_trade_no"].as_str().unwrap().to_owned();
    let params = [
        ("app_id", "2021001"),
        ("seller_id", "2088001"),
        ("notify_id", "f-ali"),
        ("trade_no", "t-f"),
        ("out_trade_no", id.as_str()),
        ("total_amount", "9.90"),
        ("trade_status", "TRADE_SUCCESS"),
    ];
    let form = alipay.notify(&params);
    let pairs: Vec<(String, String)> = form_urlencoded::parse(form.as_bytes())
        .into_owned()
        .collect();
    let encode = |pairs: &[(String, String)]| {
        let mut f = form_urlencoded::Serializer::new(String::new());
        for (k, v) in pairs {
            f.append_pair(k, v);
        }
        f.finish()
    };
    for n in 0..EACH {
        let mut p = pairs.clone();
        let forged = match n % 5 {
            0 => {
                let i = rng.random_range(0..params.len());
                let mut v = p[i].1.clone().into_bytes();
                flip(&mut v, &mut rng);
                p[i].1 = String::from_utf8_lossy(&v).into_owned();
                encode(&p)
            }
            1 => {
                p.remove(rng.random_range(0..params.len()));
                encode(&p)
            }
            2 => {
                p.insert(0, (format!("x{}", rng.random::<u32>()), "1".into()));
                encode(&p)
            }
            3 => {
                let sign = p.iter_mut().find(|(k, _)| k == "sign").unwrap();
                let mut v = sign.1.clone().into_bytes();
                let i = rng.random_range(0..v.len() - 4);
                v[i] = if v[i] == b'A' { b'B' } else { b'A' };
                sign.1 = String::from_utf8(v).unwrap();
                encode(&p)
            }
            _ => other_alipay.notify(&params),
        };
        let answer = post_alipay(&app, &forged).await;
        assert_eq!(
            answer,
            (400, "failure".into()),
            "Alipay forgery {n} accepted"
        );
    }

    // WeChat: body byte, timestamp, nonce, signature, serial.
    let tx = json!({ "appid": "wx1", "mchid": "m1", "out_trade_no": payment["out_trade_no"],
        "trade_state": "SUCCESS", "amount": { "total": 990, "currency": "CNY" } });
    let (body, headers) = wechat.notify("f-wx", &tx);
    for n in 0..EACH {
        let mut h = headers.clone();
        let mut b = body.clone();
        match n % 5 {
            0 => {
                let mut bytes = b.into_bytes();
                flip(&mut bytes, &mut rng);
                b = String::from_utf8_lossy(&bytes).into_owned();
            }
            1 => {
                let t: i64 = h[0].1.parse().unwrap();
                h[0].1 = (t + rng.random_range(1..100)).to_string();
            }
            2 => h[1].1 = format!("nonce-{}", rng.random::<u32>()),
            3 => {
                let mut v = h[2].1.clone().into_bytes();
                let i = rng.random_range(0..v.len() - 4);
                v[i] = if v[i] == b'A' { b'B' } else { b'A' };
                h[2].1 = String::from_utf8(v).unwrap();
            }
            _ => h[3].1 = format!("S{}", rng.random_range(2..1000)),
        }
        let (status, answer) = post_wechat(&app, &b, &h).await;
        assert_ne!(status, 200, "WeChat forgery {n} accepted: {answer}");
    }

    let p = show(&app, &key, &payment).await;
    assert_eq!(p["events"].as_array().unwrap().len(), 0, "nothing recorded");
    assert_eq!(app.credits(&user.id).await, 0);
    // The genuine three are accepted; the payment is granted once.
    assert_eq!(deliver(&app, &hmac_body, &sig).await.0, 200);
    assert_eq!(post_alipay(&app, &form).await, (200, "success".into()));
    assert_eq!(post_wechat(&app, &body, &headers).await.0, 200);
    wait_payment(&app, &key, &payment, "PAID").await;
    assert_eq!(app.credits(&user.id).await, 100);
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}
