//! Model listings: asking a vendor which models it serves.
//!
//! Each vendor's listing endpoint is turned into an [`HttpExchange`] (a
//! `GET` with the credential as an opaque handle, like every request) by
//! [`request`], and each response body into a [`ModelPage`] by [`decode`].
//! The host sends the exchanges through its HTTP engine, follows
//! [`ModelPage::next`] page by page up to its own bound, and merges the
//! result into the catalog.
//!
//! | vendor | endpoint | what it states |
//! |---|---|---|
//! | Anthropic | `GET /v1/models?limit=1000` (paged: `has_more`, `last_id` → `after_id`) | id, display name; `max_input_tokens` and `max_tokens` when present |
//! | OpenAI | `GET {base}/models` | ids only |
//! | Google | `GET /v1beta/models?pageSize=1000` (paged: `nextPageToken` → `pageToken`) | id, display name, `inputTokenLimit`, `outputTokenLimit`, `thinking`; models that cannot `generateContent` are left out |
//! | OpenAI-compatible | `GET {base}/models` | ids; OpenRouter adds `name`, `context_length`, `top_provider.max_completion_tokens`, `architecture.input_modalities`, `supported_parameters` (tools, reasoning) and `pricing` per token |
//!
//! What a vendor does not state stays unknown (`None`), never zero. An
//! error object in the body (any status) becomes the vendor's typed error.

use serde_json::Value;

use crate::common::{credential_handle, error_object, excerpt, join_url, str_at, u64_at};
use crate::types::{HttpExchange, ProviderError};
use crate::{Config, anthropic, google, openai};

/// Prices in US dollars per million tokens, each unknown until stated.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ListedPricing {
    /// Uncached input tokens.
    pub input: Option<f64>,
    /// Output tokens.
    pub output: Option<f64>,
    /// Input tokens read from the prompt cache.
    pub cache_read: Option<f64>,
    /// Input tokens written to the prompt cache.
    pub cache_write: Option<f64>,
}

/// One model as a vendor's listing describes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListedModel {
    /// The id requests name.
    pub id: String,
    /// A name for people.
    pub display_name: Option<String>,
    /// The context window (the most input tokens) in tokens.
    pub context_window: Option<u64>,
    /// The most output tokens one response may hold.
    pub max_output_tokens: Option<u32>,
    /// Whether the model reads text input.
    pub text_input: Option<bool>,
    /// Whether the model reads image input.
    pub image_input: Option<bool>,
    /// Whether the model calls tools.
    pub tools: Option<bool>,
    /// Whether the model thinks on request.
    pub thinking: Option<bool>,
    /// Prices per million tokens.
    pub pricing: ListedPricing,
}

impl ListedModel {
    fn new(id: &str) -> ListedModel {
        ListedModel {
            id: id.to_owned(),
            ..ListedModel::default()
        }
    }
}

/// One page of a listing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelPage {
    /// The models on this page, in the vendor's order.
    pub models: Vec<ListedModel>,
    /// The cursor of the next page (passed back to [`request`]), if any.
    pub next: Option<String>,
}

/// A vendor whose listing this module knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listing {
    /// `GET /v1/models`, paged by `after_id`.
    Anthropic,
    /// `GET {base}/models`.
    OpenAi,
    /// `GET /v1beta/models`, paged by `pageToken`.
    Google,
    /// `GET {base}/models` at the configured base URL.
    OpenAiCompatible,
}

impl Listing {
    fn vendor(self) -> &'static str {
        match self {
            Listing::Anthropic => "Anthropic",
            Listing::OpenAi => "OpenAI",
            Listing::Google => "Google",
            Listing::OpenAiCompatible => "OpenAI-compatible server",
        }
    }
}

/// Page sizes asked for where the vendor pages.
const ANTHROPIC_PAGE: u32 = 1000;
const GOOGLE_PAGE: u32 = 1000;

