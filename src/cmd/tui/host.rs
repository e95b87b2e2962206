//! Everything the interface controller uses from the rest of the binary,
//! in one place: choosing the provider, the mock provider, loading the
//! extension plugins and the product, the settings the interface reads
//! and the diagnostics style. The other modules of the controller reach
//! the binary only through these re-exports, so the controller can move
//! into a library of its own by changing this module alone.

/// Choosing the provider, as `smith eval` does.
pub(super) mod eval {
    pub(crate) use crate::cmd::eval::ProviderChoice;
    pub(crate) use smith_host::{Chosen, choose_provider};
}

/// The scripted provider with a mock script.
pub(super) mod mock {
    pub(crate) use smith_host::mock::provider;
}

/// The extension plugins: their warnings and the intents kept in a
/// session.
pub(super) mod extensions {
    pub(crate) use smith_host::extensions::{keep_intent, kept_intents, warn};
}

/// The interface's product, built from the plugins' contributions.
pub(super) mod product {
    pub(crate) use crate::cmd::product::load;
}

/// The settings the interface reads.
pub(super) mod settings {
    pub(crate) use crate::settings::{tui_mouse, tui_theme};
    pub(crate) use smith_host::settings::session_root;
}

/// How diagnostics are drawn on standard error.
pub(super) mod config {
    pub(crate) use smith_host::output::style;
}
