//! Resuming a very large session and answering one prompt: `smith eval
//! --session` over sessions of 10 MB, 100 MB and 1 GiB (written by the
//! performance gates' session generator, `smith_perf::session_gates`)
//! against a local OpenAI-compatible server that records every request.
//! No request may be larger than the model's context window (counted as
//! smith counts it where no tokenizer exists: `BYTES_PER_TOKEN` bytes a
//! token), summary requests included, and the answer must arrive.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

#[path = "common/http.rs"]
mod http;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use http::{Reply, Server};
use serde_json::Value;
use smith_engine::agent::compact::{BYTES_PER_TOKEN, SUMMARY_SYSTEM};

const BIN: &str = env!("CARGO_BIN_EXE_smith");

/// The model's window, in tokens: a common local model's 128k.
const WINDOW: u64 = 128_000;

/// The sessions' shape: every run starts with its model change, and a
/// compaction every 16 MB, the newest 16 MB before the end (none in the
/// 10 MB session), so the history after it is far larger than the window
/// and the resume compacts again.
const SHAPE: smith_perf::session_gates::Shape = smith_perf::session_gates::Shape {
    model_changes: true,
    compactions: Some((16 << 20, 16 << 20)),
};

const ANSWER: &str = "The answer, after the compacted history.";

/// Variables that would change which provider, server or key is used.
const CLEARED: [&str; 9] = [
    "SMITH_PROVIDER",
    "SMITH_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_COMPATIBLE_BASE_URL",
    "OLLAMA_BASE_URL",
    "LLAMA_CPP_BASE_URL",
    "LMSTUDIO_BASE_URL",
    "VLLM_BASE_URL",
    "OLLAMA_HOST",
];

/// A streamed chat completion answering `text`.
fn stream(text: &str) -> Vec<u8> {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            serde_json::json!({
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1_733_500_000,
                "model": "local-model",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
            })
        )
    };
    let mut body = chunk(
        serde_json::json!({"role": "assistant", "content": text}),
        Value::Null,
    );
    body.push_str(&chunk(serde_json::json!({}), Value::from("stop")));
    body.push_str(
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":12,\"total_tokens\":912}}\n\n",
    );
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// Whether a recorded chat request asks for a summary (smith's summary
/// system prompt, no tools).
fn is_summary(body: &Value) -> bool {
    body["messages"][0]["content"].as_str() == Some(SUMMARY_SYSTEM)
}

/// A local llama.cpp-shaped server: summary requests get a short summary,
/// any other request the answer.
fn server() -> Server {
    Server::start(Box::new(|_, seen| {
        if seen.path == "/v1/models" {
            return Reply::Json(
                200,
                Vec::new(),
                br#"{"object":"list","data":[{"id":"local-model","object":"model"}]}"#.to_vec(),
            );
        }
        if seen.path != "/v1/chat/completions" {
            return Reply::Status(404, "text/plain", b"404 page not found".to_vec());
        }
        if is_summary(&seen.body) {
            Reply::Stream(stream(
                "Summary: the user and the assistant worked on the project's modules, ran the tests and edited files.",
            ))
        } else {
            Reply::Stream(stream(ANSWER))
        }
    }))
}

/// Runs `cmd` to its end: its output, and its own CPU time and peak
/// resident memory (reaped with `wait4`, which clippy cannot see).
#[allow(clippy::zombie_processes)]
fn output_and_usage(cmd: &mut Command) -> (Output, libc::rusage) {
    use std::io::Read;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stdout.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stderr.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: `usage` is a plain C struct that wait4 fills; `pid` is our
    // child, not yet reaped.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::wait4(pid, &raw mut status, 0, &raw mut usage), pid);
        usage
    };
    use std::os::unix::process::ExitStatusExt;
    let output = Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (output, usage)
}

