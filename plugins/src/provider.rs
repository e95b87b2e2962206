//! Provider plugins: a loaded `provider-plugin` component wrapped as a
//! `smith_engine::provider::Provider`, so the engine cannot tell it from a
//! native provider.

use std::sync::Arc;

use smith_engine::provider as engine;
use wasmtime::Store;
use wasmtime::component::{InstancePre, Linker};

use crate::bindings::media::MediaExports;
use crate::bindings::media::exports::smith::plugin::media as wit_media;
use crate::bindings::provider::exports::smith::plugin::provider as wit;
use crate::bindings::provider::{ProviderPlugin, ProviderPluginPre};
use crate::component::{Instance, PluginComponent, World};
use crate::error::{ErrorKind, Phase, PluginError};
use crate::runtime::{CallControl, Limits, Runtime, State, call_error};
use crate::scope::plugin_scope;

/// The provider world of the contract.
#[derive(Debug, Clone, Copy)]
pub struct ProviderWorld;

impl World for ProviderWorld {
    const NAME: &'static str = "provider";
    const TYPE_NAME: &'static str = "ProviderComponent";
    type Pre = ProviderPluginPre<State>;

    fn linker(runtime: &Runtime) -> &Linker<State> {
        &runtime.provider_linker
    }

    fn typed(pre: InstancePre<State>) -> wasmtime::Result<Self::Pre> {
        ProviderPluginPre::new(pre)
    }
}

/// A compiled, pre-instantiated provider component; instantiate it as many
/// times as needed.
pub type ProviderComponent = PluginComponent<ProviderWorld>;

impl PluginComponent<ProviderWorld> {
    /// A fresh instance configured with `settings`; calls `configure` and
    /// `describe`.
    ///
    /// # Errors
    ///
    /// When instantiation fails, the plugin traps, or `configure` rejects
    /// the settings (the plugin's message is kept).
    pub fn instantiate(&self, settings: &[(String, String)]) -> Result<WasmProvider, PluginError> {
        self.instantiate_checked(settings).map_err(|e| match e {
            InstantiateError::Rejected(message) => PluginError::new(
                &self.name,
                Phase::Call("configure"),
                ErrorKind::Guest,
                format!("the plugin rejected its settings: {message}"),
            ),
            InstantiateError::Failed(error) => error,
        })
    }

    /// Like [`ProviderComponent::instantiate`], but tells a refusal of the
    /// settings (the plugin's own message, for the host to present as a
    /// settings error) apart from a failure of the plugin or the host.
    ///
    /// # Errors
    ///
    /// [`InstantiateError::Rejected`] when `configure` refused the settings,
    /// [`InstantiateError::Failed`] otherwise.
    pub fn instantiate_checked(
        &self,
        settings: &[(String, String)],
    ) -> Result<WasmProvider, InstantiateError> {
        let runtime = Runtime::global()?;
        let control = Arc::new(CallControl::default());
        let scope = plugin_scope(&self.name);
        let (store, instance) = {
            let _guard = scope.enter();
            let mut store = runtime.new_store(&self.name, self.limits, Arc::clone(&control), None);
            runtime.arm(&control, self.limits);
            let instance = self
                .pre
                .instance_pre()
                .instantiate(&mut store)
                .and_then(|instance| {
                    let base = ProviderPlugin::new(&mut store, &instance)?;
                    // A component of the `provider-plugin` world alone has
                    // no `media` export: it loads as it always did.
                    let media = MediaExports::new(&mut store, &instance).ok().map(Arc::new);
                    Ok((base, media))
                });
            runtime.disarm(&control);
            let instance = instance
                .map_err(|e| call_error(store.data(), Phase::Instantiate, self.limits, &e))?;
            (store, instance)
        };
        let (instance, media) = instance;
        let mut provider = WasmProvider {
            name: self.name.clone(),
            limits: self.limits,
            control,
            live: Some((store, instance)),
            media,
            image_input: Vec::new(),
            info: engine::ProviderInfo {
                id: String::new(),
                models: Vec::new(),
            },
            scope,
            last_error: None,
            left_log: Default::default(),
        };
        let settings = settings.to_vec();
        provider
            .call("configure", |store, plugin| {
                plugin
                    .smith_plugin_provider()
                    .call_configure(store, &settings)
            })?
            .map_err(InstantiateError::Rejected)?;
        let info = provider.call("describe", |store, plugin| {
            plugin.smith_plugin_provider().call_describe(store)
        })?;
        provider.image_input = info
            .models
            .iter()
            .map(|m| (m.id.clone(), m.image_input))
            .collect();
        provider.info = info_from_wit(info);
        Ok(provider)
    }
}

