//! `[ai]` as loaded from layered configuration: defaults pass, bad values name their key.
#![allow(clippy::unwrap_used)]

use super::*;

fn load(vars: &[(&str, &str)]) -> Result<AiSettings, ConfigError> {
    let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    let s = Settings::load_with(
        std::path::Path::new("/nonexistent"),
        "none",
        vars,
        SECTION.lists,
    )?;
    AiSettings::from_settings(&s)
}

#[test]
fn the_defaults_pass_and_bad_values_name_the_key() {
    let ai = load(&[]).unwrap();
    assert_eq!(
        ai.providers[&ai.kinds["copywriting"].provider].protocol,
        Protocol::Simulated
    );
    assert!(ai.kinds.contains_key("video_analysis"));
    let err = load(&[("CONVEYOR__AI__STALE_AFTER_MS", "1")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("ai.stale_after_ms"), "{err}");
    let err = load(&[("CONVEYOR__AI__KINDS__IMAGE__PROVIDER", "magic")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ai.kinds.image") && err.contains("magic"),
        "{err}"
    );
    // The OpenAI provider makes text; images need an image model.
    let err = load(&[("CONVEYOR__AI__KINDS__IMAGE__PROVIDER", "openai")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("image_model"), "{err}");
    load(&[("CONVEYOR__AI__KINDS__COPYWRITING__PROVIDER", "openai")]).unwrap();
}

#[test]
fn a_deadline_the_broker_would_cut_short_is_refused() {
    // Copywriting's deadline is 60 s: a broker that takes deliveries back after 60 s
    // would redeliver every task that uses its whole deadline.
    let err = load(&[("CONVEYOR__BROKER__CONSUMER_TIMEOUT_MS", "60000")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ai.kinds.copywriting.deadline_secs") && err.contains("consumer_timeout"),
        "{err}"
    );
    // Every default kind fits under the broker's own 30-min default.
    load(&[("CONVEYOR__BROKER__CONSUMER_TIMEOUT_MS", "1800000")]).unwrap();
}

#[test]
fn a_kind_whose_provider_parks_may_run_for_hours() {
    let three_hours = ("CONVEYOR__AI__KINDS__MODEL3D__DEADLINE_SECS", "10800");
    // On a worker, three hours would outlive the broker's delivery.
    let err = load(&[three_hours]).unwrap_err().to_string();
    assert!(err.contains("ai.kinds.model3d.deadline_secs"), "{err}");
    // Parked at a provider, no delivery is held: conveyor enforces the deadline.
    let ai = load(&[
        three_hours,
        ("CONVEYOR__AI__KINDS__MODEL3D__PROVIDER", "replicate"),
    ])
    .unwrap();
    assert_eq!(ai.kinds["model3d"].deadline_secs, 10_800);
    // A job answers files, not copy.
    let err = load(&[("CONVEYOR__AI__KINDS__COPYWRITING__PROVIDER", "replicate")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("ai.kinds.copywriting"), "{err}");
}

#[test]
fn an_approval_gates_a_later_step_of_the_kind() {
    load(&[(
        "CONVEYOR__AI__KINDS__VIDEO_ANALYSIS__APPROVAL_BEFORE",
        "summarize",
    )])
    .unwrap();
    for bad in ["extract_audio", "publish"] {
        let err = load(&[("CONVEYOR__AI__KINDS__VIDEO_ANALYSIS__APPROVAL_BEFORE", bad)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("approval_before") && err.contains(bad),
            "{err}"
        );
    }
}
