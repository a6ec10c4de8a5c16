//! Layered settings: the compiled-in `config/base.toml`, then `config/<env>.toml`, then
//! `CONVEYOR__SECTION__KEY` environment variables. Every key has a default in base.toml.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

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

/// Platform sections are typed here; each domain's own top-level table (`[ai]`, …) is
/// kept in `sections`, read and checked by that domain (see [`Section`]), so a new
/// domain brings its settings without touching this file. A top-level table that
/// neither the platform nor a domain claims is an error ([`Settings::check_sections`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub server: ServerSettings,
    pub log: LogSettings,
    pub database: DatabaseSettings,
    pub broker: BrokerSettings,
    pub dedupe: DedupeSettings,
    pub consumer: ConsumerSettings,
    pub outbox: OutboxSettings,
    pub live: LiveSettings,
    pub dead_letters: DeadLetterSettings,
    /// `[limits]`: per-tenant limits by key, each declared by the module that enforces
    /// it ([`crate::limits::declared`]); a key not set keeps its declared default.
    #[serde(default)]
    pub limits: BTreeMap<String, u32>,
    pub auth: AuthSettings,
    pub ops: OpsSettings,
    #[serde(default)]
    pub queues: BTreeMap<String, QueueOverride>,
    /// The domains' sections, by top-level key.
    #[serde(flatten)]
    pub sections: BTreeMap<String, serde_json::Value>,
}

/// A domain's settings section: its top-level key and its check (ranges and shapes
/// that types cannot express).
#[derive(Debug, Clone, Copy)]
pub struct Section {
    pub key: &'static str,
    pub check: fn(&Settings) -> Result<(), ConfigError>,
}

