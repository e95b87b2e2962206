//! RPC and MCP errors as [`smith_diag::Diagnostic`]s.
//!
//! Every error object `smith rpc` and `smith mcp` send is built from its
//! diagnostic: [`RpcError::to_json`] puts the diagnostic's JSON rendering
//! (`severity`, `code`, `what`, `why`, `next`, and the offending `value`,
//! `surface` and `field` when known) in `data`, beside the stable `kind` and
//! the error's own fields. Every string is redacted, so a registered secret
//! never reaches a client. The diagnostic code is `rpc.<kind>`; the
//! offending value is the request field the error names (the method, the
//! line and column of a parse error, the id, the URI, the tool).
//!
//! [`SetupError`]s (a runtime that could not start) convert too
//! (`rpc.runtime-setup`).

use serde_json::{Map, Value, json};
use smith_diag::secrets::redact;
use smith_diag::{Diagnose, Diagnostic, Surface};

use crate::jsonrpc::RpcError;
use crate::setup::SetupError;

/// The error's own fields that name the offending value, in order of
/// preference.
const VALUE_FIELDS: [&str; 6] = ["method", "id", "uri", "tool", "bytes", "line"];

fn text(data: &Value, key: &str) -> String {
    data.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn display(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Diagnose for RpcError {
    /// This error as a diagnostic (`rpc.<kind>`).
    fn to_diagnostic(&self) -> Diagnostic {
        let data = &self.data;
        let kind = self.kind();
        let kind = if kind.is_empty() { "error" } else { kind };
        let mut what = text(data, "what");
        if what.trim().is_empty() {
            what.clone_from(&self.message);
        }
        let mut why = text(data, "why");
        if why.trim().is_empty() {
            why = format!("the server answered with JSON-RPC error {}", self.code);
        }
        let mut next = text(data, "next");
        if next.trim().is_empty() {
            next = "correct the request and send it again".to_owned();
        }
        let mut d = Diagnostic::error(format!("rpc.{kind}"), what, why, next);
        let method = data.get("method").and_then(Value::as_str);
        let found = VALUE_FIELDS
            .iter()
            .find_map(|&key| data.get(key).map(|v| (key, v)));
        match found {
            Some(("line", line)) => {
                let column = data.get("column").map_or_else(String::new, display);
                d = d
                    .with_field("record")
                    .with_value(format!("line {}, column {column}", display(line)));
            }
            Some((key, value)) => d = d.with_field(key).with_value(display(value)),
            None => {}
        }
        let surface = match (method, found) {
            (Some(method), Some((key, _))) if key != "method" => {
                Surface::rpc_field(method, format!("params.{key}"))
            }
            (Some(method), _) => Surface::rpc_field(method, "method"),
            (None, _) => Surface::other("the JSON-RPC request"),
        };
        d.with_surface(surface)
    }
}

impl RpcError {
    /// The error object as JSON: `code`, `message`, and `data` holding the
    /// diagnostic's JSON rendering beside the error's own fields; every
    /// string redacted.
    pub fn to_json(&self) -> Value {
        let mut data = Map::new();
        if let Value::Object(own) = &self.data {
            for (key, value) in own {
                data.insert(key.clone(), redact_json(value));
            }
        }
        if let Value::Object(diag) = self.to_diagnostic().to_json() {
            data.extend(diag);
        }
        json!({
            "code": self.code,
            "message": redact(&self.message),
            "data": Value::Object(data),
        })
    }
}

fn redact_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s).into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_json(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

impl Diagnose for SetupError {
    /// This error as a diagnostic (`rpc.runtime-setup`).
    fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::from_message(
            "rpc.runtime-setup",
            &self.message,
            "the agent runtime needs a provider, a session and a working directory before it can start",
            "fix the cause and start the runtime again",
        )
        .with_surface(Surface::other("the runtime setup"))
    }
}

impl From<&RpcError> for Diagnostic {
    fn from(err: &RpcError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<RpcError> for Diagnostic {
    fn from(err: RpcError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<&SetupError> for Diagnostic {
    fn from(err: &SetupError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<SetupError> for Diagnostic {
    fn from(err: SetupError) -> Diagnostic {
        err.to_diagnostic()
    }
}

/// This crate's error types that have a diagnostic, to find one behind a
/// `dyn std::error::Error` with a [`smith_diag::Registry`].
pub const DIAGNOSABLE: &[smith_diag::Finder] = &[
    smith_diag::finder::<RpcError>,
    smith_diag::finder::<SetupError>,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{self, Incoming};
    use smith_diag::Value as Shown;

    fn shown(d: &Diagnostic) -> String {
        match d.value() {
            Some(Shown::Shown(v)) => v.clone(),
            other => panic!("no offending value in {d}: {other:?}"),
        }
    }

    fn rejected(record: &str) -> RpcError {
        match jsonrpc::parse(record.as_bytes()) {
            Err(r) => *r.error,
            Ok(m) => panic!("{record} parsed as {m:?}"),
        }
    }

    #[test]
    fn unknown_methods_name_the_method_and_its_surface() {
        let e = RpcError::method_not_found("session/explode", &["session/new"]);
        let d = e.to_diagnostic();
        assert!(d.is_complete(), "{d}");
        assert_eq!(d.code(), "rpc.method_not_found");
        assert_eq!(shown(&d), "session/explode");
        assert_eq!(
            d.surface(),
            Some(&Surface::rpc_field("session/explode", "method"))
        );
        let json = e.to_json();
        assert_eq!(json["code"], jsonrpc::METHOD_NOT_FOUND);
        assert_eq!(json["data"]["kind"], "method_not_found");
        assert_eq!(json["data"]["code"], "rpc.method_not_found");
        assert_eq!(json["data"]["value"], "session/explode");
        assert_eq!(json["data"]["severity"], "error");
        for part in ["what", "why", "next"] {
            assert!(json["data"][part].as_str().is_some_and(|s| !s.is_empty()));
        }
    }

    #[test]
    fn parse_errors_name_line_and_column() {
        let d = rejected("{\"jsonrpc\": ").to_diagnostic();
        assert!(d.is_complete(), "{d}");
        assert_eq!(d.code(), "rpc.parse_error");
        assert!(shown(&d).starts_with("line 1, column "), "{d}");
        assert_eq!(d.surface(), Some(&Surface::other("the JSON-RPC request")));
    }

    #[test]
    fn every_constructor_and_rejection_converts_with_all_parts() {
        let errors = [
            RpcError::invalid_params("session/open", "\"ref\" is missing", "\"ref\": NAME"),
            rejected("[1]"),
            rejected("{\"jsonrpc\": \"1.0\", \"method\": \"x\", \"id\": 1}"),
            rejected("{\"jsonrpc\": \"2.0\", \"method\": 7, \"id\": 1}"),
            rejected("{\"jsonrpc\": \"2.0\", \"id\": 1}"),
            *jsonrpc::too_long(99).error,
            RpcError::new(jsonrpc::BUSY, "busy", "w", "y", "n").with("id", 4),
        ];
        for e in errors {
            let d = e.to_diagnostic();
            assert!(d.is_complete(), "{d}");
            assert!(d.code().starts_with("rpc."), "{d}");
            assert!(d.surface().is_some(), "{d}");
        }
        let d = RpcError::invalid_params("session/open", "\"ref\" is missing", "x").to_diagnostic();
        assert_eq!(shown(&d), "session/open");
        let d = RpcError::new(jsonrpc::BUSY, "busy", "w", "y", "n")
            .with("method", "prompt")
            .with("id", 4)
            .to_diagnostic();
        assert_eq!(shown(&d), "prompt");
        let d = (*jsonrpc::too_long(99).error).to_diagnostic();
        assert_eq!((d.field(), shown(&d).as_str()), (Some("bytes"), "99"));
        assert!(matches!(
            jsonrpc::parse(b"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}"),
            Ok(Incoming::Notification { .. })
        ));
    }

    #[test]
    fn error_objects_never_carry_a_registered_secret() {
        smith_diag::secrets::register("sk-rpc-diag-secret-4242");
        let e = RpcError::new(
            jsonrpc::INVALID_PARAMS,
            "invalid_params",
            "key sk-rpc-diag-secret-4242 is wrong",
            "y",
            "n",
        )
        .with("tool", "sk-rpc-diag-secret-4242");
        let text = e.to_json().to_string();
        assert!(!text.contains("sk-rpc-diag-secret-4242"), "{text}");
        assert!(text.contains("[redacted]"));
    }

    #[test]
    fn setup_errors_convert() {
        let e = SetupError {
            message: "provider \"nope\" is not available; run with --provider mock".to_owned(),
        };
        let d = Diagnostic::from(&e);
        assert!(d.is_complete(), "{d}");
        assert_eq!(d.code(), "rpc.runtime-setup");
        assert_eq!(shown(&d), "\"nope\"");
        assert_eq!(d.next(), "run with --provider mock");
    }
}
