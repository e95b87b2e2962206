//! The one place where the vendor adapters' mirrored contract types
//! (`smith_providers::types`) meet the engine's (`smith_engine::provider`).
//!
//! The adapter crate mirrors the engine's provider contract field for field
//! (it also builds for wasm provider plugins, where the engine is not
//! available). Requests go engine → adapter, events and exchanges come back
//! adapter → engine, through the two conversion traits here (the orphan
//! rule forbids `From` between two foreign crates' types). Every conversion
//! is total and loses nothing.

use smith_engine::provider as engine;
use smith_providers::types as vendor;

/// Engine → adapter, for types that go into a request.
pub(crate) trait ToVendor<T> {
    /// The adapter's mirror of `self`.
    fn to_vendor(&self) -> T;
}

/// Adapter → engine, for what comes back: events, errors, exchanges.
pub(crate) trait ToEngine<T> {
    /// The engine's type for `self`.
    fn to_engine(self) -> T;
}

impl ToVendor<vendor::OpaqueBytes> for engine::OpaqueBytes {
    fn to_vendor(&self) -> vendor::OpaqueBytes {
        vendor::OpaqueBytes(self.0.clone())
    }
}

impl ToEngine<engine::OpaqueBytes> for vendor::OpaqueBytes {
    fn to_engine(self) -> engine::OpaqueBytes {
        let bytes = self;
        engine::OpaqueBytes(bytes.0)
    }
}

impl ToVendor<vendor::StopReason> for engine::StopReason {
    fn to_vendor(&self) -> vendor::StopReason {
        match self {
            engine::StopReason::End => vendor::StopReason::End,
            engine::StopReason::ToolUse => vendor::StopReason::ToolUse,
            engine::StopReason::Limit => vendor::StopReason::Limit,
            engine::StopReason::Abort => vendor::StopReason::Abort,
            engine::StopReason::Error => vendor::StopReason::Error,
        }
    }
}

impl ToEngine<engine::StopReason> for vendor::StopReason {
    fn to_engine(self) -> engine::StopReason {
        let reason = self;
        match reason {
            vendor::StopReason::End => engine::StopReason::End,
            vendor::StopReason::ToolUse => engine::StopReason::ToolUse,
            vendor::StopReason::Limit => engine::StopReason::Limit,
            vendor::StopReason::Abort => engine::StopReason::Abort,
            vendor::StopReason::Error => engine::StopReason::Error,
        }
    }
}

impl ToVendor<vendor::ToolCall> for engine::ToolCall {
    fn to_vendor(&self) -> vendor::ToolCall {
        vendor::ToolCall {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments: self.arguments.clone(),
        }
    }
}

impl ToVendor<vendor::ContentBlock> for engine::ContentBlock {
    fn to_vendor(&self) -> vendor::ContentBlock {
        match self {
            engine::ContentBlock::Text { text } => {
                vendor::ContentBlock::Text { text: text.clone() }
            }
            engine::ContentBlock::Thinking { text, signature } => vendor::ContentBlock::Thinking {
                text: text.clone(),
                signature: signature.as_ref().map(ToVendor::to_vendor),
            },
            engine::ContentBlock::ToolCall(call) => {
                vendor::ContentBlock::ToolCall(call.to_vendor())
            }
        }
    }
}

impl ToVendor<vendor::Message> for engine::Message {
    fn to_vendor(&self) -> vendor::Message {
        match self {
            engine::Message::User { text } => vendor::Message::User { text: text.clone() },
            engine::Message::Assistant { content, stop } => vendor::Message::Assistant {
                content: content.iter().map(ToVendor::to_vendor).collect(),
                stop: stop.to_vendor(),
            },
            engine::Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => vendor::Message::ToolResult {
                call_id: call_id.clone(),
                name: name.clone(),
                content: content.clone(),
                is_error: *is_error,
            },
        }
    }
}

