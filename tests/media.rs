//! Images and PDFs end to end with the scripted provider: a `read` of a
//! PNG puts an image part into the tool result the model receives (the
//! recorded request), a PNG is told from text by its magic bytes, a PDF
//! goes as a document part, and the session keeps the image bytes.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{recorded_requests, smith_in};
use serde_json::Value;

const PNG: &[u8] = include_bytes!("data/media-4x2.png");
const PDF: &[u8] = include_bytes!("data/media-hello.pdf");

fn setup() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("smith")).unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::write(proj.join("shot.png"), PNG).unwrap();
    // A PNG under a text name is an image; a text under a PNG name is text.
    std::fs::write(proj.join("shot.txt"), PNG).unwrap();
    std::fs::write(proj.join("fake.png"), "plain text\n").unwrap();
    std::fs::write(proj.join("spec.pdf"), PDF).unwrap();
    let proj = proj.canonicalize().unwrap();
    (home, proj)
}

/// Runs `eval` with a script that reads `path` and then answers; returns
/// the exit code, the recorded requests and standard error.
fn read_run(
    home: &Path,
    cwd: &Path,
    path: &str,
    session: Option<&str>,
) -> (i32, Vec<Value>, String) {
    let script = home.join("script.json");
    std::fs::write(
        &script,
        format!(
            r#"[[{{"tool_call": {{"id": "c1", "name": "read", "arguments": {{"path": "{path}"}}}}}}, {{"stop": {{"reason": "tool_use"}}}}],
               [{{"text": "seen"}}, {{"stop": {{"reason": "end"}}}}]]"#
        ),
    )
    .unwrap();
    let record = home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let script = script.display().to_string();
    let record_arg = record.display().to_string();
    let mut args = vec!["eval"];
    match session {
        Some(name) => args.extend(["--name", name]),
        None => args.push("--no-session"),
    }
    args.extend([
        "--mock-script",
        &script,
        "--mock-record",
        &record_arg,
        "look at it",
    ]);
    let (code, _, err) = smith_in(home, cwd, &args);
    (code, recorded_requests(&record), err)
}

/// The tool result the second request carried.
fn tool_result(requests: &[Value]) -> Value {
    assert_eq!(requests.len(), 2, "{requests:?}");
    requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool_result")
        .cloned()
        .unwrap()
}

/// Decodes standard base64 (padded).
fn unbase64(text: &str) -> Vec<u8> {
    unbase64url(
        &text
            .trim_end_matches('=')
            .replace('+', "-")
            .replace('/', "_"),
    )
}

