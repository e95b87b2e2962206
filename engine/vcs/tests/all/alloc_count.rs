//! Exact allocation counting: the accounting allocator is this test
//! binary's global allocator.

#[global_allocator]
static GLOBAL: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();

use crate::fixtures::Project;

/// A snapshot of an unchanged tree allocates the same number of times at
/// 10, 1,000 and 10,000 files.
#[test]
fn unchanged_snapshot_allocates_constant_times() {
    let mut seen = Vec::new();
    for n in [10usize, 1_000, 10_000] {
        let mut p = Project::new();
        for i in 0..n {
            p.write(
                &format!("d{}/e{}/f{i}.txt", i % 7, i % 13),
                &format!("content {i}\n"),
            );
        }
        let first = p.vcs.snapshot().expect("snapshot");
        // Past the racy window, so the stat cache trusts every entry.
        std::thread::sleep(std::time::Duration::from_nanos(
            2 * smith_vcs::RACY_MARGIN_NS as u64,
        ));
        p.vcs.snapshot().expect("snapshot");
        p.vcs.snapshot().expect("snapshot");
        let (s, stats) = smith_alloc::count(|| p.vcs.snapshot().expect("snapshot"));
        assert_eq!((s.id, s.files_read), (first.id, 0));
        seen.push(stats.allocations);
    }
    eprintln!(
        "allocations of a snapshot of an unchanged tree at 10, 1,000, 10,000 files: {seen:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[0] == w[1]),
        "allocations at 10, 1,000, 10,000 files: {seen:?}"
    );
}
