//! The schemes under test: known answers, refusals, and thousands of mutations that
//! must never verify.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use aws_lc_rs::encoding::AsDer as _;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{KeyPair as _, RsaKeyPair};
use aws_lc_rs::{aead, hmac, signature};
use base64::Engine as _;
use rand::Rng as _;

use super::*;

const NOW: i64 = 1_800_000_000;

thread_local! {
    /// HMAC tags computed on this thread (the verifier counts them under test).
    pub(super) static HMACS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn rsa() -> (RsaKeyPair, RsaPublicKey) {
    let pair = RsaKeyPair::generate(KeySize::Rsa2048).unwrap();
    let der = pair.public_key().as_der().unwrap();
    let public = RsaPublicKey::from_pem_or_base64(&BASE64.encode(der.as_ref())).unwrap();
    (pair, public)
}

fn sign(pair: &RsaKeyPair, msg: &[u8]) -> String {
    let mut sig = vec![0u8; pair.public_modulus_len()];
    pair.sign(
        &signature::RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        msg,
        &mut sig,
    )
    .unwrap();
    BASE64.encode(sig)
}

fn hmac_header(secret: &[u8], t: i64, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut signed = format!("{t}.").into_bytes();
    signed.extend_from_slice(body);
    format!(
        "t={t},v1={}",
        hex::encode(hmac::sign(&key, &signed).as_ref())
    )
}

#[test]
fn keys_are_checked_when_read() {
    let pair = RsaKeyPair::generate(KeySize::Rsa2048).unwrap();
    let der = pair.public_key().as_der().unwrap();
    let b64 = BASE64.encode(der.as_ref());
    let pem = format!("-----BEGIN PUBLIC KEY-----\n{b64}\n-----END PUBLIC KEY-----\n");
    assert!(RsaPublicKey::from_pem_or_base64(&pem).is_ok());
    assert!(RsaPublicKey::from_pem_or_base64(&b64).is_ok());
    assert!(RsaPublicKey::from_pem_or_base64("bm90IGEga2V5").is_err());
    assert!(RsaPublicKey::from_pem_or_base64("%%%").is_err());
}

#[test]
fn hmac_accepts_the_right_secret_within_the_window_only() {
    let body = br#"{"id":"evt_1","amount":100}"#;
    let h = hmac_header(b"whsec_new", NOW - 10, body);
    assert_eq!(
        hmac_sha256(&h, body, &[b"whsec_old", b"whsec_new"], NOW, 300),
        Ok(())
    );
    assert_eq!(
        hmac_sha256(&h, body, &[b"whsec_old"], NOW, 300),
        Err(Refused::BadSignature)
    );
    assert_eq!(
        hmac_sha256(&h, body, &[b"whsec_new"], NOW + 1000, 300),
        Err(Refused::Expired)
    );
    assert_eq!(
        hmac_sha256(&h, b"{}", &[b"whsec_new"], NOW, 300),
        Err(Refused::BadSignature)
    );
    assert!(matches!(
        hmac_sha256("v1=zz", body, &[b"k"], NOW, 300),
        Err(Refused::Malformed(_))
    ));
    // Several v1 (the provider signs with old and new secrets during a rotation).
    let two = format!("{h},v1={}", "00".repeat(32));
    assert_eq!(hmac_sha256(&two, body, &[b"whsec_new"], NOW, 300), Ok(()));
}

/// A header built to make the verifier work is refused by reading it: no tag is
/// computed for it, however many secrets are configured.
#[test]
fn an_amplifying_header_is_malformed_before_any_hmac() {
    let body = vec![b'x'; 250_000];
    let good = hmac_header(b"whsec_new", NOW, &body);
    let one_tag = good.split_once(",v1=").unwrap().1.to_owned();
    let many = format!("t={NOW}{}", format!(",v1={one_tag}").repeat(1000));
    let empties = format!("t={NOW},v1=,v1=,v1=");
    let short = format!("t={NOW},v1={}", &one_tag[..62]);
    let long = format!("t={NOW},v1={one_tag}00");
    let two_t = format!("t={NOW},t={NOW},v1={one_tag}");
    let five = format!(
        "t={NOW}{}",
        format!(",v1={one_tag}").repeat(MAX_SIGNATURES + 1)
    );
    let padded = format!("{good},{}", "x=y,".repeat(200));
    HMACS.with(|n| n.set(0));
    for header in [&many, &empties, &short, &long, &two_t, &five, &padded] {
        let got = hmac_sha256(header, &body, &[b"whsec_old", b"whsec_new"], NOW, 300);
        assert!(
            matches!(got, Err(Refused::Malformed(_))),
            "{got:?} for {}",
            &header[..40]
        );
    }
    assert_eq!(
        HMACS.with(|n| n.get()),
        0,
        "tags computed for malformed headers"
    );
    // The real one costs one tag per secret tried, not one per candidate.
    let rotated = format!("{good},v1={}", "00".repeat(32));
    assert_eq!(
        hmac_sha256(&rotated, &body, &[b"whsec_old", b"whsec_new"], NOW, 300),
        Ok(())
    );
    assert_eq!(HMACS.with(|n| n.get()), 2);
}

/// With one valid secret configured, a signature made with the empty key (or any
/// other) does not verify.
#[test]
fn a_signature_made_with_the_empty_key_is_refused() {
    let body = br#"{"id":"evt_1"}"#;
    let forged = hmac_header(b"", NOW, body);
    assert_eq!(
        hmac_sha256(
            &forged,
            body,
            &[b"whsec_a_real_secret_of_32_bytes!"],
            NOW,
            300
        ),
        Err(Refused::BadSignature)
    );
}

fn alipay_body(pair: &RsaKeyPair, params: &[(&str, &str)]) -> Vec<u8> {
    let map: BTreeMap<String, String> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let sig = sign(pair, alipay_signed_string(&map).as_bytes());
    let mut form = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        form.append_pair(k, v);
    }
    form.append_pair("sign_type", "RSA2");
    form.append_pair("sign", &sig);
    form.finish().into_bytes()
}