/// A `timeval` in seconds.
fn seconds(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

fn describe(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let tail = &err[err.len().saturating_sub(4000)..];
    format!(
        "status {:?}\nstdout:\n{}\nstderr (end):\n{tail}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
    )
}

/// Writes a session of at least `bytes` bytes into `home`'s session store,
/// resumes it with one prompt against the recording server, and checks
/// every request and the answer.
fn resume_and_answer(bytes: u64) {
    let home = tempfile::tempdir().unwrap();
    let sessions = home.path().join("data/sessions");
    let scratch = home.path().join("scratch");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::create_dir_all(&scratch).unwrap();
    let file = sessions.join(format!("{}.smith", "5e".repeat(16)));
    let started = std::time::Instant::now();
    let (entries, runs) =
        smith_perf::session_gates::write_fixture_shaped(&scratch, &file, bytes, &SHAPE).unwrap();
    let written = std::fs::metadata(&file).unwrap().len();
    eprintln!(
        "{written} bytes, {entries} entries in {runs} runs, written in {:?}",
        started.elapsed()
    );
    std::fs::write(
        home.path().join("models.kdl"),
        format!(
            "provider \"llama.cpp\" {{\n    model \"local-model\" {{\n        context {WINDOW}\n        tools #true\n    }}\n}}\n"
        ),
    )
    .unwrap();
    let server = server();
    let base = server.url("/v1");
    let mut cmd = Command::new(BIN);
    cmd.args([
        "eval",
        "--provider",
        "llama.cpp",
        "--base-url",
        &base,
        "--model",
        "local-model",
        "--session",
        "5e5e",
        "what did we do so far?",
    ])
    .env("SMITH_HOME", home.path())
    .env("NO_COLOR", "1")
    .env_remove("XDG_DATA_HOME")
    .env_remove("XDG_CACHE_HOME")
    .env_remove("XDG_CONFIG_HOME")
    .current_dir(home.path())
    .stdin(Stdio::null());
    for var in CLEARED {
        cmd.env_remove(var);
    }
    let started = std::time::Instant::now();
    let (out, usage) = output_and_usage(&mut cmd);
    eprintln!(
        "resumed and answered in {:?} wall, {:.2} s user, {:.2} s system, {} MiB peak RSS",
        started.elapsed(),
        seconds(usage.ru_utime),
        seconds(usage.ru_stime),
        usage.ru_maxrss / 1024
    );
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(ANSWER), "{}", describe(&out));

    let chats: Vec<http::Seen> = server
        .seen()
        .into_iter()
        .filter(|s| s.path == "/v1/chat/completions")
        .collect();
    let largest = chats.iter().map(|c| c.raw.len()).max().unwrap();
    eprintln!(
        "{} requests ({} summaries), the largest {largest} bytes",
        chats.len(),
        chats.iter().filter(|c| is_summary(&c.body)).count()
    );
    // Every request, summaries included, within the window.
    let bound = WINDOW * BYTES_PER_TOKEN;
    for (i, chat) in chats.iter().enumerate() {
        assert!(
            chat.raw.len() as u64 <= bound,
            "request {i} is {} bytes, over the {WINDOW}-token window ({bound} bytes at {BYTES_PER_TOKEN} a token)",
            chat.raw.len()
        );
    }
    // The history was summarized (it is far larger than the window), then
    // the one prompt was answered over the summary.
    assert!(chats.iter().any(|c| is_summary(&c.body)));
    let last = chats.last().unwrap();
    assert!(!is_summary(&last.body));
    let messages = last.body["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "what did we do so far?",
        "the prompt ends the last request"
    );
    assert!(
        messages.iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|t| t.contains("The conversation before this point was compacted"))),
        "the last request starts from the summary"
    );
    // Far more than what one compaction summarizes: the summary says how
    // much it left out (a resume bounded by the window never decoded it).
    assert!(
        messages
            .iter()
            .any(|m| m["content"]
                .as_str()
                .is_some_and(|t| t.contains("oldest messages (")
                    && t.contains("were left out of this summary"))),
        "the summary names the messages it left out"
    );
    // Plain output says that compaction ran and what it saved.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("smith: compacting the conversation (the context is nearly full)"),
        "{}",
        describe(&out)
    );
    assert!(
        err.contains("smith: compacted: pruned "),
        "{}",
        describe(&out)
    );
    assert!(err.contains(" bytes)"), "{}", describe(&out));
    assert!(!err.contains("compaction failed"), "{}", describe(&out));
    // The compaction and the new run were appended to the session.
    assert!(std::fs::metadata(Path::new(&file)).unwrap().len() > written);
}

#[test]
fn resuming_a_10_mb_session_sends_no_request_over_the_window_and_answers() {
    resume_and_answer(10 << 20);
}

#[test]
fn resuming_a_100_mb_session_sends_no_request_over_the_window_and_answers() {
    resume_and_answer(100 << 20);
}

#[test]
fn resuming_a_1_gib_session_sends_no_request_over_the_window_and_answers() {
    resume_and_answer(1 << 30);
}
