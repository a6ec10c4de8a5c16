//! `[flash_sale]`: the flash-sale flow's settings section.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

use crate::settings::Section;

use crate::settings::Settings;

pub const SECTION: Section = Section::new("flash_sale", check);

fn check(settings: &Settings) -> Result<(), ConfigError> {
    FlashSaleSettings::from_settings(settings).map(|_| ())
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlashSaleSettings {
    /// How often the sweep looks for unpaid orders whose timer went missing.
    pub sweep_interval_ms: u64,
    /// An unpaid order this long past its deadline is re-driven by the sweep.
    pub sweep_margin_ms: u64,
    /// How often every running sale is reconciled (Redis stock + live orders = stock).
    pub reconcile_interval_ms: u64,
    /// How long intake waits for the broker's confirm before giving the unit back (503).
    pub publish_timeout_ms: u64,
    /// Orders taken while a confirm is awaited share one broker message, up to this
    /// many: RabbitMQ's cost is per persistent message, not per byte.
    pub orders_per_message: usize,
    /// The currency of every sale's price (ISO 4217); prices are in its minor unit (fen
    /// for CNY), what a payment for the order bills. Payments refuse to start with
    /// another currency.
    pub currency: String,
}

impl FlashSaleSettings {
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let s: FlashSaleSettings = settings.section(SECTION.key)?;
        let positive = [
            ("flash_sale.sweep_interval_ms", s.sweep_interval_ms),
            ("flash_sale.reconcile_interval_ms", s.reconcile_interval_ms),
            ("flash_sale.publish_timeout_ms", s.publish_timeout_ms),
        ];
        for (key, v) in positive {
            if v == 0 {
                return Err(ConfigError::Invalid {
                    key,
                    problem: "must be greater than 0".into(),
                });
            }
        }
        if !(1..=256).contains(&s.orders_per_message) {
            return Err(ConfigError::Invalid {
                key: "flash_sale.orders_per_message",
                problem: "must be between 1 and 256".into(),
            });
        }
        let iso = s.currency.len() == 3 && s.currency.bytes().all(|b| b.is_ascii_uppercase());
        if !iso {
            return Err(ConfigError::Invalid {
                key: "flash_sale.currency",
                problem: "must be an ISO 4217 code such as CNY".into(),
            });
        }
        Ok(s)
    }
}