#[test]
fn alipay_verifies_the_sorted_parameters() {
    let (pair, public) = rsa();
    let body = alipay_body(
        &pair,
        &[
            ("out_trade_no", "pay_1"),
            ("total_amount", "9.90"),
            ("trade_status", "TRADE_SUCCESS"),
            ("app_id", "2021"),
        ],
    );
    let params = alipay(&body, &public).unwrap();
    assert_eq!(params.params["out_trade_no"], "pay_1");
    assert!(!params.repeated);
    let tampered = String::from_utf8(body.clone())
        .unwrap()
        .replace("9.90", "0.01");
    assert_eq!(
        alipay(tampered.as_bytes(), &public),
        Err(Refused::BadSignature)
    );
    let (_, other) = rsa();
    assert_eq!(alipay(&body, &other), Err(Refused::BadSignature));
}

fn encrypt(key: &[u8], nonce: &str, aad: &str, plain: &[u8]) -> String {
    let k = aead::LessSafeKey::new(aead::UnboundKey::new(&aead::AES_256_GCM, key).unwrap());
    let mut data = plain.to_vec();
    k.seal_in_place_append_tag(
        aead::Nonce::try_assume_unique_for_key(nonce.as_bytes()).unwrap(),
        aead::Aad::from(aad.as_bytes()),
        &mut data,
    )
    .unwrap();
    BASE64.encode(data)
}

fn wechat_event(api_key: &[u8], plain: &[u8]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "id": "EV-1", "event_type": "TRANSACTION.SUCCESS",
        "resource": {
            "algorithm": "AEAD_AES_256_GCM", "associated_data": "transaction",
            "nonce": "fdasflkja484", "ciphertext": encrypt(api_key, "fdasflkja484", "transaction", plain),
        }
    }))
    .unwrap()
}

#[test]
fn wechat_verifies_by_serial_then_decrypts() {
    let (pair, public) = rsa();
    let api_key = [7u8; 32];
    let body = wechat_event(
        &api_key,
        br#"{"out_trade_no":"pay_1","amount":{"total":990}}"#,
    );
    let ts = NOW.to_string();
    let signed = format!("{ts}\nnonce-1\n{}\n", String::from_utf8_lossy(&body));
    let sig = sign(&pair, signed.as_bytes());
    let headers = WechatHeaders {
        timestamp: &ts,
        nonce: "nonce-1",
        signature: &sig,
        serial: "S1",
    };
    let keys = [("S1".to_owned(), public)];
    let plain = wechat(&headers, &body, &keys, &api_key, NOW, 300)
        .unwrap()
        .plain;
    assert!(String::from_utf8(plain).unwrap().contains("pay_1"));
    let unknown = WechatHeaders {
        serial: "S2",
        ..headers.clone()
    };
    assert_eq!(
        wechat(&unknown, &body, &keys, &api_key, NOW, 300),
        Err(Refused::UnknownKey)
    );
    assert_eq!(
        wechat(&headers, &body, &keys, &api_key, NOW + 301, 300),
        Err(Refused::Expired)
    );
    assert_eq!(
        wechat(&headers, &body, &keys, &[8u8; 32], NOW, 300),
        Err(Refused::BadSignature)
    );
}

