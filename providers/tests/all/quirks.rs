//! Constructed streams for behavior the recorded ones do not show: the
//! OpenAI-compatible quirks, error events and error bodies, redacted
//! thinking, Gemini function calls with thought signatures, and the
//! signature round trip back into requests.

use serde_json::{Value, json};
use smith_providers::types::{
    ContentBlock, Decoder, Message, OpaqueBytes, ProviderErrorKind, Request, StopReason,
    StreamEvent, ToolCall, Usage,
};
use smith_providers::{Capabilities, Config, anthropic, google, openai, openai_compatible};

use crate::support::{AnyDecoder, check_rules, fixtures, run};

fn decode(folder: &str, body: &str) -> Vec<StreamEvent> {
    let events = run(&mut AnyDecoder::for_folder(folder), &[body.as_bytes()]);
    check_rules(&events).unwrap_or_else(|why| panic!("{why}: {events:?}"));
    events
}

fn error_kind(events: &[StreamEvent]) -> ProviderErrorKind {
    match events.last() {
        Some(StreamEvent::Error(e)) => e.kind,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn text(t: &str) -> StreamEvent {
    StreamEvent::TextDelta { text: t.into() }
}

fn delta(id: &str, arguments: &str) -> StreamEvent {
    StreamEvent::ToolCallDelta {
        id: id.into(),
        arguments: arguments.into(),
    }
}

#[test]
fn compatible_index_keyed_split_arguments_reasoning_usage_last_and_no_done() {
    // Two calls interleaved by index, ids only in the first piece, reasoning
    // in `reasoning_content`, `finish_reason: "stop"` with calls (Ollama),
    // usage in a final chunk with no choices, and no [DONE].
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"think\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\":1}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n",
    );
    let events = decode("openai-compatible", body);
    assert_eq!(
        events,
        vec![
            StreamEvent::ThinkingDelta {
                text: "think".into(),
                signature: None
            },
            text("Hi"),
            StreamEvent::ToolCallStart {
                id: "a".into(),
                name: "ls".into()
            },
            delta("a", "{\"pa"),
            StreamEvent::ToolCallStart {
                id: "b".into(),
                name: "read".into()
            },
            delta("a", "th\":1}"),
            delta("b", "{}"),
            StreamEvent::ToolCallEnd { id: "a".into() },
            StreamEvent::ToolCallEnd { id: "b".into() },
            StreamEvent::Usage(Usage {
                input: Some(6),
                output: Some(5),
                cache_read: Some(4),
                cache_write: None
            }),
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            },
        ]
    );
    // The same body is incomplete for OpenAI itself, which always sends [DONE].
    let strict = decode("openai-chat", body);
    assert_eq!(error_kind(&strict), ProviderErrorKind::MalformedStream);
}

#[test]
fn compatible_missing_ids_and_reasoning_field() {
    let body = concat!(
        "data: {\"choices\":[{\"delta\":{\"reasoning\":\"hm\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let events = decode("openai-compatible", body);
    assert_eq!(
        events[0],
        StreamEvent::ThinkingDelta {
            text: "hm".into(),
            signature: None
        }
    );
    assert_eq!(
        events[1],
        StreamEvent::ToolCallStart {
            id: "call_1".into(),
            name: "ls".into()
        }
    );
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::ToolUse
        })
    );
}

