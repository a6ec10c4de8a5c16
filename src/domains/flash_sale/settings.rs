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
        // An order is about 130 bytes of a message (three ids and their keys); 200 leaves
        // room to spare, and 1,024 more for the envelope.
        let needs = s.orders_per_message * 200 + 1024;
        if needs > settings.broker.max_payload_bytes {
            return Err(ConfigError::Invalid {
                key: "flash_sale.orders_per_message",
                problem: format!(
                    "{} orders need messages of up to {needs} bytes, above broker.max_payload_bytes",
                    s.orders_per_message
                ),
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn check(vars: &[(&str, &str)]) -> Result<FlashSaleSettings, ConfigError> {
        let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/config"));
        FlashSaleSettings::from_settings(&Settings::load_from(dir, "local", vars).unwrap())
    }

    #[test]
    fn orders_per_message_fits_a_message() {
        assert_eq!(check(&[]).unwrap().orders_per_message, 16);
        let per = "CONVEYOR__FLASH_SALE__ORDERS_PER_MESSAGE";
        for bad in ["0", "257"] {
            let err = check(&[(per, bad)]).unwrap_err().to_string();
            assert!(err.contains("between 1 and 256"), "{err}");
        }
        let small = [
            (per, "200"),
            ("CONVEYOR__BROKER__MAX_PAYLOAD_BYTES", "16384"),
        ];
        let err = check(&small).unwrap_err().to_string();
        assert!(err.contains("broker.max_payload_bytes"), "{err}");
        assert_eq!(check(&[(per, "256")]).unwrap().orders_per_message, 256);
    }
}