/// Why [`ProviderComponent::instantiate_checked`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstantiateError {
    /// The plugin's `configure` refused the settings; its message.
    Rejected(String),
    /// The instance could not be made or the plugin failed.
    Failed(PluginError),
}

impl From<PluginError> for InstantiateError {
    fn from(error: PluginError) -> Self {
        Self::Failed(error)
    }
}

/// Stops the call in flight (or the next one) in a [`WasmProvider`]: the
/// plugin sees `cancelled() == true`, and is destroyed if it still runs
/// after the abort grace period.
#[derive(Clone, Debug)]
pub struct AbortHandle {
    control: Arc<CallControl>,
}

impl AbortHandle {
    pub(crate) fn new(control: Arc<CallControl>) -> Self {
        Self { control }
    }

    /// Asks the plugin to stop the call in flight, or the next one when
    /// none is in flight.
    pub fn abort(&self) {
        if let Ok(runtime) = Runtime::global() {
            runtime.abort(&self.control);
        }
    }

    /// Asks the plugin to stop the call in flight; with none in flight
    /// nothing happens (what a run's abort does: the next call, in a later
    /// run, is not affected).
    pub fn interrupt(&self) {
        if let Ok(runtime) = Runtime::global() {
            runtime.interrupt(&self.control);
        }
    }
}

/// A live provider plugin instance: implements the engine's
/// [`Provider`](engine::Provider) trait by calling the guest.
pub struct WasmProvider {
    name: String,
    limits: Limits,
    control: Arc<CallControl>,
    live: Option<(Store<State>, ProviderPlugin)>,
    /// The optional `media` export (none for a `provider-plugin` component).
    media: Option<Arc<MediaExports>>,
    /// Whether each model of `describe` reads images (none: not stated).
    image_input: Vec<(String, Option<bool>)>,
    info: engine::ProviderInfo,
    scope: smith_alloc::Scope,
    left_log: crate::component::LeftLog,
    last_error: Option<PluginError>,
}

impl std::fmt::Debug for WasmProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmProvider")
            .field("name", &self.name)
            .field("live", &self.live.is_some())
            .finish()
    }
}

impl WasmProvider {
    /// A handle that aborts this provider's calls from another thread.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            control: Arc::clone(&self.control),
        }
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the instance is still alive (not destroyed by a deadline,
    /// trap or memory limit).
    pub fn is_alive(&self) -> bool {
        self.live.is_some()
    }

    /// Drains the plugin's log lines, with how many were dropped.
    pub fn take_log(&mut self) -> (Vec<(crate::LogLevel, String)>, u64) {
        // The lines of an instance a failure destroyed come first.
        let (mut lines, left_dropped) = std::mem::take(&mut self.left_log);
        let dropped = self.live.as_mut().map_or(0, |(store, _)| {
            let state = store.data_mut();
            lines.append(&mut state.log);
            std::mem::take(&mut state.log_dropped)
        });
        (lines, dropped + left_dropped)
    }

    /// The failure that destroyed the instance, if one did.
    pub fn last_error(&self) -> Option<&PluginError> {
        self.last_error.as_ref()
    }

    /// The linear memory the instance holds, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.live
            .as_ref()
            .map_or(0, |(store, _)| store.data().limiter.current)
    }

    /// Calls `f` on the live instance under the deadline, inside the
    /// plugin's accounting scope. A failure destroys the instance.
    fn call<R>(
        &mut self,
        export: &'static str,
        f: impl FnOnce(&mut Store<State>, &ProviderPlugin) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let was_live = self.live.is_some();
        let mut result = Instance {
            name: &self.name,
            limits: self.limits,
            control: &self.control,
            scope: &self.scope,
            live: &mut self.live,
            left_log: &mut self.left_log,
        }
        .call(export, f);
        // The failure that destroyed the instance is kept; later calls
        // refused because it is gone do not replace it.
        if let (Err(error), true, None) = (&result, was_live, &self.live) {
            self.last_error = Some(error.clone());
        }
        // A call refused because the instance is gone says what destroyed
        // it, not only that it is gone.
        if let (Err(error), Some(cause)) = (&mut result, &self.last_error)
            && error.kind == ErrorKind::Destroyed
        {
            error.message = format!(
                "the plugin's instance was destroyed by an earlier failure — {} ({}): {} — and serves no more calls; that failure is what to fix, and the plugin starts afresh when it is loaded again (the next smith command)",
                cause.phase,
                cause.kind.name(),
                cause.message
            );
        }
        result
    }
}