#[test]
fn errors_in_data_lines_and_error_bodies_are_typed() {
    // OpenRouter: an error object in a data line, status 200.
    let events = decode(
        "openai-compatible",
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"Rate limit exceeded\",\"code\":429}}\n\n",
    );
    assert_eq!(events[0], text("a"));
    assert_eq!(error_kind(&events), ProviderErrorKind::RateLimit);
    // Ollama: a bare JSON body with a message only.
    let events = decode(
        "openai-compatible",
        "{\"error\":\"model \\\"llama9\\\" not found, try pulling it first\"}",
    );
    assert_eq!(error_kind(&events), ProviderErrorKind::ModelUnavailable);
    // OpenAI: a 400 body.
    let events = decode(
        "openai-chat",
        "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens.\",\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}",
    );
    assert_eq!(error_kind(&events), ProviderErrorKind::ContextOverflow);
    // Anthropic: an error event mid-stream, and a 401 body.
    let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n";
    let events = decode(
        "anthropic",
        &format!(
            "{start}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n"
        ),
    );
    assert_eq!(error_kind(&events), ProviderErrorKind::Overloaded);
    let events = decode(
        "anthropic",
        "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
    );
    assert_eq!(error_kind(&events), ProviderErrorKind::Auth);
    // Google: an array body with RetryInfo.
    let events = decode(
        "google",
        "[{\"error\":{\"code\":429,\"message\":\"Resource has been exhausted\",\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"retryDelay\":\"2.5s\"}]}}]",
    );
    match events.last() {
        Some(StreamEvent::Error(e)) => {
            assert_eq!(e.kind, ProviderErrorKind::RateLimit);
            assert_eq!(e.retry_after_ms, Some(2500));
        }
        other => panic!("{other:?}"),
    }
    // OpenAI Responses: response.failed.
    let events = decode(
        "openai-responses",
        "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n",
    );
    assert_eq!(error_kind(&events), ProviderErrorKind::Overloaded);
    // A JSON body that is not an error.
    let events = decode("google", "{\"candidates\":[]}");
    assert_eq!(error_kind(&events), ProviderErrorKind::MalformedStream);
}

#[test]
fn responses_incomplete_at_the_output_limit_stops_with_limit() {
    let events = decode(
        "openai-responses",
        concat!(
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"delta\":\"Hel\"}\n\n",
            "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":9,\"output_tokens\":3,\"input_tokens_details\":{\"cached_tokens\":0}}}}\n\n",
        ),
    );
    assert_eq!(events[0], text("Hel"));
    assert_eq!(
        events[1],
        StreamEvent::Usage(Usage {
            input: Some(9),
            output: Some(3),
            cache_read: Some(0),
            cache_write: None
        })
    );
    assert_eq!(
        events[2],
        StreamEvent::Stop {
            reason: StopReason::Limit
        }
    );
}

#[test]
fn anthropic_invalid_final_tool_json_is_malformed() {
    let body = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"ls\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    let events = decode("anthropic", body);
    assert_eq!(error_kind(&events), ProviderErrorKind::MalformedStream);
}

/// Folds events into an assistant message the way the host does: adjacent
/// thinking deltas merge, signatures append.
fn assemble(events: &[StreamEvent]) -> Message {
    let mut content: Vec<ContentBlock> = Vec::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut stop = StopReason::Error;
    for event in events {
        match event {
            StreamEvent::TextDelta { text } => match content.last_mut() {
                Some(ContentBlock::Text { text: t }) => t.push_str(text),
                _ => content.push(ContentBlock::Text { text: text.clone() }),
            },
            StreamEvent::ThinkingDelta { text, signature } => match content.last_mut() {
                Some(ContentBlock::Thinking {
                    text: t,
                    signature: s,
                }) => {
                    t.push_str(text);
                    if let Some(sig) = signature {
                        s.get_or_insert_with(OpaqueBytes::default)
                            .0
                            .extend_from_slice(&sig.0);
                    }
                }
                _ => content.push(ContentBlock::Thinking {
                    text: text.clone(),
                    signature: signature.clone(),
                }),
            },
            StreamEvent::ToolCallStart { id, name } => {
                calls.push((id.clone(), name.clone(), String::new()));
                content.push(ContentBlock::ToolCall(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: Value::Null,
                }));
            }
            StreamEvent::ToolCallDelta { id, arguments } => {
                calls
                    .iter_mut()
                    .find(|c| &c.0 == id)
                    .unwrap()
                    .2
                    .push_str(arguments);
            }
            StreamEvent::Stop { reason } => stop = *reason,
            _ => {}
        }
    }
    for block in &mut content {
        if let ContentBlock::ToolCall(call) = block {
            let args = &calls.iter().find(|c| c.0 == call.id).unwrap().2;
            call.arguments = serde_json::from_str(args).unwrap();
        }
    }
    Message::Assistant { content, stop }
}

fn caps() -> Capabilities {
    Capabilities {
        tool_use: true,
        thinking: true,
        prompt_cache: false,
        max_output_tokens: Some(32_000),
    }
}

