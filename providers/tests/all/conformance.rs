//! The conformance suite: per dialect, a table of stream shapes. Each row
//! is a stream under `tests/fixtures/<dialect>/` (recorded, or written
//! after the vendor's documented format; `tests/fixtures/README.md` names
//! each source) with
//!
//! - its expected normalized events, `tests/golden/<dialect>/<stem>.jsonl`
//!   (checked by `golden.rs`; `cuts.rs` cuts it at every byte and splits it
//!   anywhere);
//! - its expected outcome and next request,
//!   `tests/golden/<dialect>/<stem>.next.json` (checked here): the events
//!   assembled by the engine's own validator (stop reason, error kind,
//!   usage with unknown fields as `null`, calls cut off), then the
//!   assistant message sent back — with a result for each call, as the
//!   engine sends it — encoded by the dialect's adapter.
//!
//! `SMITH_BLESS=1` rewrites the goldens. docs/providers.md lists the table.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use smith_contract::{Validator, stream::stop_name};
use smith_providers::types::{ContentBlock, Decoder, Message, Request, StopReason};
use smith_providers::{Capabilities, Config, anthropic, google, openai};

use crate::support::{AnyDecoder, fixtures, root, run};

/// One stream shape of one dialect.
struct Shape {
    folder: &'static str,
    file: &'static str,
    shape: &'static str,
}

const fn row(folder: &'static str, file: &'static str, shape: &'static str) -> Shape {
    Shape {
        folder,
        file,
        shape,
    }
}

const A: &str = "anthropic";
const R: &str = "openai-responses";
const C: &str = "openai-chat";
const G: &str = "google";

const SHAPES: &[Shape] = &[
    // Anthropic Messages
    row(A, "basic_response.txt", "text; last event unterminated"),
    row(
        A,
        "thinking_stream.sse",
        "thinking with a signature, then text",
    ),
    row(
        A,
        "conf-redacted-thinking.sse",
        "redacted thinking, signed thinking, text",
    ),
    row(
        A,
        "tool_use_response.txt",
        "one tool call, arguments fragmented mid-token",
    ),
    row(
        A,
        "conf-parallel-tools.sse",
        "parallel tool calls: fragmented, whole, and no arguments",
    ),
    row(
        A,
        "incomplete_partial_json_response.txt",
        "tool call cut off by max_tokens",
    ),
    row(
        A,
        "conf-server-tool.sse",
        "server-side tool (web search) blocks, then text",
    ),
    row(A, "compaction_response.txt", "compaction block"),
    row(A, "fallback_response.txt", "fallback block"),
    row(
        A,
        "fallback_credit_response.txt",
        "fallback with credit details",
    ),
    row(A, "refusal_response.txt", "refusal stop reason"),
    row(A, "stream-a-refusal.sse", "refusal after text"),
    row(A, "stream-a-toolrefusal.sse", "refusal inside a tool call"),
    row(A, "stream-b-fallback.sse", "fallback stream"),
    row(
        A,
        "conf-usage-last.sse",
        "usage only in the last message_delta",
    ),
    row(A, "conf-error-before.sse", "error event before any content"),
    row(
        A,
        "conf-error-inside.sse",
        "error event inside a text block",
    ),
    row(
        A,
        "conf-error-after.sse",
        "error event after the content, instead of message_stop",
    ),
    // OpenAI Responses (and OpenRouter's)
    row(
        R,
        "conf-text.sse",
        "text; usage with cached tokens in response.completed",
    ),
    row(
        R,
        "reasoning_usage_stream.sse",
        "reasoning item (encrypted), function call, usage",
    ),
    row(
        R,
        "function_call_stream.sse",
        "one function call, arguments fragmented",
    ),
    row(
        R,
        "conf-parallel-calls.sse",
        "parallel calls: fragmented, and arguments only in the done events",
    ),
    row(
        R,
        "conf-reasoning-late.sse",
        "reasoning item done after the message item (OpenRouter)",
    ),
    row(R, "conf-usage-absent.sse", "no usage (usage null)"),
    row(R, "conf-error-before.sse", "error event before any content"),
    row(
        R,
        "conf-failed-usage.sse",
        "response.failed inside the content, carrying usage (OpenRouter)",
    ),
    row(
        R,
        "conf-error-after.sse",
        "error event after the content, instead of response.completed",
    ),
    // OpenAI Chat Completions (and compatible servers)
    row(
        C,
        "7e5ea4d12e7cc064399b6631415e65923f182256b6e6b752950a3aaa2ad2320a.bin",
        "text",
    ),
    row(
        C,
        "e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin",
        "text",
    ),
    row(
        C,
        "d615580118391ee13492193e3a8bb74642d23ac1ca13fe37cb6e889b66f759f6.bin",
        "long text",
    ),
    row(
        C,
        "2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin",
        "tool call, fragmented arguments",
    ),
    row(
        C,
        "a247c49c5fcd492bfb7a02a3306ad615ed8d8f649888ebfddfbc3ee151f44d46.bin",
        "tool call, fragmented arguments",
    ),
    row(
        C,
        "c6aa7e397b7123c3501f25df3a05d4daf7e8ad6d61ffa406ab5361fe36a8d5b1.bin",
        "tool call, fragmented arguments",
    ),
    row(
        C,
        "conf-parallel-fragmented.sse",
        "parallel calls with indexes, fragments interleaved; usage in a last choice-less chunk",
    ),
    row(
        C,
        "conf-ollama-no-index.sse",
        "tool call without index, whole arguments (Ollama)",
    ),
    row(
        C,
        "conf-mistral-parallel.sse",
        "parallel calls without indexes in one delta (Mistral)",
    ),
    row(
        C,
        "4cc50a6135d254573a502310e6af1246f55edb6ad95fa24059f160996b68866d.bin",
        "cut at the length limit",
    ),
    row(
        C,
        "173417d553406f034f643e5db3f8d591fb691ebac56f5ae39a22cc7d455c5353.bin",
        "refusal",
    ),
    row(
        C,
        "569c877e69429d4cbc1577d2cd6dd33878095c68badc6b6654a69769b391a1c1.bin",
        "refusal with logprobs",
    ),
    row(
        C,
        "83b060bae42eb41c4f1edbb7c1542b954b37d9dfd1910b964ddebc9677e6ae85.bin",
        "text with logprobs",
    ),
    row(
        C,
        "a491adda08c3d4fde95f5b2ee3f60f7f745f1a56d82e62f58031cc2add502380.bin",
        "three choices (the first followed)",
    ),
    row(
        C,
        "conf-reasoning-usage-every-chunk.sse",
        "reasoning_content; usage in every chunk (vLLM)",
    ),
    row(C, "conf-usage-first.sse", "usage only in the first chunk"),
    row(C, "conf-usage-absent.sse", "no usage"),
    row(
        C,
        "conf-error-before.sse",
        "error before any content (Groq tool_use_failed)",
    ),
    row(
        C,
        "conf-error-chunk-usage.sse",
        "error chunk inside the content, carrying usage (OpenRouter)",
    ),
    row(
        C,
        "conf-error-after.sse",
        "error after the finish_reason, before [DONE]",
    ),
    // Google GenerateContent
    row(G, "text_stream.sse", "text; CRLF line ends"),
    row(
        G,
        "conf-signatures.sse",
        "signed empty thought part, signed text part, signed empty text part last",
    ),
    row(
        G,
        "conf-parallel-calls.sse",
        "parallel function calls, the first signed",
    ),
    row(
        G,
        "conf-server-tools.sse",
        "server-side tool parts with signatures, grounding and URL context metadata, toolUsePromptTokenCount",
    ),
    row(G, "conf-usage-absent.sse", "no usageMetadata"),
    row(
        G,
        "conf-error-before.json",
        "error body before any content (array form, RetryInfo)",
    ),
    row(G, "conf-error-inside.sse", "error chunk inside the content"),
    row(
        G,
        "conf-error-after.sse",
        "error chunk after the finishReason",
    ),
];

