//! Wire-format faults seen with real endpoints, each over a stream of the
//! same shape: decoded, assembled by the engine's own validator, and sent
//! back the way the engine sends it.

use serde_json::{Value, json};
use smith_contract::Validator;
use smith_providers::types::{Message, Request, StreamEvent, Usage};
use smith_providers::{Capabilities, Config, google, openai};

use crate::support::{AnyDecoder, root, run};

fn events(folder: &str, file: &str) -> Vec<StreamEvent> {
    let bytes = std::fs::read(root().join("fixtures").join(folder).join(file)).unwrap();
    run(&mut AnyDecoder::for_folder(folder), &[&bytes])
}

/// The assistant message the engine keeps from `events`.
fn message(events: &[StreamEvent]) -> Message {
    let mut validator = Validator::new();
    for event in events {
        validator.push(event).unwrap();
    }
    let turn = validator.finish().unwrap();
    Message::Assistant {
        content: turn.content,
        stop: turn.stop,
    }
}

fn usage(events: &[StreamEvent]) -> Usage {
    let mut validator = Validator::new();
    for event in events {
        validator.push(event).unwrap();
    }
    validator.finish().unwrap().usage
}

fn next_body(assistant: Message, encode: fn(&Request, &Config) -> Value) -> Value {
    let request = Request {
        model: "m".into(),
        system: None,
        messages: vec![
            Message::User {
                text: "question".into(),
                media: Vec::new(),
            },
            assistant,
            Message::User {
                text: "next".into(),
                media: Vec::new(),
            },
        ],
        tools: Vec::new(),
        max_output_tokens: None,
    };
    encode(&request, &config())
}

fn config() -> Config {
    Config::with_capabilities(Capabilities {
        tool_use: true,
        thinking: true,
        ..Capabilities::default()
    })
}

fn google_body(request: &Request, config: &Config) -> Value {
    google::encode(request, config)
        .unwrap()
        .body_json()
        .unwrap()
}

fn responses_body(request: &Request, config: &Config) -> Value {
    openai::encode(request, config)
        .unwrap()
        .body_json()
        .unwrap()
}

/// Server-side tool parts keep their signatures, in their places; none
/// moves to the text part, none is dropped; grounding data is kept with
/// the message.
#[test]
fn gemini_server_side_tool_parts_go_back_with_their_own_signatures() {
    let events = events("google", "conf-server-tools.sse");
    let assistant = message(&events);
    let kept = serde_json::to_string(&assistant).unwrap();
    let body = next_body(assistant, google_body);
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Look up the weather, then compute.", "thought": true, "thoughtSignature": "c2lnLXQx"},
            {"toolCall": {"toolType": "GOOGLE_SEARCH_WEB", "id": "srv1", "args": {"queries": ["weather Paris today"]}}, "thoughtSignature": "c2lnLWNhbGw="},
            {"toolResponse": {"toolType": "GOOGLE_SEARCH_WEB", "id": "srv1", "response": {"search_suggestions": "weather Paris today"}}, "thoughtSignature": "c2lnLXJlc3A="},
            {"executableCode": {"language": "PYTHON", "code": "print(18 * 9 / 5 + 32)"}, "thoughtSignature": "c2lnLWNvZGU="},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "64.4\n"}},
            {"text": "It is 18 °C (64.4 °F) in Paris."},
        ]})
    );
    // The metadata is in the message (hex in the signature bytes), and
    // never in a request.
    let hex = |text: &str| -> String { text.bytes().map(|b| format!("{b:02x}")).collect() };
    assert!(kept.contains(&hex("groundingMetadata")), "{kept}");
    assert!(kept.contains(&hex("urlContextMetadata")), "{kept}");
    assert!(!body.to_string().contains("groundingMetadata"));
}