impl ToVendor<vendor::Request> for engine::Request {
    fn to_vendor(&self) -> vendor::Request {
        let request = self;
        vendor::Request {
            model: request.model.clone(),
            system: request.system.clone(),
            messages: request.messages.iter().map(ToVendor::to_vendor).collect(),
            tools: request
                .tools
                .iter()
                .map(|tool| vendor::ToolSpec {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.parameters.clone(),
                })
                .collect(),
            max_output_tokens: request.max_output_tokens,
        }
    }
}

impl ToEngine<engine::Usage> for vendor::Usage {
    fn to_engine(self) -> engine::Usage {
        let usage = self;
        engine::Usage {
            input: usage.input,
            output: usage.output,
            cache_read: usage.cache_read,
            cache_write: usage.cache_write,
        }
    }
}

impl ToEngine<engine::ProviderErrorKind> for vendor::ProviderErrorKind {
    fn to_engine(self) -> engine::ProviderErrorKind {
        let kind = self;
        match kind {
            vendor::ProviderErrorKind::RateLimit => engine::ProviderErrorKind::RateLimit,
            vendor::ProviderErrorKind::Overloaded => engine::ProviderErrorKind::Overloaded,
            vendor::ProviderErrorKind::Auth => engine::ProviderErrorKind::Auth,
            vendor::ProviderErrorKind::InvalidRequest => engine::ProviderErrorKind::InvalidRequest,
            vendor::ProviderErrorKind::ModelUnavailable => {
                engine::ProviderErrorKind::ModelUnavailable
            }
            vendor::ProviderErrorKind::ContextOverflow => {
                engine::ProviderErrorKind::ContextOverflow
            }
            vendor::ProviderErrorKind::MalformedStream => {
                engine::ProviderErrorKind::MalformedStream
            }
            vendor::ProviderErrorKind::Transport => engine::ProviderErrorKind::Transport,
        }
    }
}

impl ToEngine<engine::ProviderError> for vendor::ProviderError {
    fn to_engine(self) -> engine::ProviderError {
        let error = self;
        engine::ProviderError {
            kind: error.kind.to_engine(),
            message: error.message,
            retry_after_ms: error.retry_after_ms,
        }
    }
}

impl ToEngine<engine::StreamEvent> for vendor::StreamEvent {
    fn to_engine(self) -> engine::StreamEvent {
        let event = self;
        match event {
            vendor::StreamEvent::TextDelta { text } => engine::StreamEvent::TextDelta { text },
            vendor::StreamEvent::ThinkingDelta { text, signature } => {
                engine::StreamEvent::ThinkingDelta {
                    text,
                    signature: signature.map(ToEngine::to_engine),
                }
            }
            vendor::StreamEvent::ToolCallStart { id, name } => {
                engine::StreamEvent::ToolCallStart { id, name }
            }
            vendor::StreamEvent::ToolCallDelta { id, arguments } => {
                engine::StreamEvent::ToolCallDelta { id, arguments }
            }
            vendor::StreamEvent::ToolCallEnd { id } => engine::StreamEvent::ToolCallEnd { id },
            vendor::StreamEvent::Usage(usage) => engine::StreamEvent::Usage(usage.to_engine()),
            vendor::StreamEvent::Stop { reason } => engine::StreamEvent::Stop {
                reason: reason.to_engine(),
            },
            vendor::StreamEvent::Error(error) => engine::StreamEvent::Error(error.to_engine()),
        }
    }
}

