//! The `secrets` capability: resolving the secret handles a plugin is
//! granted (their values reach only the HTTP requests the host sends),
//! asking whether one is available, and registering a plugin's own secret
//! for redaction.

use std::sync::Arc;

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::{EffectError, Effects};

/// How the embedding resolves a secret handle (`provider.slot`, as
/// `smith auth status` lists them) to its value: `Ok(None)` when no source
/// holds it, `Err` with a reason when resolving failed. The value goes only
/// into the HTTP requests the host sends; it never reaches a plugin.
pub type SecretSource = Arc<dyn Fn(&str) -> Result<Option<String>, String> + Send + Sync>;

/// A value the plugin host hands to the embedding's secret registry, so
/// that the runtime redacts it from then on.
#[derive(Clone, Copy)]
pub enum SecretRegistration<'a> {
    /// A value the plugin `plugin` created and registered
    /// (`register-secret`): the one-time handoff.
    Created {
        /// The plugin's name.
        plugin: &'a str,
        /// The value.
        value: &'a str,
    },
    /// The value of a granted secret handle resolved for an
    /// `http-request` header (`{secret:HANDLE}`).
    Resolved {
        /// The handle, `provider.slot`.
        handle: &'a str,
        /// The value.
        value: &'a str,
    },
}

impl std::fmt::Debug for SecretRegistration<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretRegistration::Created { plugin, .. } => write!(f, "Created({plugin})"),
            SecretRegistration::Resolved { handle, .. } => write!(f, "Resolved({handle})"),
        }
    }
}

