//! Writes a `SMITH_HOME` holding the session the `resume.*` gates resume,
//! for timing `smith eval --session` itself: `cargo run --release -p
//! smith-perf --example resume_fixture -- DIR NAME BYTES` writes `DIR/NAME`
//! with `data/sessions/5e5e…5e.smith` (a model change per run and a
//! compaction every 512 KB), its summary sidecar and a `models.kdl`
//! declaring `llama.cpp`'s `local-model` with a 128k window. Then
//! `SMITH_HOME=DIR/NAME smith eval --provider llama.cpp --base-url URL
//! --model local-model --session 5e5e PROMPT` resumes it.

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(name), Some(bytes)) = (
        args.first(),
        args.get(1),
        args.get(2).and_then(|b| b.parse().ok()),
    ) else {
        eprintln!(
            "usage: resume_fixture DIR NAME BYTES (BYTES a whole number, the least size of the session file)"
        );
        return std::process::ExitCode::from(2);
    };
    match smith_perf::resume_gates::write_resume_home(std::path::Path::new(dir), name, bytes) {
        Ok(home) => {
            println!("{}", home.display());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("resume_fixture: {}", e.message);
            std::process::ExitCode::FAILURE
        }
    }
}
