//! The plugin error type: what happened, to which plugin, in which phase,
//! and what to do next.

use std::fmt;

/// Where in a plugin's life an error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Reading or validating the manifest.
    Manifest,
    /// Installing, uninstalling or changing a plugin's state on disk.
    Install,
    /// Compiling the component or loading it from the cache.
    Compile,
    /// Instantiating the component.
    Instantiate,
    /// Calling an export (named).
    Call(&'static str),
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Phase::Manifest => f.write_str("manifest"),
            Phase::Install => f.write_str("install"),
            Phase::Compile => f.write_str("compile"),
            Phase::Instantiate => f.write_str("instantiate"),
            Phase::Call(name) => write!(f, "call {name}"),
        }
    }
}

/// What kind of failure it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The manifest or the plugin's files are invalid.
    Invalid,
    /// A file could not be read or written.
    Io,
    /// The component does not compile, link or fit the world.
    Component,
    /// The plugin ran past its deadline and was destroyed.
    Deadline,
    /// The plugin ignored an abort past the grace period and was destroyed.
    AbortGrace,
    /// The plugin hit its memory limit and was destroyed.
    Memory,
    /// The plugin trapped (panic, unreachable, bad access) and was destroyed.
    Trap,
    /// The plugin went on flooding the host within one call after its cap
    /// per run was reached, and was stopped and destroyed.
    Flood,
    /// The plugin's instance was destroyed earlier; reload it.
    Destroyed,
    /// The plugin returned an error of its own.
    Guest,
    /// The plugin needs something this host does not have (an API
    /// generation, a capability the user did not grant).
    Unsupported,
}

/// A plugin failure. The message says what happened, why, and what to do
/// next; the plugin and the phase are always named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginError {
    /// The plugin's name (`org/name`), or the path when no name is known.
    pub plugin: String,
    /// Where it happened.
    pub phase: Phase,
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What happened, why, and what to do next.
    pub message: String,
}

impl PluginError {
    /// A new error.
    pub fn new(
        plugin: impl Into<String>,
        phase: Phase,
        kind: ErrorKind,
        message: impl Into<String>,
    ) -> Self {
        Self {
            plugin: plugin.into(),
            phase,
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "plugin {} ({}): {}",
            self.plugin, self.phase, self.message
        )
    }
}

impl std::error::Error for PluginError {}
