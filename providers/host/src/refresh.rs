//! Catalog refresh: asking each built-in provider which models it serves.
//!
//! The provider's vendor plugin builds each listing request
//! (`models-request`) with the credential as an opaque handle; the
//! [`NetTransport`] sends it through the HTTP engine, substituting the
//! credential resolved exactly as for model requests; the plugin decodes
//! the body (`decode-models`). Pages are followed up to [`MAX_PAGES`], the
//! cancellation token is checked before every page and while a body
//! arrives, and the result feeds [`Catalog::spawn_refresh`]: published
//! whole, or not at all.
//!
//! [`plan`] decides per provider whether it can be asked: the three API
//! vendors need a credential, the OpenAI-compatible provider a base URL
//! (its credential is optional). A provider that cannot be asked is
//! skipped with the reason, never an error.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use smith_auth::Resolver;
use smith_catalog::{CancelToken, Catalog, ModelInfo, RefreshHandle, ThinkingLevel};
use smith_diag::Diagnostic;
use smith_engine::provider::transport::BodyOutcome;
use smith_engine::provider::{Exchange, Transport};
use smith_plugins::{Limits, ListedModel};
use smith_providers::Config;

use crate::transport::NetTransport;
use crate::vendor::Vendor;

/// The most listing pages one refresh follows; a listing with more fails
/// (nothing is published) rather than publishing part of it.
pub const MAX_PAGES: usize = 20;

/// The most bytes one listing page may hold.
pub const MAX_PAGE_BYTES: usize = 16 << 20;

/// A provider that can be asked for its models.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefreshTarget {
    /// The provider.
    pub vendor: Vendor,
    /// The settings its vendor plugin is configured with (base URL and
    /// credential handle; never a secret).
    pub settings: Vec<(String, String)>,
}

impl RefreshTarget {
    /// `vendor` asked at `base_url` without a credential: a local server.
    pub fn at(vendor: Vendor, base_url: &str) -> RefreshTarget {
        RefreshTarget {
            vendor,
            settings: Config {
                base_url: Some(base_url.to_owned()),
                ..Config::default()
            }
            .settings(),
        }
    }
}

/// Whether each provider can be asked: a target, or why it is skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Ask it.
    Ask(RefreshTarget),
    /// Do not: the reason, in words for a report line.
    Skip(Vendor, String),
}

/// The plan for `vendors`: `base_urls` by provider id (explicit overrides,
/// then the base URL variables), credentials from `resolver`.
pub fn plan(
    vendors: &[Vendor],
    base_urls: &BTreeMap<String, String>,
    resolver: &Resolver,
) -> Vec<Plan> {
    vendors
        .iter()
        .map(|&vendor| {
            let base_url = base_urls.get(vendor.id()).cloned();
            if vendor.is_local() {
                // A local server is asked only when the user pointed at it:
                // most machines run none of them.
                return match base_url {
                    Some(url) => Plan::Ask(RefreshTarget::at(vendor, &url)),
                    None => Plan::Skip(
                        vendor,
                        format!(
                            "a local server, asked only when named (`smith models --refresh --provider {}`) or when {} is set",
                            vendor.id(),
                            vendor.base_url_env()
                        ),
                    ),
                };
            }
            let Some(handle) = vendor.credential_slot() else {
                return Plan::Skip(vendor, "it takes no credential and has no base URL".to_owned());
            };
            let (provider, slot) = handle.split_once('.').unwrap_or((handle, "api_key"));
            let resolved = resolver.resolve(provider, slot).is_ok();
            if vendor == Vendor::OpenAiCompatible {
                if base_url.is_none() {
                    return Plan::Skip(
                        vendor,
                        format!(
                            "no base URL (set {} or pass --base-url)",
                            vendor.base_url_env()
                        ),
                    );
                }
            } else if !resolved {
                let env = vendor.credential_env();
                return Plan::Skip(
                    vendor,
                    format!(
                        "no credentials (set {} or run `smith auth set {}`)",
                        env.join(" or "),
                        vendor.id()
                    ),
                );
            }
            let config = Config {
                base_url,
                credential: resolved.then(|| handle.to_owned()),
                ..Config::default()
            };
            Plan::Ask(RefreshTarget {
                vendor,
                settings: config.settings(),
            })
        })
        .collect()
}

/// Where the vendor plugins' compiled components are cached and the
/// limits their instances run under.
#[derive(Clone, Debug, Default)]
pub struct PluginSetup {
    /// The compiled-component cache directory, if any.
    pub cache_dir: Option<PathBuf>,
    /// Deadlines and memory cap.
    pub limits: Limits,
}

