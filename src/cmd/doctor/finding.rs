//! One thing `smith doctor` found: its area, the check that found it, how
//! serious it is, what / why / next, and the facts behind it.
//!
//! A warning or an error is a [`Diagnostic`] (built by the code that found
//! the problem, or by the check), so it reads as every other diagnostic
//! smith shows and its JSON rendering carries the file and line, the
//! offending value and the field. Findings that are fine (`ok`) or only
//! worth knowing (`info`) need no diagnostic: nothing is wrong.

use serde_json::{Value, json};
use smith_diag::Diagnostic;

/// How serious a finding is. The order is the order of seriousness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Fine.
    Ok,
    /// Worth knowing; nothing needs fixing (something smith cannot know
    /// without asking the terminal, a feature that is off).
    Info,
    /// Something works less well than it could, or will surprise.
    Warning,
    /// Something a run will fail on.
    Error,
}

impl Severity {
    /// `ok`, `info`, `warning` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    /// The exit status for a report whose worst finding is this: 0 (ok or
    /// info), 1 (warning), 2 (error).
    pub fn exit_code(self) -> u8 {
        match self {
            Severity::Ok | Severity::Info => 0,
            Severity::Warning => 1,
            Severity::Error => 2,
        }
    }
}

/// The areas, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Area {
    /// Configuration files and variables.
    Configuration,
    /// Provider credentials and the provider a run would use.
    Credentials,
    /// The terminal the interface would draw on.
    Terminal,
    /// The sandbox confined commands run in.
    Sandbox,
    /// Plugins and the compiled-component cache.
    Plugins,
    /// The session store.
    Sessions,
}

impl Area {
    /// Every area, in report order.
    pub const ALL: [Area; 6] = [
        Area::Configuration,
        Area::Credentials,
        Area::Terminal,
        Area::Sandbox,
        Area::Plugins,
        Area::Sessions,
    ];

    /// `configuration`, `credentials`, `terminal`, `sandbox`, `plugins`,
    /// `sessions`.
    pub fn as_str(self) -> &'static str {
        match self {
            Area::Configuration => "configuration",
            Area::Credentials => "credentials",
            Area::Terminal => "terminal",
            Area::Sandbox => "sandbox",
            Area::Plugins => "plugins",
            Area::Sessions => "sessions",
        }
    }
}

/// One finding.
#[derive(Debug)]
pub struct Finding {
    /// The area.
    pub area: Area,
    /// The stable id of the check that found it (`config.user-file`...).
    pub check: &'static str,
    /// How serious it is.
    pub severity: Severity,
    /// What was found, naming the thing.
    pub what: String,
    /// Why it matters (always for info, warning and error).
    pub why: Option<String>,
    /// What to do next (always for info, warning and error).
    pub next: Option<String>,
    /// The diagnostic behind a warning or an error.
    pub diagnostic: Option<Diagnostic>,
    /// The facts behind it, as a JSON object.
    pub details: Value,
}

impl Finding {
    /// Something that is fine.
    pub fn ok(area: Area, check: &'static str, what: impl Into<String>) -> Finding {
        Finding {
            area,
            check,
            severity: Severity::Ok,
            what: what.into(),
            why: None,
            next: None,
            diagnostic: None,
            details: json!({}),
        }
    }

    /// Something worth knowing that needs no fixing.
    pub fn info(
        area: Area,
        check: &'static str,
        what: impl Into<String>,
        why: impl Into<String>,
        next: impl Into<String>,
    ) -> Finding {
        Finding {
            severity: Severity::Info,
            why: Some(why.into()),
            next: Some(next.into()),
            ..Finding::ok(area, check, what)
        }
    }

    /// A warning or an error: `diagnostic` says what, why and next.
    pub fn problem(area: Area, check: &'static str, diagnostic: Diagnostic) -> Finding {
        let severity = match diagnostic.severity() {
            smith_diag::Severity::Error => Severity::Error,
            smith_diag::Severity::Warning => Severity::Warning,
        };
        Finding {
            area,
            check,
            severity,
            what: diagnostic.what().to_owned(),
            why: Some(diagnostic.why().to_owned()),
            next: Some(diagnostic.next().to_owned()),
            diagnostic: Some(diagnostic),
            details: json!({}),
        }
    }

    /// The same finding with `details` (a JSON object) as its facts.
    #[must_use]
    pub fn details(mut self, details: Value) -> Finding {
        self.details = details;
        self
    }

    /// The finding as its JSON object (every text redacted).
    pub fn to_json(&self) -> Value {
        json!({
            "area": self.area.as_str(),
            "check": self.check,
            "severity": self.severity.as_str(),
            "what": redact(&self.what),
            "why": self.why.as_deref().map(redact),
            "next": self.next.as_deref().map(redact),
            "diagnostic": self.diagnostic.as_ref().map(Diagnostic::to_json),
            "details": redact_json(&self.details),
        })
    }

    /// Where the diagnostic says the offending value came from, for the
    /// text report, unless `what` already says it: `line 3, column 5` for
    /// a position in a file `what` names, else the surface
    /// (`/home/u/.config/smith/config.kdl:3:5`, `environment variable X`).
    pub fn place(&self) -> Option<String> {
        let surface = self.diagnostic.as_ref().and_then(Diagnostic::surface)?;
        if let smith_diag::Surface::File { path, at } = surface
            && self.what.contains(&path.display().to_string())
        {
            return at.map(|at| format!("line {}, column {}", at.line, at.column));
        }
        let shown = surface.to_string();
        (!self.what.contains(&shown)).then_some(shown)
    }
}

/// `text` with every registered secret replaced.
pub fn redact(text: &str) -> String {
    smith_diag::secrets::redact(text).into_owned()
}

fn redact_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s)),
        Value::Array(items) => items.iter().map(redact_json).collect(),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_json(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_severity_decides_the_exit_status() {
        assert_eq!(Severity::Ok.exit_code(), 0);
        assert_eq!(Severity::Info.exit_code(), 0);
        assert_eq!(Severity::Warning.exit_code(), 1);
        assert_eq!(Severity::Error.exit_code(), 2);
        assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Error);
    }

    #[test]
    fn a_problem_carries_its_diagnostic_and_redacts_secrets() {
        smith_diag::secrets::register("sk-doctor-finding-secret-93");
        let d = Diagnostic::warning(
            "doctor.test",
            "a value sk-doctor-finding-secret-93 was seen",
            "it is a test",
            "do nothing",
        )
        .with_surface(smith_diag::Surface::file_at("/tmp/config.kdl", 3, 5));
        let finding = Finding::problem(Area::Configuration, "config.user-file", d)
            .details(json!({"seen": ["sk-doctor-finding-secret-93"]}));
        assert_eq!(finding.severity, Severity::Warning);
        assert_eq!(finding.place().as_deref(), Some("/tmp/config.kdl:3:5"));
        let named = Finding::problem(
            Area::Configuration,
            "config.user-file",
            Diagnostic::error("doctor.test", "bad key in /tmp/config.kdl", "why", "next")
                .with_surface(smith_diag::Surface::file_at("/tmp/config.kdl", 3, 5)),
        );
        assert_eq!(named.place().as_deref(), Some("line 3, column 5"));
        let text = finding.to_json().to_string();
        assert!(!text.contains("sk-doctor-finding-secret-93"), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
        let v = finding.to_json();
        assert_eq!(v["diagnostic"]["surface"]["line"], 3);
        assert_eq!(v["diagnostic"]["code"], "doctor.test");
    }
}
