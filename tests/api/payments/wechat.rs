//! WeChat Pay's notifications: signed and AES-GCM sealed, granted once, forgeries refused.

use super::*;
use crate::on_every_backend;

on_every_backend!(a_wechat_notification_grants_once_and_refuses_forgeries,);

pub(super) struct Wechat {
    pub(super) pair: aws_lc_rs::signature::RsaKeyPair,
}

const API_V3_KEY: &str = "0123456789abcdef0123456789abcdef";

impl Wechat {
    pub(super) fn new(env: &mut TestEnv) -> Wechat {
        use aws_lc_rs::encoding::AsDer as _;
        use aws_lc_rs::signature::KeyPair as _;
        use base64::Engine as _;
        let pair =
            aws_lc_rs::signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let der = pair.public_key().as_der().unwrap();
        let public = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        env.settings.sections.get_mut("payments").unwrap()["wechat"] = json!({
            "appid": "wx1", "mchid": "m1", "api_v3_key": API_V3_KEY,
            "platform_keys": { "S1": public },
        });
        Wechat { pair }
    }

    /// A payment notification for `transaction` (encrypted) with its signed headers.
    pub(super) fn notify(
        &self,
        id: &str,
        transaction: &Value,
    ) -> (String, [(&'static str, String); 4]) {
        self.notify_as(id, "TRANSACTION.SUCCESS", transaction)
    }

    pub(super) fn notify_as(
        &self,
        id: &str,
        event_type: &str,
        transaction: &Value,
    ) -> (String, [(&'static str, String); 4]) {
        use base64::Engine as _;
        let b64 = &base64::engine::general_purpose::STANDARD;
        let key = aws_lc_rs::aead::LessSafeKey::new(
            aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_256_GCM, API_V3_KEY.as_bytes())
                .unwrap(),
        );
        let mut data = transaction.to_string().into_bytes();
        key.seal_in_place_append_tag(
            aws_lc_rs::aead::Nonce::try_assume_unique_for_key(b"abcdefghijkl").unwrap(),
            aws_lc_rs::aead::Aad::from(b"transaction"),
            &mut data,
        )
        .unwrap();
        let body = json!({
            "id": id, "event_type": event_type,
            "resource": { "algorithm": "AEAD_AES_256_GCM", "associated_data": "transaction",
                          "nonce": "abcdefghijkl", "ciphertext": b64.encode(&data) },
        })
        .to_string();
        let ts = chrono::Utc::now().timestamp().to_string();
        let signed = format!("{ts}\nnonce-1\n{body}\n");
        let mut sig = vec![0u8; self.pair.public_modulus_len()];
        self.pair
            .sign(
                &aws_lc_rs::signature::RSA_PKCS1_SHA256,
                &aws_lc_rs::rand::SystemRandom::new(),
                signed.as_bytes(),
                &mut sig,
            )
            .unwrap();
        let headers = [
            ("wechatpay-timestamp", ts),
            ("wechatpay-nonce", "nonce-1".to_owned()),
            ("wechatpay-signature", b64.encode(sig)),
            ("wechatpay-serial", "S1".to_owned()),
        ];
        (body, headers)
    }
}

pub(super) async fn post_wechat(
    app: &TestApp,
    body: &str,
    headers: &[(&'static str, String)],
) -> (u16, Value) {
    let mut req = app
        .client
        .post(app.url("/v1/webhooks/payments/wechat"))
        .header("content-type", "application/json")
        .body(body.to_owned());
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

async fn a_wechat_notification_grants_once_and_refuses_forgeries(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "payments_wechat").await else {
        return;
    };
    let wechat = Wechat::new(&mut env);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("payer", 0).await;
    let payment = intent(&app, &key).await;
    let tx = |total: i64, mchid: &str| {
        json!({ "appid": "wx1", "mchid": mchid, "out_trade_no": payment["out_trade_no"],
                "trade_state": "SUCCESS", "amount": { "total": total, "currency": "CNY" } })
    };
    let (body, headers) = wechat.notify("EV-1", &tx(990, "m1"));
    for _ in 0..3 {
        let (status, answer) = post_wechat(&app, &body, &headers).await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (200, Some("SUCCESS")),
            "{answer}"
        );
    }
    wait_until(Duration::from_secs(30), "the grant", || async {
        app.credits(&user.id).await == 100
    })
    .await;
    // Another serial; the body changed after signing; a cheaper amount; another merchant.
    let mut unknown = headers.clone();
    unknown[3].1 = "S9".into();
    assert_eq!(post_wechat(&app, &body, &unknown).await.0, 400);
    assert_eq!(
        post_wechat(&app, &body.replace("EV-1", "EV-9"), &headers)
            .await
            .0,
        400
    );
    let (cheap, cheap_headers) = wechat.notify("EV-2", &tx(1, "m1"));
    assert_eq!(post_wechat(&app, &cheap, &cheap_headers).await.0, 400);
    let (other, other_headers) = wechat.notify("EV-3", &tx(990, "m9"));
    assert_eq!(post_wechat(&app, &other, &other_headers).await.0, 400);
    // Settled, not slept on: a second grant would have been applied by now.
    app.drain(&conveyor::domains::payments::queues::PAYMENTS_APPLY)
        .await;
    assert_eq!(app.credits(&user.id).await, 100, "granted once");
    // A partial refund (REFUND.SUCCESS, no appid in its resource), delivered twice.
    let refund = json!({ "mchid": "m1", "out_trade_no": payment["out_trade_no"],
        "out_refund_no": "R1", "refund_status": "SUCCESS",
        "amount": { "total": 990, "refund": 99, "payer_total": 990, "payer_refund": 99 } });
    let (body, headers) = wechat.notify_as("EV-R1", "REFUND.SUCCESS", &refund);
    for _ in 0..2 {
        assert_eq!(post_wechat(&app, &body, &headers).await.0, 200);
    }
    wait_until(Duration::from_secs(30), "the refund", || async {
        app.credits(&user.id).await == 90
    })
    .await;
    // The same refund (R1) in a notification with a new id: recorded once, by refund.
    let (again, again_headers) = wechat.notify_as("EV-R1-resent", "REFUND.SUCCESS", &refund);
    assert_eq!(post_wechat(&app, &again, &again_headers).await.0, 200);
    // Settled, not slept on: a second grant would have been applied by now.
    app.drain(&conveyor::domains::payments::queues::PAYMENTS_APPLY)
        .await;
    assert_eq!(app.credits(&user.id).await, 90, "a tenth back, once");
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}
