//! Writes the conversation `tests/session_size.rs` measures (12 runs of 24
//! tool calls, `smith_perf::conversation`), recorded through the journal
//! as `smith` records one, and pi's session JSONL of it, for measuring
//! compression settings on it (`cargo run --release -p smith-store
//! --example compression` with `SMITH_SESSIONS`): `cargo run --release -p
//! smith-perf --example conversation_session -- DIR` writes the store
//! directory `DIR/store` and `DIR/pi.jsonl`, and prints both files' paths
//! and sizes.

use smith_perf::conversation::{conversation, pi_jsonl, record};

fn main() -> std::process::ExitCode {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!(
            "usage: conversation_session DIR (a directory to write the session store and pi's JSONL into)"
        );
        return std::process::ExitCode::from(2);
    };
    let dir = std::path::Path::new(&dir);
    let steps = conversation(0xb16_5e55, 12, 24);
    let pi = dir.join("pi.jsonl");
    let written = record(&dir.join("store"), "big", &steps).and_then(|path| {
        std::fs::write(&pi, pi_jsonl(&steps))
            .map_err(|e| format!("could not write pi's JSONL to {}: {e}", pi.display()))?;
        let len = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
        Ok(format!(
            "{}: {} bytes\n{}: {} bytes",
            path.display(),
            len(&path),
            pi.display(),
            len(&pi)
        ))
    });
    match written {
        Ok(report) => {
            println!("{report}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conversation_session: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
