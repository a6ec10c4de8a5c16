use super::failure::public_error;

#[test]
fn only_known_classes_reach_the_tenant() {
    let shown = public_error(
        "t1",
        "provider_rejected: the provider refused this request (generate)",
    );
    assert!(shown.starts_with("provider_rejected:"));
    for internal in [
        "database: error returned from database: relation \"tasks\" does not exist",
        "panic: called `Option::unwrap()` on a `None` value",
        "provider answered 500: {\"secret\":\"x\"} at https://user:pw@llm.internal/v1",
    ] {
        let shown = public_error("t1", internal);
        assert_eq!(
            shown,
            "internal_error: the platform could not run this step (task t1)"
        );
    }
}
