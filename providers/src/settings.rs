//! [`Config`] as provider plugin settings: the name and value pairs the
//! host passes to a vendor plugin's `configure`, and back.
//!
//! The host turns each prepared target's configuration into settings with
//! [`Config::settings`]; the plugin rebuilds the same configuration with
//! [`Config::apply_setting`]. Both sides use this one module, so the names
//! and value syntax cannot drift apart:
//!
//! | name | value | `Config` field |
//! |---|---|---|
//! | `base-url` | an `http://` or `https://` URL | `base_url` |
//! | `credential` | a credential handle `provider.slot` (never a secret) | `credential` |
//! | `tool-use` | `true` or `false` | `capabilities.tool_use` |
//! | `thinking` | `true` or `false` | `capabilities.thinking` |
//! | `prompt-cache` | `true` or `false` | `capabilities.prompt_cache` |
//! | `max-output-tokens` | a positive integer | `capabilities.max_output_tokens` |
//! | `thinking-level` | `minimal`, `low`, `medium`, `high` or `max` | `thinking` |
//!
//! A setting left out keeps the default (no base URL override, the
//! vendor's default credential slot, nothing advertised, no thinking).

use crate::common::{Config, ThinkingLevel};

/// The setting names [`Config::apply_setting`] accepts, in table order.
pub const SETTINGS: [&str; 7] = [
    "base-url",
    "credential",
    "tool-use",
    "thinking",
    "prompt-cache",
    "max-output-tokens",
    "thinking-level",
];

impl ThinkingLevel {
    /// The level's setting value (`minimal`, `low`, `medium`, `high`,
    /// `max`).
    pub fn name(self) -> &'static str {
        match self {
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Max => "max",
        }
    }

    /// The level named `name` (`minimal`, `low`, `medium`, `high`, `max`).
    pub fn from_name(name: &str) -> Option<ThinkingLevel> {
        match name {
            "minimal" => Some(ThinkingLevel::Minimal),
            "low" => Some(ThinkingLevel::Low),
            "medium" => Some(ThinkingLevel::Medium),
            "high" => Some(ThinkingLevel::High),
            "max" => Some(ThinkingLevel::Max),
            _ => None,
        }
    }
}

impl Config {
    /// This configuration as plugin settings: every field that differs
    /// from the default, in [`SETTINGS`] order. The credential travels as
    /// its handle; no secret is ever part of a `Config`.
    pub fn settings(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut put = |name: &str, value: String| out.push((name.to_owned(), value));
        if let Some(url) = &self.base_url {
            put("base-url", url.clone());
        }
        if let Some(handle) = &self.credential {
            put("credential", handle.clone());
        }
        let caps = &self.capabilities;
        if caps.tool_use {
            put("tool-use", "true".to_owned());
        }
        if caps.thinking {
            put("thinking", "true".to_owned());
        }
        if caps.prompt_cache {
            put("prompt-cache", "true".to_owned());
        }
        if let Some(limit) = caps.max_output_tokens {
            put("max-output-tokens", limit.to_string());
        }
        if let Some(level) = self.thinking {
            put("thinking-level", level.name().to_owned());
        }
        out
    }