fn config() -> Config {
    Config::with_capabilities(Capabilities {
        tool_use: true,
        thinking: true,
        prompt_cache: false,
        max_output_tokens: Some(32_000),
    })
}

/// The outcome the engine assembles from `events`, and the next request.
fn outcome(folder: &str, events: &[smith_providers::StreamEvent]) -> Value {
    let mut validator = Validator::new();
    for event in events {
        validator.push(event).unwrap();
    }
    let turn = validator.finish().unwrap();
    let mut content = turn.content.clone();
    if turn.stop == StopReason::Error {
        // The engine never keeps a failed response's calls.
        content.retain(|block| !matches!(block, ContentBlock::ToolCall(_)));
    }
    let assistant = Message::Assistant {
        content,
        stop: turn.stop,
    };
    let mut messages = vec![
        Message::User {
            text: "question".into(),
            media: Vec::new(),
        },
        assistant.clone(),
    ];
    let results: Vec<Message> = assistant
        .tool_calls()
        .map(|call| Message::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: format!("result of {}", call.name),
            is_error: false,
            media: Vec::new(),
        })
        .collect();
    if results.is_empty() {
        messages.push(Message::User {
            text: "next".into(),
            media: Vec::new(),
        });
    } else {
        messages.extend(results);
    }
    let request = Request {
        model: "conformance-model".into(),
        system: None,
        messages,
        tools: Vec::new(),
        max_output_tokens: None,
    };
    let exchange = match folder {
        "anthropic" => anthropic::encode(&request, &config()),
        "openai-responses" => openai::encode(&request, &config()),
        "openai-chat" => openai::encode_chat(&request, &config()),
        "google" => google::encode(&request, &config()),
        other => panic!("no encoder for {other}"),
    }
    .unwrap();
    json!({
        "stop": stop_name(turn.stop),
        "error": turn.error.as_ref().map(|e| json!({"kind": e.kind, "retry_after_ms": e.retry_after_ms})),
        "usage": turn.usage,
        "cut_off": turn.cut_off.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        "next_request": exchange.body_json().unwrap(),
    })
}