#[test]
fn anthropic_thinking_and_redacted_thinking_round_trip_exactly() {
    let recorded = fixtures()
        .into_iter()
        .find(|f| f.name == "thinking_stream.sse")
        .unwrap();
    let mut events = run(&mut anthropic::StreamDecoder::new(), &[&recorded.bytes]);
    // Prepend a redacted block right before the signed one so the host
    // merges both into one thinking block.
    let redacted = concat!(
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va3pzix\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    let mut decoder = anthropic::StreamDecoder::new();
    let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n";
    let mut prefix = decoder.decode(start.as_bytes());
    prefix.extend(decoder.decode(redacted.as_bytes()));
    events.splice(
        0..0,
        prefix
            .into_iter()
            .filter(|e| !matches!(e, StreamEvent::Usage(_))),
    );
    let message = assemble(&events);
    let text: String = String::from_utf8(recorded.bytes.clone())
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|v| v["delta"]["type"] == "thinking_delta")
        .map(|v| v["delta"]["thinking"].as_str().unwrap().to_owned())
        .collect();
    let signature: String = String::from_utf8(recorded.bytes.clone())
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|v| v["delta"]["type"] == "signature_delta")
        .map(|v| v["delta"]["signature"].as_str().unwrap().to_owned())
        .collect();
    let request = Request {
        model: "claude-sonnet-4-20250514".into(),
        system: None,
        messages: vec![
            Message::user("q"),
            message,
            Message::User {
                text: "more".into(),
                media: Vec::new(),
            },
        ],
        tools: vec![],
        max_output_tokens: None,
    };
    let body = anthropic::encode(&request, &Config::with_capabilities(caps()))
        .unwrap()
        .body_json()
        .unwrap();
    let assistant = &body["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"})
    );
    assert_eq!(
        assistant[1],
        json!({"type": "thinking", "thinking": text, "signature": signature})
    );
    assert_eq!(assistant[2]["type"], "text");
}

