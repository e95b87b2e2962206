//! Cooperative cancellation shared between a caller and an exchange.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A cloneable flag: any clone may [`cancel`](CancelToken::cancel), every
/// clone observes it. The engine checks it while connecting, while waiting
/// for the head, and at every body chunk boundary.
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests cancellation. Idempotent.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Whether cancellation was requested.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}
