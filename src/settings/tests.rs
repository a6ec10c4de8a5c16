use super::*;
use crate::broker::settings::BrokerKind;
use crate::dedupe::settings::DedupeKind;

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
    let vars = [
        ("CONVEYOR__PAYMENTS__HMAC_SECRETS", "real-secret,"),
        ("CONVEYOR__BROKER__URLS", "amqp://a:5672,, "),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()));
    // Lists are declared by their owners: a domain's by its section.
    let secret = [ListKey::secret("payments.hmac_secrets")];
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/config"));
    let s = Settings::load_with(dir, "local", vars, &secret).unwrap();
    assert_eq!(s.broker.urls, vec!["amqp://a:5672"]);
    assert_eq!(
        s.masked()["payments"]["hmac_secrets"],
        serde_json::json!(["****", ""])
    );
}

#[test]
fn domain_sections_are_kept_checked_and_masked() {
    let s = load(&[
        ("CONVEYOR__AI__PROVIDERS__OPENAI__API_KEY", "sk-live"),
        ("CONVEYOR__AI__HEARTBEAT_MS", "1234"),
    ])
    .unwrap();
    assert_eq!(s.sections["ai"]["heartbeat_ms"], 1234);
    let masked = s.masked();
    assert_eq!(masked["ai"]["providers"]["openai"]["api_key"], "****");
    assert_eq!(
        masked["ai"]["providers"]["openai"]["model"],
        s.sections["ai"]["providers"]["openai"]["model"]
    );
    // A section no domain claims is refused, naming it.
    let claim = |key| Section::new(key, |_| Ok(()));
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