/// The exchange that fetches the page after `after` (the first page for
/// `None`).
///
/// # Errors
///
/// `invalid_request` when the OpenAI-compatible provider has no base URL.
pub fn request(
    listing: Listing,
    config: &Config,
    after: Option<&str>,
) -> Result<HttpExchange, ProviderError> {
    let get = |url: String, headers: Vec<(String, String)>| HttpExchange {
        method: "GET".into(),
        url,
        headers,
        body: Vec::new(),
    };
    let slot = |default: &'static str| config.credential.as_deref().unwrap_or(default).to_owned();
    Ok(match listing {
        Listing::Anthropic => {
            let mut url = join_url(
                config
                    .base_url
                    .as_deref()
                    .unwrap_or(anthropic::DEFAULT_BASE_URL),
                &format!("/v1/models?limit={ANTHROPIC_PAGE}"),
            );
            if let Some(after) = after {
                url.push_str(&format!("&after_id={}", query_escape(after)));
            }
            get(
                url,
                vec![
                    ("accept".into(), "application/json".into()),
                    ("anthropic-version".into(), anthropic::API_VERSION.into()),
                    (
                        "x-api-key".into(),
                        credential_handle(&slot(anthropic::CREDENTIAL_SLOT)),
                    ),
                ],
            )
        }
        Listing::OpenAi => get(
            join_url(
                config
                    .base_url
                    .as_deref()
                    .unwrap_or(openai::DEFAULT_BASE_URL),
                "/models",
            ),
            vec![
                ("accept".into(), "application/json".into()),
                (
                    "authorization".into(),
                    format!(
                        "Bearer {}",
                        credential_handle(&slot(openai::CREDENTIAL_SLOT))
                    ),
                ),
            ],
        ),
        Listing::Google => {
            let mut url = join_url(
                config
                    .base_url
                    .as_deref()
                    .unwrap_or(google::DEFAULT_BASE_URL),
                &format!("/v1beta/models?pageSize={GOOGLE_PAGE}"),
            );
            if let Some(after) = after {
                url.push_str(&format!("&pageToken={}", query_escape(after)));
            }
            get(
                url,
                vec![
                    ("accept".into(), "application/json".into()),
                    (
                        "x-goog-api-key".into(),
                        credential_handle(&slot(google::CREDENTIAL_SLOT)),
                    ),
                ],
            )
        }
        Listing::OpenAiCompatible => {
            let Some(base) = config.base_url.as_deref().filter(|b| !b.trim().is_empty()) else {
                return Err(ProviderError::new(
                    crate::ProviderErrorKind::InvalidRequest,
                    "the OpenAI-compatible provider has no base URL, so its models cannot be listed; nothing was sent — configure the server's base URL (for example http://localhost:11434/v1 for Ollama)",
                ));
            };
            let mut headers = vec![("accept".into(), "application/json".into())];
            if let Some(slot) = config.credential.as_deref() {
                headers.push((
                    "authorization".into(),
                    format!("Bearer {}", credential_handle(slot)),
                ));
            }
            get(join_url(base, "/models"), headers)
        }
    })
}

/// Percent-encodes everything but the unreserved characters.
fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes one listing response body.
///
/// # Errors
///
/// The vendor's typed error when the body is an error object;
/// `malformed_stream` when it is not the listing's JSON shape.
pub fn decode(listing: Listing, body: &[u8]) -> Result<ModelPage, ProviderError> {
    let vendor = listing.vendor();
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ProviderError::malformed(format!(
            "the model listing from the {vendor} is not JSON ({e}): {}; check the base URL points at the API",
            excerpt(&String::from_utf8_lossy(body))
        ))
    })?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        return Err(error_object(vendor, error));
    }
    let list_key = if listing == Listing::Google {
        "models"
    } else {
        "data"
    };
    let items = match value.get(list_key) {
        Some(Value::Array(items)) => items.as_slice(),
        // Google leaves `models` out of an empty listing.
        None if listing == Listing::Google => &[],
        _ => {
            return Err(ProviderError::malformed(format!(
                "the model listing from the {vendor} has no `{list_key}` array: {}; check the base URL points at the API",
                excerpt(&value.to_string())
            )));
        }
    };
    let mut page = ModelPage::default();
    for item in items {
        let model = match listing {
            Listing::Anthropic => anthropic_model(item),
            Listing::OpenAi => id_of(item, "id").map(ListedModel::new),
            Listing::Google => google_model(item),
            Listing::OpenAiCompatible => compatible_model(item),
        };
        if let Some(model) = model {
            page.models.push(model);
        }
    }
    page.next = match listing {
        Listing::Anthropic if value.get("has_more").and_then(Value::as_bool) == Some(true) => {
            // `last_id` is the cursor; without it, the last model's id.
            id_of(&value, "last_id")
                .map(str::to_owned)
                .or_else(|| page.models.last().map(|m| m.id.clone()))
        }
        Listing::Google => id_of(&value, "nextPageToken").map(str::to_owned),
        _ => None,
    };
    Ok(page)
}

/// A non-empty string field.
fn id_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    Some(str_at(value, key)).filter(|s| !s.is_empty())
}

