//! What the built-in vendor provider plugins (smith/anthropic,
//! smith/openai, smith/google, smith/openai-compatible) share: the
//! `smith:plugin@1` provider export around one `smith-providers` adapter.
//!
//! - `configure` turns the settings into the adapter's [`Config`] with
//!   [`Config::apply_setting`] (the names the host writes with
//!   [`Config::settings`]); a vendor with more than one API takes `api`.
//! - `encode` converts the WIT request to the adapter's request, runs the
//!   adapter's `encode` and returns its HTTP exchange; it also starts a
//!   fresh streaming decoder for the response.
//! - `decode` / `finish` run that decoder and return its normalized events.
//! - `models-request` / `decode-models` run the adapter's model listing
//!   (`smith_providers::models`) with the configured base URL and
//!   credential handle.
//!
//! Each plugin crate is one line: [`vendor_plugin!`] with its [`Adapter`].

use std::cell::RefCell;

use smith_plugin_sdk::media::exports::smith::plugin::media as wit_media;
use smith_plugin_sdk::provider::exports::smith::plugin::provider as wit;
use smith_providers::models::{self, ListedModel, Listing};
use smith_providers::types as vendor;
use smith_providers::{Config, Decoder, SETTINGS};

/// One vendor: its identity, its APIs and its adapter's two halves.
pub trait Adapter {
    /// The plugin's name (`smith/anthropic`).
    const PLUGIN: &'static str;
    /// The provider id (`anthropic`).
    const PROVIDER_ID: &'static str;
    /// The model used when none is given, if the vendor has one.
    const DEFAULT_MODEL: Option<&'static str>;
    /// The APIs the `api` setting chooses between, the default first;
    /// empty when the vendor has one API (and no `api` setting).
    const APIS: &'static [&'static str];
    /// The vendor's model listing.
    const LISTING: Listing;
    /// Whether the vendor takes PDFs as documents (images it always
    /// takes; the catalog gates which models read them).
    const PDF: bool = true;

    /// Encodes `request` for the API at index `api` of [`Adapter::APIS`].
    ///
    /// # Errors
    ///
    /// The adapter's error when the request cannot be sent.
    fn encode(
        api: usize,
        request: &vendor::Request,
        config: &Config,
    ) -> Result<vendor::HttpExchange, vendor::ProviderError>;

    /// A fresh decoder for one response body of API `api`.
    fn decoder(api: usize) -> Box<dyn Decoder>;
}

/// The plugin's state between calls.
#[derive(Default)]
pub struct State {
    config: Config,
    api: usize,
    decoder: Option<Box<dyn Decoder>>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
    /// The media `attach` handed over for the next `encode`.
    static MEDIA: RefCell<Vec<wit_media::MessageMedia>> = const { RefCell::new(Vec::new()) };
}

/// `media.accepts`: every image type, and PDF where the vendor takes it.
pub fn accepts<A: Adapter>(_model: String) -> Vec<String> {
    vendor::MediaType::ALL
        .into_iter()
        .filter(|t| t.is_image() || A::PDF)
        .map(|t| t.mime().to_owned())
        .collect()
}

/// `media.attach`: keeps the media for the next `encode`.
pub fn attach(media: Vec<wit_media::MessageMedia>) {
    MEDIA.with(|pending| *pending.borrow_mut() = media);
}

/// Puts the attached media into `request`'s messages (consuming them).
fn take_media<A: Adapter>(request: &mut vendor::Request) -> Result<(), wit::ProviderError> {
    let attached = MEDIA.with(|pending| std::mem::take(&mut *pending.borrow_mut()));
    for entry in attached {
        let index = entry.message as usize;
        let count = request.messages.len();
        let target = match request.messages.get_mut(index) {
            Some(vendor::Message::User { media, .. } | vendor::Message::ToolResult { media, .. }) => {
                media
            }
            _ => {
                return Err(invalid::<A>(format!(
                    "media were attached to message {index} of {count}, which is not a user message or a tool result; this is a host defect, report it"
                )));
            }
        };
        for part in entry.parts {
            let media_type = vendor::MediaType::from_mime(&part.media_type).ok_or_else(|| {
                invalid::<A>(format!(
                    "a media part has the type {:?}, which {} does not send; the types it sends are {}",
                    part.media_type,
                    A::PLUGIN,
                    accepts::<A>(String::new()).join(", ")
                ))
            })?;
            let mut media = vendor::Media::new(media_type, part.data);
            media.name = part.name;
            target.push(media);
        }
    }
    Ok(())
}

