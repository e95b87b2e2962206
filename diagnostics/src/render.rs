//! The three renderings: terminal, JSON, plugin.

use std::fmt::Write as _;
use std::io::IsTerminal;

use serde_json::{Map, Value as Json, json};

use crate::diagnostic::{Diagnostic, Severity, Value};
use crate::secrets::redact;
use crate::surface::Surface;

/// How to draw a diagnostic on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    /// Whether to emit ANSI color sequences.
    pub color: bool,
}

impl Style {
    /// No color.
    pub const PLAIN: Style = Style { color: false };
    /// Color.
    pub const COLOR: Style = Style { color: true };

    /// Color when stderr is a terminal and `NO_COLOR` is unset or empty.
    pub fn for_stderr() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: Style::decide(std::io::stderr().is_terminal(), no_color),
        }
    }

    /// The decision behind [`Style::for_stderr`], for testing and for callers
    /// with their own streams: color only on a terminal without `NO_COLOR`.
    pub fn decide(is_terminal: bool, no_color: bool) -> bool {
        is_terminal && !no_color
    }
}

const RED_BOLD: &str = "\x1b[1;31m";
const YELLOW_BOLD: &str = "\x1b[1;33m";
const BOLD: &str = "\x1b[1m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// A diagnostic as a plugin sees and sends it: flat strings, one to one with
/// the plugin ABI's `diagnostic` record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PluginDiagnostic {
    /// `error` or `warning`.
    pub severity: String,
    /// Stable dotted code.
    pub code: String,
    /// What happened.
    pub what: String,
    /// Why it is a problem.
    pub why: String,
    /// The next corrective action.
    pub next: String,
    /// The offending value (`[withheld]` for secrets).
    pub value: Option<String>,
    /// The surface, as one line a person can act on.
    pub surface: Option<String>,
    /// The field path.
    pub field: Option<String>,
    /// An example fix.
    pub example: Option<String>,
}

const WITHHELD: &str = "[withheld]";

impl Diagnostic {
    /// The terminal rendering, redacted. Ends with a newline.
    ///
    /// ```text
    /// error[config.invalid-value]: `net.head-timeout-s` is not a whole number
    ///   at: config.kdl:3:20
    ///   field: net.head-timeout-s
    ///   value: "soon"
    ///   why: the option takes a whole number of seconds from 1 to 3600
    ///   next: write a whole number of seconds
    ///   example: head-timeout-s 120
    /// ```
    pub fn render_terminal(&self, style: Style) -> String {
        let mut out = String::new();
        let (sev_on, label_on, bold_on, off) = if style.color {
            let sev = match self.inner.severity {
                Severity::Error => RED_BOLD,
                Severity::Warning => YELLOW_BOLD,
            };
            (sev, CYAN, BOLD, RESET)
        } else {
            ("", "", "", "")
        };
        let _ = writeln!(
            out,
            "{sev_on}{}[{}]{off}{bold_on}: {}{off}",
            self.inner.severity,
            redact(&self.inner.code),
            redact(&self.inner.what)
        );
        let mut line = |label: &str, text: &str| {
            let _ = writeln!(out, "  {label_on}{label}:{off} {}", redact(text));
        };
        if let Some(surface) = &self.inner.surface {
            line("at", &surface.to_string());
        }
        if let Some(field) = &self.inner.field {
            line("field", field);
        }
        match &self.inner.value {
            Some(Value::Shown(v)) => line("value", v),
            Some(Value::Withheld) => line("value", WITHHELD),
            None => {}
        }
        line("why", &self.inner.why);
        line("next", &self.inner.next);
        if let Some(example) = &self.inner.example {
            line("example", example);
        }
        out
    }

    /// The terminal rendering without color.
    pub fn render_plain(&self) -> String {
        self.render_terminal(Style::PLAIN)
    }

