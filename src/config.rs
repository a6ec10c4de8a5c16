//! Configuration loading, layering and masking, knowing no module's settings: the
//! compiled-in `config/base.toml`, then `config/<env>.toml`, then `CONVEYOR__SECTION__KEY`
//! environment variables, as one document; the masked copy that is safe to print. Each
//! module owns its section's type and checks; [`crate::settings::Settings`] puts them
//! together.

use std::path::Path;

/// The defaults, compiled in so the binary runs outside the repository.
const BASE_TOML: &str = include_str!("../config/base.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("configuration key `{key}`: {problem}")]
    Invalid { key: &'static str, problem: String },
    #[error("configuration: unknown section `[{0}]` (no domain of this build reads it)")]
    UnknownSection(String),
}

/// A key whose environment value is a comma-separated list (`CONVEYOR__BROKER__URLS=a,b`),
/// declared by the module that owns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListKey {
    /// `section.key`.
    pub key: &'static str,
    /// A list of secrets keeps its empty items (`new,old,`), for its owner to refuse: an
    /// empty secret is a mistake, never a guess. Other lists drop them (a trailing comma
    /// in an env file is no reason to stop).
    pub secret: bool,
}

impl ListKey {
    pub const fn plain(key: &'static str) -> Self {
        ListKey { key, secret: false }
    }

    pub const fn secret(key: &'static str) -> Self {
        ListKey { key, secret: true }
    }

    /// The environment variable that sets it.
    fn var(&self) -> String {
        format!(
            "CONVEYOR__{}",
            self.key.replace('.', "__").to_ascii_uppercase()
        )
    }
}

/// The layers as one document: base → `<dir>/<env>.toml` (if present) → the `CONVEYOR__`
/// variables of `vars`, with `lists` parsed as comma-separated lists.
pub fn layered(
    dir: &Path,
    env: &str,
    vars: impl IntoIterator<Item = (String, String)>,
    lists: &[ListKey],
) -> Result<config::Config, ConfigError> {
    let plain: Vec<String> = lists
        .iter()
        .filter(|l| !l.secret)
        .map(ListKey::var)
        .collect();
    let vars: config::Map<String, String> = vars
        .into_iter()
        .filter(|(k, _)| k.starts_with("CONVEYOR__"))
        .map(|(k, v)| {
            let v = if plain.contains(&k) {
                without_empty_items(v)
            } else {
                v
            };
            (k, v)
        })
        .collect();
    let environment = lists.iter().fold(
        config::Environment::with_prefix("CONVEYOR")
            .prefix_separator("__")
            .separator("__")
            .try_parsing(true)
            .list_separator(","),
        |env, list| env.with_list_parse_key(list.key),
    );
    Ok(config::Config::builder()
        .add_source(config::File::from_str(BASE_TOML, config::FileFormat::Toml))
        .add_source(config::File::from(dir.join(format!("{env}.toml"))).required(false))
        .add_source(environment.source(Some(vars)))
        .build()?)
}

/// `v` without its empty (or blank) comma-separated items, unless nothing else is left
/// (then the value is kept for the key's own check to refuse).
fn without_empty_items(v: String) -> String {
    let items: Vec<&str> = v
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .collect();
    if items.is_empty() { v } else { items.join(",") }
}

/// A configuration document safe to print: each URL's user info and secret-named query
/// parameters, and every string under a key named like a secret (`*key*`, `*secret*`,
/// `*password*`, `*token*`; not `*_prefix`) are `****` (an empty one stays empty).
pub fn masked(mut v: serde_json::Value) -> serde_json::Value {
    mask_secrets(&mut v);
    v
}

/// Whether a key's value is a secret by its name.
fn secret_name(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    !key.ends_with("_prefix")
        && ["key", "secret", "password", "passwd", "token", "credential"]
            .iter()
            .any(|s| key.contains(s))
}

fn mask_secrets(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                match v {
                    serde_json::Value::String(s) if secret_name(k) && !s.is_empty() => {
                        *s = "****".into()
                    }
                    // An empty item shows as empty: masking it would hide the mistake.
                    serde_json::Value::Array(items) if secret_name(k) => {
                        for item in items
                            .iter_mut()
                            .filter(|i| i.as_str().is_some_and(|s| !s.is_empty()))
                        {
                            *item = "****".into();
                        }
                    }
                    other => mask_secrets(other),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask_secrets),
        serde_json::Value::String(s) if s.contains("://") => *s = mask_url(s),
        _ => {}
    }
}

/// Masks a URL's credentials: the password of `scheme://user:password@host` (a lone
/// user info, often a token, entirely) and the values of secret-named query parameters
/// (`?password=…`, `?token=…`).
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:****@{host}"),
            None => format!("****@{host}"),
        },
        None => authority.to_owned(),
    };
    let mut out = format!("{scheme}://{authority}{path}");
    if let Some(q) = query {
        let masked: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if secret_name(k) => format!("{k}=****"),
                _ => pair.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&masked.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_passwords() {
        assert_eq!(
            mask_url("amqp://guest:secret@h:5672/%2f"),
            "amqp://guest:****@h:5672/%2f"
        );
        assert_eq!(mask_url("redis://h:6379/"), "redis://h:6379/");
        assert_eq!(
            mask_url("postgres://db/app?sslmode=require&password=pw&apikey=k"),
            "postgres://db/app?sslmode=require&password=****&apikey=****"
        );
        assert_eq!(
            mask_url("https://tok3n@api.example.com/v1"),
            "https://****@api.example.com/v1"
        );
        // An @ in the path is not user info.
        assert_eq!(mask_url("http://h/a@b"), "http://h/a@b");
    }

    #[test]
    fn list_variables_are_named_after_their_keys() {
        assert_eq!(
            ListKey::plain("broker.urls").var(),
            "CONVEYOR__BROKER__URLS"
        );
        assert_eq!(without_empty_items("a,, b ,".into()), "a,b");
        assert_eq!(without_empty_items(" , ".into()), " , ");
    }
}