fn invalid<A: Adapter>(message: String) -> wit::ProviderError {
    let _ = A::PLUGIN;
    wit::ProviderError {
        kind: wit::ErrorKind::InvalidRequest,
        message,
        retry_after_ms: None,
    }
}

/// `configure`: replaces the configuration and drops any decoder.
///
/// # Errors
///
/// A message naming the setting and its problem: an unknown name (listing
/// the known ones), a bad value, or a setting given twice.
pub fn configure<A: Adapter>(settings: Vec<(String, String)>) -> Result<(), String> {
    let mut config = Config::default();
    let mut api = 0;
    let mut seen: Vec<&str> = Vec::new();
    for (name, value) in &settings {
        if seen.contains(&name.as_str()) {
            return Err(format!(
                "{} got setting {name:?} twice; give each setting once",
                A::PLUGIN
            ));
        }
        seen.push(name);
        if name == "api" && !A::APIS.is_empty() {
            api = A::APIS.iter().position(|a| a == value).ok_or_else(|| {
                format!(
                    "{} setting \"api\" is {value:?}; give one of {}",
                    A::PLUGIN,
                    quoted(A::APIS)
                )
            })?;
            continue;
        }
        let known = config
            .apply_setting(name, value)
            .map_err(|why| format!("{}: {why}", A::PLUGIN))?;
        if !known {
            let mut names: Vec<&str> = SETTINGS.to_vec();
            if !A::APIS.is_empty() {
                names.push("api");
            }
            return Err(format!(
                "{} has no setting {name:?}; its settings are {}",
                A::PLUGIN,
                quoted(&names)
            ));
        }
    }
    STATE.with(|state| {
        *state.borrow_mut() = State {
            config,
            api,
            decoder: None,
        };
    });
    Ok(())
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `describe`: the provider id and its default model.
pub fn describe<A: Adapter>() -> wit::ProviderInfo {
    wit::ProviderInfo {
        id: A::PROVIDER_ID.to_owned(),
        models: A::DEFAULT_MODEL
            .map(|id| wit::ModelInfo {
                id: id.to_owned(),
                display_name: None,
                context_window: None,
                max_output_tokens: None,
                text_input: None,
                image_input: None,
                tools: None,
                thinking: None,
                pricing: None,
            })
            .into_iter()
            .collect(),
    }
}

/// `encode`: the adapter's exchange for the request; a fresh decoder for
/// its response (also when encoding fails, so a stale body cannot reach
/// the previous response's decoder).
///
/// # Errors
///
/// The adapter's error, as the WIT error.
pub fn encode<A: Adapter>(request: wit::Request) -> Result<wit::Exchange, wit::ProviderError> {
    let mut request = request_from_wit(request);
    take_media::<A>(&mut request)?;
    STATE.with(|state| {
        let mut state = state.borrow_mut();
        state.decoder = None;
        let exchange = A::encode(state.api, &request, &state.config).map_err(error_to_wit)?;
        state.decoder = Some(A::decoder(state.api));
        Ok(wit::Exchange::Http(wit::HttpExchange {
            method: exchange.method,
            url: exchange.url,
            headers: exchange.headers,
            body: exchange.body,
        }))
    })
}

/// `decode`: the decoder's events for one chunk.
pub fn decode<A: Adapter>(chunk: &[u8]) -> Vec<wit::StreamEvent> {
    STATE.with(|state| match &mut state.borrow_mut().decoder {
        Some(decoder) => decoder.decode(chunk).into_iter().map(event_to_wit).collect(),
        None => vec![wit::StreamEvent::Error(wit::ProviderError {
            kind: wit::ErrorKind::MalformedStream,
            message: format!(
                "{} got a response body chunk with no request encoded; this is a host defect, report it",
                A::PLUGIN
            ),
            retry_after_ms: None,
        })],
    })
}

/// `finish`: the decoder's last events.
pub fn finish<A: Adapter>() -> Vec<wit::StreamEvent> {
    STATE.with(|state| match &mut state.borrow_mut().decoder {
        Some(decoder) => decoder.finish().into_iter().map(event_to_wit).collect(),
        None => Vec::new(),
    })
}

/// `models-request`: the listing page after `after` (the first for none).
///
/// # Errors
///
/// The adapter's error (the OpenAI-compatible provider without a base URL).
pub fn models_request<A: Adapter>(
    after: Option<String>,
) -> Result<Option<wit::HttpExchange>, wit::ProviderError> {
    STATE.with(|state| {
        let state = state.borrow();
        let exchange =
            models::request(A::LISTING, &state.config, after.as_deref()).map_err(error_to_wit)?;
        Ok(Some(wit::HttpExchange {
            method: exchange.method,
            url: exchange.url,
            headers: exchange.headers,
            body: exchange.body,
        }))
    })
}

/// `decode-models`: one listing body as models and the next cursor.
///
/// # Errors
///
/// The vendor's error object, or a body that is not the listing's shape.
pub fn decode_models<A: Adapter>(body: &[u8]) -> Result<wit::ModelPage, wit::ProviderError> {
    let page = models::decode(A::LISTING, body).map_err(error_to_wit)?;
    Ok(wit::ModelPage {
        models: page.models.into_iter().map(model_to_wit).collect(),
        next: page.next,
    })
}

fn model_to_wit(model: ListedModel) -> wit::ModelInfo {
    let p = model.pricing;
    let stated = [p.input, p.output, p.cache_read, p.cache_write]
        .iter()
        .any(Option::is_some);
    wit::ModelInfo {
        id: model.id,
        display_name: model.display_name,
        context_window: model.context_window,
        max_output_tokens: model.max_output_tokens,
        text_input: model.text_input,
        image_input: model.image_input,
        tools: model.tools,
        thinking: model.thinking,
        pricing: stated.then_some(wit::Pricing {
            input: p.input,
            output: p.output,
            cache_read: p.cache_read,
            cache_write: p.cache_write,
        }),
    }
}

/// Defines the plugin's export type for adapter `$adapter` and exports it.
#[macro_export]
macro_rules! vendor_plugin {
    ($adapter:ty) => {
        struct Plugin;

        impl smith_plugin_sdk::provider::exports::smith::plugin::provider::Guest for Plugin {
            fn describe()
            -> smith_plugin_sdk::provider::exports::smith::plugin::provider::ProviderInfo {
                $crate::describe::<$adapter>()
            }

            fn configure(settings: Vec<(String, String)>) -> Result<(), String> {
                $crate::configure::<$adapter>(settings)
            }

            fn encode(
                request: smith_plugin_sdk::provider::exports::smith::plugin::provider::Request,
            ) -> Result<
                smith_plugin_sdk::provider::exports::smith::plugin::provider::Exchange,
                smith_plugin_sdk::provider::exports::smith::plugin::provider::ProviderError,
            > {
                $crate::encode::<$adapter>(request)
            }

            fn decode(
                chunk: Vec<u8>,
            ) -> Vec<smith_plugin_sdk::provider::exports::smith::plugin::provider::StreamEvent>
            {
                $crate::decode::<$adapter>(&chunk)
            }

            fn finish()
            -> Vec<smith_plugin_sdk::provider::exports::smith::plugin::provider::StreamEvent> {
                $crate::finish::<$adapter>()
            }

            fn models_request(
                after: Option<String>,
            ) -> Result<
                Option<smith_plugin_sdk::provider::exports::smith::plugin::provider::HttpExchange>,
                smith_plugin_sdk::provider::exports::smith::plugin::provider::ProviderError,
            > {
                $crate::models_request::<$adapter>(after)
            }

            fn decode_models(
                body: Vec<u8>,
            ) -> Result<
                smith_plugin_sdk::provider::exports::smith::plugin::provider::ModelPage,
                smith_plugin_sdk::provider::exports::smith::plugin::provider::ProviderError,
            > {
                $crate::decode_models::<$adapter>(&body)
            }
        }

        impl smith_plugin_sdk::media::exports::smith::plugin::media::Guest for Plugin {
            fn accepts(model: String) -> Vec<String> {
                $crate::accepts::<$adapter>(model)
            }

            fn attach(
                media: Vec<smith_plugin_sdk::media::exports::smith::plugin::media::MessageMedia>,
            ) {
                $crate::attach(media)
            }
        }

        smith_plugin_sdk::provider::export_provider!(Plugin);
        smith_plugin_sdk::media::export_media!(Plugin);
    };
}

// ---------------------------------------------------------------------------
// The four adapters.

/// smith/anthropic: the Messages API.
pub struct Anthropic;

impl Adapter for Anthropic {
    const PLUGIN: &'static str = "smith/anthropic";
    const PROVIDER_ID: &'static str = smith_providers::anthropic::PROVIDER_ID;
    const DEFAULT_MODEL: Option<&'static str> = Some(smith_providers::anthropic::DEFAULT_MODEL);
    const APIS: &'static [&'static str] = &[];
    const LISTING: Listing = Listing::Anthropic;

    fn encode(
        _api: usize,
        request: &vendor::Request,
        config: &Config,
    ) -> Result<vendor::HttpExchange, vendor::ProviderError> {
        smith_providers::anthropic::encode(request, config)
    }

    fn decoder(_api: usize) -> Box<dyn Decoder> {
        Box::new(smith_providers::anthropic::StreamDecoder::new())
    }
}

