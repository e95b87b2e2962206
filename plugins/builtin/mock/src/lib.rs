//! smith/mock: the scripted provider as a `smith:plugin@1` provider plugin.
//!
//! The provider is `smith_contract::scripted::ScriptedProvider`, the same
//! implementation the host's test kit plays natively; this crate only
//! converts between it and the WIT types. Settings (through `configure`):
//! `script` is the script's JSON text and `origin` names where it came from
//! in errors. Without a script the built-in demo plays. `encode` answers
//! with a local exchange; `decode` turns each chunk back into events. It has
//! no model listing: `models-request` answers none, so a catalog refresh
//! skips it and its one model is what `describe` says. Recording requests to
//! a file is not available here: a plugin has no file system.

use std::cell::RefCell;

use smith_plugin_sdk::media::exports::smith::plugin::media;
use smith_plugin_sdk::provider::exports::smith::plugin::provider as wit;

use smith_contract::scripted::{ScriptedProvider, parse_script};
use smith_contract::{
    ContentBlock, Exchange, Message, ModelInfo, OpaqueBytes, Provider, ProviderError,
    ProviderErrorKind, Request, StopReason, StreamEvent, ToolCall, ToolSpec, Usage,
};

thread_local! {
    static STATE: RefCell<ScriptedProvider> = RefCell::new(ScriptedProvider::demo());
}

struct Mock;

fn stop_to_wit(reason: StopReason) -> wit::StopReason {
    match reason {
        StopReason::End => wit::StopReason::End,
        StopReason::ToolUse => wit::StopReason::ToolUse,
        StopReason::Limit => wit::StopReason::Limit,
        StopReason::Abort => wit::StopReason::Abort,
        StopReason::Error => wit::StopReason::Error,
    }
}

fn stop_from_wit(reason: wit::StopReason) -> StopReason {
    match reason {
        wit::StopReason::End => StopReason::End,
        wit::StopReason::ToolUse => StopReason::ToolUse,
        wit::StopReason::Limit => StopReason::Limit,
        wit::StopReason::Abort => StopReason::Abort,
        wit::StopReason::Error => StopReason::Error,
    }
}

