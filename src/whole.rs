//! Whole numbers in JSON as JSON Schema counts them: `5.0` is the integer 5. The OpenAPI
//! document says `integer`, so a client generated from it (or a fuzzer) may send either
//! form; serde alone refuses `5.0` for a `u32`. For the fields that take counts.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

fn whole(n: &serde_json::Number) -> Option<u32> {
    let w = n.as_u64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= f64::from(u32::MAX))
            // In range and whole: the cast is exact.
            .map(|f| f as u64)
    })?;
    u32::try_from(w).ok()
}

/// A `u32` field, `5` or `5.0`.
pub fn u32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    whole(&n).ok_or_else(|| {
        D::Error::custom(format!("{n} is not a whole number from 0 to {}", u32::MAX))
    })
}

/// A map of `u32`s by name, each `5` or `5.0`.
pub fn u32_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, u32>, D::Error> {
    BTreeMap::<String, serde_json::Number>::deserialize(d)?
        .into_iter()
        .map(|(k, n)| match whole(&n) {
            Some(v) => Ok((k, v)),
            None => Err(D::Error::custom(format!(
                "{k}: {n} is not a whole number from 0 to {}",
                u32::MAX
            ))),
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[derive(serde::Deserialize)]
    struct One {
        #[serde(deserialize_with = "super::u32")]
        n: u32,
    }

    #[test]
    fn whole_numbers_written_either_way_and_nothing_else() {
        for (json, n) in [
            (r#"{"n": 5}"#, 5),
            (r#"{"n": 521.0}"#, 521),
            (r#"{"n": 0}"#, 0),
        ] {
            assert_eq!(serde_json::from_str::<One>(json).unwrap().n, n);
        }
        for bad in [
            r#"{"n": 5.5}"#,
            r#"{"n": -1}"#,
            r#"{"n": 4294967296}"#,
            r#"{"n": "5"}"#,
        ] {
            assert!(serde_json::from_str::<One>(bad).is_err(), "{bad}");
        }
    }
}