/// smith/openai: the Responses API (`api` = `responses`, the default) and
/// Chat Completions (`api` = `chat`).
pub struct OpenAi;

impl Adapter for OpenAi {
    const PLUGIN: &'static str = "smith/openai";
    const PROVIDER_ID: &'static str = smith_providers::openai::PROVIDER_ID;
    const DEFAULT_MODEL: Option<&'static str> = Some(smith_providers::openai::DEFAULT_MODEL);
    const APIS: &'static [&'static str] = &["responses", "chat"];
    const LISTING: Listing = Listing::OpenAi;

    fn encode(
        api: usize,
        request: &vendor::Request,
        config: &Config,
    ) -> Result<vendor::HttpExchange, vendor::ProviderError> {
        match api {
            1 => smith_providers::openai::encode_chat(request, config),
            _ => smith_providers::openai::encode(request, config),
        }
    }

    fn decoder(api: usize) -> Box<dyn Decoder> {
        match api {
            1 => Box::new(smith_providers::openai::ChatStreamDecoder::new()),
            _ => Box::new(smith_providers::openai::StreamDecoder::new()),
        }
    }
}

/// smith/google: Gemini `streamGenerateContent` (SSE).
pub struct Google;

impl Adapter for Google {
    const PLUGIN: &'static str = "smith/google";
    const PROVIDER_ID: &'static str = smith_providers::google::PROVIDER_ID;
    const DEFAULT_MODEL: Option<&'static str> = Some(smith_providers::google::DEFAULT_MODEL);
    const APIS: &'static [&'static str] = &[];
    const LISTING: Listing = Listing::Google;

    fn encode(
        _api: usize,
        request: &vendor::Request,
        config: &Config,
    ) -> Result<vendor::HttpExchange, vendor::ProviderError> {
        smith_providers::google::encode(request, config)
    }

    fn decoder(_api: usize) -> Box<dyn Decoder> {
        Box::new(smith_providers::google::StreamDecoder::new())
    }
}

