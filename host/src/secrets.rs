//! The secrets a runtime redacts: every credential smith can see, gathered
//! once per runtime start into a [`Registry`].
//!
//! [`registry`] registers, for every provider the built-in provider
//! plugins describe (not only the one chosen):
//!
//! - each API-key environment variable the provider declares
//!   (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`,
//!   `GOOGLE_API_KEY`), as the slot's handle (`anthropic.api_key`) with
//!   source `env:VAR`;
//! - each credential in the auth store (`auth.json` in the data
//!   directory), as `provider.slot` with source `auth:provider.slot`; an
//!   OAuth token's refresh token as `provider.slot.refresh`.
//!
//! smith's configuration holds no credentials today, so nothing is
//! registered from it. A value that cannot be registered (shorter than
//! [`smith_secrets::MIN_SECRET_LEN`] bytes, say) and an auth store that
//! cannot be read are reported to the log, never with the value, and the
//! runtime starts without them.
//!
//! The runtime gets the registry's [`Redactor`] (see
//! `smith_engine::agent::AgentConfig::redactor`), which replaces every
//! registered value with `{secret:NAME}` before anything is sent to the
//! provider, recorded in the session or shown.

use std::sync::Arc;

use smith_auth::{AuthStore, Credential};
use smith_diag::{Diagnostic, Severity};
use smith_secrets::{FingerprintKey, Redactor, Registry, Source};

/// Every credential smith can see, from the process environment `env` and
/// the auth store in `data_dir` (when given), registered under a fresh
/// per-process fingerprint key. Problems come back as warnings; the values
/// that could be registered are.
pub fn registry(
    env: &dyn Fn(&str) -> Option<String>,
    store: Option<&AuthStore>,
) -> (Registry, Vec<Diagnostic>) {
    let mut warnings = Vec::new();
    let key = FingerprintKey::random().unwrap_or_else(|e| {
        warnings.push(e.into_diagnostic().with_severity(Severity::Warning));
        // A key drawn from the process's own state: fingerprints stay
        // keyed, only less unpredictable. No fingerprint leaves the
        // process yet.
        FingerprintKey::from_bytes(fallback_key())
    });
    let mut registry = Registry::new(key);
    let mut store_warnings = Vec::new();
    let mut add = |name: &str, value: &str, source: Source| {
        let value = value.trim();
        if value.is_empty() {
            return;
        }
        if let Err(e) = registry.register(name, value, source) {
            warnings.push(e.into_diagnostic().with_severity(Severity::Warning));
        }
    };
    for slot in smith_provider_host::builtin_slots() {
        let handle = slot.handle();
        for var in &slot.env {
            if let Some(value) = env(var) {
                add(&handle, &value, Source::Env(var.clone()));
            }
        }
    }
    if let Some(store) = store {
        match store.list() {
            Ok(stored) => {
                for (provider, slot) in stored {
                    let handle = format!("{provider}.{slot}");
                    match store.get(&provider, &slot) {
                        Ok(Some(Credential::ApiKey(key))) => {
                            add(&handle, key.expose(), Source::AuthSlot(handle.clone()));
                        }
                        Ok(Some(Credential::OAuth(token))) => {
                            add(
                                &handle,
                                token.access.expose(),
                                Source::AuthSlot(handle.clone()),
                            );
                            if let Some(refresh) = &token.refresh {
                                add(
                                    &format!("{handle}.refresh"),
                                    refresh.expose(),
                                    Source::AuthSlot(handle.clone()),
                                );
                            }
                        }
                        Ok(None) => {}
                        Err(d) => store_warnings.push(d.with_severity(Severity::Warning)),
                    }
                }
            }
            Err(d) => store_warnings.push(d.with_severity(Severity::Warning)),
        }
    }
    warnings.extend(store_warnings);
    (registry, warnings)
}

/// The redactor for this process's credentials ([`registry`] over the
/// process environment and the auth store in the data directory); the
/// warnings go to the log.
pub fn process_redactor() -> Arc<Redactor> {
    let store = smith_config::Paths::from_process()
        .ok()
        .map(|paths| AuthStore::in_data_dir(&paths.data_dir));
    let (registry, warnings) = registry(&|name| std::env::var(name).ok(), store.as_ref());
    for warning in &warnings {
        smith_diag::log::report(warning);
    }
    registry.redactor()
}

fn fallback_key() -> [u8; 32] {
    use std::hash::{BuildHasher, Hasher};
    let mut key = [0u8; 32];
    for chunk in key.chunks_mut(8) {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        chunk.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAI: &str = "sk-proj-test-0123456789abcdef";
    const GOOGLE: &str = "AIzaSyTest0123456789abcdefghij";
    const STORED: &str = "sk-ant-stored-0123456789abcdef";
    const ACCESS: &str = "oauth-access-0123456789abcdef";
    const REFRESH: &str = "oauth-refresh-0123456789abcdef";

    #[test]
    fn every_provider_environment_variable_and_stored_credential_is_registered() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = AuthStore::in_data_dir(dir.path());
        store
            .set(
                "anthropic",
                "api_key",
                &Credential::ApiKey(smith_auth::Secret::new(STORED)),
            )
            .unwrap_or_else(|e| panic!("{e:?}"));
        store
            .set(
                "acme",
                "oauth",
                &Credential::OAuth(smith_auth::OAuthToken {
                    access: smith_auth::Secret::new(ACCESS),
                    refresh: Some(smith_auth::Secret::new(REFRESH)),
                    expires_at: None,
                }),
            )
            .unwrap_or_else(|e| panic!("{e:?}"));
        let env = |name: &str| match name {
            "OPENAI_API_KEY" => Some(format!("{OPENAI}\n")),
            "GOOGLE_API_KEY" => Some(GOOGLE.to_owned()),
            "ANTHROPIC_API_KEY" => Some("short".to_owned()),
            _ => None,
        };
        let (registry, warnings) = registry(&env, Some(&store));
        let names: Vec<String> = registry
            .registrations()
            .map(|r| format!("{} {}", r.name, r.source))
            .collect();
        assert_eq!(
            names,
            [
                "openai.api_key env:OPENAI_API_KEY",
                "google.api_key env:GOOGLE_API_KEY",
                "acme.oauth auth:acme.oauth",
                "acme.oauth.refresh auth:acme.oauth",
                "anthropic.api_key auth:anthropic.api_key",
            ]
        );
        // The 5-byte value was refused, and the warning does not show it.
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].code(), "secrets.too-short");
        let redactor = registry.redactor();
        let text = format!("{OPENAI} {GOOGLE} {STORED} {ACCESS} {REFRESH}");
        assert_eq!(
            redactor.redact_str(&text),
            "{secret:openai.api_key} {secret:google.api_key} {secret:anthropic.api_key} {secret:acme.oauth} {secret:acme.oauth.refresh}"
        );
    }
}