/// Prices per million tokens a listing states; each unknown until stated.
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

/// One model of a provider plugin's listing (`model-info`): every field
/// but the id is `None` when the provider did not state it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListedModel {
    /// The model id.
    pub id: String,
    /// A name for people.
    pub display_name: Option<String>,
    /// The context window in tokens.
    pub context_window: Option<u64>,
    /// The output limit in tokens.
    pub max_output_tokens: Option<u32>,
    /// Whether the model reads text input.
    pub text_input: Option<bool>,
    /// Whether the model reads image input.
    pub image_input: Option<bool>,
    /// Whether the model calls tools.
    pub tools: Option<bool>,
    /// Whether the model thinks on request.
    pub thinking: Option<bool>,
    /// Prices.
    pub pricing: ListedPricing,
}

/// One page of a provider plugin's model listing (`model-page`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelPage {
    /// The models on the page.
    pub models: Vec<ListedModel>,
    /// The cursor of the next page; `None` on the last.
    pub next: Option<String>,
}

impl WasmProvider {
    /// The plugin's `models-request`: the exchange that fetches the listing
    /// page after `after` (the first for `None`), or `None` when the
    /// provider has no listing.
    ///
    /// # Errors
    ///
    /// The plugin's typed error, or a transport error naming the plugin
    /// when it failed (trap, deadline, memory limit).
    pub fn models_request(
        &mut self,
        after: Option<&str>,
    ) -> Result<Option<engine::HttpExchange>, engine::ProviderError> {
        let after = after.map(str::to_owned);
        let result = self
            .call("models-request", |store, plugin| {
                plugin
                    .smith_plugin_provider()
                    .call_models_request(store, after.as_deref())
            })
            .map_err(|e| plugin_failure(&e))?;
        result
            .map(|exchange| {
                exchange.map(|http| engine::HttpExchange {
                    method: http.method,
                    url: http.url,
                    headers: http.headers,
                    body: http.body,
                })
            })
            .map_err(error_from_wit)
    }

    /// The plugin's `decode-models`: one listing body as a page.
    ///
    /// # Errors
    ///
    /// The plugin's typed error (the vendor's error body, or a body of the
    /// wrong shape), or a transport error naming the plugin when it failed.
    pub fn decode_models(&mut self, body: &[u8]) -> Result<ModelPage, engine::ProviderError> {
        let result = self
            .call("decode-models", |store, plugin| {
                plugin
                    .smith_plugin_provider()
                    .call_decode_models(store, body)
            })
            .map_err(|e| plugin_failure(&e))?;
        let page = result.map_err(error_from_wit)?;
        Ok(ModelPage {
            models: page
                .models
                .into_iter()
                .map(|m| ListedModel {
                    id: m.id,
                    display_name: m.display_name,
                    context_window: m.context_window,
                    max_output_tokens: m.max_output_tokens,
                    text_input: m.text_input,
                    image_input: m.image_input,
                    tools: m.tools,
                    thinking: m.thinking,
                    pricing: m
                        .pricing
                        .map_or_else(ListedPricing::default, |p| ListedPricing {
                            input: p.input,
                            output: p.output,
                            cache_read: p.cache_read,
                            cache_write: p.cache_write,
                        }),
                })
                .collect(),
            next: page.next,
        })
    }
}