/// smith/openai-compatible: Chat Completions at any base URL.
pub struct OpenAiCompatible;

impl Adapter for OpenAiCompatible {
    const PLUGIN: &'static str = "smith/openai-compatible";
    const PROVIDER_ID: &'static str = smith_providers::openai_compatible::PROVIDER_ID;
    const DEFAULT_MODEL: Option<&'static str> = None;
    const APIS: &'static [&'static str] = &[];
    const LISTING: Listing = Listing::OpenAiCompatible;
    const PDF: bool = false;

    fn encode(
        _api: usize,
        request: &vendor::Request,
        config: &Config,
    ) -> Result<vendor::HttpExchange, vendor::ProviderError> {
        smith_providers::openai_compatible::encode(request, config)
    }

    fn decoder(_api: usize) -> Box<dyn Decoder> {
        Box::new(smith_providers::openai_compatible::StreamDecoder::new())
    }
}

// ---------------------------------------------------------------------------
// Conversions between the WIT types and the adapter's types.

/// Tool call arguments and parameter schemas arrive as JSON text; text that
/// does not parse stays a JSON string, as in the host.
fn json_from_text(text: String) -> serde_json::Value {
    serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
}

fn stop_from_wit(reason: wit::StopReason) -> vendor::StopReason {
    match reason {
        wit::StopReason::End => vendor::StopReason::End,
        wit::StopReason::ToolUse => vendor::StopReason::ToolUse,
        wit::StopReason::Limit => vendor::StopReason::Limit,
        wit::StopReason::Abort => vendor::StopReason::Abort,
        wit::StopReason::Error => vendor::StopReason::Error,
    }
}

