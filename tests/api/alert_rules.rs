//! The Prometheus alert rules as code: `promtool check rules` and one unit-test file per
//! rule (`deploy/prometheus/tests/`: series in, the alert out at the right time, silent
//! on healthy series), through `tools/promtool/check.sh`.

use std::path::Path;
use std::process::Command;

use crate::helpers::required;

#[test]
fn every_alert_rule_passes_promtool_and_has_a_test_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rules = std::fs::read_to_string(root.join("deploy/prometheus/alerts.yml")).unwrap();
    let alerts: Vec<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert:"))
        .map(str::trim)
        .collect();
    assert!(alerts.len() >= 12, "the rules were read: {alerts:?}");
    // ConveyorQueueBacklog → conveyor_queue_backlog.test.yml
    for alert in &alerts {
        let mut file = String::new();
        for (i, c) in alert.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                file.push('_');
            }
            file.push(c.to_ascii_lowercase());
        }
        let path = root.join(format!("deploy/prometheus/tests/{file}.test.yml"));
        assert!(
            path.exists(),
            "{alert} has no unit test ({})",
            path.display()
        );
    }
    let promtool = Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !promtool {
        assert!(
            !required(),
            "promtool is missing and CONVEYOR_REQUIRE_SERVICES=1 (tools/promtool/install.sh)"
        );
        eprintln!("skipped: promtool is not installed (tools/promtool/install.sh)");
        return;
    }
    let out = Command::new("bash")
        .arg("tools/promtool/check.sh")
        .current_dir(root)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.matches("SUCCESS").count(),
        alerts.len() + 1,
        "the check and every test file: {text}"
    );
}
