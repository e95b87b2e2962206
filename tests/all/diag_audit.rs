//! The suite-wide diagnostics audit: this whole test binary runs again with
//! `SMITH_DIAG_LOG` set, so every `smith` process its tests start (they
//! inherit the environment) appends each diagnostic it builds to one log.
//! Every record must have all three parts and must not contain the
//! credential the auth tests use.

/// The key `models_auth` stores and puts in the environment.
const SUITE_KEY: &str = "sk-cli-test-SECRET-31415";

#[test]
fn suite_audit_every_diagnostic_is_complete_and_secret_free() {
    if std::env::var_os("SMITH_DIAG_AUDIT_CHILD").is_some() {
        return;
    }
    let report = smith_diag::audit::audit_test_suite("suite_audit", &[SUITE_KEY])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.passed(), "{:#?}", report.problems);
    // Not vacuous: the suite's failing commands were recorded.
    for code in [
        "auth.missing",
        "catalog.unknown-provider",
        "engine.overloaded",
    ] {
        assert!(
            report.codes.contains_key(code),
            "`{code}` not among {:?}",
            report.codes
        );
    }
}
