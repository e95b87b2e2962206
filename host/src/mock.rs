//! The scripted provider behind `--provider mock`: the built-in plugin
//! smith/mock, loaded through the same provider contract as any provider
//! plugin, compiled once into smith's cache directory and loaded from there
//! afterwards. `--mock-record FILE` wraps it so every request is written
//! down before the plugin sees it.

use std::path::Path;

use smith_engine::provider::Provider;
use smith_engine::provider::record::RecordingProvider;
use smith_engine::provider::scripted::ScriptError;
use smith_plugins::{InstantiateError, Limits};

/// The mock provider playing the script at `script` (the built-in demo when
/// `None`), recording requests to `record` when given.
///
/// # Errors
///
/// An unreadable or invalid script (a script error naming the file), an
/// uncreatable record, or a plugin failure (naming smith/mock and the phase).
pub fn provider(script: Option<&Path>, record: Option<&Path>) -> anyhow::Result<Box<dyn Provider>> {
    if let Ok(paths) = smith_config::Paths::from_process()
        && crate::plugins::disabled(&paths)
            .iter()
            .any(|d| d == "smith/mock")
    {
        anyhow::bail!(
            "the provider plugin smith/mock (the scripted provider) is disabled; run `smith plugin enable smith/mock`, or choose a live provider with --provider"
        );
    }
    let text = script
        .map(|path| smith_diag::input::read_text(path, &SCRIPT_BOUND))
        .transpose()?;
    let origin = script.map(|path| path.display().to_string());
    let cache = cache_dir();
    let settings = text.as_deref().zip(origin.as_deref());
    let mock = smith_plugins::builtin::mock_provider(settings, cache.as_deref(), limits())
        .map_err(|err| match err {
            InstantiateError::Rejected(message) => anyhow::Error::new(ScriptError { message }),
            InstantiateError::Failed(error) => anyhow::Error::new(error),
        })?;
    let mut provider: Box<dyn Provider> = Box::new(mock);
    if let Some(path) = record {
        provider = Box::new(RecordingProvider::new(provider, path)?);
    }
    Ok(provider)
}

/// A mock script is read whole, at most 16 MiB (the scripted provider holds
/// it in its 64 MiB of memory); it may be a FIFO or device
/// the user names (`--mock-script <(generate)`), read with that limit and a
/// deadline.
const SCRIPT_BOUND: smith_diag::input::Bound<'static> = smith_diag::input::Bound {
    what: "mock script",
    max_bytes: 16 * 1024 * 1024,
    named: true,
};

/// Where compiled plugins are cached: smith's cache directory, or no cache
/// (compile each time) when the directory cannot be determined.
fn cache_dir() -> Option<std::path::PathBuf> {
    smith_config::Paths::from_process()
        .ok()
        .map(|paths| paths.cache_dir)
}

/// The plugin limits the binary runs built-in plugins with (the abort
/// grace is `plugins.abort-deadline-ms`).
fn limits() -> Limits {
    crate::settings::process_plugin_limits()
}
