//! Images and PDFs against local fake vendor servers: `smith eval` reads a
//! PNG when the model asks, and the next HTTP request body carries the
//! image in the vendor's wire format (Anthropic: an `image` block with a
//! base64 source inside the `tool_result`; OpenAI Responses: an
//! `input_image` data URL in the `function_call_output`). A model the
//! catalog lists without image input gets a refusal naming it and its
//! catalog entry, and a PDF to an OpenAI-compatible server (which takes no
//! PDFs) tells the model to extract the text.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

#[path = "common/http.rs"]
mod http;

use http::{Reply, Server};

const PNG: &[u8] = include_bytes!("data/media-4x2.png");
const PDF: &[u8] = include_bytes!("data/media-hello.pdf");
/// `base64 tests/data/media-4x2.png`.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAACCAIAAADwyuo0AAAAEUlEQVR4nGP4z8AARwxI7P8AZ7IH+SY4448AAAAASUVORK5CYII=";

const VENDOR_VARS: [&str; 12] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "SMITH_PROVIDER",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "GEMINI_BASE_URL",
    "OPENAI_COMPATIBLE_BASE_URL",
    "SMITH_MODEL",
    "SMITH_OPENAI_API",
    "SMITH_THINKING",
];

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("providers/tests/fixtures")
            .join(rel),
    )
    .unwrap()
}

/// A home with a models.kdl, and a project holding the fixtures.
fn setup() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("models.kdl"),
        r#"
provider "openai-compatible" {
    model "eyes" {
        tools #true
        input "text" "image"
    }
    model "blind" {
        tools #true
        input "text"
    }
}
"#,
    )
    .unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::write(proj.join("shot.png"), PNG).unwrap();
    std::fs::write(proj.join("spec.pdf"), PDF).unwrap();
    let proj = proj.canonicalize().unwrap();
    (home, proj)
}

