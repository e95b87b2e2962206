//! Exact allocation count of one scripted tool-using turn
//! (`bench_support::scripted_turn`), the number the `turn allocations`
//! performance gate holds: it must not grow.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use smith_engine::bench_support::{EVENTS_PER_TURN, scripted_turn};

/// Allocations of one steady-state turn, measured on this build. A change
/// that adds allocations to the turn's path must update this number on
/// purpose (and `smith bench`'s gate with it).
pub const ALLOCATIONS_PER_TURN: u64 = 1_079;

#[test]
fn a_scripted_turn_allocates_exactly_the_same_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut turn = scripted_turn(dir.path()).unwrap();
    // The first turns size every reused buffer.
    turn.turn().unwrap();
    turn.turn().unwrap();
    let counts: Vec<u64> = (0..5)
        .map(|_| {
            let (events, stats) = smith_alloc::count(|| turn.turn().unwrap());
            assert_eq!(events, EVENTS_PER_TURN);
            stats.allocations
        })
        .collect();
    assert_eq!(counts, vec![ALLOCATIONS_PER_TURN; 5]);
}