/// `[live]`: WebSocket and SSE progress streams.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveSettings {
    pub ticket_ttl_secs: u64,
    pub allowed_origins: Vec<String>,
    pub max_message_bytes: usize,
    pub max_subscriptions: usize,
    pub ping_interval_ms: u64,
    pub idle_timeout_ms: u64,
    pub send_timeout_ms: u64,
    pub buffer_bytes: usize,
    /// An open stream re-reads its key this often (and at the key's expiry), so a
    /// revocation whose notice never arrived ends it within this.
    pub key_check_secs: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    pub host: String,
    pub port: u16,
    pub request_timeout_ms: u64,
    pub body_limit_bytes: usize,
    pub shutdown_grace_ms: u64,
    /// A client must send a whole request header within this, and a keep-alive
    /// connection idle this long between requests is closed.
    pub header_read_timeout_ms: u64,
    /// The largest request head (request line and headers) read; at least 8192.
    pub max_header_bytes: usize,
    /// Connections served at once; more are closed at accept.
    pub max_connections: usize,
    /// Operators' bearer token for `/metrics` and `/readyz` detail; empty: none.
    pub ops_token: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    pub format: LogFormat,
    pub level: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSettings {
    pub url: String,
    pub max_connections: u32,
    pub migrate_on_start: bool,
    /// Submission batches committing at once (group commit); SQLite always uses one.
    pub group_commit_writers: u32,
    /// How long a less-than-half-full submission batch waits for more.
    pub group_commit_linger_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BrokerKind {
    Embedded,
    Rabbitmq,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueType {
    Classic,
    Quorum,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerSettings {
    pub kind: BrokerKind,
    /// The one-address form; ignored when `urls` lists any.
    pub url: String,
    /// The nodes of a RabbitMQ cluster, in order of preference: a connection tries them
    /// from the one it last reached and moves to the next on failure.
    #[serde(default)]
    pub urls: Vec<String>,
    /// How long one node may take to accept a connection before the next is tried (a
    /// frozen node accepts TCP but never answers the AMQP handshake).
    pub connect_timeout_ms: u64,
    pub namespace: String,
    pub queue_type: QueueType,
    pub publish_timeout_ms: u64,
    pub heartbeat_secs: u16,
    pub retry_tiers_ms: Vec<u64>,
    pub max_payload_bytes: usize,
    pub embedded_path: PathBuf,
    pub reconnect_min_ms: u64,
    pub reconnect_max_ms: u64,
    /// The broker's `consumer_timeout`: handler deadlines must stay below it.
    pub consumer_timeout_ms: u64,
}

/// The shortest operator token accepted: a guessable one is no token.
const MIN_TOKEN_BYTES: usize = 16;

impl ServerSettings {
    /// A server reachable beyond this machine must have an operator token: without one
    /// `/metrics` (business counters, broker node addresses) is open to anyone who can
    /// reach the port. Checked by `serve`, which is what binds `server.host`.
    pub fn check_exposure(&self) -> Result<(), ConfigError> {
        let loopback = match self.host.as_str() {
            "localhost" => true,
            host => host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback()),
        };
        if loopback || !self.ops_token.is_empty() {
            return Ok(());
        }
        Err(ConfigError::Invalid {
            key: "server.ops_token",
            problem: format!(
                "must be set when server.host ({}) is not a loopback address: /metrics would be open to the network",
                self.host
            ),
        })
    }
}

impl BrokerSettings {
    /// The broker's addresses: `urls` when it lists any, else `url`.
    pub fn addresses(&self) -> Vec<String> {
        if self.urls.is_empty() {
            vec![self.url.clone()]
        } else {
            self.urls.clone()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DedupeKind {
    Embedded,
    Redis,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DedupeSettings {
    pub kind: DedupeKind,
    pub url: String,
    pub key_prefix: String,
    pub lease_ms: u64,
    pub done_ttl_secs: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumerSettings {
    pub shutdown_grace_ms: u64,
    /// How often each consumer reads its queue's concurrency set at run time.
    pub settings_poll_ms: u64,
    pub db_fence: bool,
    /// Fence requests (checks, writes) merged into one statement.
    pub fence_batch: usize,
    /// Fence rows older than this are trimmed by housekeeping (see base.toml for the rule).
    pub fence_retention_days: u32,
    /// A message redelivered this many times after its consumer died is dead-lettered
    /// with reason `crash_loop`; 0 turns the quarantine off.
    pub crash_loop_after: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboxSettings {
    pub batch_size: u64,
    pub poll_interval_ms: u64,
    pub linger_ms: u64,
    pub retry_min_ms: u64,
    pub retry_max_ms: u64,
}

/// `[dead_letters]`: operating the dead letters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterSettings {
    /// Replays per second, per process (API or CLI), so replaying a large backlog
    /// cannot flood the work queues it returns to.
    pub replay_per_second: u32,
    /// How often consumer processes drain their queues' DLQs into the table.
    pub keeper_interval_ms: u64,
    /// A letter replayed this many times that dies again is parked as `needs_fix`: a
    /// replay by filter skips it unless forced (0: never).
    pub needs_fix_after_replays: u32,
}

/// `[ops]`: the operations console's board and its alerts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpsSettings {
    /// How often each API instance samples queues, rates and panels (the console's
    /// refresh, the alerts' resolution).
    pub sample_interval_ms: u64,
    /// How much of the per-queue history the throughput charts keep.
    pub history_secs: u64,
    /// The console's address as operators reach it, put in alert notices ("" for none).
    pub link: String,
    pub alerts: AlertSettings,
    /// Where alert notices go.
    #[serde(default)]
    pub receivers: Vec<AlertReceiver>,
}

/// `[ops.alerts]`: the thresholds, each with how long it must hold before it fires.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertSettings {
    /// Backlog (ready + retrying) above this many times the consumers' concurrency.
    pub backlog_factor: f64,
    pub backlog_for_secs: u64,
    /// The oldest waiting work older than this.
    pub oldest_secs: f64,
    pub oldest_for_secs: u64,
    /// Consumed below this fraction of published, while at least `consume_min_rate`
    /// messages per second are published.
    pub consume_ratio: f64,
    pub consume_min_rate: f64,
    pub consume_for_secs: u64,
    /// Processed / (processed + dead-lettered) below this, while at least
    /// `success_min_rate` messages per second finish.
    pub success_ratio: f64,
    pub success_min_rate: f64,
    pub success_for_secs: u64,
}

/// `[[ops.receivers]]`: a webhook for alert notices, in the shape it expects.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertReceiver {
    pub url: String,
    #[serde(default)]
    pub format: AlertFormat,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertFormat {
    /// `{"status", "id", "rule", "queue", "summary", "value", "threshold", "fired_at",
    /// "resolved_at", "link"}`: `id` is the episode, the same in its firing and
    /// resolved notices (receivers de-duplicate on `id` and `status`).
    #[default]
    Generic,
    /// A DingTalk group robot (`msgtype: markdown`).
    Dingtalk,
    /// A WeCom group robot (`msgtype: markdown`).
    Wecom,
}

/// `[auth]`: API keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// A rotated key keeps working this long beside its successor.
    pub key_rotation_overlap_secs: u64,
    /// Requests with an invalid API key one address may make per minute; past it, the
    /// address is refused 429 until the minute ends (0: no limit).
    pub failed_per_minute: u32,
}

/// `[queues.<key>]`: per-queue concurrency and attempt limits.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueOverride {
    pub prefetch: Option<u16>,
    pub max_attempts: Option<u32>,
    /// For a queue with a batch handler: deliveries per batch (keep `prefetch` at least
    /// this, or batches never fill) and how long a batch waits to fill after its first.
    pub batch: Option<u16>,
    pub linger_ms: Option<u64>,
    /// For a queue with a batch handler: batches handled at once by one process (2 by
    /// default). Like a bulk client's concurrent requests, it bounds what the handler's
    /// backend sees, whatever the batch size.
    pub in_flight: Option<u16>,
    /// For a business delay (`orders.payment-timeout`): how long it waits.
    pub delay_ms: Option<u64>,
}

impl Settings {
    /// Loads base → `<config_dir>/<env>.toml` (if present) → environment.
    /// `env` defaults to `CONVEYOR_ENV`, then "local"; the directory to `CONVEYOR_CONFIG_DIR`, then `./config`.
    pub fn load(env: Option<&str>) -> Result<Self, ConfigError> {
        let env = env
            .map(str::to_owned)
            .or_else(|| std::env::var("CONVEYOR_ENV").ok())
            .unwrap_or_else(|| "local".to_owned());
        let dir = std::env::var("CONVEYOR_CONFIG_DIR").unwrap_or_else(|_| "config".to_owned());
        Self::load_from(Path::new(&dir), &env, std::env::vars())
    }

    /// The testable core of [`Settings::load`]: explicit directory, overlay and variables.
    pub fn load_from(
        dir: &Path,
        env: &str,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let vars: config::Map<String, String> = vars
            .into_iter()
            .filter(|(k, _)| k.starts_with("CONVEYOR__"))
            .map(|(k, v)| {
                let v = if PLAIN_LISTS.contains(&k.as_str()) {
                    without_empty_items(v)
                } else {
                    v
                };
                (k, v)
            })
            .collect();
        let settings: Settings = config::Config::builder()
            .add_source(config::File::from_str(BASE_TOML, config::FileFormat::Toml))
            .add_source(config::File::from(dir.join(format!("{env}.toml"))).required(false))
            .add_source(
                config::Environment::with_prefix("CONVEYOR")
                    .prefix_separator("__")
                    .separator("__")
                    .try_parsing(true)
                    .list_separator(",")
                    .with_list_parse_key("broker.retry_tiers_ms")
                    .with_list_parse_key("broker.urls")
                    // A secret list keeps its empty items: its owner refuses them.
                    .with_list_parse_key("payments.hmac_secrets")
                    .source(Some(vars)),
            )
            .build()?
            .try_deserialize()?;
        settings.validate()?;
        Ok(settings)
    }

    /// Checks what types cannot: ranges and shapes, naming the offending key.
    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key, problem: &str| {
            Err(ConfigError::Invalid {
                key,
                problem: problem.to_owned(),
            })
        };
        if self.server.request_timeout_ms == 0 {
            return bad("server.request_timeout_ms", "must be greater than 0");
        }
        if self.server.header_read_timeout_ms == 0 || self.server.max_connections == 0 {
            return bad(
                "server.header_read_timeout_ms",
                "server.header_read_timeout_ms and server.max_connections must be above 0",
            );
        }
        // A year at most: a later expiry does not fit every database's timestamp column.
        if self.auth.key_rotation_overlap_secs > 366 * 24 * 3600 {
            return bad(
                "auth.key_rotation_overlap_secs",
                "must be at most a year (31622400)",
            );
        }
        let token = &self.server.ops_token;
        if !token.is_empty()
            && (token.len() < MIN_TOKEN_BYTES || token.contains(char::is_whitespace))
        {
            return bad(
                "server.ops_token",
                "must be empty (none) or at least 16 characters without spaces",
            );
        }
        // hyper's own floor: it refuses a smaller read buffer.
        if self.server.max_header_bytes < 8192 {
            return bad("server.max_header_bytes", "must be at least 8192");
        }
        if self.server.body_limit_bytes < 1024 {
            return bad("server.body_limit_bytes", "must be at least 1024");
        }
        let scheme = self.database.url.split(':').next().unwrap_or_default();
        if !["sqlite", "mysql", "mariadb", "postgres", "postgresql"].contains(&scheme) {
            return bad(
                "database.url",
                "must start with sqlite:, mysql:, mariadb:, postgres: or postgresql:",
            );
        }
        if self.database.max_connections == 0 {
            return bad("database.max_connections", "must be greater than 0");
        }
        if self.database.group_commit_writers == 0
            || self.database.group_commit_writers > self.database.max_connections
        {
            return bad(
                "database.group_commit_writers",
                "must be between 1 and database.max_connections",
            );
        }
        if self.broker.kind == BrokerKind::Rabbitmq {
            let key = if self.broker.urls.is_empty() {
                "broker.url"
            } else {
                "broker.urls"
            };
            let amqp = |u: &String| u.starts_with("amqp://") || u.starts_with("amqps://");
            if !self.broker.addresses().iter().all(amqp) {
                return bad(key, "each address must start with amqp:// or amqps://");
            }
            if self.broker.connect_timeout_ms == 0 {
                return bad("broker.connect_timeout_ms", "must be greater than 0");
            }
        }
        let ns_ok = !self.broker.namespace.is_empty()
            && self
                .broker
                .namespace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !ns_ok {
            return bad(
                "broker.namespace",
                "must be non-empty ASCII letters, digits, '-', '_' or '.'",
            );
        }
        if self.broker.retry_tiers_ms.is_empty() || self.broker.retry_tiers_ms.contains(&0) {
            return bad(
                "broker.retry_tiers_ms",
                "must list at least one delay, each above 0 ms",
            );
        }
        if self.broker.publish_timeout_ms == 0 {
            return bad("broker.publish_timeout_ms", "must be greater than 0");
        }
        if self.broker.max_payload_bytes == 0 {
            return bad("broker.max_payload_bytes", "must be greater than 0");
        }
        if self.broker.reconnect_min_ms == 0
            || self.broker.reconnect_max_ms < self.broker.reconnect_min_ms
        {
            return bad(
                "broker.reconnect_max_ms",
                "needs 0 < reconnect_min_ms <= reconnect_max_ms",
            );
        }
        if self.dedupe.kind == DedupeKind::Redis
            && !(self.dedupe.url.starts_with("redis://")
                || self.dedupe.url.starts_with("rediss://"))
        {
            return bad("dedupe.url", "must start with redis:// or rediss://");
        }
        if self.dedupe.lease_ms == 0 {
            return bad("dedupe.lease_ms", "must be greater than 0");
        }
        if !(1..=3600).contains(&self.live.key_check_secs) {
            return bad("live.key_check_secs", "must be between 1 and 3600");
        }
        if self.dead_letters.replay_per_second == 0 {
            return bad("dead_letters.replay_per_second", "must be greater than 0");
        }
        if self.ops.sample_interval_ms < 100 {
            return bad("ops.sample_interval_ms", "must be at least 100");
        }
        if self.ops.history_secs * 1000 < self.ops.sample_interval_ms {
            return bad("ops.history_secs", "must cover at least one sample");
        }
        for r in &self.ops.receivers {
            if !(r.url.starts_with("http://") || r.url.starts_with("https://")) {
                return bad(
                    "ops.receivers",
                    "each url must start with http:// or https://",
                );
            }
        }
        if self.consumer.fence_batch == 0 {
            return bad("consumer.fence_batch", "must be greater than 0");
        }
        if self.outbox.batch_size == 0 {
            return bad("outbox.batch_size", "must be greater than 0");
        }
        for (name, q) in &self.queues {
            if q.prefetch == Some(0) || q.max_attempts == Some(0) || q.delay_ms == Some(0) {
                return Err(ConfigError::Invalid {
                    key: "queues",
                    problem: format!(
                        "queues.{name}: prefetch, max_attempts and delay_ms must be greater than 0"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Domain section `key` as the domain's own type.
    pub fn section<T: serde::de::DeserializeOwned>(
        &self,
        key: &'static str,
    ) -> Result<T, ConfigError> {
        let value = self
            .sections
            .get(key)
            .cloned()
            .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        serde_json::from_value(value).map_err(|e| ConfigError::Invalid {
            key,
            problem: e.to_string(),
        })
    }

    /// Every section is one of `sections` and passes its check.
    pub fn check_sections(&self, sections: &[Section]) -> Result<(), ConfigError> {
        if let Some(unknown) = self
            .sections
            .keys()
            .find(|k| !sections.iter().any(|s| s.key == k.as_str()))
        {
            return Err(ConfigError::UnknownSection(unknown.clone()));
        }
        sections.iter().try_for_each(|s| (s.check)(self))
    }

    /// A copy safe to print: passwords in URLs, and in domain sections every value
    /// whose key ends in `_key` or names a secret (`password`, `secret`, `token`), are `****`.
    /// The whole configuration as JSON with every secret masked: each URL's user info
    /// and secret-named query parameters, and every string under a key named like a
    /// secret (`*key*`, `*secret*`, `*password*`, `*token*`; not `*_prefix`).
    pub fn masked(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        mask_secrets(&mut v);
        v
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.server.request_timeout_ms)
    }
}

/// Environment lists (comma-separated) whose empty items are dropped: `a,b,` is `a,b`, a
/// trailing comma in an env file is no reason to stop. A list of secrets is not here: an
/// empty secret is a mistake its section refuses at start-up, never a guess.
const PLAIN_LISTS: [&str; 2] = ["CONVEYOR__BROKER__RETRY_TIERS_MS", "CONVEYOR__BROKER__URLS"];

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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn load(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        Settings::load_from(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/config")),
            "local",
            vars,
        )
    }

    #[test]
    fn defaults_are_embedded() {
        let s = load(&[]).unwrap();
        assert_eq!(s.broker.kind, BrokerKind::Embedded);
        assert_eq!(s.dedupe.kind, DedupeKind::Embedded);
        assert!(s.database.url.starts_with("sqlite:"));
    }

    #[test]
    fn environment_overrides_any_key() {
        let s = load(&[
            ("CONVEYOR__BROKER__KIND", "rabbitmq"),
            ("CONVEYOR__SERVER__PORT", "9999"),
            ("CONVEYOR__BROKER__RETRY_TIERS_MS", "10,20"),
        ])
        .unwrap();
        assert_eq!(s.broker.kind, BrokerKind::Rabbitmq);
        assert_eq!(s.server.port, 9999);
        assert_eq!(s.broker.retry_tiers_ms, vec![10, 20]);
        assert_eq!(s.broker.addresses(), vec![s.broker.url.clone()]);
    }

    #[test]
    fn a_cluster_lists_its_nodes() {
        let s = load(&[
            ("CONVEYOR__BROKER__KIND", "rabbitmq"),
            (
                "CONVEYOR__BROKER__URLS",
                "amqp://g:g@a:5672/%2f,amqp://g:g@b:5672/%2f",
            ),
        ])
        .unwrap();
        assert_eq!(
            s.broker.addresses(),
            vec!["amqp://g:g@a:5672/%2f", "amqp://g:g@b:5672/%2f"]
        );
        let err = load(&[
            ("CONVEYOR__BROKER__KIND", "rabbitmq"),
            ("CONVEYOR__BROKER__URLS", "amqp://a:5672,http://b:5672"),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("broker.urls"), "{err}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let err = load(&[("CONVEYOR__SERVER__PORT", "eighty")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("server.port"), "{err}");
        let err = load(&[("CONVEYOR__BROKER__KIND", "kafka")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("broker.kind"), "{err}");
        let err = load(&[("CONVEYOR__DATABASE__URL", "oracle://x")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("database.url"), "{err}");
    }

    /// An empty secret shows as empty (masking it hid the mistake); list env values lose
    /// their empty items, secret lists keep them for their section to refuse.
    #[test]
    fn empty_secrets_show_and_plain_lists_drop_empty_items() {
        let s = load(&[
            ("CONVEYOR__PAYMENTS__HMAC_SECRETS", "real-secret,"),
            ("CONVEYOR__BROKER__URLS", "amqp://a:5672,, "),
        ])
        .unwrap();
        assert_eq!(s.broker.urls, vec!["amqp://a:5672"]);
        assert_eq!(
            s.masked()["payments"]["hmac_secrets"],
            serde_json::json!(["****", ""])
        );
    }

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
    fn domain_sections_are_kept_checked_and_masked() {
        let s = load(&[
            ("CONVEYOR__AI__OPENAI__API_KEY", "sk-live"),
            ("CONVEYOR__AI__HEARTBEAT_MS", "1234"),
        ])
        .unwrap();
        assert_eq!(s.sections["ai"]["heartbeat_ms"], 1234);
        let masked = s.masked();
        assert_eq!(masked["ai"]["openai"]["api_key"], "****");
        assert_eq!(
            masked["ai"]["openai"]["model"],
            s.sections["ai"]["openai"]["model"]
        );
        // A section no domain claims is refused, naming it.
        let claim = |key| Section {
            key,
            check: |_| Ok(()),
        };
        let all: Vec<Section> = s.sections.keys().map(|k| claim(k.clone().leak())).collect();
        assert!(s.check_sections(&all).is_ok());
        let err = s
            .check_sections(&[claim("flash_sale")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("[ai]"), "{err}");
        let typo = load(&[("CONVEYOR__SERVR__PORT", "1")]).unwrap();
        let err = typo.check_sections(&all).unwrap_err().to_string();
        assert!(err.contains("[servr]"), "{err}");
    }
}
