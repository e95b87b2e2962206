//! Option values and their checking against an option's [`Kind`].

use std::fmt;

use kdl::KdlValue;

use crate::options::{Kind, Lit, OptionDecl};

/// A resolved option value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A boolean.
    Bool(bool),
    /// A whole number.
    Int(i64),
    /// Text: strings, enum words and paths.
    Str(String),
}

impl Value {
    /// The value a table default stands for.
    pub fn from_lit(lit: Lit) -> Value {
        match lit {
            Lit::Bool(b) => Value::Bool(b),
            Lit::Int(i) => Value::Int(i),
            Lit::Str(s) => Value::Str(s.to_owned()),
        }
    }

    /// The text, when this is a text value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The number, when this is a whole number.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The boolean, when this is a boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The JSON form: a JSON boolean, number or string.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Str(s) => serde_json::Value::String(s.clone()),
        }
    }

    /// The KDL form.
    pub fn to_kdl(&self) -> KdlValue {
        match self {
            Value::Bool(b) => KdlValue::Bool(*b),
            Value::Int(i) => KdlValue::Integer(i128::from(*i)),
            Value::Str(s) => KdlValue::String(s.clone()),
        }
    }
}

impl fmt::Display for Value {
    /// Plain text: `true`, `120`, `dark`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Str(s) => f.write_str(s),
        }
    }
}

/// What the option accepts, phrased to follow "takes" or "set it to".
pub(crate) fn expected(decl: &OptionDecl) -> String {
    match decl.kind {
        Kind::Bool => "a boolean (#true or #false in KDL; true or false elsewhere)".to_owned(),
        Kind::Int { min, max } => format!("a whole number from {min} to {max}"),
        Kind::Str => "a string".to_owned(),
        Kind::Enum(choices) => format!(
            "one of {}",
            choices
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Kind::Path => "an absolute path, or one starting with `~/`".to_owned(),
        Kind::PathList => "paths separated by `:`, each absolute or starting with `~/`".to_owned(),
    }
}

/// Checks `value` against the option's type and range. `Err` is the reason,
/// phrased to follow "because".
pub(crate) fn check(decl: &OptionDecl, value: Value) -> Result<Value, String> {
    match (decl.kind, &value) {
        (Kind::Bool, Value::Bool(_)) => Ok(value),
        (Kind::Int { min, max }, Value::Int(i)) => {
            if (min..=max).contains(i) {
                Ok(value)
            } else {
                Err(format!(
                    "`{}` takes a whole number from {min} to {max}",
                    decl.key
                ))
            }
        }
        (Kind::Str, Value::Str(_)) => Ok(value),
        (Kind::Enum(choices), Value::Str(s)) => {
            if choices.contains(&s.as_str()) {
                Ok(value)
            } else {
                Err(format!("`{}` takes {}", decl.key, expected(decl)))
            }
        }
        (Kind::Path, Value::Str(s)) => {
            if s.starts_with("~/") || std::path::Path::new(s).is_absolute() {
                Ok(value)
            } else {
                Err(format!(
                    "`{}` takes an absolute path or one starting with `~/`; a relative path would depend on the directory smith was started in",
                    decl.key
                ))
            }
        }
        (Kind::PathList, Value::Str(s)) => {
            match s
                .split(':')
                .filter(|p| !p.is_empty())
                .find(|p| !p.starts_with("~/") && !std::path::Path::new(p).is_absolute())
            {
                None => Ok(value),
                Some(relative) => Err(format!(
                    "`{}` takes paths separated by `:`, each absolute or starting with `~/`, and `{relative}` is neither; a relative path would depend on the directory smith was started in",
                    decl.key
                )),
            }
        }
        _ => Err(format!("`{}` takes {}", decl.key, expected(decl))),
    }
}

/// Parses text from an environment variable, a flag or `smith config set`.
pub(crate) fn parse_text(decl: &OptionDecl, text: &str) -> Result<Value, String> {
    let value = match decl.kind {
        Kind::Bool => match text.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Value::Bool(true),
            "false" | "0" | "no" | "off" => Value::Bool(false),
            _ => {
                return Err(format!(
                    "`{}` takes a boolean: true or false (also 1/0, yes/no, on/off)",
                    decl.key
                ));
            }
        },
        Kind::Int { min, max } => match text.trim().parse::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => {
                let _ = (min, max);
                return Err(format!("`{}` takes {}", decl.key, expected(decl)));
            }
        },
        Kind::Str | Kind::Enum(_) | Kind::Path | Kind::PathList => Value::Str(text.to_owned()),
    };
    check(decl, value)
}

