//! Signing provider events the way each provider does, with test keys from the
//! configuration: what `conveyor payments sign` uses so an operator can replay an event by
//! hand in staging, and what the webhook benchmark sends. The webhooks never sign; the
//! tests sign on their own (straight on aws-lc-rs), so a mistake here cannot hide one in
//! [`super::verify`].

use std::collections::BTreeMap;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::{aead, hmac, signature};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rustls_pki_types::PrivatePkcs8KeyDer;
use rustls_pki_types::pem::PemObject as _;

use super::verify::alipay_signed_string;

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("not a PKCS#8 RSA private key (PEM `PRIVATE KEY`)")]
    BadKey,
    #[error("the APIv3 key must be 32 bytes")]
    BadApiV3Key,
    #[error("signing failed")]
    Failed,
}

/// An RSA private key (PKCS#8 PEM) that signs SHA256withRSA.
pub struct RsaSigner(signature::RsaKeyPair);

impl RsaSigner {
    pub fn from_pem(pem: &str) -> Result<Self, SignError> {
        let der =
            PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes()).map_err(|_| SignError::BadKey)?;
        signature::RsaKeyPair::from_pkcs8(der.secret_pkcs8_der())
            .map(RsaSigner)
            .map_err(|_| SignError::BadKey)
    }

    pub fn from_pair(pair: signature::RsaKeyPair) -> Self {
        RsaSigner(pair)
    }

    /// Base64 of the PKCS#1 v1.5 SHA-256 signature of `message`.
    pub fn sign(&self, message: &[u8]) -> Result<String, SignError> {
        let mut sig = vec![0u8; self.0.public_modulus_len()];
        self.0
            .sign(
                &signature::RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                message,
                &mut sig,
            )
            .map_err(|_| SignError::Failed)?;
        Ok(BASE64.encode(sig))
    }
}

/// The `conveyor-signature` header value for `body` at unix time `t`.
pub fn hmac_header(secret: &[u8], t: i64, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(format!("{t}.").as_bytes());
    ctx.update(body);
    format!("t={t},v1={}", hex::encode(ctx.sign().as_ref()))
}

/// An Alipay notify body: the parameters form-encoded with `sign_type=RSA2` and `sign`.
pub fn alipay_form(
    params: &BTreeMap<String, String>,
    key: &RsaSigner,
) -> Result<String, SignError> {
    let sign = key.sign(alipay_signed_string(params).as_bytes())?;
    let mut form = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        form.append_pair(k, v);
    }
    form.append_pair("sign_type", "RSA2");
    form.append_pair("sign", &sign);
    Ok(form.finish())
}

/// A WeChat Pay v3 notification: its JSON body (the `resource` encrypted with the APIv3
/// key) and its four `Wechatpay-*` headers.
pub struct WechatNotification {
    pub body: String,
    pub headers: [(&'static str, String); 4],
}

/// Builds the notification `id` of `event_type` carrying `resource` (the plaintext JSON),
/// signed at unix time `t` with `key`, whose platform certificate serial is `serial`.
pub fn wechat_notification(
    id: &str,
    event_type: &str,
    resource: &[u8],
    api_v3_key: &[u8],
    key: &RsaSigner,
    serial: &str,
    t: i64,
) -> Result<WechatNotification, SignError> {
    let nonce: String = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
    let aad = if event_type.starts_with("REFUND.") {
        "refund"
    } else {
        "transaction"
    };
    let sealing = aead::LessSafeKey::new(
        aead::UnboundKey::new(&aead::AES_256_GCM, api_v3_key)
            .map_err(|_| SignError::BadApiV3Key)?,
    );
    let mut data = resource.to_vec();
    sealing
        .seal_in_place_append_tag(
            aead::Nonce::try_assume_unique_for_key(nonce.as_bytes())
                .map_err(|_| SignError::Failed)?,
            aead::Aad::from(aad.as_bytes()),
            &mut data,
        )
        .map_err(|_| SignError::Failed)?;
    let body = serde_json::json!({
        "id": id,
        "create_time": chrono::Utc::now().to_rfc3339(),
        "event_type": event_type,
        "resource_type": "encrypt-resource",
        "resource": {
            "algorithm": "AEAD_AES_256_GCM",
            "associated_data": aad,
            "nonce": nonce,
            "ciphertext": BASE64.encode(&data),
        },
    })
    .to_string();
    let header_nonce = uuid::Uuid::new_v4().simple().to_string();
    let signature = key.sign(format!("{t}\n{header_nonce}\n{body}\n").as_bytes())?;
    Ok(WechatNotification {
        body,
        headers: [
            ("wechatpay-timestamp", t.to_string()),
            ("wechatpay-nonce", header_nonce),
            ("wechatpay-signature", signature),
            ("wechatpay-serial", serial.to_owned()),
        ],
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::domains::payments::verify::{self, RsaPublicKey, WechatHeaders};
    use aws_lc_rs::encoding::AsDer as _;
    use aws_lc_rs::signature::KeyPair as _;

    fn pair() -> (RsaSigner, RsaPublicKey) {
        let pair = signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let public = BASE64.encode(pair.public_key().as_der().unwrap().as_ref());
        (
            RsaSigner::from_pair(pair),
            RsaPublicKey::from_pem_or_base64(&public).unwrap(),
        )
    }

    #[test]
    fn what_it_signs_verifies() {
        let now = chrono::Utc::now().timestamp();
        let h = hmac_header(b"s", now, b"{}");
        assert!(verify::hmac_sha256(&h, b"{}", &[b"s"], now, 300).is_ok());

        let (signer, public) = pair();
        let params: BTreeMap<String, String> = [("out_trade_no", "p1"), ("total_amount", "9.90")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let form = alipay_form(&params, &signer).unwrap();
        let got = verify::alipay(form.as_bytes(), &public).unwrap();
        assert_eq!(got.params["total_amount"], "9.90");
        assert_eq!(got.params["out_trade_no"], "p1");

        let key = b"0123456789abcdef0123456789abcdef";
        let n = wechat_notification(
            "E1",
            "REFUND.SUCCESS",
            b"{\"a\":1}",
            key,
            &signer,
            "S1",
            now,
        )
        .unwrap();
        let [t, nonce, sig, serial] = &n.headers;
        let headers = WechatHeaders {
            timestamp: &t.1,
            nonce: &nonce.1,
            signature: &sig.1,
            serial: &serial.1,
        };
        let plain = verify::wechat(
            &headers,
            n.body.as_bytes(),
            &[("S1".into(), public)],
            key,
            now,
            300,
        )
        .unwrap()
        .plain;
        assert_eq!(plain, b"{\"a\":1}");
    }

    #[test]
    fn a_private_key_is_checked_when_read() {
        assert!(RsaSigner::from_pem("nope").is_err());
    }
}
