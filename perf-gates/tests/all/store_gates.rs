//! The store gates' runners, with the accounting allocator installed (tiny
//! fixtures: the plan is neither FULL nor QUICK).

use std::time::Duration;

use smith_perf::store_gates::STORE;
use smith_perf::{Plan, run};

fn tiny() -> Plan {
    Plan {
        name: "test",
        warmup: Duration::from_millis(5),
        samples: 3,
        sample_target: Duration::from_millis(1),
    }
}

#[test]
fn store_gates_measure_real_values() {
    let report = run(STORE, tiny());
    let json = report.to_json();
    let rows = json["gates"].as_array().unwrap();
    let row = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap().clone();
    for r in rows {
        assert!(r["error"].is_null(), "{}: {}", r["name"], r["error"]);
    }
    // Forking allocates exactly once, judged as passing.
    let fork = row("store.fork_1m_allocations");
    assert_eq!(fork["median"], 1.0);
    assert_eq!(fork["passed"], true);
    assert_eq!(fork["notes"]["entries"]["value"], 976.0);
    // Opening reads a few frames: its peak heap is small but not zero (the
    // path, the header and the entries read), far below the 64 MiB bound.
    let peak = row("store.open_peak_private");
    let bytes = peak["median"].as_f64().unwrap();
    assert!(bytes > 0.0 && bytes < 1024.0 * 1024.0, "{bytes}");
    // Every fixture-backed gate says how big its file was.
    for n in [
        "store.open_ready_10MB",
        "store.open_ready_100MB",
        "store.open_ready_1GiB",
        "store.load_throughput",
    ] {
        let b = row(n)["notes"]["file_bytes"]["value"].as_f64().unwrap();
        assert!(b > 0.0, "{n}");
    }
    let load = row("store.load_throughput");
    assert!(
        load["notes"]["throughput_vs_read"]["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // The page cache's state of the fixture: how many of its full 2 MiB
    // regions are held huge (the tiny fixture ends on a whole pool of
    // entries, a few MB). Full regions of the mapping: the file's length in
    // regions, or one fewer when the mapping does not start on a region.
    if cfg!(target_os = "linux") && load["notes"]["fixture_regions_2mib"].is_object() {
        let bytes = load["notes"]["file_bytes"]["value"].as_f64().unwrap();
        let whole = (bytes / f64::from(2u32 << 20)).floor();
        let regions = load["notes"]["fixture_regions_2mib"]["value"]
            .as_f64()
            .unwrap();
        let huge = load["notes"]["fixture_huge_regions"]["value"]
            .as_f64()
            .unwrap();
        assert!(
            regions == whole || regions + 1.0 == whole,
            "{regions} of {bytes} B"
        );
        assert!(huge <= regions, "{huge} huge of {regions}");
    }
    assert!(row("store.append_1000")["ratio"].as_f64().unwrap() > 0.0);
}