/// Converts a KDL value from a configuration file.
pub(crate) fn from_kdl(decl: &OptionDecl, kdl: &KdlValue) -> Result<Value, String> {
    let value = match kdl {
        KdlValue::Bool(b) => Value::Bool(*b),
        KdlValue::Integer(i) => match i64::try_from(*i) {
            Ok(i) => Value::Int(i),
            Err(_) => return Err(format!("`{}` takes {}", decl.key, expected(decl))),
        },
        KdlValue::String(s) => Value::Str(s.clone()),
        KdlValue::Float(_) | KdlValue::Null => {
            return Err(format!("`{}` takes {}", decl.key, expected(decl)));
        }
    };
    if decl.kind != Kind::Bool && matches!(value, Value::Bool(_)) {
        return Err(format!("`{}` takes {}", decl.key, expected(decl)));
    }
    if decl.kind == Kind::Bool && matches!(value, Value::Str(_)) {
        return Err(format!(
            "`{}` takes a KDL boolean, written #true or #false",
            decl.key
        ));
    }
    check(decl, value)
}

/// A valid value as plain text, for environment and flag examples.
pub(crate) fn example_text(decl: &OptionDecl) -> String {
    match (decl.default, decl.kind) {
        (Some(lit), _) => Value::from_lit(lit).to_string(),
        (None, Kind::Path) => "~/smith/example".to_owned(),
        (None, Kind::PathList) => "~/smith/a:/srv/b".to_owned(),
        (None, Kind::Bool) => "true".to_owned(),
        (None, Kind::Int { min, .. }) => min.to_string(),
        (None, Kind::Enum(c)) => c.first().copied().unwrap_or("").to_owned(),
        (None, Kind::Str) => "name".to_owned(),
    }
}

/// A KDL line showing a valid setting, for "example:" in diagnostics.
pub(crate) fn example(decl: &OptionDecl) -> String {
    let value = match (decl.default, decl.kind) {
        (Some(lit), _) => Value::from_lit(lit),
        (None, Kind::Path) => Value::Str("~/smith/example".to_owned()),
        (None, Kind::PathList) => Value::Str("~/smith/a:/srv/b".to_owned()),
        (None, Kind::Bool) => Value::Bool(true),
        (None, Kind::Int { min, .. }) => Value::Int(min),
        (None, Kind::Enum(c)) => Value::Str(c.first().copied().unwrap_or("").to_owned()),
        (None, Kind::Str) => Value::Str("name".to_owned()),
    };
    let leaf = format!("{} {}", decl.leaf(), value.to_kdl());
    match decl.section() {
        "" => leaf,
        section => format!("{section} {{ {leaf}; }}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options;

    #[test]
    fn text_parsing_follows_the_kind() {
        assert_eq!(
            parse_text(&options::TUI_MOUSE, "no"),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            parse_text(&options::NET_HEAD_TIMEOUT_S, " 90 "),
            Ok(Value::Int(90))
        );
        assert!(parse_text(&options::NET_HEAD_TIMEOUT_S, "0").is_err());
        assert!(parse_text(&options::COLOR, "sometimes").is_err());
        assert!(parse_text(&options::SESSION_DIR, "rel/dir").is_err());
        assert!(parse_text(&options::SESSION_DIR, "~/s").is_ok());
    }

    #[test]
    fn kdl_values_must_have_the_right_type() {
        assert!(from_kdl(&options::TUI_MOUSE, &KdlValue::String("true".into())).is_err());
        assert_eq!(
            from_kdl(&options::TUI_MOUSE, &KdlValue::Bool(true)),
            Ok(Value::Bool(true))
        );
        assert!(from_kdl(&options::NET_HEAD_TIMEOUT_S, &KdlValue::Float(1.5)).is_err());
    }

    #[test]
    fn examples_are_valid_kdl_settings() {
        assert_eq!(
            example(&options::NET_HEAD_TIMEOUT_S),
            "net { head-timeout-s 120; }"
        );
        assert_eq!(example(&options::PROVIDER), "provider mock");
        assert_eq!(example(&options::TUI_MOUSE), "tui { mouse #true; }");
    }
}
