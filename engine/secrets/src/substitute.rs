//! Substitution at the effect boundary: placeholders in an effect's input
//! become values, only where the policy authorizes it.

use std::borrow::Cow;
use std::fmt;

use zeroize::Zeroize;

use crate::placeholder::references;
use crate::registry::{Registration, Registry};

/// One question to the policy: may `tool` receive the value of `secret`?
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The tool (or effect) whose input holds the placeholder.
    pub tool: &'a str,
    /// The secret the placeholder names (its name, source, fingerprint).
    pub secret: &'a Registration,
}

/// The policy's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Put the value in.
    Allow,
    /// Leave the placeholder; the reason is reported.
    Deny(String),
}

/// Who may receive which secret. Routing and authorization are decided
/// by plugins; the core only asks. Called once per distinct secret per
/// substitution.
pub trait Policy: Send + Sync + 'static {
    /// Whether `request.tool` may receive `request.secret`'s value.
    fn authorize(&self, request: &Request<'_>) -> Decision;
}

/// The default policy: nothing is authorized.
#[derive(Debug, Clone, Copy, Default)]
pub struct NeverAuthorize;

impl Policy for NeverAuthorize {
    fn authorize(&self, request: &Request<'_>) -> Decision {
        Decision::Deny(format!(
            "no policy authorizes secrets for local effects, so {} keeps the placeholder",
            request.tool
        ))
    }
}

/// A fixed list of (tool, secret name) pairs that are authorized.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    pairs: Vec<(String, String)>,
}

impl AllowList {
    /// An empty list (authorizes nothing).
    pub fn new() -> AllowList {
        AllowList::default()
    }

    /// Authorizes `tool` to receive the secret `name`.
    pub fn allow(mut self, tool: &str, name: &str) -> AllowList {
        self.pairs.push((tool.to_owned(), name.to_owned()));
        self
    }
}

impl Policy for AllowList {
    fn authorize(&self, request: &Request<'_>) -> Decision {
        if self
            .pairs
            .iter()
            .any(|(t, n)| t == request.tool && *n == request.secret.name)
        {
            Decision::Allow
        } else {
            Decision::Deny(format!(
                "{} is not authorized to receive the secret {}",
                request.tool, request.secret.name
            ))
        }
    }
}

/// Why a placeholder stayed in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// No secret of that name is registered.
    Unknown,
    /// The policy denied it, for this reason.
    Denied(String),
}

/// A placeholder that stayed as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The secret name the placeholder referenced.
    pub name: String,
    /// Why it was not substituted.
    pub reason: Refused,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            Refused::Unknown => write!(
                f,
                "{{secret:{}}} stayed as text: no secret of that name is registered",
                self.name
            ),
            Refused::Denied(reason) => {
                write!(f, "{{secret:{}}} stayed as text: {reason}", self.name)
            }
        }
    }
}

/// Something that can hold plaintext and be wiped.
pub trait Wipe {
    /// Overwrites every string it owns with zeros.
    fn wipe(&mut self);
}

impl Wipe for Cow<'_, str> {
    fn wipe(&mut self) {
        if let Cow::Owned(s) = self {
            s.zeroize();
        }
    }
}

impl Wipe for serde_json::Value {
    fn wipe(&mut self) {
        match self {
            serde_json::Value::String(s) => s.zeroize(),
            serde_json::Value::Array(items) => items.iter_mut().for_each(Wipe::wipe),
            serde_json::Value::Object(map) => map.values_mut().for_each(Wipe::wipe),
            _ => {}
        }
    }
}

/// An effect input with authorized placeholders replaced by values: hand
/// [`Substitution::input`] to the effect, record the original. The input
/// is wiped when this drops; `Debug` shows only what was substituted and
/// refused.
pub struct Substitution<T: Wipe> {
    input: T,
    used: Vec<String>,
    refused: Vec<Refusal>,
}

impl<T: Wipe> Substitution<T> {
    /// The input for execution (with values where authorized).
    pub fn input(&self) -> &T {
        &self.input
    }

    /// The secret names whose values were put in, in order of first use.
    pub fn used(&self) -> &[String] {
        &self.used
    }

    /// The placeholders left as text, and why (each name once).
    pub fn refused(&self) -> &[Refusal] {
        &self.refused
    }
}

impl<T: Wipe> Drop for Substitution<T> {
    fn drop(&mut self) {
        self.input.wipe();
    }
}

impl<T: Wipe> fmt::Debug for Substitution<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Substitution")
            .field("used", &self.used)
            .field("refused", &self.refused)
            .finish_non_exhaustive()
    }
}

