//! Everything the interface controller uses from the rest of the binary,
//! in one place: choosing the provider, the mock provider, loading the
//! extension plugins and the product, the settings the interface reads
//! and the diagnostics style. The other modules of the controller reach
//! the binary only through these re-exports, so the controller can move
//! into a library of its own by changing this module alone.

/// Choosing the provider, as `smith eval` does.
pub(super) mod eval {
    pub(crate) use crate::cmd::eval::{Chosen, ProviderChoice, choose_provider};
}

/// The scripted provider with a mock script.
pub(super) mod mock {
    pub(crate) use crate::cmd::mock::provider;
}

/// The extension plugins: loading them, their session hooks, warnings,
/// and the intents kept in a session.
pub(super) mod extensions {
    pub(crate) use crate::cmd::extensions::{keep_intent, kept_intents, load, session_hooks, warn};
}

/// The interface's product, built from the plugins' contributions.
pub(super) mod product {
    pub(crate) use crate::cmd::product::load;
}

/// The settings the interface reads.
pub(super) mod settings {
    pub(crate) use crate::settings::{session_root, tui_mouse, tui_theme};
}

/// How diagnostics are drawn on standard error.
pub(super) mod config {
    pub(crate) use crate::cmd::config::style;
}
