//! `[payments]`: products, the webhook secrets and keys, the timestamp window and the
//! broker-down fallback.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::verify::RsaPublicKey;
use crate::config::ConfigError;
use crate::settings::Section;
use crate::settings::Settings;

pub const SECTION: Section = Section::new("payments", check).lists(&[
    // A secret list keeps its empty items: they are refused below, never guessed at.
    crate::config::ListKey::secret("payments.hmac_secrets"),
]);

/// At start-up: the section, and its keys (a bad key stops the process).
fn check(settings: &Settings) -> Result<(), ConfigError> {
    PaymentSettings::from_settings(settings)?.keys().map(|_| ())
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentSettings {
    /// Currency of every product price (ISO 4217).
    pub currency: String,
    /// A signed webhook older or newer than this is refused.
    pub timestamp_window_secs: i64,
    /// Secrets of the HMAC (`t=…,v1=…`) scheme; several during a rotation. Secret: set
    /// `CONVEYOR__PAYMENTS__HMAC_SECRETS`; never logged or printed.
    pub hmac_secrets: Vec<String>,
    /// What can be bought: credit packs and memberships.
    pub products: BTreeMap<String, Product>,
    /// Broker-down fallback: when RabbitMQ has been unreachable this long, the consumers'
    /// process applies recorded events itself (still once each: applying is guarded by the
    /// inbox row, whoever applies it). 0 turns it off.
    #[serde(default)]
    pub fallback_after_secs: u64,
    /// An unpaid intent older than this expires (no longer counts as open); 0: never.
    #[serde(default)]
    pub intent_ttl_secs: u64,
    /// Alipay asynchronous notifies; off while `public_key` is empty.
    #[serde(default)]
    pub alipay: AlipaySettings,
    /// WeChat Pay v3 notifications; off while `platform_keys` is empty.
    #[serde(default)]
    pub wechat: WechatSettings,
}

/// `[payments.wechat]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WechatSettings {
    /// Our app id and merchant id, when set: a notification for another is refused.
    pub appid: String,
    pub mchid: String,
    /// The APIv3 key (32 characters) that decrypts `resource`. Secret: set
    /// `CONVEYOR__PAYMENTS__WECHAT__API_V3_KEY`; never logged or printed.
    pub api_v3_key: String,
    /// WeChat Pay platform public keys by serial (`Wechatpay-Serial`), PEM or base64.
    pub platform_keys: BTreeMap<String, String>,
    /// Staging only: a private key (PKCS#8 PEM) matching the platform key of
    /// `test_signing_serial`, for `conveyor payments sign --provider wechat`.
    pub test_signing_key: String,
    pub test_signing_serial: String,
}

/// `[payments.alipay]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlipaySettings {
    /// Our application id: a notify for another app is refused.
    pub app_id: String,
    /// Our seller id (`seller_id` of the notify), when set.
    pub seller_id: String,
    /// Alipay's public key: PEM `PUBLIC KEY` or the bare base64 Alipay shows.
    pub public_key: String,
    /// Staging only: the private key (PKCS#8 PEM) matching `public_key`, with which
    /// `conveyor payments sign --provider alipay` signs a notify to replay by hand.
    pub test_signing_key: String,
}

/// Something to buy: credits, a membership period, or both.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Product {
    #[serde(default)]
    pub credits: i64,
    /// `monthly` or `yearly`; renewals stack.
    #[serde(default)]
    pub membership: Option<Plan>,
    /// The plan (`[plans.<name>]`) the membership grants; unset: the plan with
    /// `membership = true`.
    #[serde(default)]
    pub plan: Option<String>,
    /// Price in the currency's minor unit.
    pub amount: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Monthly,
    Yearly,
}

impl Plan {
    pub fn months(self) -> i32 {
        match self {
            Plan::Monthly => 1,
            Plan::Yearly => 12,
        }
    }
}

impl Product {
    pub fn membership_months(&self) -> i32 {
        self.membership.map_or(0, Plan::months)
    }
}