#[test]
fn the_table_lists_every_fixture_once() {
    let on_disk: BTreeSet<(String, String)> = fixtures()
        .into_iter()
        .map(|f| (f.folder.to_owned(), f.name))
        .collect();
    let mut listed = BTreeSet::new();
    for shape in SHAPES {
        assert!(
            listed.insert((shape.folder.to_owned(), shape.file.to_owned())),
            "{}/{} is listed twice",
            shape.folder,
            shape.file
        );
    }
    let missing: Vec<_> = on_disk.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&on_disk).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "fixtures without a row: {missing:?}; rows without a fixture: {stale:?}"
    );
}

#[test]
fn every_shape_has_its_outcome_and_next_request() {
    let bless = std::env::var_os("SMITH_BLESS").is_some();
    let mut failures = Vec::new();
    for shape in SHAPES {
        let bytes = std::fs::read(root().join("fixtures").join(shape.folder).join(shape.file))
            .unwrap_or_else(|e| panic!("{}/{}: {e}", shape.folder, shape.file));
        let events = run(&mut AnyDecoder::for_folder(shape.folder), &[&bytes]);
        let got = outcome(shape.folder, &events);
        let text = format!("{}\n", serde_json::to_string_pretty(&got).unwrap());
        let stem = shape.file.rsplit_once('.').map_or(shape.file, |(s, _)| s);
        let path = root()
            .join("golden")
            .join(shape.folder)
            .join(format!("{stem}.next.json"));
        if bless {
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(expected) if expected == text => {}
            Ok(expected) => failures.push(format!(
                "{} ({}): differs\n--- expected\n{expected}--- got\n{text}",
                path.display(),
                shape.shape
            )),
            Err(e) => failures.push(format!(
                "{}: {e} (run with SMITH_BLESS=1 to write it)",
                path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_documentation_lists_every_shape() {
    let docs = std::fs::read_to_string(root().join("../../docs/providers.md")).unwrap();
    let section = docs
        .split_once("## Conformance")
        .map(|(_, rest)| rest)
        .expect("docs/providers.md has a Conformance section");
    for shape in SHAPES {
        assert!(
            section.contains(shape.shape),
            "docs/providers.md's Conformance section does not list {}/{} ({:?})",
            shape.folder,
            shape.file,
            shape.shape
        );
    }
}

/// The signed pieces of a next request: each signature (or returned
/// reasoning item, or redacted block) with the kind of part it rides on.
fn signed_pieces(body: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut visit = |part: &Value| {
        let Some(object) = part.as_object() else {
            return;
        };
        let kind = object
            .keys()
            .find(|k| !matches!(k.as_str(), "thoughtSignature" | "thought" | "text"))
            .map_or("text", String::as_str);
        if let Some(signature) = object.get("thoughtSignature") {
            // A Gemini part arrives whole in one event, so a cut never
            // shortens a signed part: its text is compared too.
            let thought = object.contains_key("thought");
            let text = object.get("text").cloned().unwrap_or(Value::Null);
            out.insert(format!("{kind} thought={thought} text={text}: {signature}"));
        }
        match object.get("type").and_then(Value::as_str) {
            Some("reasoning") => {
                out.insert(format!("reasoning: {part}"));
            }
            Some("thinking") => {
                out.insert(format!("thinking: {}", object["signature"]));
            }
            Some("redacted_thinking") => {
                out.insert(format!("redacted: {}", object["data"]));
            }
            _ => {}
        }
    };
    for list in ["contents", "messages", "input"] {
        for message in body[list].as_array().into_iter().flatten() {
            visit(message);
            for key in ["parts", "content"] {
                for part in message[key].as_array().into_iter().flatten() {
                    visit(part);
                }
            }
        }
    }
    out
}

/// A stream cut anywhere never sends a signature, reasoning item or
/// redacted block back on a part it did not come with (another kind of
/// part, or other text), nor one the whole stream would not send.
#[test]
fn cut_streams_send_back_only_signatures_of_their_own_parts() {
    for shape in SHAPES
        .iter()
        .filter(|s| s.file.starts_with("conf-") || s.folder == "google")
    {
        let label = format!("{}/{}", shape.folder, shape.file);
        let bytes =
            std::fs::read(root().join("fixtures").join(shape.folder).join(shape.file)).unwrap();
        let whole = run(&mut AnyDecoder::for_folder(shape.folder), &[&bytes]);
        let expected = signed_pieces(&outcome(shape.folder, &whole)["next_request"]);
        let mut decoder = AnyDecoder::for_folder(shape.folder);
        let mut before = Vec::new();
        for cut in 0..=bytes.len() {
            if cut > 0 {
                before.extend(decoder.decode(&bytes[cut - 1..cut]));
            }
            let mut events = before.clone();
            events.extend(decoder.clone().finish());
            let got = signed_pieces(&outcome(shape.folder, &events)["next_request"]);
            assert!(
                got.is_subset(&expected),
                "{label} cut at {cut}: {:?} not sent by the whole stream",
                got.difference(&expected).collect::<Vec<_>>()
            );
        }
    }
}
