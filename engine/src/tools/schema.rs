//! Argument validation against a tool's JSON Schema, before any effect.
//!
//! The validator understands the subset of JSON Schema that tool parameter
//! schemas use in practice: `type` (a name or a list of names), `properties`,
//! `required`, `additionalProperties: false`, `enum`, `minimum`, `maximum`,
//! `minLength`, `maxLength` and `items`. Keywords it does not know are
//! ignored, so a plugin's richer schema still validates the parts that
//! matter for safety. The first violation found is reported, naming the
//! field (as a path such as `edits[2].old_text`), the expected type or
//! constraint, and an excerpt of the value received.

use std::fmt;

use serde_json::Value;

/// The longest excerpt of a received value quoted in an error.
const EXCERPT_CHARS: usize = 80;

/// Arguments that do not match a tool's parameter schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    /// The tool whose schema was violated.
    pub tool: String,
    /// The offending field as a path (`offset`, `items[2].name`); empty for
    /// the arguments object itself.
    pub field: String,
    /// What the schema expects there (`an integer >= 1`, `a string`).
    pub expected: String,
    /// An excerpt of what was received (`"abc"`, `missing`, `null`).
    pub received: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = if self.field.is_empty() {
            "the arguments".to_owned()
        } else {
            format!("argument `{}`", self.field)
        };
        write!(
            f,
            "{} call rejected: {field} must be {}, but received {}",
            self.tool, self.expected, self.received
        )
    }
}

impl std::error::Error for ValidationError {}

/// Checks `args` against `schema`, reporting the first violation.
///
/// # Errors
///
/// A [`ValidationError`] naming the field, the expectation and the value.
pub fn validate(tool: &str, schema: &Value, args: &Value) -> Result<(), ValidationError> {
    let mut path = String::new();
    check(schema, args, &mut path).map_err(|(field, expected, received)| ValidationError {
        tool: tool.to_owned(),
        field,
        expected,
        received,
    })
}

type Violation = (String, String, String);

fn check(schema: &Value, value: &Value, path: &mut String) -> Result<(), Violation> {
    let Some(schema) = schema.as_object() else {
        // `true` / `{}` accept everything; `false` would reject, but tool
        // schemas never use it, so anything non-object is permissive.
        return Ok(());
    };
    if let Some(types) = schema.get("type") {
        let matches = match types {
            Value::String(t) => type_matches(t, value),
            Value::Array(list) => list
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_matches(t, value)),
            _ => true,
        };
        if !matches {
            return Err((path.clone(), expectation(schema), excerpt(value)));
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        let names: Vec<String> = allowed.iter().map(|v| v.to_string()).collect();
        return Err((
            path.clone(),
            format!("one of {}", names.join(", ")),
            excerpt(value),
        ));
    }
    match value {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                && x < min
            {
                return Err((path.clone(), expectation(schema), excerpt(value)));
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                && x > max
            {
                return Err((path.clone(), expectation(schema), excerpt(value)));
            }
        }
        Value::String(s) => {
            let chars = s.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && chars < min
            {
                return Err((path.clone(), expectation(schema), excerpt(value)));
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && chars > max
            {
                return Err((path.clone(), expectation(schema), excerpt(value)));
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    check(item_schema, item, path)?;
                    path.truncate(len);
                }
            }
        }
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            if let Some(Value::Array(required)) = schema.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !fields.contains_key(name) {
                        let expected = properties
                            .and_then(|p| p.get(name))
                            .and_then(Value::as_object)
                            .map_or_else(|| "present".to_owned(), expectation);
                        return Err((join(path, name), expected, "nothing (missing)".into()));
                    }
                }
            }
            let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
            for (name, field_value) in fields {
                match properties.and_then(|p| p.get(name)) {
                    Some(field_schema) => {
                        let len = path.len();
                        *path = join(path, name);
                        check(field_schema, field_value, path)?;
                        path.truncate(len);
                    }
                    None if closed => {
                        let known: Vec<&str> = properties
                            .map(|p| p.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        return Err((
                            join(path, name),
                            format!(
                                "absent (unknown field; the accepted fields are: {})",
                                known.join(", ")
                            ),
                            excerpt(field_value),
                        ));
                    }
                    None => {}
                }
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
    Ok(())
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn type_matches(t: &str, value: &Value) -> bool {
    match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        // JSON Schema counts 5.0 as an integer.
        "integer" => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
        }
        _ => true,
    }
}