#[test]
fn gemini_function_calls_and_signatures_round_trip() {
    let body = concat!(
        "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"plan\",\"thought\":true}]}}],\"responseId\":\"r1\"}\r\n\r\n",
        "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"ls\",\"args\":{\"path\":\".\"}},\"thoughtSignature\":\"c2ln\"}]},\"finishReason\":\"STOP\"}],",
        "\"usageMetadata\":{\"promptTokenCount\":20,\"cachedContentTokenCount\":8,\"candidatesTokenCount\":4,\"thoughtsTokenCount\":6}}\r\n\r\n",
    );
    let events = decode("google", body);
    assert_eq!(
        events[0],
        StreamEvent::ThinkingDelta {
            text: "plan".into(),
            signature: None
        }
    );
    assert!(
        matches!(&events[1], StreamEvent::ThinkingDelta { text, signature: Some(_) } if text.is_empty())
    );
    assert_eq!(
        events[2],
        StreamEvent::ToolCallStart {
            id: "r1_1".into(),
            name: "ls".into()
        }
    );
    assert_eq!(events[3], delta("r1_1", "{\"path\":\".\"}"));
    assert_eq!(events[4], StreamEvent::ToolCallEnd { id: "r1_1".into() });
    assert_eq!(
        events[5],
        StreamEvent::Usage(Usage {
            input: Some(12),
            output: Some(10),
            cache_read: Some(8),
            cache_write: None
        })
    );
    assert_eq!(
        events[6],
        StreamEvent::Stop {
            reason: StopReason::ToolUse
        }
    );
    let message = assemble(&events);
    let request = Request {
        model: "gemini-2.5-pro".into(),
        system: None,
        messages: vec![
            Message::user("q"),
            message,
            Message::ToolResult {
                call_id: "r1_1".into(),
                name: "ls".into(),
                content: "a b".into(),
                is_error: false,
                media: Vec::new(),
            },
        ],
        tools: vec![],
        max_output_tokens: None,
    };
    let body = google::encode(&request, &Config::with_capabilities(caps()))
        .unwrap()
        .body_json()
        .unwrap();
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {"path": "."}}, "thoughtSignature": "c2ln"}]})
    );
    assert_eq!(
        body["contents"][2],
        json!({"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"output": "a b"}}}]})
    );
}

#[test]
fn openai_reasoning_items_round_trip() {
    let recorded = fixtures()
        .into_iter()
        .find(|f| f.name == "reasoning_usage_stream.sse")
        .unwrap();
    let events = run(&mut openai::StreamDecoder::new(), &[&recorded.bytes]);
    let message = assemble(&events);
    let request = Request {
        model: "o4-mini".into(),
        system: None,
        messages: vec![Message::user("q"), message],
        tools: vec![],
        max_output_tokens: None,
    };
    let body = openai::encode(&request, &Config::with_capabilities(caps()))
        .unwrap()
        .body_json()
        .unwrap();
    let reasoning = &body["input"][1];
    assert_eq!(reasoning["type"], "reasoning");
    assert_eq!(
        reasoning["id"],
        "rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405"
    );
    assert!(
        reasoning["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAAABoyXvx")
    );
    assert_eq!(body["input"][2]["type"], "function_call");
    assert_eq!(body["input"][2]["call_id"], "call_CWXgs68YprAjp6t0371hiPOI");
    // Thinking from another provider is not sent to OpenAI.
    let foreign = Request {
        messages: vec![Message::Assistant {
            content: vec![ContentBlock::Thinking {
                text: "x".into(),
                signature: Some(OpaqueBytes(b"junk".to_vec())),
            }],
            stop: StopReason::End,
        }],
        ..request
    };
    let body = openai::encode(&foreign, &Config::with_capabilities(caps()))
        .unwrap()
        .body_json()
        .unwrap();
    assert_eq!(body["input"], json!([]));
    // openai_compatible is reachable for the same request shape.
    let _ = openai_compatible::StreamDecoder::new();
}

fn anthropic_with_stop(reason: &str, tool: bool) -> Vec<StreamEvent> {
    let mut body = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n",
    );
    if tool {
        body.push_str("data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"ls\",\"input\":{}}}\n\n");
        body.push_str("data: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
    }
    body.push_str(&format!(
        "data: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{reason}\"}},\"usage\":{{\"output_tokens\":2}}}}\n\ndata: {{\"type\":\"message_stop\"}}\n\n"
    ));
    decode("anthropic", &body)
}

#[test]
fn anthropic_stop_reasons_map_to_the_contract() {
    let stop = |reason| StreamEvent::Stop { reason };
    assert_eq!(
        anthropic_with_stop("end_turn", false).last(),
        Some(&stop(StopReason::End))
    );
    assert_eq!(
        anthropic_with_stop("stop_sequence", false).last(),
        Some(&stop(StopReason::End))
    );
    assert_eq!(
        anthropic_with_stop("pause_turn", false).last(),
        Some(&stop(StopReason::End))
    );
    assert_eq!(
        anthropic_with_stop("max_tokens", false).last(),
        Some(&stop(StopReason::Limit))
    );
    assert_eq!(
        anthropic_with_stop("model_context_window_exceeded", false).last(),
        Some(&stop(StopReason::Limit))
    );
    assert_eq!(
        anthropic_with_stop("tool_use", true).last(),
        Some(&stop(StopReason::ToolUse))
    );
    // tool_use with only server-side tools: no client call to answer.
    assert_eq!(
        anthropic_with_stop("tool_use", false).last(),
        Some(&stop(StopReason::End))
    );
    // An empty tool input means "no arguments".
    let events = anthropic_with_stop("tool_use", true);
    assert_eq!(events[2], delta("t", "{}"));
    assert_eq!(
        error_kind(&anthropic_with_stop("refusal", false)),
        ProviderErrorKind::InvalidRequest
    );
}

#[test]
fn compatible_reused_index_with_new_id_starts_a_new_call() {
    let body = concat!(
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"y\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"p\\\":1}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    );
    let events = decode("openai-compatible", body);
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStart { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(starts, ["x", "y"]);
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::ToolUse
        })
    );
}

#[test]
fn line_end_style_does_not_change_events() {
    // Every LF-framed recording decodes the same with CR or CRLF line ends.
    for fixture in fixtures() {
        if fixture.bytes.contains(&b'\r') {
            continue;
        }
        let whole = run(
            &mut AnyDecoder::for_folder(fixture.folder),
            &[&fixture.bytes],
        );
        for replacement in [&b"\r"[..], &b"\r\n"[..]] {
            let mut converted = Vec::new();
            for byte in &fixture.bytes {
                if *byte == b'\n' {
                    converted.extend_from_slice(replacement);
                } else {
                    converted.push(*byte);
                }
            }
            // Split between CR and LF too.
            let mid = converted.len() / 2;
            let got = run(
                &mut AnyDecoder::for_folder(fixture.folder),
                &[&converted[..mid], &converted[mid..]],
            );
            assert_eq!(
                got, whole,
                "{}/{} with {:?}",
                fixture.folder, fixture.name, replacement
            );
        }
    }
}