impl ToEngine<engine::HttpExchange> for vendor::HttpExchange {
    fn to_engine(self) -> engine::HttpExchange {
        let exchange = self;
        engine::HttpExchange {
            method: exchange.method,
            url: exchange.url,
            headers: exchange.headers,
            body: exchange.body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Both sides serialize to the same JSON, so a conversion is checked by
    /// comparing projections: nothing may be lost or changed.
    fn same_json<A: serde::Serialize, B: serde::Serialize>(a: &A, b: &B) {
        assert_eq!(
            serde_json::to_value(a).unwrap(),
            serde_json::to_value(b).unwrap()
        );
    }

    #[test]
    fn a_request_converts_field_for_field() {
        let request = engine::Request {
            model: "m-1".into(),
            system: Some("be brief".into()),
            messages: vec![
                engine::Message::User { text: "hi".into() },
                engine::Message::Assistant {
                    content: vec![
                        engine::ContentBlock::Thinking {
                            text: "hmm".into(),
                            signature: Some(engine::OpaqueBytes(vec![1, 2, 0xff])),
                        },
                        engine::ContentBlock::Thinking {
                            text: "unsigned".into(),
                            signature: None,
                        },
                        engine::ContentBlock::Text { text: "ok".into() },
                        engine::ContentBlock::ToolCall(engine::ToolCall {
                            id: "c1".into(),
                            name: "ls".into(),
                            arguments: json!({"path": "."}),
                        }),
                    ],
                    stop: engine::StopReason::ToolUse,
                },
                engine::Message::ToolResult {
                    call_id: "c1".into(),
                    name: "ls".into(),
                    content: "a\nb".into(),
                    is_error: true,
                },
            ],
            tools: vec![engine::ToolSpec {
                name: "ls".into(),
                description: "list".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: Some(77),
        };
        let converted: vendor::Request = request.to_vendor();
        same_json(&request, &converted);
        assert_eq!(converted.max_output_tokens, Some(77));
    }

    #[test]
    fn every_stop_reason_maps_both_ways() {
        for reason in [
            engine::StopReason::End,
            engine::StopReason::ToolUse,
            engine::StopReason::Limit,
            engine::StopReason::Abort,
            engine::StopReason::Error,
        ] {
            let there = reason.to_vendor();
            same_json(&reason, &there);
            assert_eq!(ToEngine::<engine::StopReason>::to_engine(there), reason);
        }
    }

    #[test]
    fn every_event_converts_field_for_field() {
        let kinds = [
            vendor::ProviderErrorKind::RateLimit,
            vendor::ProviderErrorKind::Overloaded,
            vendor::ProviderErrorKind::Auth,
            vendor::ProviderErrorKind::InvalidRequest,
            vendor::ProviderErrorKind::ModelUnavailable,
            vendor::ProviderErrorKind::ContextOverflow,
            vendor::ProviderErrorKind::MalformedStream,
            vendor::ProviderErrorKind::Transport,
        ];
        let mut events = vec![
            vendor::StreamEvent::TextDelta { text: "t".into() },
            vendor::StreamEvent::ThinkingDelta {
                text: "th".into(),
                signature: Some(vendor::OpaqueBytes(vec![0, 9])),
            },
            vendor::StreamEvent::ThinkingDelta {
                text: "th".into(),
                signature: None,
            },
            vendor::StreamEvent::ToolCallStart {
                id: "i".into(),
                name: "n".into(),
            },
            vendor::StreamEvent::ToolCallDelta {
                id: "i".into(),
                arguments: "{".into(),
            },
            vendor::StreamEvent::ToolCallEnd { id: "i".into() },
            vendor::StreamEvent::Usage(vendor::Usage {
                input: Some(1),
                output: None,
                cache_read: Some(3),
                cache_write: None,
            }),
            vendor::StreamEvent::Stop {
                reason: vendor::StopReason::Limit,
            },
        ];
        for kind in kinds {
            events.push(vendor::StreamEvent::Error(vendor::ProviderError {
                kind,
                message: "m".into(),
                retry_after_ms: Some(5),
            }));
        }
        for event in events {
            let converted: engine::StreamEvent = event.clone().to_engine();
            same_json(&event, &converted);
        }
    }

    #[test]
    fn an_exchange_keeps_credential_handles() {
        let exchange = vendor::HttpExchange {
            method: "POST".into(),
            url: "https://x.invalid/v1".into(),
            headers: vec![("x-api-key".into(), "{{credential:a.b}}".into())],
            body: b"{}".to_vec(),
        };
        let converted: engine::HttpExchange = exchange.clone().to_engine();
        same_json(&exchange, &converted);
    }
}