impl PaymentSettings {
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let mut s: PaymentSettings = settings.section(SECTION.key)?;
        s.hmac_secrets = checked_secrets(&s.hmac_secrets)?;
        if s.timestamp_window_secs <= 0 {
            return Err(ConfigError::Invalid {
                key: "payments.timestamp_window_secs",
                problem: "must be greater than 0".into(),
            });
        }
        // 30 days at most: an unpaid intent older than that is not a payment in progress.
        if s.intent_ttl_secs > 30 * 24 * 3600 {
            return Err(ConfigError::Invalid {
                key: "payments.intent_ttl_secs",
                problem: "must be at most 30 days (2592000); 0 turns expiry off".into(),
            });
        }
        // A payment for a flash-sale order bills the order's price: both in one currency.
        let sales =
            crate::domains::flash_sale::settings::FlashSaleSettings::from_settings(settings)?;
        if sales.currency != s.currency {
            return Err(ConfigError::Invalid {
                key: "payments.currency",
                problem: format!(
                    "must be flash_sale.currency ({}): a payment bills an order's price in it",
                    sales.currency
                ),
            });
        }
        let buys_nothing = |p: &Product| p.credits <= 0 && p.membership.is_none();
        if s.products
            .values()
            .any(|p| p.amount <= 0 || p.credits < 0 || buys_nothing(p))
        {
            return Err(ConfigError::Invalid {
                key: "payments.products",
                problem:
                    "every product needs an amount above 0 and credits above 0 or a membership"
                        .into(),
            });
        }
        // A product's plan is a configured one, and comes with a membership (the plan
        // lasts as long as the membership does).
        for (name, p) in &s.products {
            if let Some(plan) = &p.plan
                && (p.membership.is_none() || !settings.plans.contains_key(plan))
            {
                return Err(ConfigError::Invalid {
                    key: "payments.products",
                    problem: format!(
                        "product `{name}`: plan `{plan}` needs a membership and a [plans.{plan}] table"
                    ),
                });
            }
        }
        Ok(s)
    }
}

/// The shortest HMAC secret accepted: 256 bits, the tag's own strength.
pub const MIN_SECRET_BYTES: usize = 32;

/// `payments.hmac_secrets`, each trimmed; refused if one is empty, shorter than
/// [`MIN_SECRET_BYTES`] or listed twice. Fail closed: an empty secret would verify a
/// signature anyone can make (`new,old,` in an env file is exactly that).
fn checked_secrets(secrets: &[String]) -> Result<Vec<String>, ConfigError> {
    let bad = |problem: String| ConfigError::Invalid {
        key: "payments.hmac_secrets",
        problem,
    };
    let mut out: Vec<String> = Vec::with_capacity(secrets.len());
    for (i, secret) in secrets.iter().enumerate() {
        let secret = secret.trim();
        if secret.is_empty() {
            return Err(bad(format!(
                "item {} is empty (a trailing comma?); list only real secrets, or none to turn the scheme off",
                i + 1
            )));
        }
        if secret.len() < MIN_SECRET_BYTES {
            return Err(bad(format!(
                "item {} is {} bytes; each secret must be at least {MIN_SECRET_BYTES}",
                i + 1,
                secret.len()
            )));
        }
        if out.iter().any(|s| s == secret) {
            return Err(bad(format!("item {} is listed twice", i + 1)));
        }
        out.push(secret.to_owned());
    }
    Ok(out)
}

/// The providers' keys, parsed: Alipay's public key, WeChat Pay's platform keys by serial.
pub struct ProviderKeys {
    pub alipay: Option<RsaPublicKey>,
    pub wechat: Vec<(String, RsaPublicKey)>,
}

impl PaymentSettings {
    /// Parses the configured keys: by the start-up check, and once more by the routes,
    /// which keep them (no webhook parses a key).
    pub fn keys(&self) -> Result<ProviderKeys, ConfigError> {
        let bad = |key: &'static str, problem: &str| ConfigError::Invalid {
            key,
            problem: problem.into(),
        };
        // Off only while truly empty: a key of blanks is a mistake, not "off".
        let alipay = match self.alipay.public_key.as_str() {
            "" => None,
            pem => Some(
                RsaPublicKey::from_pem_or_base64(pem)
                    .map_err(|e| bad("payments.alipay.public_key", e))?,
            ),
        };
        // The app (and merchant) checks are skipped for an empty id: with the provider on,
        // an empty one would let a notify for any app through.
        if alipay.is_some() && self.alipay.app_id.trim().is_empty() {
            return Err(bad(
                "payments.alipay.app_id",
                "must be set while payments.alipay.public_key is",
            ));
        }
        if !self.wechat.platform_keys.is_empty() {
            if self.wechat.api_v3_key.len() != 32
                || self.wechat.api_v3_key.trim() != self.wechat.api_v3_key
            {
                return Err(bad(
                    "payments.wechat.api_v3_key",
                    "must be 32 characters, no surrounding spaces",
                ));
            }
            if self.wechat.mchid.trim().is_empty() {
                return Err(bad(
                    "payments.wechat.mchid",
                    "must be set while payments.wechat.platform_keys are",
                ));
            }
            if self
                .wechat
                .platform_keys
                .keys()
                .any(|serial| serial.trim().is_empty())
            {
                return Err(bad(
                    "payments.wechat.platform_keys",
                    "a key's serial is empty",
                ));
            }
        }
        let wechat = self
            .wechat
            .platform_keys
            .iter()
            .map(|(serial, pem)| {
                RsaPublicKey::from_pem_or_base64(pem)
                    .map(|k| (serial.clone(), k))
                    .map_err(|e| bad("payments.wechat.platform_keys", e))
            })
            .collect::<Result<_, _>>()?;
        Ok(ProviderKeys { alipay, wechat })
    }
}