    /// The JSON rendering for RPC and `--json`, redacted.
    ///
    /// Keys: `severity`, `code`, `what`, `why`, `next`, and when present
    /// `value` (or `value_withheld: true`), `surface` (an object with `kind`,
    /// `display` and the kind's fields), `field`, `example`.
    pub fn to_json(&self) -> Json {
        let mut obj = Map::new();
        obj.insert("severity".into(), json!(self.inner.severity.as_str()));
        obj.insert("code".into(), json!(redact(&self.inner.code)));
        obj.insert("what".into(), json!(redact(&self.inner.what)));
        obj.insert("why".into(), json!(redact(&self.inner.why)));
        obj.insert("next".into(), json!(redact(&self.inner.next)));
        match &self.inner.value {
            Some(Value::Shown(v)) => {
                obj.insert("value".into(), json!(redact(v)));
            }
            Some(Value::Withheld) => {
                obj.insert("value_withheld".into(), json!(true));
            }
            None => {}
        }
        if let Some(surface) = &self.inner.surface {
            obj.insert("surface".into(), surface_json(surface));
        }
        if let Some(field) = &self.inner.field {
            obj.insert("field".into(), json!(redact(field)));
        }
        if let Some(example) = &self.inner.example {
            obj.insert("example".into(), json!(redact(example)));
        }
        Json::Object(obj)
    }

    /// The plugin rendering, redacted.
    pub fn to_plugin(&self) -> PluginDiagnostic {
        PluginDiagnostic {
            severity: self.inner.severity.as_str().to_owned(),
            code: redact(&self.inner.code).into_owned(),
            what: redact(&self.inner.what).into_owned(),
            why: redact(&self.inner.why).into_owned(),
            next: redact(&self.inner.next).into_owned(),
            value: self.inner.value.as_ref().map(|v| match v {
                Value::Shown(v) => redact(v).into_owned(),
                Value::Withheld => WITHHELD.to_owned(),
            }),
            surface: self
                .inner
                .surface
                .as_ref()
                .map(|s| redact(&s.to_string()).into_owned()),
            field: self.inner.field.as_ref().map(|f| redact(f).into_owned()),
            example: self.inner.example.as_ref().map(|e| redact(e).into_owned()),
        }
    }

    /// Accepts a diagnostic emitted by `plugin`.
    ///
    /// The surface becomes the plugin (with the plugin's own surface text
    /// appended when it gave one), so the user always knows which plugin
    /// spoke.
    ///
    /// # Errors
    ///
    /// A host diagnostic (`diag.plugin-incomplete`) naming the plugin and the
    /// missing part when the record lacks a code, what, why or next, or when
    /// its severity is neither `error` nor `warning`.
    pub fn from_plugin(plugin: &str, record: PluginDiagnostic) -> Result<Diagnostic, Diagnostic> {
        let severity = match record.severity.as_str() {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            other => {
                return Err(Diagnostic::error(
                    "diag.plugin-incomplete",
                    format!("plugin `{plugin}` emitted a diagnostic with severity `{other}`"),
                    "a diagnostic's severity must be `error` or `warning`",
                    format!("fix plugin `{plugin}` to send `error` or `warning`, or disable it"),
                )
                .with_surface(Surface::plugin(plugin))
                .with_field("severity")
                .with_value(other));
            }
        };
        for (name, text) in [
            ("code", &record.code),
            ("what", &record.what),
            ("why", &record.why),
            ("next", &record.next),
        ] {
            if text.trim().is_empty() {
                return Err(Diagnostic::error(
                    "diag.plugin-incomplete",
                    format!("plugin `{plugin}` emitted a diagnostic without `{name}`"),
                    "every diagnostic must say what happened, why, and the next action, under a stable code",
                    format!("fix plugin `{plugin}` to fill in `{name}`, or disable it"),
                )
                .with_surface(Surface::plugin(plugin))
                .with_field(name)
                .with_value(&record.what));
            }
        }
        let surface = match &record.surface {
            Some(s) if !s.trim().is_empty() => Surface::other(format!("plugin {plugin}: {s}")),
            _ => Surface::plugin(plugin),
        };
        let mut d = Diagnostic::new(severity, record.code, record.what, record.why, record.next)
            .with_surface(surface);
        if let Some(v) = record.value {
            d = d.with_value(v);
        }
        if let Some(f) = record.field {
            d = d.with_field(f);
        }
        if let Some(e) = record.example {
            d = d.with_example(e);
        }
        Ok(d)
    }
}