fn name_of(value: &Value, key: &str) -> Option<String> {
    id_of(value, key).map(str::to_owned)
}

fn u32_at(value: &Value, key: &str) -> Option<u32> {
    u64_at(value, key).and_then(|n| u32::try_from(n).ok())
}

fn anthropic_model(item: &Value) -> Option<ListedModel> {
    let mut model = ListedModel::new(id_of(item, "id")?);
    model.display_name = name_of(item, "display_name");
    model.context_window = u64_at(item, "max_input_tokens").filter(|n| *n > 0);
    model.max_output_tokens = u32_at(item, "max_tokens").filter(|n| *n > 0);
    Some(model)
}

fn google_model(item: &Value) -> Option<ListedModel> {
    let name = id_of(item, "name")?;
    let id = name.strip_prefix("models/").unwrap_or(name);
    if let Some(Value::Array(methods)) = item.get("supportedGenerationMethods")
        && !methods
            .iter()
            .any(|m| m.as_str() == Some("generateContent"))
    {
        // Embedding, token counting and other models that cannot chat.
        return None;
    }
    let mut model = ListedModel::new(id);
    model.display_name = name_of(item, "displayName");
    model.context_window = u64_at(item, "inputTokenLimit").filter(|n| *n > 0);
    model.max_output_tokens = u32_at(item, "outputTokenLimit").filter(|n| *n > 0);
    model.thinking = item.get("thinking").and_then(Value::as_bool);
    Some(model)
}

fn compatible_model(item: &Value) -> Option<ListedModel> {
    let mut model = ListedModel::new(id_of(item, "id")?);
    model.display_name = name_of(item, "name");
    model.context_window = u64_at(item, "context_length").filter(|n| *n > 0);
    model.max_output_tokens = item
        .get("top_provider")
        .and_then(|p| u32_at(p, "max_completion_tokens"))
        .filter(|n| *n > 0);
    if let Some(Value::Array(modalities)) = item
        .get("architecture")
        .and_then(|a| a.get("input_modalities"))
    {
        let has = |name: &str| modalities.iter().any(|m| m.as_str() == Some(name));
        model.text_input = Some(has("text"));
        model.image_input = Some(has("image"));
    }
    if let Some(Value::Array(params)) = item.get("supported_parameters") {
        let has = |name: &str| params.iter().any(|p| p.as_str() == Some(name));
        model.tools = Some(has("tools"));
        model.thinking = Some(has("reasoning"));
    }
    if let Some(pricing) = item.get("pricing") {
        model.pricing = ListedPricing {
            input: per_million(pricing, "prompt"),
            output: per_million(pricing, "completion"),
            cache_read: per_million(pricing, "input_cache_read"),
            cache_write: per_million(pricing, "input_cache_write"),
        };
    }
    Some(model)
}

/// A price per token (a decimal string, or a number) as dollars per
/// million tokens, rounded to a millionth of a dollar. Negative prices
/// (OpenRouter's "-1" for routers whose price varies) are unknown.
fn per_million(pricing: &Value, key: &str) -> Option<f64> {
    let per_token = match pricing.get(key)? {
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        Value::Number(n) => n.as_f64()?,
        _ => return None,
    };
    if !per_token.is_finite() || per_token < 0.0 {
        return None;
    }
    Some((per_token * 1e12).round() / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_escaped_into_the_query() {
        let config = Config::default();
        let first = request(Listing::Anthropic, &config, None).unwrap();
        assert_eq!(first.url, "https://api.anthropic.com/v1/models?limit=1000");
        assert_eq!(first.method, "GET");
        assert!(first.body.is_empty());
        let next = request(Listing::Google, &config, Some("a+b/c=")).unwrap();
        assert_eq!(
            next.url,
            "https://generativelanguage.googleapis.com/v1beta/models?pageSize=1000&pageToken=a%2Bb%2Fc%3D"
        );
    }

    #[test]
    fn per_token_prices_become_per_million() {
        let p: Value = serde_json::json!({
            "prompt": "0.000003", "completion": "0.000015",
            "input_cache_read": "0.0000003", "input_cache_write": "-1", "request": "0"
        });
        assert_eq!(per_million(&p, "prompt"), Some(3.0));
        assert_eq!(per_million(&p, "completion"), Some(15.0));
        assert_eq!(per_million(&p, "input_cache_read"), Some(0.3));
        assert_eq!(per_million(&p, "input_cache_write"), None);
        assert_eq!(per_million(&p, "image"), None);
    }
}
