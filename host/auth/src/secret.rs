//! Secret values and credentials that never print themselves.

use std::fmt;

use smith_diag::secrets;

/// A credential value. Creating one registers it with
/// [`smith_diag::secrets`], so every diagnostic rendering redacts it;
/// `Debug` and `Display` print `[redacted]`. Only [`Secret::expose`] reveals
/// the value, for the request header that needs it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps and registers `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        let value = value.into();
        secrets::register(&value);
        Secret(value)
    }

    /// The value itself. Call only where it is sent to the provider.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(secrets::REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(secrets::REDACTED)
    }
}

/// The kind of credential a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CredentialKind {
    /// A static API key.
    ApiKey,
    /// An OAuth access token, possibly renewable.
    OAuth,
}

impl CredentialKind {
    /// `api-key` or `oauth`.
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialKind::ApiKey => "api-key",
            CredentialKind::OAuth => "oauth",
        }
    }
}

/// An OAuth token set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthToken {
    /// The access token sent with requests.
    pub access: Secret,
    /// The refresh token that renews it, if any.
    pub refresh: Option<Secret>,
    /// When the access token expires, in seconds since the Unix epoch.
    pub expires_at: Option<u64>,
}

/// A credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A static API key.
    ApiKey(Secret),
    /// An OAuth token set.
    OAuth(OAuthToken),
}

impl Credential {
    /// Its kind.
    pub fn kind(&self) -> CredentialKind {
        match self {
            Credential::ApiKey(_) => CredentialKind::ApiKey,
            Credential::OAuth(_) => CredentialKind::OAuth,
        }
    }

    /// The value sent with requests (the key, or the access token).
    pub fn secret(&self) -> &Secret {
        match self {
            Credential::ApiKey(s) => s,
            Credential::OAuth(t) => &t.access,
        }
    }

    /// When it expires, if it does.
    pub fn expires_at(&self) -> Option<u64> {
        match self {
            Credential::ApiKey(_) => None,
            Credential::OAuth(t) => t.expires_at,
        }
    }
}

/// One credential a provider needs, as its provider description states it.
/// The core knows no vendor: the environment variable names come from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The provider, e.g. `anthropic`.
    pub provider: String,
    /// The slot within the provider, e.g. `api_key`.
    pub slot: String,
    /// Environment variables that may hold it, in order of preference.
    pub env: Vec<String>,
    /// What it holds.
    pub kind: CredentialKind,
}

impl Slot {
    /// A slot description.
    pub fn new(
        provider: impl Into<String>,
        slot: impl Into<String>,
        env: &[&str],
        kind: CredentialKind,
    ) -> Slot {
        Slot {
            provider: provider.into(),
            slot: slot.into(),
            env: env.iter().map(|s| (*s).to_owned()).collect(),
            kind,
        }
    }

    /// `provider.slot`, the handle provider plugins use.
    pub fn handle(&self) -> String {
        format!("{}.{}", self.provider, self.slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_format_themselves() {
        let s = Secret::new("sk-unit-secret-123");
        assert_eq!(format!("{s}"), "[redacted]");
        assert_eq!(format!("{s:?}"), "[redacted]");
        let c = Credential::OAuth(OAuthToken {
            access: s.clone(),
            refresh: Some(Secret::new("rt-unit-secret-456")),
            expires_at: Some(5),
        });
        let debug = format!("{c:?}");
        assert!(!debug.contains("unit-secret"), "{debug}");
        assert_eq!(c.secret().expose(), "sk-unit-secret-123");
        assert!(smith_diag::secrets::contains_secret("x sk-unit-secret-123"));
    }
}
