//! Runs the gate table outside the `smith` binary, with the accounting
//! allocator installed the same way: `cargo run --release -p smith-perf
//! --example gates -- [--quick] [--json]`. `smith bench` is the supported
//! entry point; this example exists to measure the gates while working on
//! this crate alone.

use smith_alloc::AccountingAllocator;
use smith_perf::{Plan, all_gates, run};

#[global_allocator]
static GLOBAL: AccountingAllocator = AccountingAllocator::new();

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let plan = if args.iter().any(|a| a == "--quick") {
        Plan::QUICK
    } else {
        Plan::FULL
    };
    let report = run(&all_gates(), plan);
    if args.iter().any(|a| a == "--json") {
        println!("{:#}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    std::process::ExitCode::from(report.exit_code())
}
