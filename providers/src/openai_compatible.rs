//! Any server speaking the Chat Completions dialect at a configured base
//! URL: OpenRouter, Ollama, llama.cpp server, vLLM, LM Studio and others.
//!
//! Differences from [`openai`](crate::openai)'s Chat Completions: the base
//! URL is required; an auth header is sent only when a credential slot is
//! configured; the output limit is sent as `max_tokens` (the field every
//! server accepts); reasoning effort is never sent (no common field), but
//! reasoning streamed in `reasoning_content` or `reasoning` is decoded; a
//! body that ends without `data: [DONE]` is complete if a `finish_reason`
//! arrived (several servers omit the marker).

use crate::chat::{ChatDecoder, Dialect};
use crate::common::{Config, credential_handle, join_url};
use crate::types::{Decoder, HttpExchange, ProviderError, ProviderErrorKind, Request, StreamEvent};

/// The provider id.
pub const PROVIDER_ID: &str = "openai-compatible";
/// The conventional credential slot, when one is configured.
pub const CREDENTIAL_SLOT: &str = "openai-compatible.api_key";

const DIALECT: Dialect = Dialect {
    vendor: "OpenAI-compatible server",
    require_done: false,
    max_tokens_field: "max_tokens",
    reasoning_effort: false,
    pdf: false,
};

/// Builds a streaming Chat Completions request for the configured server.
///
/// # Errors
///
/// `invalid_request` before dispatch when no base URL is configured, or
/// when tools are offered to a model that does not advertise tool use.
pub fn encode(request: &Request, config: &Config) -> Result<HttpExchange, ProviderError> {
    let Some(base) = config.base_url.as_deref().filter(|b| !b.trim().is_empty()) else {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            format!(
                "the OpenAI-compatible provider has no base URL, so model {:?} cannot be reached; nothing was sent — configure the server's base URL (for example http://localhost:11434/v1 for Ollama)",
                request.model
            ),
        ));
    };
    let auth = config
        .credential
        .as_deref()
        .map(|slot| format!("Bearer {}", credential_handle(slot)));
    crate::chat::encode(
        request,
        config,
        DIALECT,
        join_url(base, "/chat/completions"),
        auth,
    )
}

/// The streaming decoder (tolerates a missing `data: [DONE]`).
#[derive(Clone)]
pub struct StreamDecoder(ChatDecoder);

impl StreamDecoder {
    /// A decoder for one response body.
    pub fn new() -> Self {
        Self(ChatDecoder::new(DIALECT))
    }
}

impl Default for StreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder for StreamDecoder {
    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        self.0.decode(chunk)
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        self.0.finish()
    }
}