/// Starts refreshing `target` on its own thread (see
/// [`Catalog::spawn_refresh`]); returns at once.
pub fn spawn(
    catalog: &Catalog,
    target: RefreshTarget,
    transport: Arc<NetTransport>,
    plugins: PluginSetup,
) -> RefreshHandle {
    let provider = target.vendor.id();
    catalog.spawn_refresh(provider, move |cancel| {
        fetch(&target, &transport, &plugins, cancel)
    })
}

/// Asks `target` for its models, page by page: `Ok` with every model, or a
/// diagnostic saying why not (a provider without a listing is an error
/// here: nothing to publish).
///
/// # Errors
///
/// When the plugin cannot be loaded or fails, the provider has no listing,
/// an exchange fails, a body does not decode, the listing exceeds
/// [`MAX_PAGES`] pages or a page [`MAX_PAGE_BYTES`] bytes, or the token is
/// cancelled.
pub fn fetch(
    target: &RefreshTarget,
    transport: &NetTransport,
    plugins: &PluginSetup,
    cancel: &CancelToken,
) -> Result<Vec<ModelInfo>, Diagnostic> {
    let provider = target.vendor.id();
    let plugin = target.vendor.plugin();
    let fail = |why: String, next: &str| {
        Diagnostic::error(
            "catalog.refresh-failed",
            format!("could not refresh the model list of provider `{provider}`"),
            smith_diag::secrets::redact(&why).into_owned(),
            format!(
                "{next}; the bundled or cached catalog stays in use (run `smith models --refresh --provider {provider}` to try again)"
            ),
        )
        .with_value(provider)
    };
    let cancelled = || {
        Diagnostic::error(
            "catalog.refresh-cancelled",
            format!("the model list refresh of provider `{provider}` was cancelled"),
            "it was cancelled before it finished",
            "nothing was published; the bundled or cached catalog stays in use",
        )
    };
    let component = smith_plugins::builtin::vendor_component(
        plugin,
        plugins.cache_dir.as_deref(),
        plugins.limits,
    )
    .map_err(|e| {
        fail(
            e.to_string(),
            "check that the plugin is installed and enabled",
        )
    })?;
    let mut instance = component
        .instantiate(&target.settings)
        .map_err(|e| fail(e.to_string(), "check the provider's base URL"))?;
    let mut models = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..MAX_PAGES {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let request = instance
            .models_request(after.as_deref())
            .map_err(|e| fail(e.message, "check the provider's base URL"))?;
        let Some(request) = request else {
            return Err(fail(
                format!("plugin {plugin} has no model listing"),
                "the provider's models come from the bundled catalog and models.kdl only",
            ));
        };
        let url = request.url.clone();
        let body = fetch_page(transport, Exchange::Http(request), cancel).map_err(|e| match e {
            PageError::Cancelled => cancelled(),
            PageError::TooLarge => fail(
                format!("the listing page from {url} exceeds {MAX_PAGE_BYTES} bytes"),
                "check the base URL points at the provider's API",
            ),
            PageError::Failed(message) => fail(
                message,
                "check the credential (`smith auth check`) and the base URL",
            ),
        })?;
        let page = instance.decode_models(&body).map_err(|e| {
            fail(
                format!("{url}: {}", e.message),
                "check the credential (`smith auth check`) and the base URL",
            )
        })?;
        models.extend(page.models.into_iter().map(|m| catalog_model(provider, m)));
        match page.next {
            Some(next) => after = Some(next),
            None => {
                if cancel.is_cancelled() {
                    return Err(cancelled());
                }
                return Ok(models);
            }
        }
    }
    Err(fail(
        format!("the listing has more than {MAX_PAGES} pages"),
        "report the provider's listing size; nothing of it was published",
    ))
}

enum PageError {
    Cancelled,
    TooLarge,
    Failed(String),
}

/// One page's whole body. A non-2xx status with a JSON body arrives as a
/// body (the plugin turns the vendor's error object into its error).
fn fetch_page(
    transport: &NetTransport,
    exchange: Exchange,
    cancel: &CancelToken,
) -> Result<Vec<u8>, PageError> {
    let mut body = Vec::new();
    let mut too_large = false;
    let outcome = transport.perform(exchange, cancel, &mut |chunk| {
        if cancel.is_cancelled() {
            return false;
        }
        if body.len() + chunk.len() > MAX_PAGE_BYTES {
            too_large = true;
            return false;
        }
        body.extend_from_slice(chunk);
        true
    });
    if cancel.is_cancelled() {
        return Err(PageError::Cancelled);
    }
    match outcome {
        // A refusal's JSON body is the vendor's error object: the plugin's
        // listing decoder reports it in the vendor's words.
        BodyOutcome::Complete | BodyOutcome::Refused { .. } => Ok(body),
        BodyOutcome::Failed(e) => Err(PageError::Failed(e.message)),
        BodyOutcome::Cancelled => Err(PageError::Cancelled),
        BodyOutcome::Stopped if too_large => Err(PageError::TooLarge),
        BodyOutcome::Stopped => Err(PageError::Cancelled),
    }
}

