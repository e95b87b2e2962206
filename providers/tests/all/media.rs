//! Media encoding: each vendor's exact request JSON for an image in a user
//! message, an image in a tool result and a PDF, with the fixtures of
//! `tests/data` (media-README.md says where they come from).

use serde_json::{Value, json};
use smith_providers::types::{
    ContentBlock, Media, MediaType, Message, ProviderErrorKind, Request, StopReason, ToolCall,
};
use smith_providers::{Capabilities, Config, anthropic, google, openai, openai_compatible};

const PNG: &[u8] = include_bytes!("../../../tests/data/media-4x2.png");
const PDF: &[u8] = include_bytes!("../../../tests/data/media-hello.pdf");
/// `base64 tests/data/media-4x2.png`.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAACCAIAAADwyuo0AAAAEUlEQVR4nGP4z8AARwxI7P8AZ7IH+SY4448AAAAASUVORK5CYII=";
/// `base64 -w0 tests/data/media-hello.pdf`.
const PDF_B64: &str = "JVBERi0xLjQKMSAwIG9iaiA8PCAvVHlwZSAvQ2F0YWxvZyAvUGFnZXMgMiAwIFIgPj4gZW5kb2JqCjIgMCBvYmogPDwgL1R5cGUgL1BhZ2VzIC9LaWRzIFszIDAgUl0gL0NvdW50IDEgPj4gZW5kb2JqCjMgMCBvYmogPDwgL1R5cGUgL1BhZ2UgL1BhcmVudCAyIDAgUiAvTWVkaWFCb3ggWzAgMCAyMDAgMTAwXSAvQ29udGVudHMgNCAwIFIgL1Jlc291cmNlcyA8PCAvRm9udCA8PCAvRjEgNSAwIFIgPj4gPj4gPj4gZW5kb2JqCjQgMCBvYmogPDwgL0xlbmd0aCA0NCA+PiBzdHJlYW0KQlQgL0YxIDEyIFRmIDIwIDUwIFRkIChzbWl0aCBtZWRpYSkgVGogRVQKZW5kc3RyZWFtIGVuZG9iago1IDAgb2JqIDw8IC9UeXBlIC9Gb250IC9TdWJ0eXBlIC9UeXBlMSAvQmFzZUZvbnQgL0hlbHZldGljYSA+PiBlbmRvYmoKdHJhaWxlciA8PCAvUm9vdCAxIDAgUiA+PgolJUVPRgo=";

fn png() -> Media {
    Media::new(MediaType::sniff(PNG).unwrap(), PNG.to_vec()).named("shots/shot.png")
}

fn pdf() -> Media {
    Media::new(MediaType::sniff(PDF).unwrap(), PDF.to_vec()).named("docs/spec.pdf")
}

/// A user message with an image, a `read` call whose result carries an
/// image, and a user message with a PDF.
fn request(with_pdf: bool) -> Request {
    let mut messages = vec![
        Message::User {
            text: "what is this?".into(),
            media: vec![png()],
        },
        Message::Assistant {
            content: vec![ContentBlock::ToolCall(ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: json!({"path": "shots/shot.png"}),
            })],
            stop: StopReason::ToolUse,
        },
        Message::ToolResult {
            call_id: "c1".into(),
            name: "read".into(),
            content: "shots/shot.png: PNG image, 4×2, 74 B, attached.".into(),
            is_error: false,
            media: vec![png()],
        },
    ];
    if with_pdf {
        messages.push(Message::User {
            text: "and this?".into(),
            media: vec![pdf()],
        });
    }
    Request {
        model: "m-1".into(),
        system: None,
        messages,
        tools: Vec::new(),
        max_output_tokens: Some(100),
    }
}

fn config() -> Config {
    Config {
        capabilities: Capabilities {
            tool_use: true,
            ..Capabilities::default()
        },
        ..Config::default()
    }
}

fn body(exchange: smith_providers::HttpExchange) -> Value {
    exchange.body_json().unwrap()
}