/// How the embedding registers a secret value with the running runtime's
/// registry (its redactor sees the value at once); `Err` with a reason
/// when the registry refuses it. The reason never shows the value.
pub type SecretSink = Arc<dyn Fn(SecretRegistration<'_>) -> Result<(), String> + Send + Sync>;

/// The shortest value `register-secret` accepts: a shorter one would redact
/// ordinary words from every line smith prints.
pub const MIN_REGISTERED_SECRET: usize = 8;

/// The longest value `register-secret` accepts.
pub const MAX_REGISTERED_SECRET: usize = 4096;

/// How a header value names a secret for the host to put in its place.
const SECRET_OPEN: &str = "{secret:";

impl Effects {
    /// The value of the granted secret `handle`, registered with
    /// smith-diag so that it is redacted wherever it would be printed.
    pub(super) fn resolve_secret(&self, handle: &str) -> Result<String, String> {
        let Some(source) = &self.secrets else {
            return Err(format!(
                "the secret {handle} cannot be resolved: this host offers plugins no secrets"
            ));
        };
        match source(handle) {
            Ok(Some(value)) => {
                smith_diag::secrets::register(&value);
                if let Some(sink) = &self.secret_sink {
                    // A value the registry refuses (too short) is still
                    // redacted in diagnostics; the request goes out.
                    let _ = sink(SecretRegistration::Resolved {
                        handle,
                        value: &value,
                    });
                }
                Ok(value)
            }
            Ok(None) => {
                let (provider, slot) = handle.split_once('.').unwrap_or((handle, ""));
                Err(format!(
                    "the secret {handle} is not set; store it with `smith auth set {provider} --slot {slot}`"
                ))
            }
            Err(reason) => Err(format!(
                "the secret {handle} could not be resolved: {reason}"
            )),
        }
    }

    /// `secret-available`: whether the granted secret `handle` resolves,
    /// without giving its value to anyone. Recorded as a read.
    ///
    /// # Errors
    ///
    /// Denied without `secrets "HANDLE"`; failed when resolving fails for
    /// a reason other than the secret being unset.
    pub fn secret_available(&self, handle: &str) -> Result<bool, EffectError> {
        if !self.grants.secrets.iter().any(|g| g == handle) {
            return Err(self.deny(
                "secrets",
                format!("secrets {handle:?}"),
                format!("secret-available {handle:?}"),
            ));
        }
        let effect_id = self.intent(
            "plugin.secret-available",
            &json!({"plugin": self.plugin, "handle": handle}),
        )?;
        let answer = match &self.secrets {
            None => Ok(false),
            Some(source) => source(handle).map(|v| v.is_some_and(|v| !v.is_empty())),
        };
        let result = match answer {
            Ok(available) => Ok((
                available,
                Mutation::NotApplied,
                json!({"available": available}),
            )),
            Err(reason) => Err((
                format!("secret-available: the secret {handle} could not be resolved: {reason}"),
                Mutation::NotApplied,
            )),
        };
        self.settle(effect_id, result)
    }

    /// `register-secret`: from now on smith redacts `value` (a credential
    /// the plugin obtained itself) wherever it would print it, and the
    /// running runtime's registry holds it (the one-time handoff: source
    /// `plugin:NAME`), so every text the runtime sends, records or shows
    /// after this carries its placeholder. Needs at least one `secrets`
    /// grant; recorded with the value's length only.
    ///
    /// # Errors
    ///
    /// Denied without any `secrets` grant; invalid when the value is
    /// shorter than [`MIN_REGISTERED_SECRET`] or longer than
    /// [`MAX_REGISTERED_SECRET`] bytes.
    pub fn register_secret(&self, value: &str) -> Result<(), EffectError> {
        if self.grants.secrets.is_empty() {
            return Err(self.deny(
                "secrets",
                "secrets \"PROVIDER.SLOT\"".to_owned(),
                format!("register-secret of a {}-byte value", value.len()),
            ));
        }
        if !(MIN_REGISTERED_SECRET..=MAX_REGISTERED_SECRET).contains(&value.len()) {
            return Err(EffectError::Invalid(format!(
                "register-secret: the value has {} bytes; a secret must have {MIN_REGISTERED_SECRET} to {MAX_REGISTERED_SECRET} (shorter values would redact ordinary text)",
                value.len()
            )));
        }
        let effect_id = self.intent(
            "plugin.register-secret",
            &json!({"plugin": self.plugin, "bytes": value.len()}),
        )?;
        smith_diag::secrets::register(value);
        if let Some(sink) = &self.secret_sink
            && let Err(reason) = sink(SecretRegistration::Created {
                plugin: &self.plugin,
                value,
            })
        {
            return self.settle::<()>(
                effect_id,
                Err((format!("register-secret: {reason}"), Mutation::NotApplied)),
            );
        }
        self.complete(
            effect_id,
            Outcome::Ok,
            Mutation::Applied,
            &json!({"registered": true}),
        )
    }
}

/// The secret handles a header value names as `{secret:HANDLE}`, in order;
/// an error for an opening without a closing brace or an empty handle.
pub(super) fn secret_references(value: &str) -> Result<Vec<&str>, String> {
    let mut found = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find(SECRET_OPEN) {
        let after = &rest[at + SECRET_OPEN.len()..];
        let Some(end) = after.find('}') else {
            return Err(format!(
                "`{SECRET_OPEN}` has no closing `}}`; write {{secret:PROVIDER.SLOT}}"
            ));
        };
        let handle = &after[..end];
        if handle.is_empty() {
            return Err("`{secret:}` names no secret; write {secret:PROVIDER.SLOT}".to_owned());
        }
        found.push(handle);
        rest = &after[end + 1..];
    }
    Ok(found)
}

/// `value` with every `{secret:HANDLE}` replaced by the handle's value.
pub(super) fn expand_secrets(value: &str, values: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find(SECRET_OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + SECRET_OPEN.len()..];
        // `secret_references` accepted this value, so the brace is there.
        let end = after.find('}').unwrap_or(after.len());
        let handle = &after[..end];
        if let Some((_, v)) = values.iter().find(|(h, _)| *h == handle) {
            out.push_str(v);
        }
        rest = after.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out
}
