//! smith/mentions end to end: `@path` in a prompt attaches the project
//! file's text or the folder's listing to what the model receives (the
//! scripted provider's recorded request), within budgets; a path outside
//! the project is refused with the reason; a mention of nothing is left as
//! written; disabling the plugin removes exactly this.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{recorded_requests, smith_in};
use serde_json::Value;

fn setup() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("smith")).unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::create_dir_all(proj.join("src/deep")).unwrap();
    std::fs::write(proj.join("notes.txt"), "first line\nsecond line\n").unwrap();
    std::fs::write(proj.join("my notes.md"), "# spaced\n").unwrap();
    std::fs::write(proj.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(proj.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    // A binary file that is not an image or PDF (a ZIP header).
    std::fs::write(proj.join("blob.bin"), b"PK\x03\x04\0\0\0\0\0\0\0\0\0\0\0\0").unwrap();
    std::fs::write(home.path().join("outside.txt"), "secret-ish\n").unwrap();
    let proj = proj.canonicalize().unwrap();
    (home, proj)
}

/// Runs `eval` with the scripted provider; returns the exit code, the
/// recorded requests and standard error.
fn eval(home: &Path, cwd: &Path, prompt: &str) -> (i32, Vec<Value>, String) {
    let script = home.join("script.json");
    std::fs::write(
        &script,
        r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    let record = home.join("requests.jsonl");
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
    let requests = recorded_requests(&record);
    (code, requests, err)
}

/// The text of the first user message the model received.
fn sent(requests: &[Value]) -> String {
    requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["text"].as_str())
        .unwrap()
        .to_owned()
}

#[test]
fn a_mentioned_file_and_folder_reach_the_model_after_the_prompt() {
    let (home, proj) = setup();
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        "compare @notes.txt, @\"my notes.md\" and @src with @nobody",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        sent(&requests),
        "compare @notes.txt, @\"my notes.md\" and @src with @nobody\n\n<attachments>\n\
         <file path=\"notes.txt\">\nfirst line\nsecond line\n</file>\n\
         <file path=\"my notes.md\">\n# spaced\n</file>\n\
         <folder path=\"src\">\ndeep/\nlib.rs\nmain.rs\n</folder>\n\
         </attachments>"
    );
    // A binary file that is not an image or PDF is named, not attached
    // (images and PDFs: tests/media.rs).
    let (code, requests, err) = eval(home.path(), &proj, "what is @blob.bin");
    assert_eq!(code, 0, "{err}");
    let text = sent(&requests);
    assert!(
        text.ends_with(
            "<file path=\"blob.bin\">a binary file of 16 bytes, not attached</file>\n</attachments>"
        ),
        "{text}"
    );
}

#[test]
fn a_prompt_without_mentions_of_anything_goes_as_written() {
    let (home, proj) = setup();
    for prompt in ["mail me@example.com about @dataclass", "plain words"] {
        let (code, requests, err) = eval(home.path(), &proj, prompt);
        assert_eq!(code, 0, "{err}");
        assert_eq!(sent(&requests), prompt);
    }
}

#[test]
fn a_mention_outside_the_project_is_refused_with_the_reason() {
    let (home, proj) = setup();
    let outside = home.path().canonicalize().unwrap().join("outside.txt");
    let (code, requests, err) = eval(home.path(), &proj, "read @../outside.txt now");
    assert_eq!(code, 1, "{err}");
    assert!(requests.is_empty(), "nothing was sent");
    assert!(
        err.contains(&format!(
            "@../outside.txt names {}, outside the project ({})",
            outside.display(),
            proj.display()
        )),
        "{err}"
    );
    assert!(!err.contains("secret-ish"), "{err}");
}

#[test]
fn a_large_file_is_cut_at_a_line_within_its_budget() {
    let (home, proj) = setup();
    let line = "x".repeat(99) + "\n";
    std::fs::write(proj.join("big.txt"), line.repeat(2000)).unwrap();
    let (code, requests, err) = eval(home.path(), &proj, "@big.txt");
    assert_eq!(code, 0, "{err}");
    let text = sent(&requests);
    let body = text
        .split("<file path=\"big.txt\">\n")
        .nth(1)
        .unwrap()
        .split("[cut:")
        .next()
        .unwrap();
    assert_eq!(body.len(), 102_400, "the first 1024 whole lines");
    assert!(body.ends_with('\n'));
    assert!(
        text.contains(
            "[cut: the first 102400 of 200000 bytes are shown; read the rest with the read tool]"
        ),
        "{}",
        &text[text.len() - 300..]
    );
}

#[test]
fn disabling_smith_mentions_sends_the_prompt_as_written() {
    let (home, proj) = setup();
    let (code, out, err) = smith_in(home.path(), &proj, &["plugin", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("smith/mentions"), "{out}");
    let (code, _, err) = smith_in(home.path(), &proj, &["plugin", "disable", "smith/mentions"]);
    assert_eq!(code, 0, "{err}");
    let (code, requests, err) = eval(home.path(), &proj, "read @notes.txt");
    assert_eq!(code, 0, "{err}");
    assert_eq!(sent(&requests), "read @notes.txt");
    // The other built-ins still run: the tools and the product prompt are
    // there as before.
    assert!(
        requests[0]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
}