/// How a failure of the plugin itself reaches the caller. Running out of
/// memory is deterministic (the same input would need the same memory
/// again), so it is an invalid request, which is neither retried nor
/// failed over; anything else (a trap, a deadline) may not recur in a fresh
/// instance and stays a transport failure, which is.
fn plugin_failure(error: &PluginError) -> engine::ProviderError {
    let kind = match error.kind {
        ErrorKind::Memory => engine::ProviderErrorKind::InvalidRequest,
        _ => engine::ProviderErrorKind::Transport,
    };
    engine::ProviderError::new(kind, error.to_string())
}

/// [`plugin_failure`] of `encode`: there, running out of memory means the
/// request is too large to build (built-in provider plugins have memory for
/// the largest body smith sends), so it is a `plugin_memory` error: like a
/// context overflow, a run answers it by compacting once and trying again,
/// and it is not retried as it is.
fn encode_failure(error: &PluginError) -> engine::ProviderError {
    match error.kind {
        ErrorKind::Memory => {
            engine::ProviderError::new(engine::ProviderErrorKind::PluginMemory, error.to_string())
        }
        _ => plugin_failure(error),
    }
}

impl engine::Provider for WasmProvider {
    fn describe(&self) -> engine::ProviderInfo {
        self.info.clone()
    }

    fn interrupter(&self) -> Option<engine::Interrupt> {
        let handle = self.abort_handle();
        Some(Arc::new(move || handle.interrupt()))
    }

    fn media_support(&mut self, model: &str) -> engine::MediaSupport {
        let types = self.media_types(model);
        let images = self
            .image_input
            .iter()
            .find(|(id, _)| id == model)
            .and_then(|(_, images)| *images);
        engine::MediaSupport {
            model: format!("{}/{model}", self.info.id),
            images: match &types {
                Some(types) if types.iter().any(|t| t.is_image()) => images,
                _ => Some(false),
            },
            source: format!("the model list of the provider plugin {}", self.name),
            pdf: types
                .as_ref()
                .is_some_and(|t| t.contains(&engine::MediaType::Pdf)),
            encoder: types.is_some(),
        }
    }

    fn encode(
        &mut self,
        request: &engine::Request,
    ) -> Result<engine::Exchange, engine::ProviderError> {
        // The provider interface's messages carry text only: the media go
        // through the plugin's `media` export, and a plugin without it is
        // refused a request with media rather than have them dropped.
        if request.has_media() {
            let Some(media) = self.media.clone() else {
                let part = request.media().next().map(engine::Media::summary);
                return Err(engine::ProviderError::new(
                    engine::ProviderErrorKind::InvalidRequest,
                    format!(
                        "the request carries {} but the provider plugin {} has no `media` export, so it cannot be sent images or documents; nothing was sent. Use a provider that takes them, or remove the attachment (fork the session before it) and describe the file in text",
                        part.unwrap_or_default(),
                        self.name
                    ),
                ));
            };
            let attached = media_to_wit(request);
            self.call("attach", |store, _| {
                media.smith_plugin_media().call_attach(store, &attached)
            })
            .map_err(|e| encode_failure(&e))?;
        }
        let request = request_to_wit(request);
        let result = self
            .call("encode", |store, plugin| {
                plugin.smith_plugin_provider().call_encode(store, &request)
            })
            .map_err(|e| encode_failure(&e))?;
        result.map(exchange_from_wit).map_err(error_from_wit)
    }

