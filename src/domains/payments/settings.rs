//! `[payments]`: products, the webhook secrets and the timestamp window.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, Section, Settings};

pub const SECTION: Section = Section {
    key: "payments",
    check,
};

fn check(settings: &Settings) -> Result<(), ConfigError> {
    PaymentSettings::from_settings(settings).map(|_| ())
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
    /// What can be bought: credit packs.
    pub products: BTreeMap<String, Product>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Product {
    pub credits: i64,
    /// Price in the currency's minor unit.
    pub amount: i64,
}

impl PaymentSettings {
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let s: PaymentSettings = settings.section(SECTION.key)?;
        if s.timestamp_window_secs <= 0 {
            return Err(ConfigError::Invalid {
                key: "payments.timestamp_window_secs",
                problem: "must be greater than 0".into(),
            });
        }
        if s.products.values().any(|p| p.credits <= 0 || p.amount <= 0) {
            return Err(ConfigError::Invalid {
                key: "payments.products",
                problem: "every product needs credits and an amount above 0".into(),
            });
        }
        Ok(s)
    }
}
