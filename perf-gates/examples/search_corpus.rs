//! Writes the same conversations twice, for comparing `smith session
//! search` with grep over pi's session files (docs/benchmarks.md, "Session
//! search against grep"):
//!
//! `cargo run --release -p smith-perf --example search_corpus -- DIR MB`
//!
//! writes realistic tool-using conversations
//! (`smith_perf::conversation`, each 12 runs of 24 tool calls, a seed of
//! its own) until the smith sessions total at least MB megabytes (10^6
//! bytes): recorded by smith's journal into the session store of
//! `SMITH_HOME=DIR/home` (`DIR/home/data/sessions`), and written as pi's
//! session JSONL into `DIR/pi`, one file per conversation. It prints the
//! totals: sessions, smith bytes, pi bytes, and the conversation's text
//! (prompts, answers, tool calls' arguments, tool outputs: what both
//! searches look through).

use std::path::Path;

use smith_engine::provider::{ContentBlock, Message};
use smith_perf::conversation::{Step, conversation, pi_jsonl, record};

/// Runs and tool calls per run of each conversation.
const RUNS: usize = 12;
const CALLS: usize = 24;

/// The bytes of text a reader sees in `steps`.
fn text_bytes(steps: &[Step]) -> u64 {
    let mut bytes = 0;
    for step in steps {
        let Step::Message(message, _) = step else {
            continue;
        };
        bytes += match message {
            Message::User { text, .. } => text.len(),
            Message::ToolResult { content, .. } => content.len(),
            Message::Assistant { content, .. } => content
                .iter()
                .map(|block| match block {
                    ContentBlock::Text { text } => text.len(),
                    ContentBlock::ToolCall(call) => call.arguments.to_string().len(),
                    _ => 0,
                })
                .sum(),
        } as u64;
    }
    bytes
}

fn write(dir: &Path, mb: u64) -> Result<(), String> {
    let store = dir.join("home").join("data").join("sessions");
    let pi = dir.join("pi");
    for folder in [&store, &pi] {
        std::fs::create_dir_all(folder)
            .map_err(|e| format!("could not create {}: {e}", folder.display()))?;
    }
    let (mut sessions, mut smith, mut jsonl, mut text) = (0u64, 0u64, 0u64, 0u64);
    while smith < mb * 1_000_000 {
        let steps = conversation(0x5ea7_c400 + sessions, RUNS, CALLS);
        let path = record(&store, &format!("conversation-{sessions:05}"), &steps)?;
        smith += std::fs::metadata(&path)
            .map_err(|e| format!("could not read {}: {e}", path.display()))?
            .len();
        let lines = pi_jsonl(&steps);
        jsonl += lines.len() as u64;
        let file = pi.join(format!("conversation-{sessions:05}.jsonl"));
        std::fs::write(&file, &lines)
            .map_err(|e| format!("could not write {}: {e}", file.display()))?;
        text += text_bytes(&steps);
        sessions += 1;
    }
    println!(
        "{sessions} conversations: smith sessions {smith} bytes in {}, pi JSONL {jsonl} bytes in {}, conversation text {text} bytes",
        store.display(),
        pi.display()
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(mb)) = (args.first(), args.get(1).and_then(|b| b.parse().ok())) else {
        eprintln!(
            "usage: search_corpus DIR MB (MB a whole number: the least total size of the smith sessions, in 10^6 bytes)"
        );
        return std::process::ExitCode::from(2);
    };
    match write(Path::new(dir), mb) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("search_corpus: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