fn error_to_wit(error: ProviderError) -> wit::ProviderError {
    use ProviderErrorKind as K;
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

fn usage_to_wit(usage: Usage) -> wit::Usage {
    wit::Usage {
        input: usage.input,
        output: usage.output,
        cache_read: usage.cache_read,
        cache_write: usage.cache_write,
    }
}

fn model_to_wit(model: ModelInfo) -> wit::ModelInfo {
    wit::ModelInfo {
        id: model.id,
        display_name: None,
        context_window: model.context_window,
        max_output_tokens: model.max_output_tokens,
        text_input: None,
        // The scripted provider answers whatever the request carries.
        image_input: Some(true),
        tools: None,
        thinking: None,
        pricing: model.pricing.map(|price| wit::Pricing {
            input: Some(price.input),
            output: Some(price.output),
            cache_read: Some(price.cache_read),
            cache_write: Some(price.cache_write),
        }),
    }
}

fn event_to_wit(event: StreamEvent) -> wit::StreamEvent {
    match event {
        StreamEvent::TextDelta { text } => wit::StreamEvent::TextDelta(text),
        StreamEvent::ThinkingDelta { text, signature } => {
            wit::StreamEvent::ThinkingDelta(wit::Thinking {
                text,
                signature: signature.map(|s| s.0),
            })
        }
        StreamEvent::ToolCallStart { id, name } => {
            wit::StreamEvent::ToolCallStart(wit::ToolCallStart { id, name })
        }
        StreamEvent::ToolCallDelta { id, arguments } => {
            wit::StreamEvent::ToolCallDelta(wit::ToolCallDelta { id, arguments })
        }
        StreamEvent::ToolCallEnd { id } => wit::StreamEvent::ToolCallEnd(id),
        StreamEvent::Usage(usage) => wit::StreamEvent::Usage(usage_to_wit(usage)),
        StreamEvent::Stop { reason } => wit::StreamEvent::Stop(stop_to_wit(reason)),
        StreamEvent::Error(error) => wit::StreamEvent::Error(error_to_wit(error)),
    }
}

/// Tool call arguments arrive as JSON text; text that does not parse stays
/// a JSON string, as in the engine.
fn arguments_from_text(text: String) -> serde_json::Value {
    serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
}

fn request_from_wit(request: wit::Request) -> Request {
    let messages = request
        .messages
        .into_iter()
        .map(|message| match message {
            wit::Message::User(text) => Message::user(text),
            wit::Message::Assistant(assistant) => Message::Assistant {
                content: assistant
                    .content
                    .into_iter()
                    .map(|block| match block {
                        wit::ContentBlock::Text(text) => ContentBlock::Text { text },
                        wit::ContentBlock::Thinking(thinking) => ContentBlock::Thinking {
                            text: thinking.text,
                            signature: thinking.signature.map(OpaqueBytes),
                        },
                        wit::ContentBlock::ToolCall(call) => ContentBlock::ToolCall(ToolCall {
                            id: call.id,
                            name: call.name,
                            arguments: arguments_from_text(call.arguments),
                        }),
                    })
                    .collect(),
                stop: stop_from_wit(assistant.stop),
            },
            wit::Message::ToolResult(result) => Message::ToolResult {
                call_id: result.call_id,
                name: result.name,
                content: result.content,
                is_error: result.is_error,
                media: Vec::new(),
            },
        })
        .collect();
    Request {
        model: request.model,
        system: request.system,
        messages,
        tools: request
            .tools
            .into_iter()
            .map(|tool| ToolSpec {
                name: tool.name,
                description: tool.description,
                parameters: arguments_from_text(tool.parameters),
            })
            .collect(),
        max_output_tokens: request.max_output_tokens,
    }
}

impl wit::Guest for Mock {
    fn describe() -> wit::ProviderInfo {
        let info = STATE.with(|state| state.borrow().describe());
        wit::ProviderInfo {
            id: info.id,
            models: info.models.into_iter().map(model_to_wit).collect(),
        }
    }

    fn configure(settings: Vec<(String, String)>) -> Result<(), String> {
        let mut script_text = None;
        let mut origin = "(configured)".to_owned();
        for (name, value) in settings {
            match name.as_str() {
                "script" => script_text = Some(value),
                "origin" => origin = value,
                other => {
                    return Err(format!(
                        "smith/mock has no setting {other:?}; its settings are \"script\" (the script's JSON text) and \"origin\" (where it came from)"
                    ));
                }
            }
        }
        let provider = match script_text {
            Some(text) => {
                ScriptedProvider::new(parse_script(&text, &origin).map_err(|e| e.to_string())?)
            }
            None => ScriptedProvider::demo(),
        };
        STATE.with(|state| *state.borrow_mut() = provider);
        Ok(())
    }

    fn encode(request: wit::Request) -> Result<wit::Exchange, wit::ProviderError> {
        let mut request = request_from_wit(request);
        // The attached media join their messages, as a vendor adapter's
        // would; the script's answers do not depend on them.
        for entry in MEDIA.with(|pending| std::mem::take(&mut *pending.borrow_mut())) {
            if let Some(Message::User { media, .. } | Message::ToolResult { media, .. }) =
                request.messages.get_mut(entry.message as usize)
            {
                media.extend(entry.parts.into_iter().filter_map(|part| {
                    let media_type = smith_contract::MediaType::from_mime(&part.media_type)?;
                    let mut media = smith_contract::Media::new(media_type, part.data);
                    media.name = part.name;
                    Some(media)
                }));
            }
        }
        let exchange = STATE
            .with(|state| state.borrow_mut().encode(&request))
            .map_err(error_to_wit)?;
        Ok(match exchange {
            Exchange::Local { chunks } => wit::Exchange::Local(
                chunks
                    .into_iter()
                    .map(|chunk| wit::LocalChunk {
                        delay_ms: chunk.delay_ms,
                        bytes: chunk.bytes,
                    })
                    .collect(),
            ),
            Exchange::Http(http) => wit::Exchange::Http(wit::HttpExchange {
                method: http.method,
                url: http.url,
                headers: http.headers,
                body: http.body,
            }),
        })
    }

    fn decode(chunk: Vec<u8>) -> Vec<wit::StreamEvent> {
        STATE
            .with(|state| state.borrow_mut().decode(&chunk))
            .into_iter()
            .map(event_to_wit)
            .collect()
    }

    fn finish() -> Vec<wit::StreamEvent> {
        STATE
            .with(|state| state.borrow_mut().finish())
            .into_iter()
            .map(event_to_wit)
            .collect()
    }

    fn models_request(
        _after: Option<String>,
    ) -> Result<Option<wit::HttpExchange>, wit::ProviderError> {
        Ok(None)
    }

    fn decode_models(_body: Vec<u8>) -> Result<wit::ModelPage, wit::ProviderError> {
        Err(wit::ProviderError {
            kind: wit::ErrorKind::InvalidRequest,
            message: "smith/mock has no model listing (its models-request answers none), so there is no listing body to decode; this is a host defect, report it".to_owned(),
            retry_after_ms: None,
        })
    }
}

thread_local! {
    /// The media `attach` handed over for the next `encode`.
    static MEDIA: std::cell::RefCell<Vec<media::MessageMedia>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl media::Guest for Mock {
    fn accepts(_model: String) -> Vec<String> {
        smith_contract::MediaType::ALL
            .into_iter()
            .map(|t| t.mime().to_owned())
            .collect()
    }

    fn attach(media: Vec<media::MessageMedia>) {
        MEDIA.with(|pending| *pending.borrow_mut() = media);
    }
}

smith_plugin_sdk::provider::export_provider!(Mock);
smith_plugin_sdk::media::export_media!(Mock);