    fn decode(&mut self, chunk: &[u8]) -> Vec<engine::StreamEvent> {
        match self.call("decode", |store, plugin| {
            plugin.smith_plugin_provider().call_decode(store, chunk)
        }) {
            Ok(events) => events.into_iter().map(event_from_wit).collect(),
            Err(err) => vec![engine::StreamEvent::Error(
                engine::ProviderError::malformed(err.to_string()),
            )],
        }
    }

    fn finish(&mut self) -> Vec<engine::StreamEvent> {
        match self.call("finish", |store, plugin| {
            plugin.smith_plugin_provider().call_finish(store)
        }) {
            Ok(events) => events.into_iter().map(event_from_wit).collect(),
            Err(err) => vec![engine::StreamEvent::Error(
                engine::ProviderError::malformed(err.to_string()),
            )],
        }
    }
}

// ---------------------------------------------------------------------------
// Conversions between the engine's types and the WIT types.

fn stop_to_wit(reason: engine::StopReason) -> wit::StopReason {
    match reason {
        engine::StopReason::End => wit::StopReason::End,
        engine::StopReason::ToolUse => wit::StopReason::ToolUse,
        engine::StopReason::Limit => wit::StopReason::Limit,
        engine::StopReason::Abort => wit::StopReason::Abort,
        engine::StopReason::Error => wit::StopReason::Error,
    }
}

fn stop_from_wit(reason: wit::StopReason) -> engine::StopReason {
    match reason {
        wit::StopReason::End => engine::StopReason::End,
        wit::StopReason::ToolUse => engine::StopReason::ToolUse,
        wit::StopReason::Limit => engine::StopReason::Limit,
        wit::StopReason::Abort => engine::StopReason::Abort,
        wit::StopReason::Error => engine::StopReason::Error,
    }
}

fn error_from_wit(error: wit::ProviderError) -> engine::ProviderError {
    use engine::ProviderErrorKind as K;
    let kind = match error.kind {
        wit::ErrorKind::RateLimit => K::RateLimit,
        wit::ErrorKind::Overloaded => K::Overloaded,
        wit::ErrorKind::Auth => K::Auth,
        wit::ErrorKind::InvalidRequest => K::InvalidRequest,
        wit::ErrorKind::ModelUnavailable => K::ModelUnavailable,
        wit::ErrorKind::ContextOverflow => K::ContextOverflow,
        wit::ErrorKind::MalformedStream => K::MalformedStream,
        wit::ErrorKind::Transport => K::Transport,
    };
    engine::ProviderError {
        kind,
        message: error.message,
        retry_after_ms: error.retry_after_ms,
    }
}

fn usage_from_wit(usage: wit::Usage) -> engine::Usage {
    engine::Usage {
        input: usage.input,
        output: usage.output,
        cache_read: usage.cache_read,
        cache_write: usage.cache_write,
    }
}

fn event_from_wit(event: wit::StreamEvent) -> engine::StreamEvent {
    match event {
        wit::StreamEvent::TextDelta(text) => engine::StreamEvent::TextDelta { text },
        wit::StreamEvent::ThinkingDelta(thinking) => engine::StreamEvent::ThinkingDelta {
            text: thinking.text,
            signature: thinking.signature.map(engine::OpaqueBytes),
        },
        wit::StreamEvent::ToolCallStart(start) => engine::StreamEvent::ToolCallStart {
            id: start.id,
            name: start.name,
        },
        wit::StreamEvent::ToolCallDelta(delta) => engine::StreamEvent::ToolCallDelta {
            id: delta.id,
            arguments: delta.arguments,
        },
        wit::StreamEvent::ToolCallEnd(id) => engine::StreamEvent::ToolCallEnd { id },
        wit::StreamEvent::Usage(usage) => engine::StreamEvent::Usage(usage_from_wit(usage)),
        wit::StreamEvent::Stop(reason) => engine::StreamEvent::Stop {
            reason: stop_from_wit(reason),
        },
        wit::StreamEvent::Error(error) => engine::StreamEvent::Error(error_from_wit(error)),
    }
}

