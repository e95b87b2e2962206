//! Writes the session the `session.*` gates measure, for timing the
//! commands themselves: `cargo run --release -p smith-perf --example
//! session_fixture -- DIR BYTES` writes `DIR/5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e.smith`
//! (a session store directory: `smith session dump 5e5e` with
//! `session.dir` set to DIR finds it).

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(bytes)) = (args.first(), args.get(1).and_then(|b| b.parse().ok())) else {
        eprintln!(
            "usage: session_fixture DIR BYTES (BYTES a whole number, the least size of the file)"
        );
        return std::process::ExitCode::from(2);
    };
    let dir = std::path::Path::new(dir);
    let scratch = dir.join(".fixture-scratch");
    let path = dir.join(format!("{}.smith", "5e".repeat(16)));
    let result = std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("could not create {}: {e}", scratch.display()))
        .and_then(|()| {
            smith_perf::session_gates::write_fixture(&scratch, &path, bytes).map_err(|e| e.message)
        });
    let _ = std::fs::remove_dir_all(&scratch);
    match result {
        Ok((entries, runs)) => {
            println!("{}: {entries} entries in {runs} runs", path.display());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("session_fixture: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