/// A human phrase for what a schema accepts: `an integer >= 1`.
fn expectation(schema: &serde_json::Map<String, Value>) -> String {
    let mut out = match schema.get("type") {
        Some(Value::String(t)) => article(t),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(article)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "a value".to_owned(),
    };
    if let Some(min) = schema.get("minimum") {
        out.push_str(&format!(" >= {min}"));
    }
    if let Some(max) = schema.get("maximum") {
        out.push_str(&format!(" <= {max}"));
    }
    if let Some(min) = schema.get("minLength") {
        out.push_str(&format!(" of at least {min} characters"));
    }
    if let Some(max) = schema.get("maxLength") {
        out.push_str(&format!(" of at most {max} characters"));
    }
    out
}

fn article(t: &str) -> String {
    match t {
        "object" => "an object".into(),
        "array" => "an array".into(),
        "integer" => "an integer".into(),
        "null" => "null".into(),
        other => format!("a {other}"),
    }
}

/// `number 5`, `string "abc…"`, `null`, `an object`: the received value's
/// type and a bounded excerpt.
fn excerpt(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".into(),
        Value::Bool(b) => return format!("boolean {b}"),
        Value::Number(n) => return format!("number {n}"),
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let text = value.to_string();
    if text.chars().count() > EXCERPT_CHARS {
        let cut: String = text.chars().take(EXCERPT_CHARS).collect();
        format!("{kind} {cut}… ({} characters)", text.chars().count())
    } else {
        format!("{kind} {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "offset": {"type": "integer", "minimum": 1},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "list": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn err(args: Value) -> ValidationError {
        match validate("read", &schema(), &args) {
            Err(e) => e,
            Ok(()) => panic!("expected a validation error for {args}"),
        }
    }

    #[test]
    fn accepts_valid_arguments() {
        assert_eq!(
            validate("read", &schema(), &json!({"path": "a", "offset": 3.0})),
            Ok(())
        );
    }

    #[test]
    fn missing_field_is_named() {
        let e = err(json!({}));
        assert_eq!(e.field, "path");
        assert_eq!(e.expected, "a string of at least 1 characters");
        assert_eq!(e.received, "nothing (missing)");
    }

    #[test]
    fn wrong_type_names_field_type_and_value() {
        let e = err(json!({"path": "a", "offset": "ten"}));
        assert_eq!(
            e.to_string(),
            "read call rejected: argument `offset` must be an integer >= 1, but received string \"ten\""
        );
        let e = err(json!({"path": "a", "offset": 0}));
        assert_eq!(e.received, "number 0");
    }

    #[test]
    fn unknown_field_lists_accepted_fields() {
        let e = err(json!({"path": "a", "lines": 3}));
        assert_eq!(e.field, "lines");
        assert!(e.expected.contains("path, offset, mode, list"), "{e}");
    }

    #[test]
    fn nested_paths_and_enums() {
        let e = err(json!({"path": "a", "list": [{"n": 1}, {"n": "x"}]}));
        assert_eq!(e.field, "list[1].n");
        let e = err(json!({"path": "a", "mode": "c"}));
        assert_eq!(e.expected, "one of \"a\", \"b\"");
    }

    #[test]
    fn long_values_are_excerpted() {
        let long = "x".repeat(500);
        let e = err(json!({"path": 1, "mode": long}));
        assert_eq!(e.field, "path");
        let e = err(json!({"path": "a", "offset": [long]}));
        assert!(e.received.ends_with("(504 characters)"), "{}", e.received);
    }
}
