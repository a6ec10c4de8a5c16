//! Alipay's notify: RSA2-signed forms, granted once, forgeries refused.

use super::*;
use crate::on_every_backend;

on_every_backend!(an_alipay_notify_grants_once_and_refuses_forgeries,);

pub(super) struct Alipay {
    pub(super) pair: aws_lc_rs::signature::RsaKeyPair,
}

impl Alipay {
    pub(super) fn new(env: &mut TestEnv) -> Alipay {
        use aws_lc_rs::encoding::AsDer as _;
        use aws_lc_rs::signature::KeyPair as _;
        use base64::Engine as _;
        let pair =
            aws_lc_rs::signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let der = pair.public_key().as_der().unwrap();
        let public = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        env.settings.sections.get_mut("payments").unwrap()["alipay"] =
            json!({ "app_id": "2021001", "seller_id": "2088001", "public_key": public });
        Alipay { pair }
    }

    /// The form Alipay posts, signed.
    pub(super) fn notify(&self, params: &[(&str, &str)]) -> String {
        use base64::Engine as _;
        let map = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let signed = conveyor::domains::payments::verify::alipay_signed_string(&map);
        let mut sig = vec![0u8; self.pair.public_modulus_len()];
        self.pair
            .sign(
                &aws_lc_rs::signature::RSA_PKCS1_SHA256,
                &aws_lc_rs::rand::SystemRandom::new(),
                signed.as_bytes(),
                &mut sig,
            )
            .unwrap();
        let mut form = form_urlencoded::Serializer::new(String::new());
        for (k, v) in params {
            form.append_pair(k, v);
        }
        form.append_pair("sign_type", "RSA2");
        form.append_pair(
            "sign",
            &base64::engine::general_purpose::STANDARD.encode(sig),
        );
        form.finish()
    }
}