/// Decodes base64url without padding (the `$bytes` spelling).
fn unbase64url(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => panic!("{c} is not base64url"),
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for c in text.bytes() {
        acc = acc << 6 | u32::from(value(c));
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

#[test]
fn a_read_png_reaches_the_model_as_an_image_part() {
    let (home, proj) = setup();
    let (code, requests, err) = read_run(home.path(), &proj, "shot.png", None);
    assert_eq!(code, 0, "{err}");
    let result = tool_result(&requests);
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(
        result["content"],
        "shot.png: PNG image, 4×2, 74 B, attached."
    );
    let media = result["media"].as_array().unwrap();
    assert_eq!(media.len(), 1, "{result}");
    assert_eq!(media[0]["type"], "image/png");
    assert_eq!(media[0]["name"], "shot.png");
    assert_eq!(
        unbase64url(media[0]["data"]["$bytes"].as_str().unwrap()),
        PNG
    );
}

#[test]
fn magic_bytes_decide_not_the_name() {
    let (home, proj) = setup();
    let (code, requests, err) = read_run(home.path(), &proj, "shot.txt", None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(tool_result(&requests)["media"][0]["type"], "image/png");
    let (code, requests, err) = read_run(home.path(), &proj, "fake.png", None);
    assert_eq!(code, 0, "{err}");
    let result = tool_result(&requests);
    assert!(result.get("media").is_none(), "{result}");
    assert!(result["content"].as_str().unwrap().contains("plain text"));
}

#[test]
fn the_session_keeps_the_image_bytes_and_a_resumed_run_sends_them_again() {
    let (home, proj) = setup();
    let (code, _, err) = read_run(home.path(), &proj, "shot.png", Some("pics"));
    assert_eq!(code, 0, "{err}");
    // The dump is lossless: content holding a byte string is shown as its
    // CBOR (`content_cbor`), where the image is the byte string itself.
    let (code, out, err) = smith_in(home.path(), &proj, &["session", "dump", "pics"]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("\"kind\":\"tool_result\""))
        .unwrap_or_else(|| panic!("no tool result in:\n{out}"));
    let record: Value = serde_json::from_str(line).unwrap();
    let cbor = unbase64(record["content_cbor"].as_str().unwrap());
    let mut byte_string = vec![0x58, u8::try_from(PNG.len()).unwrap()];
    byte_string.extend_from_slice(PNG);
    assert!(
        cbor.windows(byte_string.len())
            .any(|w| w == byte_string.as_slice()),
        "{record}"
    );
    // An export shows the image as its summary line, never its bytes.
    let (code, out, err) = smith_in(home.path(), &proj, &["session", "export", "pics"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("[image shot.png · PNG 4×2 · 74 B]"), "{out}");
    assert!(!out.contains("iVBORw0KGgo"), "{out}");
    let (code, out, err) = smith_in(home.path(), &proj, &["session", "export", "--json", "pics"]);
    assert_eq!(code, 0, "{err}");
    let export: Value = serde_json::from_str(&out).unwrap();
    let result = export["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["media"][0], "[image shot.png · PNG 4×2 · 74 B]");
    // Resuming sends the image again, as recorded.
    let script = home.path().join("again.json");
    std::fs::write(
        &script,
        r#"[[{"text": "still"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    let record = home.path().join("again.jsonl");
    let (code, _, err) = smith_in(
        home.path(),
        &proj,
        &[
            "eval",
            "--session",
            "pics",
            "--mock-script",
            &script.display().to_string(),
            "--mock-record",
            &record.display().to_string(),
            "and now?",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let requests = recorded_requests(&record);
    let result = requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool_result")
        .cloned()
        .unwrap();
    assert_eq!(
        unbase64url(result["media"][0]["data"]["$bytes"].as_str().unwrap()),
        PNG
    );
}

#[test]
fn a_read_pdf_reaches_the_model_as_a_document_part() {
    // smith/mock takes PDFs (its `media.accepts` lists them).
    let (home, proj) = setup();
    let (code, requests, err) = read_run(home.path(), &proj, "spec.pdf", None);
    assert_eq!(code, 0, "{err}");
    let result = tool_result(&requests);
    assert_eq!(result["media"][0]["type"], "application/pdf", "{result}");
    assert_eq!(
        result["content"],
        "spec.pdf: PDF document, 434 B, attached."
    );
}

/// Runs `eval` on `prompt` with a script that only answers; returns the
/// exit code, the recorded requests and standard error.
fn prompt_run(home: &Path, cwd: &Path, prompt: &str) -> (i32, Vec<Value>, String) {
    let script = home.join("answer.json");
    std::fs::write(
        &script,
        r#"[[{"text": "seen"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    let record = home.join("answer.jsonl");
    let _ = std::fs::remove_file(&record);
    let (code, _, err) = smith_in(
        home,
        cwd,
        &[
            "eval",
            "--no-session",
            "--mock-script",
            &script.display().to_string(),
            "--mock-record",
            &record.display().to_string(),
            prompt,
        ],
    );
    (code, recorded_requests(&record), err)
}

#[test]
fn a_mentioned_png_is_attached_to_the_prompt_as_an_image_part() {
    let (home, proj) = setup();
    let (code, requests, err) = prompt_run(home.path(), &proj, "what is @shot.png?");
    assert_eq!(code, 0, "{err}");
    let user = &requests[0]["messages"][0];
    assert_eq!(user["role"], "user");
    assert_eq!(
        user["text"],
        "what is @shot.png?\n\n<attachments>\n<file path=\"shot.png\">attached: [image shot.png · PNG 4×2 · 74 B]</file>\n</attachments>"
    );
    assert_eq!(user["media"][0]["type"], "image/png");
    assert_eq!(user["media"][0]["name"], "shot.png");
    assert_eq!(
        unbase64url(user["media"][0]["data"]["$bytes"].as_str().unwrap()),
        PNG
    );
    // A text file under an image name stays text.
    let (code, requests, err) = prompt_run(home.path(), &proj, "and @fake.png");
    assert_eq!(code, 0, "{err}");
    let user = &requests[0]["messages"][0];
    assert!(user.get("media").is_none(), "{user}");
    assert!(
        user["text"].as_str().unwrap().contains("plain text"),
        "{user}"
    );
}

#[test]
fn disabling_smith_mentions_removes_the_attachment_and_nothing_else() {
    let (home, proj) = setup();
    let (code, _, err) = smith_in(home.path(), &proj, &["plugin", "disable", "smith/mentions"]);
    assert_eq!(code, 0, "{err}");
    let (code, requests, err) = prompt_run(home.path(), &proj, "what is @shot.png?");
    assert_eq!(code, 0, "{err}");
    let user = &requests[0]["messages"][0];
    assert_eq!(user["text"], "what is @shot.png?");
    assert!(user.get("media").is_none(), "{user}");
    // The read tool still attaches images.
    let (code, requests, err) = read_run(home.path(), &proj, "shot.png", None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(tool_result(&requests)["media"][0]["type"], "image/png");
}