    /// Applies one setting. Returns `Ok(false)` when `name` is not one of
    /// [`SETTINGS`] (the caller may know it, or reports it).
    ///
    /// # Errors
    ///
    /// A message naming the setting, the offending value and the values it
    /// takes.
    pub fn apply_setting(&mut self, name: &str, value: &str) -> Result<bool, String> {
        let flag = || match value {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!(
                "setting {name:?} is {value:?}, which is not a boolean; give \"true\" or \"false\""
            )),
        };
        match name {
            "base-url" => {
                let url = value.trim();
                let rest = url
                    .strip_prefix("http://")
                    .or_else(|| url.strip_prefix("https://"));
                if rest.is_none_or(str::is_empty) {
                    return Err(format!(
                        "setting \"base-url\" is {value:?}, which is not an http:// or https:// URL; give the API's base URL, for example http://localhost:11434/v1"
                    ));
                }
                self.base_url = Some(url.to_owned());
            }
            "credential" => {
                if !is_handle(value) {
                    return Err(format!(
                        "setting \"credential\" is not a credential handle of the form provider.slot (it has {} characters; the value is not shown in case it is a secret); give the handle, for example openai.api_key — the host substitutes the secret when it sends the request",
                        value.chars().count()
                    ));
                }
                self.credential = Some(value.to_owned());
            }
            "tool-use" => self.capabilities.tool_use = flag()?,
            "thinking" => self.capabilities.thinking = flag()?,
            "prompt-cache" => self.capabilities.prompt_cache = flag()?,
            "max-output-tokens" => {
                let limit = value.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!(
                        "setting \"max-output-tokens\" is {value:?}, which is not a positive integer below 2^32; give the model's output limit in tokens"
                    )
                })?;
                self.capabilities.max_output_tokens = Some(limit);
            }
            "thinking-level" => {
                self.thinking = Some(ThinkingLevel::from_name(value).ok_or_else(|| {
                    format!(
                        "setting \"thinking-level\" is {value:?}; give \"minimal\", \"low\", \"medium\", \"high\" or \"max\""
                    )
                })?);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Whether `value` is a credential handle `provider.slot`: two non-empty
/// parts of ASCII letters, digits, `-` and `_`, joined by one dot.
fn is_handle(value: &str) -> bool {
    let part = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    value
        .split_once('.')
        .is_some_and(|(provider, slot)| part(provider) && part(slot))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::Capabilities;

    fn apply(settings: &[(String, String)]) -> Result<Config, String> {
        let mut config = Config::default();
        for (name, value) in settings {
            assert!(config.apply_setting(name, value)?, "{name} is a setting");
        }
        Ok(config)
    }

    #[test]
    fn every_field_round_trips_through_settings() {
        let full = Config {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            credential: Some("openai-compatible.api_key".into()),
            capabilities: Capabilities {
                tool_use: true,
                thinking: true,
                prompt_cache: true,
                max_output_tokens: Some(32_000),
            },
            thinking: Some(ThinkingLevel::High),
        };
        let settings = full.settings();
        let names: Vec<&str> = settings.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, SETTINGS);
        assert_eq!(apply(&settings).unwrap(), full);
        assert!(Config::default().settings().is_empty());
        assert_eq!(apply(&[]).unwrap(), Config::default());
        for level in [
            ThinkingLevel::Minimal,
            ThinkingLevel::Low,
            ThinkingLevel::Medium,
            ThinkingLevel::High,
            ThinkingLevel::Max,
        ] {
            assert_eq!(ThinkingLevel::from_name(level.name()), Some(level));
        }
    }

    #[test]
    fn bad_values_are_refused_naming_the_setting() {
        let mut config = Config::default();
        let refused = |config: &mut Config, name: &str, value: &str| {
            config.apply_setting(name, value).unwrap_err()
        };
        assert!(refused(&mut config, "tool-use", "yes").contains("\"tool-use\" is \"yes\""));
        assert!(refused(&mut config, "max-output-tokens", "0").contains("positive integer"));
        assert!(
            refused(&mut config, "thinking-level", "extreme")
                .contains("\"minimal\", \"low\", \"medium\", \"high\" or \"max\"")
        );
        assert!(refused(&mut config, "base-url", "localhost:11434").contains("http://"));
        // A secret passed where the handle belongs is refused without
        // being repeated.
        let secret = "sk-proj-0123456789abcdef";
        let message = refused(&mut config, "credential", secret);
        assert!(!message.contains(secret), "{message}");
        assert!(message.contains("provider.slot"), "{message}");
        assert_eq!(config, Config::default(), "nothing was applied");
        assert_eq!(config.apply_setting("script", "x"), Ok(false));
    }
}
