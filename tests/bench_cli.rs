//! `smith bench` end to end: the JSON report names every gate of the table,
//! carries a median for each and a floor ratio for every timing gate, every
//! round a gate was measured in (a failing gate up to three) and the
//! machine's load beside the gates that need a second core, and the exit
//! status agrees with the verdict. The round logic itself is tested with
//! injected figures in perf-gates/tests/all/rounds.rs.
//!
//! The full table runs under `--smoke` (small fixtures, three samples):
//! this checks the report and the exit status, not speed; `smith bench
//! --quick` in CI's gate step is the speed check.

use std::process::Command;

fn smith(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .args(args)
        .output()
        .expect("the smith binary built for this test runs");
    (
        out.status
            .code()
            .expect("smith exits with a status, not a signal"),
        String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    )
}

/// Every gate over the smoke plan's small fixtures: the report's shape,
/// not speed (`smith bench --quick`, run by CI on its own, is the speed
/// check, and the same table).
#[test]
fn bench_smoke_json_reports_every_gate() {
    let (code, stdout, stderr) = smith(&["bench", "--smoke", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
    let gates = report["gates"].as_array().expect("gates is an array");
    let names: Vec<&str> = gates.iter().map(|g| g["name"].as_str().unwrap()).collect();
    let expected: Vec<&str> = smith_perf::all_gates().iter().map(|g| g.name).collect();
    assert_eq!(names, expected);
    assert_eq!(report["plan"]["name"], "smoke");
    assert_eq!(report["plan"]["max_rounds"], 3);
    for g in gates {
        let name = &g["name"];
        let rounds = g["rounds"].as_array().expect("rounds is an array");
        // Three rounds count; a failed round on a contended core (the
        // canary's verdict, `load.contended`) is measured again without
        // counting, up to three such rounds.
        let contended = |r: &serde_json::Value| {
            r["passed"] == false && r["load"]["contended"].as_bool().unwrap_or(false)
        };
        let counted = rounds.iter().filter(|r| !contended(r)).count();
        assert!(
            (1..=6).contains(&rounds.len()) && counted <= 3,
            "{name}: {} rounds, {counted} of them counted",
            rounds.len()
        );
        // Measured again only after a failure; passed if any round passed.
        for r in &rounds[..rounds.len() - 1] {
            assert_eq!(r["passed"], false, "{name}: a round before the last passed");
        }
        let last = &rounds[rounds.len() - 1];
        assert_eq!(g["passed"], last["passed"], "{name}");
        if g["passed"] == false {
            assert!(
                counted == 3 || rounds.len() == 6,
                "{name} failed after {counted} counted rounds of {}",
                rounds.len()
            );
        }
        assert_eq!(g["median"], last["median"], "{name}");
        let cores = g["cores"].as_u64().expect("cores is a number");
        let two = [
            "store.load_throughput",
            "tui.first_frame",
            "tui.first_frame_fresh_home",
            "vcs.undo_1000",
            "vcs.snapshot_one_change",
            "session.dump_throughput",
            "session.replay_throughput",
            "session.search_indexed",
        ];
        assert_eq!(cores == 2, two.contains(&name.as_str().unwrap()), "{name}");
        if cfg!(target_os = "linux") {
            let load = &g["load"];
            assert!(load["others_busy_cores"].is_number(), "{name}: {load}");
            assert!(load["cpus"].as_u64().unwrap() >= 1, "{name}: {load}");
            let speed = load["core_speed"].as_f64().expect("a canary ran");
            assert!(speed > 0.0 && speed <= 1.0, "{name}: {load}");
        }
        assert!(g["error"].is_null(), "{name}: {}", g["error"]);
        assert!(g["median"].is_number(), "{name}");
        assert!(!g["limits"].as_array().unwrap().is_empty(), "{name}");
        assert_eq!(
            g["ratio"].is_number(),
            g["floor_metric"].is_string(),
            "{name}"
        );
        assert_eq!(
            g["passed"],
            g["failures"].as_array().unwrap().is_empty(),
            "{name}"
        );
    }
    // The binary's global allocator is the accounting allocator, so this
    // count is real, and exact.
    let allocs = gates
        .iter()
        .find(|g| g["name"] == "codec.encode_1000_allocations")
        .unwrap();
    assert_eq!(allocs["median"], 0.0);
    let all_passed = gates.iter().all(|g| g["passed"] == true);
    assert_eq!(report["passed"], all_passed);
    assert_eq!(code, if all_passed { 0 } else { 1 }, "stderr:\n{stderr}");
}

#[test]
fn bench_only_runs_the_named_gates() {
    let (code, stdout, _) = smith(&["bench", "--smoke", "--json", "--only", "alloc."]);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&str> = report["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alloc.pair"]);
    assert_eq!(code, if report["passed"] == true { 0 } else { 1 });
}

#[test]
fn bench_only_with_no_match_fails_and_lists_the_gates() {
    let (code, stdout, stderr) = smith(&["bench", "--only", "no-such-gate"]);
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("\"no-such-gate\" matches no gate"),
        "{stderr}"
    );
    assert!(stderr.contains("codec.encode_1000"), "{stderr}");
}

#[test]
fn bench_text_report_prints_metric_median_limit_and_ratio() {
    let (code, stdout, _) = smith(&["bench", "--smoke", "--only", "codec.encode_1000"]);
    assert!(stdout.contains("gate"), "{stdout}");
    assert!(stdout.contains("floor median"), "{stdout}");
    assert!(stdout.contains("codec.encode_1000 "), "{stdout}");
    assert!(stdout.contains("<= 5.000 ms, <= 3.00x floor"), "{stdout}");
    assert!(stdout.contains("memcpy of the same bytes"), "{stdout}");
    assert!(
        stdout.contains(
            "A gate that fails is measured again, up to 3 rounds in all, and passes if any round passes"
        ),
        "{stdout}"
    );
    assert!(code == 0 || code == 1);
    assert_eq!(code == 0, stdout.contains("gates passed"), "{stdout}");
}