#[test]
fn the_fixtures_are_what_the_goldens_say() {
    assert_eq!(png().base64(), PNG_B64);
    assert_eq!(pdf().base64(), PDF_B64);
    assert_eq!(png().dimensions(), Some((4, 2)));
    assert_eq!(png().summary(), "[image shots/shot.png · PNG 4×2 · 74 B]");
}

#[test]
fn anthropic_sends_image_blocks_images_in_tool_results_and_document_blocks() {
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}});
    assert_eq!(
        body(anthropic::encode(&request(true), &config()).unwrap())["messages"],
        json!([
            {"role": "user", "content": [image, {"type": "text", "text": "what is this?"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "shots/shot.png"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": [
                    {"type": "text", "text": "shots/shot.png: PNG image, 4×2, 74 B, attached."},
                    image
                ]},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64}},
                {"type": "text", "text": "and this?"}
            ]}
        ])
    );
}

#[test]
fn openai_responses_sends_input_image_and_input_file_parts() {
    let image =
        json!({"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_B64}")});
    assert_eq!(
        body(openai::encode(&request(true), &config()).unwrap())["input"],
        json!([
            {"role": "user", "content": [image, {"type": "input_text", "text": "what is this?"}]},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"shots/shot.png\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": [
                {"type": "input_text", "text": "shots/shot.png: PNG image, 4×2, 74 B, attached."},
                image
            ]},
            {"role": "user", "content": [
                {"type": "input_file", "filename": "spec.pdf", "file_data": format!("data:application/pdf;base64,{PDF_B64}")},
                {"type": "input_text", "text": "and this?"}
            ]}
        ])
    );
}

#[test]
fn openai_chat_sends_image_url_parts_and_tool_media_as_a_following_user_message() {
    let image = json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}});
    assert_eq!(
        body(openai::encode_chat(&request(true), &config()).unwrap())["messages"],
        json!([
            {"role": "user", "content": [image, {"type": "text", "text": "what is this?"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"shots/shot.png\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "shots/shot.png: PNG image, 4×2, 74 B, attached."},
            {"role": "user", "content": [
                {"type": "text", "text": "The file attached to the result of tool call c1:"},
                image
            ]},
            {"role": "user", "content": [
                {"type": "file", "file": {"filename": "spec.pdf", "file_data": format!("data:application/pdf;base64,{PDF_B64}")}},
                {"type": "text", "text": "and this?"}
            ]}
        ])
    );
}

#[test]
fn google_sends_inline_data_with_the_mime_type() {
    let image = json!({"inlineData": {"mimeType": "image/png", "data": PNG_B64}});
    assert_eq!(
        body(google::encode(&request(true), &config()).unwrap())["contents"],
        json!([
            {"role": "user", "parts": [image, {"text": "what is this?"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"path": "shots/shot.png"}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "read", "response": {"output": "shots/shot.png: PNG image, 4×2, 74 B, attached."}}},
                image,
                {"inlineData": {"mimeType": "application/pdf", "data": PDF_B64}},
                {"text": "and this?"}
            ]}
        ])
    );
}

#[test]
fn openai_compatible_sends_images_as_data_urls_and_refuses_pdfs() {
    let local = Config {
        base_url: Some("http://localhost:11434/v1/".into()),
        ..config()
    };
    let image = json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}});
    let messages =
        body(openai_compatible::encode(&request(false), &local).unwrap())["messages"].clone();
    assert_eq!(
        messages[0]["content"],
        json!([image, {"type": "text", "text": "what is this?"}])
    );
    assert_eq!(
        messages[3],
        json!({"role": "user", "content": [
            {"type": "text", "text": "The file attached to the result of tool call c1:"},
            image
        ]})
    );
    assert_eq!(messages.as_array().unwrap().len(), 4);
    let err = openai_compatible::encode(&request(true), &local).unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(
        err.message
            .contains("[document docs/spec.pdf · PDF · 434 B]")
            && err.message.contains("pdftotext")
            && err.message.contains("nothing was sent"),
        "{}",
        err.message
    );
}