/// Where substitution finds a name's current value: the registry, or a
/// live redactor's snapshot of it.
pub(crate) trait Lookup {
    /// The registration and current value of `name`.
    fn value(&self, name: &str) -> Option<(&Registration, &str)>;
}

impl Lookup for Registry {
    fn value(&self, name: &str) -> Option<(&Registration, &str)> {
        Registry::value(self, name)
    }
}

/// [`Registry::substitute_json`] over any [`Lookup`].
pub(crate) fn substitute_json_with(
    values: &dyn Lookup,
    input: &serde_json::Value,
    tool: &str,
    policy: &dyn Policy,
) -> Substitution<serde_json::Value> {
    let mut decisions = Decisions {
        registry: values,
        tool,
        policy,
        allowed: Vec::new(),
        used: Vec::new(),
        refused: Vec::new(),
    };
    let input = decisions.json(input);
    Substitution {
        input,
        used: decisions.used,
        refused: decisions.refused,
    }
}

/// The decisions of one substitution, one per distinct name.
struct Decisions<'r> {
    registry: &'r dyn Lookup,
    tool: &'r str,
    policy: &'r dyn Policy,
    allowed: Vec<(String, &'r str)>,
    used: Vec<String>,
    refused: Vec<Refusal>,
}

impl<'r> Decisions<'r> {
    /// The value to put in for `name`, or `None` to keep the placeholder.
    fn value(&mut self, name: &str) -> Option<&'r str> {
        if let Some((_, v)) = self.allowed.iter().find(|(n, _)| n == name) {
            let v: &'r str = v;
            if !self.used.iter().any(|u| u == name) {
                self.used.push(name.to_owned());
            }
            return Some(v);
        }
        if self.refused.iter().any(|r| r.name == name) {
            return None;
        }
        let Some((registration, value)) = self.registry.value(name) else {
            self.refused.push(Refusal {
                name: name.to_owned(),
                reason: Refused::Unknown,
            });
            return None;
        };
        let request = Request {
            tool: self.tool,
            secret: registration,
        };
        match self.policy.authorize(&request) {
            Decision::Allow => {
                self.allowed.push((name.to_owned(), value));
                self.used.push(name.to_owned());
                Some(value)
            }
            Decision::Deny(reason) => {
                self.refused.push(Refusal {
                    name: name.to_owned(),
                    reason: Refused::Denied(reason),
                });
                None
            }
        }
    }

    fn text<'t>(&mut self, text: &'t str) -> Cow<'t, str> {
        let mut out: Option<String> = None;
        let mut last = 0;
        for reference in references(text) {
            if let Some(value) = self.value(reference.name) {
                let buf = out.get_or_insert_with(|| String::with_capacity(text.len() + 64));
                buf.push_str(&text[last..reference.span.start]);
                buf.push_str(value);
                last = reference.span.end;
            }
        }
        match out {
            None => Cow::Borrowed(text),
            Some(mut buf) => {
                buf.push_str(&text[last..]);
                Cow::Owned(buf)
            }
        }
    }

    fn json(&mut self, value: &serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::String(s) => serde_json::Value::String(self.text(s).into_owned()),
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(|v| self.json(v)).collect())
            }
            serde_json::Value::Object(map) => serde_json::Value::Object(
                map.iter().map(|(k, v)| (k.clone(), self.json(v))).collect(),
            ),
            other => other.clone(),
        }
    }
}

impl Registry {
    fn decisions<'r>(&'r self, tool: &'r str, policy: &'r dyn Policy) -> Decisions<'r> {
        Decisions {
            registry: self,
            tool,
            policy,
            allowed: Vec::new(),
            used: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// `text` with each `{secret:NAME}` that `policy` authorizes for
    /// `tool` replaced by the value; every other placeholder stays as text
    /// and is reported. Borrowed when nothing was replaced.
    ///
    /// The text is taken as plain text: for JSON use
    /// [`Registry::substitute_json`], which puts values inside strings.
    pub fn substitute_str<'t>(
        &self,
        text: &'t str,
        tool: &str,
        policy: &dyn Policy,
    ) -> Substitution<Cow<'t, str>> {
        let mut decisions = self.decisions(tool, policy);
        let input = decisions.text(text);
        Substitution {
            input,
            used: decisions.used,
            refused: decisions.refused,
        }
    }

    /// [`Registry::substitute_str`] for every string of a JSON effect
    /// input (object keys are left as they are). `input` itself is not
    /// changed: it is what the journal records.
    pub fn substitute_json(
        &self,
        input: &serde_json::Value,
        tool: &str,
        policy: &dyn Policy,
    ) -> Substitution<serde_json::Value> {
        substitute_json_with(self, input, tool, policy)
    }
}
