//! Accounting scopes for plugins: every call into a plugin runs inside a
//! kernel-call scope named after the plugin, so host allocations made for it
//! are charged to it.

use std::collections::BTreeSet;
use std::sync::Mutex;

static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

/// The accounting scope for calls into `plugin`. Scope names are static;
/// each distinct plugin name is interned once, so reloads do not grow.
pub(crate) fn plugin_scope(plugin: &str) -> smith_alloc::Scope {
    let name = {
        let mut names = NAMES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match names.get(plugin) {
            Some(name) => *name,
            None => {
                let leaked: &'static str = Box::leak(plugin.to_owned().into_boxed_str());
                names.insert(leaked);
                leaked
            }
        }
    };
    smith_alloc::Scope::new(smith_alloc::ScopeKind::KernelCall, name)
}