/// What a `t=…,v1=…` header says: the timestamp and the signatures' bytes.
fn meaning(header: &str) -> Option<(i64, Vec<Vec<u8>>)> {
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=')? {
            ("t", v) => t = Some(v.parse().ok()?),
            ("v1", v) => sigs.push(hex::decode(v).ok()?),
            _ => {}
        }
    }
    Some((t?, sigs))
}

/// Random mutations of a valid event's body and header never verify, unless they
/// leave what the event says unchanged.
#[test]
fn thousands_of_mutations_find_no_false_accept() {
    let mut rng = rand::rng();
    let body = br#"{"id":"evt_9","type":"payment.succeeded","amount":4200}"#.to_vec();
    let secret: &[u8] = b"whsec_test";
    let header = hmac_header(secret, NOW, &body);
    let (pair, public) = rsa();
    let form = alipay_body(
        &pair,
        &[("out_trade_no", "pay_9"), ("total_amount", "42.00")],
    );
    let mut accepted = 0;
    for _ in 0..3000 {
        let mut b = body.clone();
        let mut h = header.clone().into_bytes();
        let mut f = form.clone();
        let which = rng.random_range(0..3);
        let target: &mut Vec<u8> = match which {
            0 => &mut b,
            1 => &mut h,
            _ => &mut f,
        };
        if target.is_empty() {
            continue;
        }
        let i = rng.random_range(0..target.len());
        let before = target.clone();
        match rng.random_range(0..3) {
            0 => target[i] ^= 1 << rng.random_range(0..8),
            1 => {
                target.remove(i);
            }
            _ => target.insert(i, rng.random()),
        }
        if *target == before {
            continue;
        }
        let ok = match which {
            0 | 1 => {
                let h = String::from_utf8_lossy(&h).into_owned();
                // Another spelling of the same header (hex case, spaces) is not a forgery.
                let same = b == body && meaning(&h) == meaning(&header);
                hmac_sha256(&h, &b, &[secret], NOW, 300).is_ok() && !same
            }
            _ => {
                // A change that leaves the signed content equal (another percent-
                // encoding, an empty parameter, which Alipay does not sign) is not a
                // forgery.
                let signed = |form: &[u8]| {
                    alipay_signed_string(&form_urlencoded::parse(form).into_owned().collect())
                };
                let same = signed(&f) == signed(&form);
                alipay(&f, &public).is_ok() && !same
            }
        };
        if ok {
            let shown = [&b, &h, &f][which];
            eprintln!("accepted: {:?}", String::from_utf8_lossy(shown));
            accepted += 1;
        }
    }
    assert_eq!(accepted, 0, "false accepts");
}

/// Mutations of a WeChat Pay notification's body, timestamp, nonce, signature and
/// serial never verify.
#[test]
fn wechat_mutations_find_no_false_accept() {
    let mut rng = rand::rng();
    let (pair, public) = rsa();
    let api_key = [9u8; 32];
    let body = wechat_event(
        &api_key,
        br#"{"out_trade_no":"pay_7","amount":{"total":700}}"#,
    );
    let ts = NOW.to_string();
    let nonce = "n-42".to_owned();
    let signed = format!("{ts}\n{nonce}\n{}\n", String::from_utf8_lossy(&body));
    let sig = sign(&pair, signed.as_bytes());
    let keys = [("SERIAL-1".to_owned(), public)];
    let original = [
        body.clone(),
        ts.clone().into_bytes(),
        nonce.clone().into_bytes(),
        sig.clone().into_bytes(),
        b"SERIAL-1".to_vec(),
    ];
    let mut accepted = 0;
    for _ in 0..2000 {
        let mut fields = original.clone();
        let which = rng.random_range(0..fields.len());
        let target = &mut fields[which];
        let i = rng.random_range(0..target.len());
        match rng.random_range(0..3) {
            0 => target[i] ^= 1 << rng.random_range(0..8),
            1 => {
                target.remove(i);
            }
            _ => target.insert(i, rng.random()),
        }
        if fields == original {
            continue;
        }
        let text = |b: &Vec<u8>| String::from_utf8_lossy(b).into_owned();
        let (t, n, g, serial) = (
            text(&fields[1]),
            text(&fields[2]),
            text(&fields[3]),
            text(&fields[4]),
        );
        let headers = WechatHeaders {
            timestamp: &t,
            nonce: &n,
            signature: &g,
            serial: &serial,
        };
        if wechat(&headers, &fields[0], &keys, &api_key, NOW, 300).is_ok() {
            accepted += 1;
        }
    }
    assert_eq!(accepted, 0, "false accepts");
}
