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
    /// OpenAI: the Responses API, or Chat Completions (the `openai.api`
    /// option).
    OpenAi,
    /// Google Gemini.
    Google,
    /// Any server speaking the Chat Completions dialect.
    OpenAiCompatible,
    /// A local Ollama server (Chat Completions at `/v1`).
    Ollama,
    /// A local llama.cpp server (`llama-server`).
    LlamaCpp,
    /// A local LM Studio server.
    LmStudio,
    /// A local vLLM server (`vllm serve`).
    Vllm,
}

impl Vendor {
    /// Every built-in provider, in the order credentials are detected.
    pub const ALL: [Vendor; 8] = [
        Vendor::Anthropic,
        Vendor::OpenAi,
        Vendor::Google,
        Vendor::OpenAiCompatible,
        Vendor::Ollama,
        Vendor::LlamaCpp,
        Vendor::LmStudio,
        Vendor::Vllm,
    ];

    /// The local servers: presets of the OpenAI-compatible provider with a
    /// default base URL on this machine and no credential.
    pub const LOCAL: [Vendor; 4] = [
        Vendor::Ollama,
        Vendor::LlamaCpp,
        Vendor::LmStudio,
        Vendor::Vllm,
    ];

    /// The provider id (`anthropic`, `openai`, `google`, `openai-compatible`,
    /// `ollama`, `llama.cpp`, `lmstudio`, `vllm`).
    pub fn id(self) -> &'static str {
        match self {
            Vendor::Anthropic => anthropic::PROVIDER_ID,
            Vendor::OpenAi => openai::PROVIDER_ID,
            Vendor::Google => google::PROVIDER_ID,
            Vendor::OpenAiCompatible => openai_compatible::PROVIDER_ID,
            Vendor::Ollama => "ollama",
            Vendor::LlamaCpp => "llama.cpp",
            Vendor::LmStudio => "lmstudio",
            Vendor::Vllm => "vllm",
        }
    }

    /// The provider with this id. The local servers are also found by the
    /// other spellings people use for them (`llama-cpp`, `llamacpp`,
    /// `lm-studio`).
    pub fn from_id(id: &str) -> Option<Vendor> {
        match id {
            "llama-cpp" | "llamacpp" => Some(Vendor::LlamaCpp),
            "lm-studio" => Some(Vendor::LmStudio),
            _ => Vendor::ALL.into_iter().find(|v| v.id() == id),
        }
    }

    /// The provider ids, for diagnostics.
    pub fn ids() -> String {
        Vendor::ALL.map(Vendor::id).join(", ")
    }

    /// Whether this is a local server preset ([`Vendor::LOCAL`]).
    pub fn is_local(self) -> bool {
        Vendor::LOCAL.contains(&self)
    }

    /// Whether requests go out in the Chat Completions dialect of an
    /// OpenAI-compatible server (the OpenAI-compatible provider and the
    /// local servers): models no catalog describes are assumed to call
    /// tools.
    pub fn is_compatible(self) -> bool {
        self == Vendor::OpenAiCompatible || self.is_local()
    }

    /// The default credential slot handle (`provider.slot`); `None` for
    /// the local servers, which take no credential.
    pub fn credential_slot(self) -> Option<&'static str> {
        match self {
            Vendor::Anthropic => Some(anthropic::CREDENTIAL_SLOT),
            Vendor::OpenAi => Some(openai::CREDENTIAL_SLOT),
            Vendor::Google => Some(google::CREDENTIAL_SLOT),
            Vendor::OpenAiCompatible => Some(openai_compatible::CREDENTIAL_SLOT),
            Vendor::Ollama | Vendor::LlamaCpp | Vendor::LmStudio | Vendor::Vllm => None,
        }
    }

    /// Environment variables holding the API key, in order of preference.
    pub fn credential_env(self) -> &'static [&'static str] {
        match self {
            Vendor::Anthropic => &[anthropic::CREDENTIAL_ENV],
            Vendor::OpenAi => &[openai::CREDENTIAL_ENV],
            Vendor::Google => &[google::CREDENTIAL_ENV, "GOOGLE_API_KEY"],
            _ => &[],
        }
    }

    /// The environment variable that overrides the base URL.
    pub fn base_url_env(self) -> &'static str {
        match self {
            Vendor::Anthropic => "ANTHROPIC_BASE_URL",
            Vendor::OpenAi => "OPENAI_BASE_URL",
            Vendor::Google => "GEMINI_BASE_URL",
            Vendor::OpenAiCompatible => "OPENAI_COMPATIBLE_BASE_URL",
            Vendor::Ollama => "OLLAMA_BASE_URL",
            Vendor::LlamaCpp => "LLAMA_CPP_BASE_URL",
            Vendor::LmStudio => "LMSTUDIO_BASE_URL",
            Vendor::Vllm => "VLLM_BASE_URL",
        }
    }

    /// The base URL the environment gives: [`Vendor::base_url_env`] when
    /// set and not empty; for Ollama, else `OLLAMA_HOST` read as the
    /// `ollama` command reads it (`host`, `host:port` or a URL; without a
    /// scheme, `http` and port 11434 when left out; with one, the scheme's
    /// own port), with `/v1` appended.
    pub fn base_url_from_env(self, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        let set = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if let Some(url) = set(self.base_url_env()) {
            return Some(url);
        }
        if self != Vendor::Ollama {
            return None;
        }
        let host = set("OLLAMA_HOST")?;
        let (scheme, rest, default_port) = match host.split_once("://") {
            Some((scheme, rest)) => (scheme.to_owned(), rest.to_owned(), ""),
            None => ("http".to_owned(), host, ":11434"),
        };
        let rest = rest.trim_end_matches('/');
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let has_port = authority
            .rsplit_once(':')
            .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
            && !authority.ends_with(']');
        let port = if has_port { "" } else { default_port };
        let path = if path.is_empty() {
            String::new()
        } else {
            format!("/{path}")
        };
        Some(format!("{scheme}://{authority}{port}{path}/v1"))
    }

    /// The base URL used when none is configured (`None`: one is required).
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Vendor::Anthropic => Some(anthropic::DEFAULT_BASE_URL),
            Vendor::OpenAi => Some(openai::DEFAULT_BASE_URL),
            Vendor::Google => Some(google::DEFAULT_BASE_URL),
            Vendor::OpenAiCompatible => None,
            Vendor::Ollama => Some("http://127.0.0.1:11434/v1"),
            Vendor::LlamaCpp => Some("http://127.0.0.1:8080/v1"),
            Vendor::LmStudio => Some("http://127.0.0.1:1234/v1"),
            Vendor::Vllm => Some("http://127.0.0.1:8000/v1"),
        }
    }

    /// How to start the local server, for a diagnostic when it does not
    /// answer (`None` for the remote providers).
    pub fn start_hint(self) -> Option<&'static str> {
        match self {
            Vendor::Ollama => Some(
                "start it with `ollama serve` (and fetch a model with `ollama pull qwen2.5-coder`)",
            ),
            Vendor::LlamaCpp => Some(
                "start it with `llama-server -m MODEL.gguf --jinja` (`--jinja` lets the model call tools)",
            ),
            Vendor::LmStudio => {
                Some("start the server in LM Studio (Developer tab) or with `lms server start`")
            }
            Vendor::Vllm => Some(
                "start it with `vllm serve MODEL --enable-auto-tool-choice --tool-call-parser PARSER`",
            ),
            _ => None,
        }
    }

    /// The model used when none is given (`None`: one is required, or for
    /// a local server, asked of the server).
    pub fn default_model(self) -> Option<&'static str> {
        match self {
            Vendor::Anthropic => Some(anthropic::DEFAULT_MODEL),
            Vendor::OpenAi => Some(openai::DEFAULT_MODEL),
            Vendor::Google => Some(google::DEFAULT_MODEL),
            _ => None,
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
    /// `smith/openai-compatible`; the local servers speak through
    /// `smith/openai-compatible`).
    pub fn plugin(self) -> &'static str {
        match self {
            Vendor::Anthropic => "smith/anthropic",
            Vendor::OpenAi => "smith/openai",
            Vendor::Google => "smith/google",
            _ => "smith/openai-compatible",
        }
    }
}