/// A listed model in the catalog's vocabulary. A provider that says a model
/// thinks is taken to accept the levels smith's adapters send (low, medium,
/// high); one that says it does not, none. Unstated stays unknown.
pub fn catalog_model(provider: &str, listed: ListedModel) -> ModelInfo {
    let mut model = ModelInfo::new(provider, listed.id);
    model.name = listed.display_name;
    model.context = listed.context_window;
    model.max_output = listed.max_output_tokens.map(u64::from);
    model.text_input = listed.text_input;
    model.image_input = listed.image_input;
    model.tools = listed.tools;
    model.thinking = listed.thinking.map(|thinks| {
        if thinks {
            vec![
                ThinkingLevel::Low,
                ThinkingLevel::Medium,
                ThinkingLevel::High,
            ]
        } else {
            Vec::new()
        }
    });
    model.pricing = smith_catalog::Pricing {
        input: listed.pricing.input,
        output: listed.pricing.output,
        cache_read: listed.pricing.cache_read,
        cache_write: listed.pricing.cache_write,
    };
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_without_credentials_or_base_url_are_skipped_with_the_reason() {
        let resolver = Resolver::new(crate::builtin_slots())
            .env(|name| (name == "OPENAI_API_KEY").then(|| "sk-plan-unit".to_owned()));
        let mut urls = BTreeMap::new();
        let plans = plan(&Vendor::ALL, &urls, &resolver);
        assert!(
            matches!(&plans[0], Plan::Skip(Vendor::Anthropic, why) if why.contains("ANTHROPIC_API_KEY"))
        );
        let Plan::Ask(openai) = &plans[1] else {
            panic!("openai has a credential: {plans:?}");
        };
        assert_eq!(
            openai.settings,
            [("credential".to_owned(), "openai.api_key".to_owned())]
        );
        assert!(!format!("{plans:?}").contains("sk-plan-unit"));
        assert!(
            matches!(&plans[3], Plan::Skip(Vendor::OpenAiCompatible, why) if why.contains("OPENAI_COMPATIBLE_BASE_URL"))
        );
        urls.insert(
            "openai-compatible".to_owned(),
            "http://127.0.0.1:9/v1".to_owned(),
        );
        assert!(
            matches!(&plans[4], Plan::Skip(Vendor::Ollama, why) if why.contains("--provider ollama") && why.contains("OLLAMA_BASE_URL")),
            "a local server is not asked unless named: {plans:?}"
        );
        urls.insert("ollama".to_owned(), "http://127.0.0.1:11434/v1".to_owned());
        assert_eq!(
            plan(&[Vendor::Ollama], &urls, &resolver),
            [Plan::Ask(RefreshTarget {
                vendor: Vendor::Ollama,
                settings: vec![(
                    "base-url".to_owned(),
                    "http://127.0.0.1:11434/v1".to_owned()
                )],
            })]
        );
        let plans = plan(&[Vendor::OpenAiCompatible], &urls, &resolver);
        assert_eq!(
            plans,
            [Plan::Ask(RefreshTarget {
                vendor: Vendor::OpenAiCompatible,
                settings: vec![("base-url".to_owned(), "http://127.0.0.1:9/v1".to_owned())],
            })],
            "no credential is sent to a server that needs none"
        );
    }

    #[test]
    fn listed_thinking_maps_to_levels_and_unknown_stays_unknown() {
        let m = catalog_model(
            "google",
            ListedModel {
                id: "g".into(),
                thinking: Some(true),
                context_window: Some(10),
                ..ListedModel::default()
            },
        );
        assert_eq!(m.thinking.as_deref().map(<[_]>::len), Some(3));
        assert_eq!(m.context, Some(10));
        assert_eq!(m.max_output, None);
        assert_eq!(m.tools, None);
        let m = catalog_model(
            "p",
            ListedModel {
                id: "x".into(),
                thinking: Some(false),
                ..ListedModel::default()
            },
        );
        assert_eq!(m.thinking, Some(vec![]));
        assert_eq!(catalog_model("p", ListedModel::default()).thinking, None);
    }
}
