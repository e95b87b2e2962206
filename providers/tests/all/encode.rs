//! Request encoding: each vendor's body checked against the expected JSON,
//! capability gating, credentials as handles only.

use serde_json::{Value, json};
use smith_providers::types::{
    ContentBlock, Message, OpaqueBytes, ProviderErrorKind, Request, StopReason, ToolCall, ToolSpec,
};
use smith_providers::{
    Capabilities, Config, ThinkingLevel, anthropic, google, openai, openai_compatible,
};

fn request() -> Request {
    Request {
        model: "m-1".into(),
        system: Some("Be brief.".into()),
        messages: vec![
            Message::User {
                text: "list files".into(),
                media: Vec::new(),
            },
            Message::Assistant {
                content: vec![
                    ContentBlock::Thinking {
                        text: "unsigned".into(),
                        signature: None,
                    },
                    ContentBlock::Text {
                        text: "Listing.".into(),
                    },
                    ContentBlock::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "ls".into(),
                        arguments: json!({"path": "."}),
                    }),
                ],
                stop: StopReason::ToolUse,
            },
            Message::ToolResult {
                call_id: "c1".into(),
                name: "ls".into(),
                content: "a\nb".into(),
                is_error: false,
                media: Vec::new(),
            },
            Message::User {
                text: "thanks".into(),
                media: Vec::new(),
            },
        ],
        tools: vec![ToolSpec {
            name: "ls".into(),
            description: "List a directory.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_output_tokens: Some(50_000),
    }
}

fn full() -> Config {
    Config {
        capabilities: Capabilities {
            tool_use: true,
            thinking: true,
            prompt_cache: true,
            max_output_tokens: Some(32_000),
        },
        thinking: Some(ThinkingLevel::Medium),
        ..Config::default()
    }
}

fn plain() -> Config {
    Config {
        capabilities: Capabilities {
            tool_use: true,
            ..Capabilities::default()
        },
        thinking: Some(ThinkingLevel::High),
        ..Config::default()
    }
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}})
}

#[test]
fn anthropic_body_with_cache_breakpoints_and_thinking() {
    let mut req = request();
    req.messages.insert(
        3,
        Message::Assistant {
            content: vec![ContentBlock::Text {
                text: "Done.".into(),
            }],
            stop: StopReason::End,
        },
    );
    let exchange = anthropic::encode(&req, &full()).unwrap();
    assert_eq!(exchange.url, "https://api.anthropic.com/v1/messages");
    assert_eq!(
        exchange.header("x-api-key"),
        Some("{{credential:anthropic.api_key}}")
    );
    assert_eq!(exchange.header("anthropic-version"), Some("2023-06-01"));
    let eph = json!({"type": "ephemeral"});
    assert_eq!(
        exchange.body_json().unwrap(),
        json!({
            "model": "m-1",
            "max_tokens": 32000,
            "stream": true,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": eph}],
            "tools": [{"name": "ls", "description": "List a directory.", "input_schema": schema(), "cache_control": eph}],
            "thinking": {"type": "enabled", "budget_tokens": 8192},
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "list files"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Listing."},
                    {"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "."}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "a\nb", "cache_control": eph}
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
                {"role": "user", "content": [{"type": "text", "text": "thanks", "cache_control": eph}]}
            ]
        })
    );
}

#[test]
fn anthropic_without_advertised_options_sends_none_of_them() {
    let body = anthropic::encode(&request(), &plain())
        .unwrap()
        .body_json()
        .unwrap();
    assert_eq!(body["max_tokens"], 50000);
    assert!(body.get("thinking").is_none());
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Be brief."}])
    );
    assert!(!body.to_string().contains("cache_control"));
    // Thinking that does not fit under max_tokens is left out.
    let mut tight = full();
    tight.capabilities.max_output_tokens = Some(1_000);
    let body = anthropic::encode(&request(), &tight)
        .unwrap()
        .body_json()
        .unwrap();
    assert_eq!(body["max_tokens"], 1000);
    assert!(body.get("thinking").is_none());
}

