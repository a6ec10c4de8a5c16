//! A task's client metadata: a small flat object of strings (`{"campaign": "42"}`),
//! checked at submission, returned in the task's view and webhook bodies, and written one
//! row per key to `task_metadata`, where a search by key and value is an index lookup.

use std::collections::BTreeMap;

use sea_orm::ActiveValue::Set;
use serde_json::Value;

use super::entity::metadata;

pub type Metadata = BTreeMap<String, String>;

pub const MAX_KEYS: usize = 16;
pub const MAX_KEY_CHARS: usize = 40;
pub const MAX_VALUE_CHARS: usize = 200;

fn key_ok(k: &str) -> bool {
    (1..=MAX_KEY_CHARS).contains(&k.len())
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

/// The metadata `v` holds, or why it is not metadata.
pub fn check(v: &Value) -> Result<Metadata, String> {
    let Some(object) = v.as_object() else {
        return Err("must be an object of strings".into());
    };
    if object.len() > MAX_KEYS {
        return Err(format!("at most {MAX_KEYS} keys"));
    }
    let mut out = Metadata::new();
    for (k, v) in object {
        if !key_ok(k) {
            return Err(format!(
                "key `{k}`: 1 to {MAX_KEY_CHARS} letters, digits, `_`, `-` or `.`"
            ));
        }
        let Some(s) = v.as_str() else {
            return Err(format!("`{k}`: values are strings (a flat object)"));
        };
        if s.chars().count() > MAX_VALUE_CHARS {
            return Err(format!("`{k}`: at most {MAX_VALUE_CHARS} characters"));
        }
        out.insert(k.clone(), s.to_owned());
    }
    Ok(out)
}

/// A `key:value` search term (the first `:` splits), checked like metadata.
pub fn term(s: &str) -> Result<(&str, &str), String> {
    let (k, v) = s
        .split_once(':')
        .ok_or_else(|| "must be key:value".to_owned())?;
    if !key_ok(k) || v.chars().count() > MAX_VALUE_CHARS {
        return Err(format!(
            "key of 1 to {MAX_KEY_CHARS} letters, digits, `_`, `-` or `.`, value of at most {MAX_VALUE_CHARS} characters"
        ));
    }
    Ok((k, v))
}

/// The rows of `task`'s metadata.
pub fn rows(task: &str, user: &str, m: &Metadata) -> Vec<metadata::ActiveModel> {
    m.iter()
        .map(|(k, v)| metadata::ActiveModel {
            task_id: Set(task.to_owned()),
            key: Set(k.clone()),
            user_id: Set(user.to_owned()),
            value: Set(v.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flat_small_objects_of_strings_are_metadata() {
        let m = check(&json!({ "campaign": "42", "utm.source": "mail" })).unwrap_or_default();
        assert_eq!(m.len(), 2);
        for bad in [
            json!([1]),
            json!({ "n": 1 }),
            json!({ "deep": { "x": "y" } }),
            json!({ "bad key": "x" }),
            json!({ "k": "x".repeat(201) }),
            json!(
                (0..17)
                    .map(|i| (format!("k{i}"), json!("v")))
                    .collect::<serde_json::Map<_, _>>()
            ),
        ] {
            assert!(check(&bad).is_err(), "{bad}");
        }
        assert_eq!(term("campaign:42:b"), Ok(("campaign", "42:b")));
        assert!(term("nocolon").is_err());
    }
}