fn eval(home: &Path, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
    cmd.arg("eval")
        .args(["--no-session", "--json"])
        .args(args)
        .env("SMITH_HOME", home)
        .env("NO_COLOR", "1")
        .current_dir(cwd)
        .stdin(Stdio::null());
    for var in VENDOR_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// An Anthropic stream whose one content block calls `read` on `path`.
fn anthropic_read(path: &str) -> Vec<u8> {
    format!(
        r#"event: message_start
data: {{"type":"message_start","message":{{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":11,"output_tokens":1}}}}}}

event: content_block_start
data: {{"type":"content_block_start","index":0,"content_block":{{"type":"tool_use","id":"toolu_1","name":"read","input":{{}}}}}}

event: content_block_delta
data: {{"type":"content_block_delta","index":0,"delta":{{"type":"input_json_delta","partial_json":"{{\"path\": \"{path}\"}}"}}}}

event: content_block_stop
data: {{"type":"content_block_stop","index":0}}

event: message_delta
data: {{"type":"message_delta","delta":{{"stop_reason":"tool_use","stop_sequence":null}},"usage":{{"output_tokens":6}}}}

event: message_stop
data: {{"type":"message_stop"}}

"#
    )
    .into_bytes()
}

/// The recorded OpenAI Responses function call stream, calling `read` on
/// `path` instead of its own function.
fn openai_read(path: &str) -> Vec<u8> {
    let recorded = String::from_utf8(fixture("openai-responses/function_call_stream.sse")).unwrap();
    recorded
        .replace("get_capital", "read")
        .replace(
            r#"{\"country\":\"France\"}"#,
            &format!(r#"{{\"path\":\"{path}\"}}"#),
        )
        .replace(r#""delta":"country""#, r#""delta":"path""#)
        .replace(r#""delta":"France""#, &format!(r#""delta":"{path}""#))
        .into_bytes()
}

/// A Chat Completions stream calling `read` on `path`.
fn chat_read(path: &str) -> Vec<u8> {
    format!(
        r#"data: {{"id":"c","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"role":"assistant","tool_calls":[{{"index":0,"id":"call_1","type":"function","function":{{"name":"read","arguments":"{{\"path\": \"{path}\"}}"}}}}]}},"finish_reason":null}}]}}

data: {{"id":"c","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{}},"finish_reason":"tool_calls"}}]}}

data: [DONE]

"#
    )
    .into_bytes()
}

fn chat_text() -> Vec<u8> {
    br#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"seen"},"finish_reason":null}]}

data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: [DONE]

"#
    .to_vec()
}

#[test]
fn anthropic_receives_the_read_image_as_a_base64_image_block_in_the_tool_result() {
    let (home, proj) = setup();
    let first = anthropic_read("shot.png");
    let text = fixture("anthropic/basic_response.txt");
    let server = Server::start(Box::new(move |index, _| {
        Reply::Stream(if index == 0 {
            first.clone()
        } else {
            text.clone()
        })
    }));
    let out = eval(
        home.path(),
        &proj,
        &["look at shot.png"],
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-test-media"),
            ("ANTHROPIC_BASE_URL", &server.url("")),
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{}", describe(&out));
    let messages = seen[1].body["messages"].as_array().unwrap();
    let result = &messages.last().unwrap()["content"][0];
    assert_eq!(result["type"], "tool_result", "{result}");
    assert_eq!(result["tool_use_id"], "toolu_1");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "text");
    assert_eq!(
        content[0]["text"],
        "shot.png: PNG image, 4×2, 74 B, attached."
    );
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["source"]["type"], "base64");
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    assert_eq!(content[1]["source"]["data"], PNG_B64);
    assert!(String::from_utf8_lossy(&seen[1].raw).contains(PNG_B64));
}

#[test]
fn openai_receives_the_read_image_as_an_input_image_in_the_function_call_output() {
    let (home, proj) = setup();
    let first = openai_read("shot.png");
    let text = fixture("openai-responses/conf-text.sse");
    let server = Server::start(Box::new(move |index, _| {
        Reply::Stream(if index == 0 {
            first.clone()
        } else {
            text.clone()
        })
    }));
    let out = eval(
        home.path(),
        &proj,
        &["--provider", "openai", "look at shot.png"],
        &[
            ("OPENAI_API_KEY", "sk-test-media"),
            ("OPENAI_BASE_URL", &server.url("/v1")),
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{}", describe(&out));
    let input = seen[1].body["input"].as_array().unwrap();
    let output = input
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .unwrap();
    assert_eq!(output["call_id"], "call_kL0PCQV7M2WMoVX8V8OtYSAL");
    let parts = output["output"].as_array().unwrap();
    assert_eq!(parts[0]["type"], "input_text");
    assert_eq!(parts[1]["type"], "input_image");
    assert_eq!(
        parts[1]["image_url"],
        format!("data:image/png;base64,{PNG_B64}")
    );
}

/// Runs `read` of `path` through an OpenAI-compatible server with `model`;
/// returns the tool result's text the second request carried, and what
/// that request sent after it.
fn compatible_read(model: &str, path: &str) -> (String, Vec<Value>) {
    let (home, proj) = setup();
    let first = chat_read(path);
    let server = Server::start(Box::new(move |index, _| {
        Reply::Stream(if index == 0 {
            first.clone()
        } else {
            chat_text()
        })
    }));
    let base = server.url("/v1");
    let out = eval(
        home.path(),
        &proj,
        &[
            "--provider",
            "openai-compatible",
            "--base-url",
            &base,
            "--model",
            model,
            "look",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{}", describe(&out));
    let messages = seen[1].body["messages"].as_array().unwrap().clone();
    let at = messages.iter().position(|m| m["role"] == "tool").unwrap();
    (
        messages[at]["content"].as_str().unwrap().to_owned(),
        messages[at + 1..].to_vec(),
    )
}

#[test]
fn an_openai_compatible_model_with_image_input_gets_the_image_after_the_tool_message() {
    let (text, after) = compatible_read("eyes", "shot.png");
    assert_eq!(text, "shot.png: PNG image, 4×2, 74 B, attached.");
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0]["role"], "user");
    assert_eq!(
        after[0]["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{PNG_B64}")
    );
}

#[test]
fn a_model_listed_without_image_input_is_refused_naming_it_and_its_catalog_entry() {
    let (text, after) = compatible_read("blind", "shot.png");
    assert!(after.is_empty(), "{after:?}");
    assert!(
        text.contains("shot.png is a PNG image (74 B)")
            && text.contains("openai-compatible/blind does not take image input")
            && text.contains("catalog entry of `openai-compatible/blind`"),
        "{text}"
    );
}

#[test]
fn a_pdf_to_a_provider_without_pdf_support_asks_the_model_to_extract_the_text() {
    let (text, after) = compatible_read("eyes", "spec.pdf");
    assert!(after.is_empty(), "{after:?}");
    assert!(
        text.contains("spec.pdf is a PDF document (434 B)")
            && text.contains("does not send PDFs to openai-compatible/eyes")
            && text.contains("pdftotext spec.pdf -"),
        "{text}"
    );
}

#[test]
fn a_mentioned_image_for_a_model_without_image_input_is_refused_before_anything_is_sent() {
    let (home, proj) = setup();
    let server = Server::start(Box::new(|_, _| Reply::Stream(chat_text())));
    let base = server.url("/v1");
    let out = eval(
        home.path(),
        &proj,
        &[
            "--provider",
            "openai-compatible",
            "--base-url",
            &base,
            "--model",
            "blind",
            "what is @shot.png?",
        ],
        &[],
    );
    let all = describe(&out);
    assert!(server.seen().is_empty(), "{all}");
    assert!(
        all.contains("the input attaches [image shot.png · PNG 4×2 · 74 B], so it was not sent")
            && all.contains("openai-compatible/blind does not take image input"),
        "{all}"
    );
}

#[test]
fn a_pdf_mentioned_in_the_first_prompt_goes_to_anthropic_as_a_document_block() {
    // No request has been made yet when the mention is checked: the vendor
    // plugin is asked what it sends before its first request.
    let (home, proj) = setup();
    let text = fixture("anthropic/basic_response.txt");
    let server = Server::start(Box::new(move |_, _| Reply::Stream(text.clone())));
    let out = eval(
        home.path(),
        &proj,
        &["summarize @spec.pdf"],
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-test-media"),
            ("ANTHROPIC_BASE_URL", &server.url("")),
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "{}", describe(&out));
    let messages = seen[0].body["messages"].as_array().unwrap();
    let content = messages.last().unwrap()["content"].as_array().unwrap();
    let document = content
        .iter()
        .find(|block| block["type"] == "document")
        .unwrap_or_else(|| panic!("no document block in {content:?}"));
    assert_eq!(document["source"]["type"], "base64");
    assert_eq!(document["source"]["media_type"], "application/pdf");
    // The encoder below agrees with `base64` on the PNG fixture.
    assert_eq!(standard_base64(PNG), PNG_B64);
    assert_eq!(document["source"]["data"], standard_base64(PDF));
}

/// Standard base64 with padding (RFC 4648 §4), as Anthropic takes it.
fn standard_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
