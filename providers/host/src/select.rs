//! Which provider a run uses.
//!
//! In order, the first that applies wins:
//!
//! 1. an explicit choice (`--provider P`);
//! 2. the configured `provider` option (`SMITH_PROVIDER`, or `provider` in
//!    `config.kdl`), when a source other than its default sets it;
//! 3. the first of Anthropic, OpenAI and Google whose credential resolves
//!    (its environment variable, or smith's auth store);
//! 4. the OpenAI-compatible provider when `OPENAI_COMPATIBLE_BASE_URL` is
//!    set, else the first local server whose base URL variable is set
//!    (`OLLAMA_BASE_URL`, `LLAMA_CPP_BASE_URL`, `LMSTUDIO_BASE_URL`,
//!    `VLLM_BASE_URL`);
//! 5. the offline scripted provider (`mock`).

use smith_auth::Resolver;
use smith_diag::Diagnostic;

use crate::vendor::Vendor;

/// The provider chosen for a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// The offline scripted provider.
    Mock,
    /// A built-in live provider.
    Live(Vendor),
}

/// The provider to use and why, in words for a startup line.
/// `configured` is the `provider` option's value and the source that set
/// it (e.g. `env SMITH_PROVIDER`), when one did.
///
/// # Errors
///
/// When the explicit or configured name is no known provider.
pub fn select(
    explicit: Option<&str>,
    configured: Option<(&str, &str)>,
    env: &dyn Fn(&str) -> Option<String>,
    resolver: &Resolver,
) -> Result<(Selection, String), Diagnostic> {
    let named = |name: &str, surface: &str| -> Result<Selection, Diagnostic> {
        if name == "mock" {
            return Ok(Selection::Mock);
        }
        Vendor::from_id(name).map(Selection::Live).ok_or_else(|| {
            Diagnostic::error(
                "provider.unknown",
                format!("provider `{name}` given by {surface} is not known"),
                format!("the providers are mock, {}", Vendor::ids()),
                if surface.starts_with("--") {
                    format!("use one of them, e.g. {surface} anthropic, or {surface} mock for the offline demo")
                } else {
                    format!("set it to one of them in {surface}, e.g. anthropic, or mock for the offline demo")
                },
            )
            .with_value(name)
        })
    };
    if let Some(name) = explicit {
        return Ok((
            named(name, "--provider")?,
            "chosen with --provider".to_owned(),
        ));
    }
    if let Some((name, source)) = configured.filter(|(v, _)| !v.is_empty()) {
        return Ok((named(name, source)?, format!("chosen by {source}")));
    }
    for vendor in [Vendor::Anthropic, Vendor::OpenAi, Vendor::Google] {
        let Some((provider, slot)) = vendor.credential_slot().and_then(|h| h.split_once('.'))
        else {
            continue;
        };
        if let Ok(resolved) = resolver.resolve(provider, slot) {
            return Ok((
                Selection::Live(vendor),
                format!("its credential was found in {}", resolved.origin),
            ));
        }
    }
    for vendor in std::iter::once(Vendor::OpenAiCompatible).chain(Vendor::LOCAL) {
        let var = vendor.base_url_env();
        if env(var).is_some_and(|v| !v.trim().is_empty()) {
            return Ok((Selection::Live(vendor), format!("{var} is set")));
        }
    }
    Ok((
        Selection::Mock,
        "no provider credential was found (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or `smith auth set`)".to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vendor::builtin_slots;
    use std::collections::BTreeMap;

    fn run(explicit: Option<&str>, vars: &[(&str, &str)]) -> Result<Selection, Diagnostic> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let for_resolver = map.clone();
        let resolver =
            Resolver::new(builtin_slots()).env(move |name| for_resolver.get(name).cloned());
        let configured = map
            .get("SMITH_PROVIDER")
            .map(|v| (v.as_str(), "env SMITH_PROVIDER"));
        select(
            explicit,
            configured,
            &|name| map.get(name).cloned(),
            &resolver,
        )
        .map(|(s, _)| s)
    }

    #[test]
    fn the_order_is_flag_env_credentials_compatible_mock() {
        let all = [
            ("SMITH_PROVIDER", "google"),
            ("ANTHROPIC_API_KEY", "k1"),
            ("OPENAI_API_KEY", "k2"),
            ("OPENAI_COMPATIBLE_BASE_URL", "http://x"),
        ];
        assert_eq!(run(Some("mock"), &all).unwrap(), Selection::Mock);
        assert_eq!(
            run(Some("openai"), &all).unwrap(),
            Selection::Live(Vendor::OpenAi)
        );
        assert_eq!(run(None, &all).unwrap(), Selection::Live(Vendor::Google));
        assert_eq!(
            run(None, &all[1..]).unwrap(),
            Selection::Live(Vendor::Anthropic)
        );
        assert_eq!(
            run(None, &all[2..]).unwrap(),
            Selection::Live(Vendor::OpenAi)
        );
        assert_eq!(
            run(None, &[("GOOGLE_API_KEY", "k")]).unwrap(),
            Selection::Live(Vendor::Google)
        );
        assert_eq!(
            run(None, &all[3..]).unwrap(),
            Selection::Live(Vendor::OpenAiCompatible)
        );
        assert_eq!(
            run(
                None,
                &[
                    ("VLLM_BASE_URL", "http://x"),
                    ("OLLAMA_BASE_URL", "http://y")
                ]
            )
            .unwrap(),
            Selection::Live(Vendor::Ollama)
        );
        assert_eq!(
            run(
                None,
                &[
                    ("LLAMA_CPP_BASE_URL", "http://x"),
                    ("OLLAMA_HOST", "gpu-box")
                ]
            )
            .unwrap(),
            Selection::Live(Vendor::LlamaCpp),
            "OLLAMA_HOST alone chooses nothing"
        );
        assert_eq!(
            run(None, &[("OLLAMA_HOST", "gpu-box")]).unwrap(),
            Selection::Mock
        );
        assert_eq!(run(None, &[]).unwrap(), Selection::Mock);
        // Empty values count as unset.
        assert_eq!(
            run(None, &[("ANTHROPIC_API_KEY", ""), ("SMITH_PROVIDER", "")]).unwrap(),
            Selection::Mock
        );
    }

    #[test]
    fn an_unknown_name_names_its_surface_and_the_choices() {
        let d = run(Some("antropic"), &[]).unwrap_err();
        assert!(d.what().contains("--provider"), "{}", d.what());
        assert!(
            d.why()
                .contains("anthropic, openai, google, openai-compatible")
        );
        let d = run(None, &[("SMITH_PROVIDER", "x")]).unwrap_err();
        assert!(d.what().contains("given by env SMITH_PROVIDER"));
        assert!(
            d.next()
                .contains("set it to one of them in env SMITH_PROVIDER, e.g. anthropic, or mock")
        );
        let d = run(Some("x"), &[]).unwrap_err();
        assert!(d.next().contains("--provider mock for the offline demo"));
    }
}
