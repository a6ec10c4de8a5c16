//! The TypeScript client (`clients/typescript`) checked as part of `cargo test`: its
//! dependencies from the lockfile, strict type-check, build, unit tests, the pages'
//! bundle current, the generated types equal to what this server's /openapi.json
//! generates, and its integration tests against this build's `conveyor serve`
//! (`scripts/ci.sh`), uploads also on the S3 server. Needs Node ≥ 20, npm's registry and
//! the S3 server (tools/seaweedfs); skipped (saying so) without them, unless
//! CONVEYOR_REQUIRE_SERVICES=1.

use std::path::Path;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_client_builds_matches_the_api_and_passes_its_tests() {
    let required = std::env::var("CONVEYOR_REQUIRE_SERVICES").is_ok_and(|v| v == "1");
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.as_ref().is_ok_and(|o| o.status.success()) {
        assert!(
            !required,
            "node (≥ 20) and npm are required for the TypeScript client's checks"
        );
        eprintln!("skipped: no node");
        return;
    }
    // Presigned uploads straight to a bucket need the S3 server (tools/seaweedfs).
    let Some(s3) = crate::helpers::s3("typescript_client").await else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/typescript");
    let run = tokio::process::Command::new("bash")
        .arg("scripts/ci.sh")
        .env("CONVEYOR_TEST_S3_URL", s3)
        .arg(env!("CARGO_BIN_EXE_conveyor"))
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("the client's checks end within 10 minutes")
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "clients/typescript/scripts/ci.sh failed:\n{stdout}\n{stderr}"
    );
    let summary = stdout
        .lines()
        .filter(|l| l.contains("ms from a forced") || l.contains("Tests ") || l.starts_with("ci:"))
        .collect::<Vec<_>>()
        .join("\n");
    eprintln!("{summary}");
    assert!(
        stdout.contains("ci: @conveyor/client checks passed"),
        "{stdout}"
    );
}