fn info_from_wit(info: wit::ProviderInfo) -> engine::ProviderInfo {
    engine::ProviderInfo {
        id: info.id,
        models: info
            .models
            .into_iter()
            .map(|model| engine::ModelInfo {
                id: model.id,
                context_window: model.context_window,
                max_output_tokens: model.max_output_tokens,
                // The engine's prices are all-or-nothing.
                pricing: model.pricing.and_then(|p| {
                    Some(engine::Pricing {
                        input: p.input?,
                        output: p.output?,
                        cache_read: p.cache_read?,
                        cache_write: p.cache_write?,
                    })
                }),
            })
            .collect(),
    }
}

fn exchange_from_wit(exchange: wit::Exchange) -> engine::Exchange {
    match exchange {
        wit::Exchange::Local(chunks) => engine::Exchange::Local {
            chunks: chunks
                .into_iter()
                .map(|chunk| engine::LocalChunk {
                    delay_ms: chunk.delay_ms,
                    bytes: chunk.bytes,
                })
                .collect(),
        },
        wit::Exchange::Http(http) => engine::Exchange::Http(engine::HttpExchange {
            method: http.method,
            url: http.url,
            headers: http.headers,
            body: http.body,
        }),
    }
}

fn request_to_wit(request: &engine::Request) -> wit::Request {
    let messages = request
        .messages
        .iter()
        .map(|message| match message {
            engine::Message::User { text, .. } => wit::Message::User(text.clone()),
            engine::Message::Assistant { content, stop } => {
                wit::Message::Assistant(wit::AssistantMessage {
                    content: content
                        .iter()
                        .map(|block| match block {
                            engine::ContentBlock::Text { text } => {
                                wit::ContentBlock::Text(text.clone())
                            }
                            engine::ContentBlock::Thinking { text, signature } => {
                                wit::ContentBlock::Thinking(wit::Thinking {
                                    text: text.clone(),
                                    signature: signature.as_ref().map(|s| s.0.clone()),
                                })
                            }
                            engine::ContentBlock::ToolCall(call) => {
                                wit::ContentBlock::ToolCall(wit::ToolCall {
                                    id: call.id.clone(),
                                    name: call.name.clone(),
                                    arguments: call.arguments.to_string(),
                                })
                            }
                        })
                        .collect(),
                    stop: stop_to_wit(*stop),
                })
            }
            engine::Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
                ..
            } => wit::Message::ToolResult(wit::ToolResult {
                call_id: call_id.clone(),
                name: name.clone(),
                content: content.clone(),
                is_error: *is_error,
            }),
        })
        .collect();
    wit::Request {
        model: request.model.clone(),
        system: request.system.clone(),
        messages,
        tools: request
            .tools
            .iter()
            .map(|tool| wit::ToolSpec {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool.parameters.to_string(),
            })
            .collect(),
        max_output_tokens: request.max_output_tokens,
    }
}

/// The media parts of `request`'s messages, by message index.
fn media_to_wit(request: &engine::Request) -> Vec<wit_media::MessageMedia> {
    request
        .messages
        .iter()
        .enumerate()
        .filter(|(_, message)| !message.media().is_empty())
        .map(|(index, message)| wit_media::MessageMedia {
            message: u32::try_from(index).unwrap_or(u32::MAX),
            parts: message
                .media()
                .iter()
                .map(|part| wit_media::MediaPart {
                    media_type: part.media_type.mime().to_owned(),
                    data: part.bytes().to_vec(),
                    name: part.name.clone(),
                })
                .collect(),
        })
        .collect()
}

impl WasmProvider {
    /// The media types the plugin sends to `model` (its `media.accepts`),
    /// or `None` when it has no `media` export or the call failed.
    pub fn media_types(&mut self, model: &str) -> Option<Vec<engine::MediaType>> {
        let media = self.media.clone()?;
        let model = model.to_owned();
        let types = self
            .call("accepts", |store, _| {
                media.smith_plugin_media().call_accepts(store, &model)
            })
            .ok()?;
        Some(
            types
                .iter()
                .filter_map(|t| engine::MediaType::from_mime(t))
                .collect(),
        )
    }
}
