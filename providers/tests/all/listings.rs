//! Model listings: the hand-written bodies in `fixtures/listings/` (in the
//! shapes the vendors document) decode into what each vendor states, and
//! nothing more.

use smith_providers::models::{ListedModel, ListedPricing, Listing, decode, request};
use smith_providers::{Config, ProviderErrorKind};

use crate::support::root;

fn body(name: &str) -> Vec<u8> {
    std::fs::read(root().join("fixtures").join("listings").join(name)).unwrap()
}

fn ids(models: &[ListedModel]) -> Vec<&str> {
    models.iter().map(|m| m.id.as_str()).collect()
}

#[test]
fn anthropic_pages_follow_last_id_and_state_limits_when_present() {
    let first = decode(Listing::Anthropic, &body("anthropic-page-1.json")).unwrap();
    assert_eq!(
        ids(&first.models),
        ["claude-opus-4-1-20250805", "claude-sonnet-4-5-20250929"]
    );
    assert_eq!(first.next.as_deref(), Some("claude-sonnet-4-5-20250929"));
    let opus = &first.models[0];
    assert_eq!(opus.display_name.as_deref(), Some("Claude Opus 4.1"));
    assert_eq!(opus.context_window, Some(200_000));
    assert_eq!(opus.max_output_tokens, Some(32_000));
    // Not stated: unknown, not zero.
    let sonnet = &first.models[1];
    assert_eq!(sonnet.context_window, None);
    assert_eq!(sonnet.max_output_tokens, None);
    assert_eq!(sonnet.tools, None);
    assert_eq!(sonnet.pricing, ListedPricing::default());

    let second = decode(Listing::Anthropic, &body("anthropic-page-2.json")).unwrap();
    assert_eq!(ids(&second.models), ["claude-3-5-haiku-20241022"]);
    assert_eq!(second.next, None, "has_more is false");

    let config = Config::default();
    let next = request(Listing::Anthropic, &config, first.next.as_deref()).unwrap();
    assert_eq!(
        next.url,
        "https://api.anthropic.com/v1/models?limit=1000&after_id=claude-sonnet-4-5-20250929"
    );
    let headers: Vec<(&str, &str)> = next
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert!(headers.contains(&("anthropic-version", "2023-06-01")));
    assert!(headers.contains(&("x-api-key", "{{credential:anthropic.api_key}}")));
}

#[test]
fn an_error_body_is_the_vendors_typed_error() {
    let e = decode(Listing::Anthropic, &body("anthropic-error.json")).unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Auth);
    assert!(e.message.contains("invalid x-api-key"), "{}", e.message);
    let e = decode(Listing::OpenAi, b"<html>gateway</html>").unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::MalformedStream);
    assert!(e.message.contains("not JSON"), "{}", e.message);
    let e = decode(Listing::OpenAiCompatible, b"{\"models\": []}").unwrap_err();
    assert!(e.message.contains("no `data` array"), "{}", e.message);
}

#[test]
fn openai_lists_ids_only() {
    let page = decode(Listing::OpenAi, &body("openai.json")).unwrap();
    assert_eq!(
        ids(&page.models),
        ["gpt-5.1", "gpt-4.1-mini", "text-embedding-3-small"]
    );
    assert_eq!(page.next, None);
    for m in &page.models {
        assert_eq!(
            *m,
            ListedModel {
                id: m.id.clone(),
                ..ListedModel::default()
            }
        );
    }
    let r = request(Listing::OpenAi, &Config::default(), None).unwrap();
    assert_eq!(r.url, "https://api.openai.com/v1/models");
    assert!(r.headers.contains(&(
        "authorization".to_owned(),
        "Bearer {{credential:openai.api_key}}".to_owned()
    )));
}

#[test]
fn google_states_limits_and_thinking_and_skips_models_that_cannot_chat() {
    let first = decode(Listing::Google, &body("google-page-1.json")).unwrap();
    assert_eq!(ids(&first.models), ["gemini-2.5-flash"]);
    let flash = &first.models[0];
    assert_eq!(flash.display_name.as_deref(), Some("Gemini 2.5 Flash"));
    assert_eq!(flash.context_window, Some(1_048_576));
    assert_eq!(flash.max_output_tokens, Some(65_536));
    assert_eq!(flash.thinking, Some(true));
    assert_eq!(
        first.next.as_deref(),
        Some("Ch5tb2RlbHMvZ2VtaW5pLTIuMC1mbGFzaC0wMDE=")
    );
    let second = decode(Listing::Google, &body("google-page-2.json")).unwrap();
    assert_eq!(ids(&second.models), ["gemini-2.0-flash"]);
    assert_eq!(second.models[0].thinking, None, "not stated");
    assert_eq!(second.next, None);
    let r = request(Listing::Google, &Config::default(), None).unwrap();
    assert!(r.headers.contains(&(
        "x-goog-api-key".to_owned(),
        "{{credential:google.api_key}}".to_owned()
    )));
}

#[test]
fn openrouter_states_context_modalities_tools_and_prices_per_million() {
    let page = decode(Listing::OpenAiCompatible, &body("openrouter.json")).unwrap();
    assert_eq!(
        ids(&page.models),
        ["anthropic/claude-sonnet-4.5", "openrouter/auto"]
    );
    let sonnet = &page.models[0];
    assert_eq!(
        sonnet.display_name.as_deref(),
        Some("Anthropic: Claude Sonnet 4.5")
    );
    assert_eq!(sonnet.context_window, Some(1_000_000));
    assert_eq!(sonnet.max_output_tokens, Some(64_000));
    assert_eq!(sonnet.text_input, Some(true));
    assert_eq!(sonnet.image_input, Some(true));
    assert_eq!(sonnet.tools, Some(true));
    assert_eq!(sonnet.thinking, Some(true));
    assert_eq!(
        sonnet.pricing,
        ListedPricing {
            input: Some(3.0),
            output: Some(15.0),
            cache_read: Some(0.3),
            cache_write: Some(3.75),
        }
    );
    let auto = &page.models[1];
    assert_eq!(auto.max_output_tokens, None, "null is unknown");
    assert_eq!(auto.image_input, Some(false));
    assert_eq!(auto.tools, Some(false));
    assert_eq!(auto.pricing, ListedPricing::default(), "-1 is unknown");
}

#[test]
fn ollama_lists_ids_and_sends_auth_only_when_configured() {
    let page = decode(Listing::OpenAiCompatible, &body("ollama.json")).unwrap();
    assert_eq!(ids(&page.models), ["qwen2.5-coder:32b", "llama3.2:latest"]);
    assert_eq!(page.models[0].tools, None);
    let mut config = Config {
        base_url: Some("http://localhost:11434/v1/".into()),
        ..Config::default()
    };
    let r = request(Listing::OpenAiCompatible, &config, None).unwrap();
    assert_eq!(r.url, "http://localhost:11434/v1/models");
    assert!(r.headers.iter().all(|(n, _)| n != "authorization"));
    config.credential = Some("openai-compatible.api_key".into());
    let r = request(Listing::OpenAiCompatible, &config, None).unwrap();
    assert!(r.headers.iter().any(|(n, _)| n == "authorization"));
    let e = request(Listing::OpenAiCompatible, &Config::default(), None).unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::InvalidRequest);
    assert!(e.message.contains("no base URL"), "{}", e.message);
}