/// Signatures on an empty thought part, on a text part followed by more
/// text, and on a trailing empty text part each go back on that part.
#[test]
fn gemini_text_signatures_stay_on_their_parts() {
    let body = next_body(
        message(&events("google", "conf-signatures.sse")),
        google_body,
    );
    assert_eq!(
        body["contents"][1]["parts"],
        json!([
            {"text": "", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="},
            {"text": "The answer "},
            {"text": "is 4", "thoughtSignature": "c2lnLXRleHQ="},
            {"text": "."},
            {"text": "", "thoughtSignature": "c2lnLWxhc3Q="},
        ])
    );
}

#[test]
fn gemini_tool_use_prompt_tokens_count_as_input() {
    assert_eq!(
        usage(&events("google", "conf-server-tools.sse")),
        Usage {
            input: Some(350),
            output: Some(71),
            cache_read: None,
            cache_write: None,
        }
    );
}

/// OpenRouter sends a reasoning item's done event after the message
/// item's: the item still goes back, before the message, as it came.
#[test]
fn a_reasoning_item_done_after_the_message_goes_back_in_output_order() {
    let body = next_body(
        message(&events("openai-responses", "conf-reasoning-late.sse")),
        responses_body,
    );
    let input = body["input"].as_array().unwrap();
    assert_eq!(input.len(), 4, "{body}");
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "id": "rs_late", "summary": [],
            "content": [{"type": "reasoning_text", "text": "Two plus two is four."}],
            "encrypted_content": "gAAAAABlateReasoning=="})
    );
    assert_eq!(input[2]["type"], "message");
    assert_eq!(input[2]["content"][0]["text"], "4");
}

/// Usage carried by an error chunk is kept (OpenRouter sends it there).
#[test]
fn usage_in_error_chunks_is_kept() {
    let responses = usage(&events("openai-responses", "conf-failed-usage.sse"));
    assert_eq!((responses.input, responses.output), (Some(33), Some(3)));
    let chat = usage(&events("openai-chat", "conf-error-chunk-usage.sse"));
    assert_eq!((chat.input, chat.output), (Some(44), Some(3)));
}

/// A stream that never states usage leaves every field unknown, whatever
/// way it ends.
#[test]
fn unstated_usage_stays_unknown_on_every_failure() {
    for (folder, file) in [
        ("anthropic", "conf-error-before.sse"),
        ("openai-responses", "conf-error-before.sse"),
        ("openai-responses", "conf-usage-absent.sse"),
        ("openai-chat", "conf-error-before.sse"),
        ("openai-chat", "conf-usage-absent.sse"),
        ("google", "conf-error-before.json"),
        ("google", "conf-usage-absent.sse"),
    ] {
        assert_eq!(
            usage(&events(folder, file)),
            Usage::default(),
            "{folder}/{file}"
        );
    }
}

/// Reasoning items without an id (servers that omit it) each go back
/// where they completed; none replaces another.
#[test]
fn reasoning_items_without_ids_all_go_back() {
    let record = |payload: &str| -> Vec<u8> {
        let mut out = b"ORSN".to_vec();
        out.extend(0u32.to_be_bytes());
        out.extend(u32::try_from(payload.len()).unwrap().to_be_bytes());
        out.extend(payload.as_bytes());
        out
    };
    let mut signature = record(r#"{"type":"reasoning","summary":[],"encrypted_content":"one"}"#);
    signature.extend(record(
        r#"{"type":"reasoning","summary":[],"encrypted_content":"two"}"#,
    ));
    let assistant = Message::Assistant {
        content: vec![
            smith_providers::ContentBlock::Thinking {
                text: String::new(),
                signature: Some(smith_providers::OpaqueBytes(signature)),
            },
            smith_providers::ContentBlock::Text { text: "ok".into() },
        ],
        stop: smith_providers::StopReason::End,
    };
    let body = next_body(assistant, responses_body);
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[1]["encrypted_content"], "one", "{body}");
    assert_eq!(input[2]["encrypted_content"], "two", "{body}");
    assert_eq!(input[3]["type"], "message", "{body}");
}
