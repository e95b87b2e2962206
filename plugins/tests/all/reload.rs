//! Repeated reloads plateau in memory: host allocations made for a plugin
//! are charged to its accounting scope, and after warm-up a hundred more
//! reloads leave no more live bytes behind than ten did.

use smith_plugins::{ExtensionComponent, Limits};

const NAME: &str = "test/reload";

/// Live bytes still charged to the plugin's scopes (open or closed).
fn live() -> u64 {
    let mut total = 0;
    smith_alloc::for_each_scope(|scope| {
        if scope.name == NAME {
            total += scope.live_bytes;
        }
    });
    total
}

fn reload(cache: &std::path::Path, times: usize) {
    for _ in 0..times {
        let component = ExtensionComponent::load(
            NAME,
            smith_plugins::builtin::PRODUCT,
            Some(cache),
            Limits::default(),
        )
        .unwrap();
        let extension = component.instantiate().unwrap();
        assert_eq!(extension.contributions().unwrap().commands.len(), 19);
    }
}

#[test]
fn memory_plateaus_over_a_hundred_reloads() {
    assert!(
        smith_alloc::is_global_allocator(),
        "the test binary must use the accounting allocator"
    );
    let cache = tempfile::tempdir().unwrap();
    reload(cache.path(), 10);
    let warm = live();
    reload(cache.path(), 100);
    let after = live();
    assert!(
        after <= warm,
        "live bytes grew from {warm} to {after} over 100 reloads"
    );
    let rss_growth = {
        let before = rss();
        reload(cache.path(), 100);
        rss().saturating_sub(before)
    };
    assert!(
        rss_growth < 32 << 20,
        "resident memory grew {rss_growth} bytes over 100 more reloads"
    );
}

fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}