fn surface_json(surface: &Surface) -> Json {
    let mut obj = Map::new();
    obj.insert("kind".into(), json!(surface.kind()));
    obj.insert("display".into(), json!(redact(&surface.to_string())));
    match surface {
        Surface::File { path, at } => {
            obj.insert("path".into(), json!(redact(&path.display().to_string())));
            if let Some(at) = at {
                obj.insert("line".into(), json!(at.line));
                obj.insert("column".into(), json!(at.column));
            }
        }
        Surface::Env { var } => {
            obj.insert("var".into(), json!(redact(var)));
        }
        Surface::Flag { flag } => {
            obj.insert("flag".into(), json!(redact(flag)));
        }
        Surface::Plugin { plugin } => {
            obj.insert("plugin".into(), json!(redact(plugin)));
        }
        Surface::RpcField { method, field } => {
            obj.insert("method".into(), json!(redact(method)));
            obj.insert("field".into(), json!(redact(field)));
        }
        Surface::Default => {}
        Surface::Other { label } => {
            obj.insert("label".into(), json!(redact(label)));
        }
    }
    Json::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets;

    fn sample() -> Diagnostic {
        Diagnostic::error(
            "config.invalid-value",
            "`net.head-timeout-s` is not a whole number",
            "the option takes a whole number of seconds from 1 to 3600",
            "write a whole number of seconds",
        )
        .with_value("\"soon\"")
        .with_surface(Surface::file_at("config.kdl", 3, 20))
        .with_field("net.head-timeout-s")
        .with_example("head-timeout-s 120")
    }

    #[test]
    fn plain_rendering_has_every_part_in_order() {
        assert_eq!(
            sample().render_plain(),
            "error[config.invalid-value]: `net.head-timeout-s` is not a whole number\n\
             \x20 at: config.kdl:3:20\n\
             \x20 field: net.head-timeout-s\n\
             \x20 value: \"soon\"\n\
             \x20 why: the option takes a whole number of seconds from 1 to 3600\n\
             \x20 next: write a whole number of seconds\n\
             \x20 example: head-timeout-s 120\n"
        );
    }

    #[test]
    fn color_only_when_asked() {
        assert!(!sample().render_terminal(Style::PLAIN).contains('\x1b'));
        let colored = sample().render_terminal(Style::COLOR);
        assert!(colored.starts_with("\x1b[1;31merror[config.invalid-value]\x1b[0m"));
        assert!(Style::decide(true, false));
        assert!(!Style::decide(true, true));
        assert!(!Style::decide(false, false));
    }

    #[test]
    fn json_rendering_is_structured() {
        assert_eq!(
            sample().to_json(),
            json!({
                "severity": "error",
                "code": "config.invalid-value",
                "what": "`net.head-timeout-s` is not a whole number",
                "why": "the option takes a whole number of seconds from 1 to 3600",
                "next": "write a whole number of seconds",
                "value": "\"soon\"",
                "surface": {"kind": "file", "display": "config.kdl:3:20", "path": "config.kdl", "line": 3, "column": 20},
                "field": "net.head-timeout-s",
                "example": "head-timeout-s 120",
            })
        );
    }

    #[test]
    fn every_rendering_redacts_registered_secrets() {
        secrets::register("sk-render-test-51515");
        let d = Diagnostic::error(
            "auth.rejected",
            "the provider rejected key sk-render-test-51515",
            "the key sk-render-test-51515 is revoked",
            "replace sk-render-test-51515",
        )
        .with_value("sk-render-test-51515")
        .with_surface(Surface::env("SMITH_KEY_sk-render-test-51515"));
        let all = [
            d.render_plain(),
            d.render_terminal(Style::COLOR),
            d.to_json().to_string(),
            format!("{:?}", d.to_plugin()),
            d.to_string(),
        ];
        for text in all {
            assert!(!text.contains("sk-render-test-51515"), "{text}");
            assert!(text.contains("[redacted]"), "{text}");
        }
    }

    #[test]
    fn withheld_values_never_carry_content() {
        let d = Diagnostic::error(
            "auth.missing",
            "no key",
            "the provider needs one",
            "set one",
        )
        .with_withheld_value();
        assert!(d.render_plain().contains("value: [withheld]"));
        assert_eq!(d.to_json()["value_withheld"], json!(true));
        assert_eq!(d.to_plugin().value.as_deref(), Some("[withheld]"));
    }

    #[test]
    fn plugin_round_trip_names_the_plugin_and_refuses_incomplete_records() {
        let record = sample().to_plugin();
        let back = Diagnostic::from_plugin("lint", record.clone()).unwrap();
        assert_eq!(back.what(), sample().what());
        assert_eq!(
            back.surface().unwrap().to_string(),
            "plugin lint: config.kdl:3:20"
        );
        let mut missing = record;
        missing.why = "  ".into();
        let err = Diagnostic::from_plugin("lint", missing).unwrap_err();
        assert_eq!(err.code(), "diag.plugin-incomplete");
        assert!(err.what().contains("without `why`"));
        assert!(err.is_complete());
    }
}