fn stop_to_wit(reason: vendor::StopReason) -> wit::StopReason {
    match reason {
        vendor::StopReason::End => wit::StopReason::End,
        vendor::StopReason::ToolUse => wit::StopReason::ToolUse,
        vendor::StopReason::Limit => wit::StopReason::Limit,
        vendor::StopReason::Abort => wit::StopReason::Abort,
        vendor::StopReason::Error => wit::StopReason::Error,
    }
}

fn block_from_wit(block: wit::ContentBlock) -> vendor::ContentBlock {
    match block {
        wit::ContentBlock::Text(text) => vendor::ContentBlock::Text { text },
        wit::ContentBlock::Thinking(thinking) => vendor::ContentBlock::Thinking {
            text: thinking.text,
            signature: thinking.signature.map(vendor::OpaqueBytes),
        },
        wit::ContentBlock::ToolCall(call) => vendor::ContentBlock::ToolCall(vendor::ToolCall {
            id: call.id,
            name: call.name,
            arguments: json_from_text(call.arguments),
        }),
    }
}

/// The adapter's request for a WIT request.
pub fn request_from_wit(request: wit::Request) -> vendor::Request {
    let messages = request
        .messages
        .into_iter()
        .map(|message| match message {
            wit::Message::User(text) => vendor::Message::user(text),
            wit::Message::Assistant(assistant) => vendor::Message::Assistant {
                content: assistant.content.into_iter().map(block_from_wit).collect(),
                stop: stop_from_wit(assistant.stop),
            },
            wit::Message::ToolResult(result) => vendor::Message::ToolResult {
                call_id: result.call_id,
                name: result.name,
                content: result.content,
                is_error: result.is_error,
                media: Vec::new(),
            },
        })
        .collect();
    vendor::Request {
        model: request.model,
        system: request.system,
        messages,
        tools: request
            .tools
            .into_iter()
            .map(|tool| vendor::ToolSpec {
                name: tool.name,
                description: tool.description,
                parameters: json_from_text(tool.parameters),
            })
            .collect(),
        max_output_tokens: request.max_output_tokens,
    }
}

fn error_to_wit(error: vendor::ProviderError) -> wit::ProviderError {
    use vendor::ProviderErrorKind as K;
    let kind = match error.kind {
        K::RateLimit => wit::ErrorKind::RateLimit,
        K::Overloaded => wit::ErrorKind::Overloaded,
        K::Auth => wit::ErrorKind::Auth,
        K::InvalidRequest => wit::ErrorKind::InvalidRequest,
        K::ModelUnavailable => wit::ErrorKind::ModelUnavailable,
        // The host's own kinds for a request too large to send or build;
        // an adapter never makes them, and the interface's nearest is
        // the overflow.
        K::ContextOverflow | K::RequestTooLarge | K::PluginMemory => {
            wit::ErrorKind::ContextOverflow
        }
        K::MalformedStream => wit::ErrorKind::MalformedStream,
        K::Transport => wit::ErrorKind::Transport,
    };
    wit::ProviderError {
        kind,
        message: error.message,
        retry_after_ms: error.retry_after_ms,
    }
}

/// The WIT event for an adapter event.
pub fn event_to_wit(event: vendor::StreamEvent) -> wit::StreamEvent {
    match event {
        vendor::StreamEvent::TextDelta { text } => wit::StreamEvent::TextDelta(text),
        vendor::StreamEvent::ThinkingDelta { text, signature } => {
            wit::StreamEvent::ThinkingDelta(wit::Thinking {
                text,
                signature: signature.map(|s| s.0),
            })
        }
        vendor::StreamEvent::ToolCallStart { id, name } => {
            wit::StreamEvent::ToolCallStart(wit::ToolCallStart { id, name })
        }
        vendor::StreamEvent::ToolCallDelta { id, arguments } => {
            wit::StreamEvent::ToolCallDelta(wit::ToolCallDelta { id, arguments })
        }
        vendor::StreamEvent::ToolCallEnd { id } => wit::StreamEvent::ToolCallEnd(id),
        vendor::StreamEvent::Usage(usage) => wit::StreamEvent::Usage(wit::Usage {
            input: usage.input,
            output: usage.output,
            cache_read: usage.cache_read,
            cache_write: usage.cache_write,
        }),
        vendor::StreamEvent::Stop { reason } => wit::StreamEvent::Stop(stop_to_wit(reason)),
        vendor::StreamEvent::Error(error) => wit::StreamEvent::Error(error_to_wit(error)),
    }
}