/// The credential slots the built-in providers describe.
pub fn builtin_slots() -> Vec<Slot> {
    Vendor::ALL
        .iter()
        .filter_map(|v| {
            let (provider, slot) = v.credential_slot()?.split_once('.')?;
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
            match v.credential_slot() {
                Some(slot) => assert!(slot.starts_with(&format!("{}.", v.id()))),
                None => assert!(v.is_local(), "{v:?}"),
            }
            assert!(smith_plugins::builtin::VENDORS.contains(&v.plugin()));
            // Every local server has a default address and a way to start it.
            assert_eq!(v.is_local(), v.start_hint().is_some(), "{v:?}");
            if v.is_local() {
                assert!(v.is_compatible() && v.default_model().is_none());
                assert!(
                    v.default_base_url()
                        .unwrap()
                        .starts_with("http://127.0.0.1:")
                );
            }
        }
        assert_eq!(Vendor::from_id("mock"), None);
        assert_eq!(Vendor::from_id("llama-cpp"), Some(Vendor::LlamaCpp));
        assert_eq!(Vendor::from_id("lm-studio"), Some(Vendor::LmStudio));
        let plugins: Vec<&str> = Vendor::ALL[..4].iter().map(|v| v.plugin()).collect();
        assert_eq!(plugins, smith_plugins::builtin::VENDORS);
        let slots = builtin_slots();
        assert_eq!(slots.len(), 4);
        assert_eq!(slots[2].env, ["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
    }

    #[test]
    fn ollama_host_gives_ollama_its_address_when_no_base_url_is_set() {
        let with = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let ollama = |vars: &'static [(&'static str, &'static str)]| {
            Vendor::Ollama.base_url_from_env(&with(vars))
        };
        assert_eq!(ollama(&[]), None);
        assert_eq!(
            ollama(&[("OLLAMA_HOST", "gpu-box")]).as_deref(),
            Some("http://gpu-box:11434/v1")
        );
        assert_eq!(
            ollama(&[("OLLAMA_HOST", "0.0.0.0:11500")]).as_deref(),
            Some("http://0.0.0.0:11500/v1")
        );
        assert_eq!(
            ollama(&[("OLLAMA_HOST", "https://ollama.example.com/")]).as_deref(),
            Some("https://ollama.example.com/v1")
        );
        assert_eq!(
            ollama(&[("OLLAMA_HOST", "http://[::1]:8081")]).as_deref(),
            Some("http://[::1]:8081/v1")
        );
        // OLLAMA_BASE_URL wins, and is taken as it is.
        assert_eq!(
            ollama(&[
                ("OLLAMA_HOST", "gpu-box"),
                ("OLLAMA_BASE_URL", "http://10.0.0.2:9000/v1")
            ])
            .as_deref(),
            Some("http://10.0.0.2:9000/v1")
        );
        // Only Ollama reads OLLAMA_HOST; an empty variable counts as unset.
        let vars: &'static [(&'static str, &'static str)] =
            &[("OLLAMA_HOST", "gpu-box"), ("VLLM_BASE_URL", " ")];
        assert_eq!(Vendor::Vllm.base_url_from_env(&with(vars)), None);
        assert_eq!(Vendor::LlamaCpp.base_url_from_env(&with(vars)), None);
    }
}