pub(super) async fn post_alipay(app: &TestApp, form: &str) -> (u16, String) {
    let r = app
        .client
        .post(app.url("/v1/webhooks/payments/alipay"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.to_owned())
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn an_alipay_notify_grants_once_and_refuses_forgeries(backend: Backend) {
    let Some(mut env) = TestEnv::new(backend, "payments_alipay").await else {
        return;
    };
    let alipay = Alipay::new(&mut env);
    let app = spawn_app(&env).await;
    app.start_consumers();
    let (user, key) = app.user("payer", 0).await;
    let payment = intent(&app, &key).await;
    let id = payment["out_trade_no"].as_str().unwrap().to_owned();
    let good = [
        ("app_id", "2021001"),
        ("seller_id", "2088001"),
        ("notify_id", "n-1"),
        ("trade_no", "t-1"),
        ("out_trade_no", id.as_str()),
        ("total_amount", "9.90"),
        ("trade_status", "TRADE_SUCCESS"),
    ];
    let form = alipay.notify(&good);
    for _ in 0..5 {
        assert_eq!(post_alipay(&app, &form).await, (200, "success".into()));
    }
    wait_until(Duration::from_secs(30), "the grant", || async {
        app.credits(&user.id).await == 100
    })
    .await;
    // The same signed notify re-keyed: `notify_id` moved into the value before it in
    // sort order (`app_id`: Alipay's signed string escapes no `&`), or a key repeated.
    // The signature still verifies; the notify is refused, never recorded anew.
    let sign = form_urlencoded::parse(form.as_bytes())
        .find(|(k, _)| k == "sign")
        .unwrap()
        .1
        .into_owned();
    let mut smuggled = form_urlencoded::Serializer::new(String::new());
    for (k, v) in good.iter().filter(|(k, _)| *k != "notify_id") {
        let v = if *k == "app_id" {
            "2021001&notify_id=n-1"
        } else {
            v
        };
        smuggled.append_pair(k, v);
    }
    smuggled.append_pair("sign_type", "RSA2");
    smuggled.append_pair("sign", &sign);
    let smuggled = smuggled.finish();
    assert_eq!(post_alipay(&app, &smuggled).await, (400, "failure".into()));
    let repeated = format!("{form}&notify_id=n-1");
    assert_eq!(post_alipay(&app, &repeated).await, (400, "failure".into()));
    let mut odd_id = good;
    odd_id[2] = ("notify_id", "n 1/x");
    assert_eq!(
        post_alipay(&app, &alipay.notify(&odd_id)).await,
        (400, "failure".into())
    );
    // Forged: the amount changed after signing; another app; signed by someone else.
    let tampered = form.replace("9.90", "0.01");
    assert_eq!(post_alipay(&app, &tampered).await, (400, "failure".into()));
    let mut other_app = good;
    other_app[0] = ("app_id", "2021999");
    other_app[2] = ("notify_id", "n-2");
    assert_eq!(
        post_alipay(&app, &alipay.notify(&other_app)).await,
        (400, "failure".into())
    );
    let mut cheap = good;
    cheap[5] = ("total_amount", "0.01");
    cheap[2] = ("notify_id", "n-3");
    assert_eq!(
        post_alipay(&app, &alipay.notify(&cheap)).await,
        (400, "failure".into())
    );
    // A closed trade is acknowledged and grants nothing.
    let mut closed = good;
    closed[6] = ("trade_status", "TRADE_CLOSED");
    closed[2] = ("notify_id", "n-4");
    assert_eq!(
        post_alipay(&app, &alipay.notify(&closed)).await,
        (200, "success".into())
    );
    // Settled, not slept on: a second grant would have been applied by now.
    app.drain(&conveyor::domains::payments::queues::PAYMENTS_APPLY)
        .await;
    assert_eq!(app.credits(&user.id).await, 100, "granted once");
    // Refunds: Alipay's refund_fee is the total refunded so far. Half, then all (the
    // trade closes); each notify twice, and the first again after the second.
    let mut half = good.to_vec();
    half[2] = ("notify_id", "n-5");
    half.push(("refund_fee", "4.95"));
    half.push(("out_biz_no", "R1"));
    half.push(("gmt_refund", "2026-12-03 10:00:00"));
    let half = alipay.notify(&half);
    let mut all = good.to_vec();
    all[2] = ("notify_id", "n-6");
    all[6] = ("trade_status", "TRADE_CLOSED");
    all.push(("refund_fee", "9.90"));
    all.push(("out_biz_no", "R2"));
    all.push(("gmt_refund", "2026-12-03 10:05:00"));
    let all_form = alipay.notify(&all);
    for _ in 0..2 {
        assert_eq!(post_alipay(&app, &half).await, (200, "success".into()));
    }
    wait_until(Duration::from_secs(30), "half back", || async {
        app.credits(&user.id).await == 50
    })
    .await;
    for form in [&all_form, &all_form, &half] {
        assert_eq!(post_alipay(&app, form).await, (200, "success".into()));
    }
    let mut too_much = all.clone();
    too_much[2] = ("notify_id", "n-7");
    too_much[7] = ("refund_fee", "10.00");
    too_much[8] = ("out_biz_no", "R3");
    assert_eq!(
        post_alipay(&app, &alipay.notify(&too_much)).await,
        (400, "failure".into())
    );
    // A refund notify without its request number; one whose `out_biz_no` was folded into
    // the value before it in sort order (`notify_type`): the signature of the folded one
    // still verifies, and both are refused.
    let mut anonymous = all.clone();
    anonymous[2] = ("notify_id", "n-8");
    anonymous.remove(8);
    assert_eq!(
        post_alipay(&app, &alipay.notify(&anonymous)).await,
        (400, "failure".into())
    );
    let mut typed = all.clone();
    typed[2] = ("notify_id", "n-9");
    typed[8] = ("out_biz_no", "R4");
    typed.push(("notify_type", "trade_status_sync"));
    let signed = alipay.notify(&typed);
    let sign = form_urlencoded::parse(signed.as_bytes())
        .find(|(k, _)| k == "sign")
        .unwrap()
        .1
        .into_owned();
    let mut folded = form_urlencoded::Serializer::new(String::new());
    for (k, v) in typed.iter().filter(|(k, _)| *k != "out_biz_no") {
        let v = if *k == "notify_type" {
            "trade_status_sync&out_biz_no=R4"
        } else {
            v
        };
        folded.append_pair(k, v);
    }
    folded.append_pair("sign_type", "RSA2");
    folded.append_pair("sign", &sign);
    assert_eq!(
        post_alipay(&app, &folded.finish()).await,
        (400, "failure".into())
    );
    wait_payment(&app, &key, &payment, "REFUNDED").await;
    assert_eq!(app.credits(&user.id).await, 0, "taken back once");
    let platform = app.stop().await;
    env.cleanup(Some(&platform)).await;
}
