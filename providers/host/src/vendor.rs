//! The built-in providers: which built-in provider plugin encodes and
//! decodes for each provider id, its credential slot and where its
//! credential and base URL may come from.

use smith_auth::{CredentialKind, Slot};
use smith_providers::{anthropic, google, openai, openai_compatible};

/// A built-in provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Responses API.
    OpenAi,
    /// Google Gemini.
    Google,
    /// Any server speaking the Chat Completions dialect.
    OpenAiCompatible,
}

impl Vendor {
    /// Every built-in provider, in the order credentials are detected.
    pub const ALL: [Vendor; 4] = [
        Vendor::Anthropic,
        Vendor::OpenAi,
        Vendor::Google,
        Vendor::OpenAiCompatible,
    ];

    /// The provider id (`anthropic`, `openai`, `google`, `openai-compatible`).
    pub fn id(self) -> &'static str {
        match self {
            Vendor::Anthropic => anthropic::PROVIDER_ID,
            Vendor::OpenAi => openai::PROVIDER_ID,
            Vendor::Google => google::PROVIDER_ID,
            Vendor::OpenAiCompatible => openai_compatible::PROVIDER_ID,
        }
    }

    /// The provider with this id.
    pub fn from_id(id: &str) -> Option<Vendor> {
        Vendor::ALL.into_iter().find(|v| v.id() == id)
    }

    /// The provider ids, for diagnostics.
    pub fn ids() -> String {
        Vendor::ALL.map(Vendor::id).join(", ")
    }

    /// The default credential slot handle (`provider.slot`).
    pub fn credential_slot(self) -> &'static str {
        match self {
            Vendor::Anthropic => anthropic::CREDENTIAL_SLOT,
            Vendor::OpenAi => openai::CREDENTIAL_SLOT,
            Vendor::Google => google::CREDENTIAL_SLOT,
            Vendor::OpenAiCompatible => openai_compatible::CREDENTIAL_SLOT,
        }
    }

    /// Environment variables holding the API key, in order of preference.
    pub fn credential_env(self) -> &'static [&'static str] {
        match self {
            Vendor::Anthropic => &[anthropic::CREDENTIAL_ENV],
            Vendor::OpenAi => &[openai::CREDENTIAL_ENV],
            Vendor::Google => &[google::CREDENTIAL_ENV, "GOOGLE_API_KEY"],
            Vendor::OpenAiCompatible => &[],
        }
    }

    /// The environment variable that overrides the base URL, if any.
    pub fn base_url_env(self) -> &'static str {
        match self {
            Vendor::Anthropic => "ANTHROPIC_BASE_URL",
            Vendor::OpenAi => "OPENAI_BASE_URL",
            Vendor::Google => "GEMINI_BASE_URL",
            Vendor::OpenAiCompatible => "OPENAI_COMPATIBLE_BASE_URL",
        }
    }

    /// The base URL used when none is configured (`None`: one is required).
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Vendor::Anthropic => Some(anthropic::DEFAULT_BASE_URL),
            Vendor::OpenAi => Some(openai::DEFAULT_BASE_URL),
            Vendor::Google => Some(google::DEFAULT_BASE_URL),
            Vendor::OpenAiCompatible => None,
        }
    }

    /// The model used when none is given (`None`: one is required).
    pub fn default_model(self) -> Option<&'static str> {
        match self {
            Vendor::Anthropic => Some(anthropic::DEFAULT_MODEL),
            Vendor::OpenAi => Some(openai::DEFAULT_MODEL),
            Vendor::Google => Some(google::DEFAULT_MODEL),
            Vendor::OpenAiCompatible => None,
        }
    }

    /// Prompt-cache breakpoints the adapter places when caching is
    /// advertised.
    pub fn cache_breakpoints(self) -> u32 {
        match self {
            Vendor::Anthropic => 4,
            _ => 0,
        }
    }

    /// The built-in provider plugin that encodes and decodes for this
    /// provider (`smith/anthropic`, `smith/openai`, `smith/google`,
    /// `smith/openai-compatible`).
    pub fn plugin(self) -> &'static str {
        match self {
            Vendor::Anthropic => "smith/anthropic",
            Vendor::OpenAi => "smith/openai",
            Vendor::Google => "smith/google",
            Vendor::OpenAiCompatible => "smith/openai-compatible",
        }
    }
}

/// The credential slots the built-in providers describe.
pub fn builtin_slots() -> Vec<Slot> {
    Vendor::ALL
        .iter()
        .filter_map(|v| {
            let (provider, slot) = v.credential_slot().split_once('.')?;
            Some(Slot::new(
                provider,
                slot,
                v.credential_env(),
                CredentialKind::ApiKey,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_slots_belong_to_their_provider() {
        for v in Vendor::ALL {
            assert_eq!(Vendor::from_id(v.id()), Some(v));
            assert!(v.credential_slot().starts_with(&format!("{}.", v.id())));
        }
        assert_eq!(Vendor::from_id("mock"), None);
        let plugins: Vec<&str> = Vendor::ALL.iter().map(|v| v.plugin()).collect();
        assert_eq!(plugins, smith_plugins::builtin::VENDORS);
        let slots = builtin_slots();
        assert_eq!(slots.len(), 4);
        assert_eq!(slots[2].env, ["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
    }
}