#[test]
fn anthropic_omits_thinking_when_a_tool_loop_continues_without_returnable_thinking() {
    // The request ends with tool results and the assistant message that
    // made the calls carries only unsigned thinking: enabling thinking now
    // would be rejected, so the request goes without it.
    let body = anthropic::encode(&request(), &full())
        .unwrap()
        .body_json()
        .unwrap();
    assert!(body.get("thinking").is_none(), "{body}");
    // With the signed thinking returned first, thinking stays enabled.
    let mut req = request();
    let mut signature = b"ATHK".to_vec();
    signature.extend_from_slice(&2u32.to_be_bytes());
    signature.extend_from_slice(&3u32.to_be_bytes());
    signature.extend_from_slice(b"sig");
    if let Message::Assistant { content, .. } = &mut req.messages[1] {
        content[0] = ContentBlock::Thinking {
            text: "hm".into(),
            signature: Some(OpaqueBytes(signature)),
        };
    }
    let body = anthropic::encode(&req, &full())
        .unwrap()
        .body_json()
        .unwrap();
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
    assert_eq!(
        body["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "hm", "signature": "sig"})
    );
}

#[test]
fn openai_responses_body() {
    let exchange = openai::encode(&request(), &full()).unwrap();
    assert_eq!(exchange.url, "https://api.openai.com/v1/responses");
    assert_eq!(
        exchange.header("authorization"),
        Some("Bearer {{credential:openai.api_key}}")
    );
    assert_eq!(
        exchange.body_json().unwrap(),
        json!({
            "model": "m-1",
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "list files"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]},
                {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{\"path\":\".\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "a\nb"},
                {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]}
            ],
            "stream": true,
            "store": false,
            "tools": [{"type": "function", "name": "ls", "description": "List a directory.", "parameters": schema()}],
            "max_output_tokens": 32000,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "include": ["reasoning.encrypted_content"]
        })
    );
    let body = openai::encode(&request(), &plain())
        .unwrap()
        .body_json()
        .unwrap();
    assert!(body.get("reasoning").is_none() && body.get("include").is_none());
}

#[test]
fn openai_chat_and_compatible_bodies() {
    let expected_messages = json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": "Listing.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "a\nb"},
        {"role": "user", "content": "thanks"}
    ]);
    let tools = json!([{"type": "function", "function": {"name": "ls", "description": "List a directory.", "parameters": schema()}}]);
    let exchange = openai::encode_chat(&request(), &full()).unwrap();
    assert_eq!(exchange.url, "https://api.openai.com/v1/chat/completions");
    assert_eq!(
        exchange.body_json().unwrap(),
        json!({
            "model": "m-1", "messages": expected_messages, "stream": true,
            "stream_options": {"include_usage": true}, "tools": tools,
            "max_completion_tokens": 32000, "reasoning_effort": "medium"
        })
    );
    let local = Config {
        base_url: Some("http://localhost:11434/v1/".into()),
        ..full()
    };
    let exchange = openai_compatible::encode(&request(), &local).unwrap();
    assert_eq!(exchange.url, "http://localhost:11434/v1/chat/completions");
    assert_eq!(exchange.header("authorization"), None);
    assert_eq!(
        exchange.body_json().unwrap(),
        json!({
            "model": "m-1", "messages": expected_messages, "stream": true,
            "stream_options": {"include_usage": true}, "tools": tools, "max_tokens": 32000
        })
    );
    let routed = Config {
        base_url: Some("https://openrouter.ai/api/v1".into()),
        credential: Some("openrouter.api_key".into()),
        ..plain()
    };
    let exchange = openai_compatible::encode(&request(), &routed).unwrap();
    assert_eq!(
        exchange.header("authorization"),
        Some("Bearer {{credential:openrouter.api_key}}")
    );
    let err = openai_compatible::encode(&request(), &plain()).unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(err.message.contains("base URL"), "{}", err.message);
}

#[test]
fn google_body() {
    let exchange = google::encode(&request(), &full()).unwrap();
    assert_eq!(
        exchange.url,
        "https://generativelanguage.googleapis.com/v1beta/models/m-1:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        exchange.header("x-goog-api-key"),
        Some("{{credential:google.api_key}}")
    );
    assert_eq!(
        exchange.body_json().unwrap(),
        json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "list files"}]},
                {"role": "model", "parts": [{"text": "Listing."}, {"functionCall": {"name": "ls", "args": {"path": "."}}}]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "ls", "response": {"output": "a\nb"}}},
                    {"text": "thanks"}
                ]}
            ],
            "tools": [{"functionDeclarations": [{"name": "ls", "description": "List a directory.", "parametersJsonSchema": schema()}]}],
            "generationConfig": {"maxOutputTokens": 32000, "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}}
        })
    );
    let body = google::encode(&request(), &plain())
        .unwrap()
        .body_json()
        .unwrap();
    assert_eq!(body["generationConfig"], json!({"maxOutputTokens": 50000}));
}

