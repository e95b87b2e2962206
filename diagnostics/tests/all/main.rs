//! Integration tests for smith-diag: the public surface as other crates use
//! it, and the suite-wide audit of every diagnostic these tests build.

use smith_diag::audit::{audit_test_suite, audit_test_suite_with_env};
use smith_diag::{Diagnostic, PluginDiagnostic, Severity, Style, Surface, secrets};

/// A fake credential the suite registers; the audit proves it never leaks.
const TEST_SECRET: &str = "sk-smith-diag-suite-0f3c9a";

#[test]
fn secret_in_every_part_is_redacted_everywhere() {
    secrets::register(TEST_SECRET);
    let d = Diagnostic::error(
        "auth.rejected",
        format!("the provider rejected the key {TEST_SECRET}"),
        format!("key {TEST_SECRET} was revoked"),
        "create a new key and store it with `smith auth set`",
    )
    .with_value(TEST_SECRET)
    .with_surface(Surface::env("SMITH_API_KEY"))
    .with_field("auth.key")
    .with_example(format!("not {TEST_SECRET}"));
    let rendered = [
        d.render_terminal(Style::PLAIN),
        d.render_terminal(Style::COLOR),
        d.to_json().to_string(),
        format!("{:?}", d.to_plugin()),
    ];
    for text in rendered {
        assert!(!text.contains(TEST_SECRET), "leaked in: {text}");
    }
}

#[test]
fn every_surface_renders_in_json_with_its_kind() {
    let surfaces = [
        (Surface::file_at("/p/config.kdl", 2, 5), "file"),
        (Surface::file("/p/config.kdl"), "file"),
        (Surface::env("SMITH_MODEL"), "env"),
        (Surface::flag("--model"), "flag"),
        (Surface::plugin("theme-pack"), "plugin"),
        (
            Surface::rpc_field("session.prompt", "params.model"),
            "rpc-field",
        ),
        (Surface::Default, "default"),
        (Surface::other("the trust store"), "other"),
    ];
    for (surface, kind) in surfaces {
        let display = surface.to_string();
        let d = Diagnostic::warning("test.surface", "w", "y", "n").with_surface(surface);
        let json = d.to_json();
        assert_eq!(json["surface"]["kind"], kind);
        assert_eq!(json["surface"]["display"], display.as_str());
        assert_eq!(json["severity"], "warning");
    }
}

#[test]
fn plugin_records_must_be_complete() {
    let good = PluginDiagnostic {
        severity: "warning".into(),
        code: "theme.unknown-color".into(),
        what: "color `mauve` is unknown".into(),
        why: "themes may only use named palette colors".into(),
        next: "pick one of the palette colors".into(),
        value: Some("mauve".into()),
        ..PluginDiagnostic::default()
    };
    let d = Diagnostic::from_plugin("theme-pack", good.clone()).unwrap();
    assert_eq!(d.severity(), Severity::Warning);
    assert_eq!(d.surface(), Some(&Surface::plugin("theme-pack")));
    for blank in ["code", "what", "why", "next"] {
        let mut bad = good.clone();
        match blank {
            "code" => bad.code.clear(),
            "what" => bad.what.clear(),
            "why" => bad.why.clear(),
            _ => bad.next.clear(),
        }
        let err = Diagnostic::from_plugin("theme-pack", bad).unwrap_err();
        assert_eq!(err.field(), Some(blank));
        assert!(err.is_complete());
    }
}

/// A planted incomplete diagnostic, built only when the audit below asks for
/// it, so that test can prove the audit fails on one.
#[test]
fn planted_incomplete_diagnostic() {
    if std::env::var_os("SMITH_DIAG_PLANT_INCOMPLETE").is_some() {
        let _ = Diagnostic::error("test.planted", "something happened", "", "");
    }
    if std::env::var_os("SMITH_DIAG_PLANT_SECRET").is_some() {
        // Deliberately not registered: rendering cannot redact it.
        let _ =
            Diagnostic::error("test.planted", "w", "y", "n").with_value("sk-unregistered-plant");
    }
}

#[test]
fn suite_audit_every_diagnostic_is_complete_and_secret_free() {
    if std::env::var_os("SMITH_DIAG_AUDIT_CHILD").is_some() {
        return;
    }
    let report = audit_test_suite("suite_audit", &[TEST_SECRET]).unwrap();
    assert!(report.passed(), "{:#?}", report.problems);
    // Not vacuous: the records of the tests above are all there.
    assert!(report.records >= 12, "{report:#?}");
    assert!(report.codes.contains_key("auth.rejected"));
    assert!(report.codes.contains_key("diag.plugin-incomplete"));
    assert!(report.redacted >= 1);
}

#[test]
fn suite_audit_fails_on_a_planted_incomplete_diagnostic() {
    if std::env::var_os("SMITH_DIAG_AUDIT_CHILD").is_some() {
        return;
    }
    let report = audit_test_suite_with_env(
        "suite_audit",
        &[TEST_SECRET],
        &[("SMITH_DIAG_PLANT_INCOMPLETE", "1")],
    )
    .unwrap();
    assert!(!report.passed());
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("test.planted") && p.contains("no `why`")),
        "{:#?}",
        report.problems
    );
    let report = audit_test_suite_with_env(
        "suite_audit",
        &[TEST_SECRET, "sk-unregistered-plant"],
        &[("SMITH_DIAG_PLANT_SECRET", "1")],
    )
    .unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains("secret")),
        "{:#?}",
        report.problems
    );
}
