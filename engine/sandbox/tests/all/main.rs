//! Integration tests of smith-sandbox: confined child processes on the
//! running kernel, the in-process checks against the kernel on the same
//! paths, link and `..` escapes, and the support report.

mod checks;
mod fixture;
mod kernel;
mod report;

#[test]
fn every_diagnostic_is_complete() {
    let report = smith_diag::audit::audit_test_suite("every_diagnostic_is_complete", &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.passed(), "{report:?}");
}
