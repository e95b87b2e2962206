//! Everything the interface controller uses from the host, in one place:
//! choosing the provider, the mock provider, the extension plugins, the
//! product, the settings the interface reads and the diagnostics style.

/// Choosing the provider, as `smith eval` does.
pub(super) mod eval {
    pub(crate) use smith_host::{Chosen, choose_provider};
}

/// The thinking level the live provider's requests ask for.
pub(super) mod thinking {
    pub(crate) use smith_host::thinking::{
        LEVEL_NAMES, ThinkingDial, ThinkingLevel, level_name, parse_level,
    };
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

/// The broker of the plugins' questions that wait.
pub(super) mod questions {
    pub(crate) use smith_host::questions::{Broker, Presenter, Waiting, Withdrawn};
}

/// The interface's product, built from the plugins' contributions.
pub(super) mod product {
    pub(crate) use crate::product::load;
}

/// The settings the interface reads.
pub(super) mod settings {
    pub(crate) use crate::config::{tui_mouse, tui_theme};
    pub(crate) use smith_host::settings::session_root;
}

/// How diagnostics are drawn on standard error.
pub(super) mod config {
    pub(crate) use smith_host::output::style;
}

/// What the interface prints on standard error when a signal ended it.
pub(super) mod output {
    pub(crate) use smith_host::output::interrupted_line;
}
