//! Integration tests of the plugin host: the mock plugin against the native
//! scripted provider, the cache, the hostile guests, the product and
//! example extensions, manifests and installation.
#![allow(clippy::unwrap_used)] // a test binary: a failed unwrap is a failed test

mod effects;
mod extension;
mod hooks;
mod hostile;
mod manifest;
mod mock;
mod reload;

use std::path::PathBuf;

#[global_allocator]
static ALLOC: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();

/// A guest component built by build.rs.
pub fn guest(file: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("SMITH_PLUGIN_GUESTS")).join(file);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("cannot read the test guest {}: {e}", path.display()))
}