#[test]
fn empty_user_text_is_not_sent_where_the_api_rejects_it() {
    let mut req = request();
    req.messages.push(Message::User {
        text: String::new(),
        media: Vec::new(),
    });
    let anthropic = anthropic::encode(&req, &full())
        .unwrap()
        .body_json()
        .unwrap();
    let google = google::encode(&req, &full()).unwrap().body_json().unwrap();
    assert_eq!(anthropic["messages"].as_array().unwrap().len(), 3);
    assert_eq!(google["contents"].as_array().unwrap().len(), 3);
    assert!(!anthropic.to_string().contains("\"text\":\"\""));
    assert!(!google.to_string().contains("\"text\":\"\""));
}

#[test]
fn tools_without_advertised_tool_use_fail_before_dispatch() {
    let none = Config::default();
    for result in [
        anthropic::encode(&request(), &none),
        openai::encode(&request(), &none),
        openai::encode_chat(&request(), &none),
        google::encode(&request(), &none),
        openai_compatible::encode(
            &request(),
            &Config {
                base_url: Some("http://h/v1".into()),
                ..none.clone()
            },
        ),
    ] {
        let err = result.unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
        assert!(
            err.message.contains("\"m-1\"") && err.message.contains("\"ls\""),
            "{}",
            err.message
        );
    }
    let mut no_tools = request();
    no_tools.tools.clear();
    assert!(anthropic::encode(&no_tools, &none).is_ok());
}

#[test]
fn credentials_appear_only_as_handles_and_foreign_thinking_is_dropped() {
    let mut req = request();
    if let Message::Assistant { content, .. } = &mut req.messages[1] {
        content.insert(
            0,
            ContentBlock::Thinking {
                text: "other vendor".into(),
                signature: Some(OpaqueBytes(b"xyz".to_vec())),
            },
        );
    }
    for exchange in [
        anthropic::encode(&req, &full()).unwrap(),
        openai::encode(&req, &full()).unwrap(),
        google::encode(&req, &full()).unwrap(),
    ] {
        let body = String::from_utf8(exchange.body.clone()).unwrap();
        assert!(
            !body.contains("other vendor") && !body.contains("unsigned"),
            "{body}"
        );
        assert!(!body.contains("credential"));
        let auth: Vec<_> = exchange
            .headers
            .iter()
            .filter(|(_, v)| v.contains("{{credential:"))
            .collect();
        assert_eq!(auth.len(), 1, "{:?}", exchange.headers);
    }
}

/// Every thinking level in each vendor's encoding: Anthropic's and
/// Google's token budgets, OpenAI's effort (Responses and Chat
/// Completions), where `max` is the `high` effort (OpenAI's efforts end
/// there) and `minimal` is OpenAI's `minimal`.
#[test]
fn every_thinking_level_in_each_vendors_encoding() {
    let levels = [
        (ThinkingLevel::Minimal, 1_024, "minimal"),
        (ThinkingLevel::Low, 2_048, "low"),
        (ThinkingLevel::Medium, 8_192, "medium"),
        (ThinkingLevel::High, 24_576, "high"),
        (ThinkingLevel::Max, 32_768, "high"),
    ];
    for (level, budget, effort) in levels {
        let config = Config {
            capabilities: Capabilities {
                tool_use: true,
                thinking: true,
                max_output_tokens: Some(64_000),
                ..Capabilities::default()
            },
            thinking: Some(level),
            ..Config::default()
        };
        let body = |exchange: Result<
            smith_providers::HttpExchange,
            smith_providers::ProviderError,
        >|
         -> Value { exchange.unwrap().body_json().unwrap() };
        // A conversation that does not continue a tool loop, which
        // Anthropic's thinking needs (see the test above).
        let asked = Request {
            model: "m".into(),
            system: None,
            messages: vec![Message::User {
                text: "think first".into(),
                media: Vec::new(),
            }],
            tools: Vec::new(),
            max_output_tokens: Some(50_000),
        };
        let sent = body(anthropic::encode(&asked, &config));
        assert_eq!(
            sent["thinking"],
            json!({"type": "enabled", "budget_tokens": budget}),
            "{level:?}"
        );
        let sent = body(google::encode(&request(), &config));
        assert_eq!(
            sent["generationConfig"]["thinkingConfig"],
            json!({"includeThoughts": true, "thinkingBudget": budget}),
            "{level:?}"
        );
        let sent = body(openai::encode(&request(), &config));
        assert_eq!(
            sent["reasoning"],
            json!({"effort": effort, "summary": "auto"}),
            "{level:?}"
        );
        let sent = body(openai::encode_chat(&request(), &config));
        assert_eq!(sent["reasoning_effort"], effort, "{level:?}");
    }
}
