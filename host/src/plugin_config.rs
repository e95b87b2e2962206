//! Configuration as extension plugins contribute to it and see it.
//!
//! A plugin's `config-value` contributions feed the precedence levels of
//! smith-config ([`contribute`]): one whose key is a documented option
//! gives that option a default — at the built-in plugin level for smith's
//! built-in plugins, at the plugin level for the others — and any other key
//! declares an option of the plugin's own, typed by its JSON Schema,
//! documented by its description, defaulting to its `default-value`.
//!
//! [`PluginConfig`] is what a runtime's plugins read and change through
//! `config-get` / `config-set` ([`ConfigAccess`]): reads see the resolved
//! value of any option; a plugin changes only an option it declared, to a
//! value its schema accepts, for the runtime only (nothing is written to a
//! file). The keys changed are kept until [`PluginConfig::take_changed`]
//! drains them, so `config-changed` can be delivered to handlers.

use std::sync::{Arc, Mutex, PoisonError};

use smith_config::plugin::PluginOption;
use smith_config::{Config, Loader, Value, options};
use smith_plugins::WasmExtension;
use smith_plugins::builtin::BUILTINS;
use smith_plugins::effects::ConfigAccess;

/// Adds the `config-value` contributions of `plugins` to `loader`; the
/// warnings name contributions left out and why.
pub fn contribute(mut loader: Loader, plugins: &[WasmExtension]) -> (Loader, Vec<String>) {
    let mut warnings = Vec::new();
    for plugin in plugins {
        let Some(contributions) = plugin.contributions() else {
            continue;
        };
        let name = plugin.name();
        let builtin = BUILTINS.iter().any(|b| b.name == name);
        for item in &contributions.config {
            let left_out = |why: String| {
                format!(
                    "plugin {name}'s configuration value `{}` is left out: {why}; ask the plugin's author to fix its contributions",
                    item.key
                )
            };
            let default = match serde_json::from_str::<serde_json::Value>(&item.default_value) {
                Ok(default) => default,
                Err(err) => {
                    warnings.push(left_out(format!("its default is not JSON ({err})")));
                    continue;
                }
            };
            if let Some(decl) = options::find(&item.key) {
                let Some(value) = table_value(&default) else {
                    warnings.push(left_out(format!(
                        "its default {default} is not a boolean, whole number or string"
                    )));
                    continue;
                };
                loader = if builtin {
                    loader.builtin_plugin_default(name, decl.key, value)
                } else {
                    loader.plugin_contribution(name, decl.key, value)
                };
                continue;
            }
            let schema = match serde_json::from_str::<serde_json::Value>(&item.schema) {
                Ok(schema) if schema.is_object() => schema,
                _ => {
                    warnings.push(left_out("its schema is not a JSON Schema object".into()));
                    continue;
                }
            };
            if let Err(err) = smith_engine::tools::validate(&item.key, &schema, &default) {
                warnings.push(left_out(format!(
                    "its default {default} does not match its schema: expected {}",
                    err.expected
                )));
                continue;
            }
            loader = loader.plugin_option(PluginOption {
                plugin: name.to_owned(),
                builtin,
                key: item.key.clone(),
                description: item.description.clone(),
                schema,
                default,
            });
        }
    }
    (loader, warnings)
}

/// A JSON value as a table option's value.
fn table_value(json: &serde_json::Value) -> Option<Value> {
    match json {
        serde_json::Value::Bool(b) => Some(Value::Bool(*b)),
        serde_json::Value::Number(n) => n.as_i64().map(Value::Int),
        serde_json::Value::String(s) => Some(Value::Str(s.clone())),
        _ => None,
    }
}

/// The process's configuration, with the options given on its command
/// line ([`crate::settings::set_command_line`]) and the contributions of
/// `plugins` ([`contribute`]). When the contributions make it invalid, it is loaded
/// without them and the warning says why.
///
/// # Errors
///
/// When the configuration itself cannot be loaded.
pub fn resolve(
    plugins: &[WasmExtension],
) -> Result<(Config, Vec<String>), smith_config::ConfigError> {
    resolve_with(
        crate::settings::with_command_line(Loader::from_process()?),
        plugins,
    )
}

/// [`resolve`] from `loader`.
///
/// # Errors
///
/// When the configuration cannot be loaded even without the plugins'
/// contributions.
pub fn resolve_with(
    loader: Loader,
    plugins: &[WasmExtension],
) -> Result<(Config, Vec<String>), smith_config::ConfigError> {
    let (contributed, mut warnings) = contribute(loader.clone(), plugins);
    match contributed.load() {
        Ok(config) => Ok((config, warnings)),
        Err(err) => {
            let config = loader.load()?;
            warnings.push(format!(
                "the plugins' configuration values are left out: {}; disable the plugin named there (`smith plugin disable NAME`) or ask its author to fix it",
                err.diagnostic().what()
            ));
            Ok((config, warnings))
        }
    }
}

/// The configuration a runtime's plugins read and change.
#[derive(Debug, Default)]
pub struct PluginConfig {
    config: Mutex<Option<Config>>,
    changed: Mutex<Vec<String>>,
}

impl PluginConfig {
    /// A configuration with nothing resolved yet: reads answer none and
    /// changes are refused until [`PluginConfig::install`].
    pub fn new() -> Arc<Self> {
        Arc::new(PluginConfig::default())
    }

    /// Puts `config` (resolved with the plugins' contributions) in effect.
    pub fn install(&self, config: Config) {
        *lock(&self.config) = Some(config);
    }

    /// A copy of the configuration in effect, runtime changes included.
    pub fn snapshot(&self) -> Option<Config> {
        lock(&self.config).clone()
    }

    /// The keys plugins changed since the last call, in the order of their
    /// first change; each key once.
    pub fn take_changed(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.changed))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ConfigAccess for PluginConfig {
    fn get(&self, key: &str) -> Option<String> {
        lock(&self.config)
            .as_ref()
            .and_then(|config| config.json_value(key))
            .map(|value| value.to_string())
    }

    fn set(&self, plugin: &str, key: &str, value: &str) -> Result<(), String> {
        let mut guard = lock(&self.config);
        let Some(config) = guard.as_mut() else {
            return Err(format!(
                "plugin {plugin} cannot set `{key}` yet: the configuration is resolved once every plugin has loaded; set it from a command or a handler instead"
            ));
        };
        let Some(entry) = config.plugin_entry(key) else {
            let why = if options::find(key).is_some() {
                format!("`{key}` is one of smith's own options, which only the user changes")
            } else {
                format!("plugin {plugin} did not declare an option `{key}`")
            };
            return Err(format!(
                "{why}; a plugin sets only options it declares in its `config` contributions (use `smith config set` for smith's options)"
            ));
        };
        if entry.option.plugin != plugin {
            return Err(format!(
                "`{key}` is an option of plugin {}, not of plugin {plugin}; a plugin sets only options it declares itself",
                entry.option.plugin
            ));
        }
        let parsed: serde_json::Value = serde_json::from_str(value).map_err(|err| {
            format!(
                "plugin {plugin} gave `{key}` a value that is not JSON ({err}); pass the value as JSON text, e.g. \"\\\"text\\\"\" for a string"
            )
        })?;
        if let Err(err) = smith_engine::tools::validate(key, &entry.option.schema, &parsed) {
            let at = if err.field.is_empty() {
                String::new()
            } else {
                format!(" at `{}`", err.field)
            };
            return Err(format!(
                "plugin {plugin} gave `{key}` the value {parsed}, which does not match the option's schema{at}: expected {}, got {}; set it to a value the schema accepts",
                err.expected, err.received
            ));
        }
        config
            .set_plugin_runtime(plugin, key, parsed)
            .map_err(|err| {
                let d = err.diagnostic();
                format!("{}: {}; {}", d.what(), d.why(), d.next())
            })?;
        drop(guard);
        let mut changed = lock(&self.changed);
        if !changed.iter().any(|k| k == key) {
            changed.push(key.to_owned());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn greeting() -> PluginOption {
        PluginOption {
            plugin: "test/kit".into(),
            builtin: false,
            key: "kit.greeting".into(),
            description: "The greeting.".into(),
            schema: serde_json::json!({"type": "string", "minLength": 1}),
            default: serde_json::json!("hello"),
        }
    }

    fn runtime_config(dir: &std::path::Path) -> Arc<PluginConfig> {
        let config = Loader::new(smith_config::Paths::under(dir))
            .plugin_option(greeting())
            .load()
            .unwrap();
        let shared = PluginConfig::new();
        shared.install(config);
        shared
    }

    #[test]
    fn a_plugin_sets_its_own_option_for_the_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let config = runtime_config(dir.path());
        assert_eq!(config.get("kit.greeting").as_deref(), Some("\"hello\""));
        assert_eq!(config.get("tui.theme").as_deref(), Some("\"default\""));
        assert_eq!(config.get("no.such"), None);
        config.set("test/kit", "kit.greeting", "\"hi\"").unwrap();
        config.set("test/kit", "kit.greeting", "\"hey\"").unwrap();
        assert_eq!(config.get("kit.greeting").as_deref(), Some("\"hey\""));
        assert_eq!(config.take_changed(), ["kit.greeting"]);
        assert!(config.take_changed().is_empty());
        let snapshot = config.snapshot().unwrap();
        let entry = snapshot.plugin_entry("kit.greeting").unwrap();
        assert_eq!(
            entry.source(),
            Some(&smith_config::Source::Runtime {
                plugin: "test/kit".into()
            })
        );
        assert_eq!(entry.layers.len(), 2);
        // Nothing was written.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn invalid_values_and_foreign_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let config = runtime_config(dir.path());
        let err = config.set("test/kit", "kit.greeting", "\"\"").unwrap_err();
        assert!(
            err.contains("`kit.greeting`") && err.contains("test/kit") && err.contains("schema"),
            "{err}"
        );
        let err = config.set("test/kit", "kit.greeting", "12").unwrap_err();
        assert!(err.contains("expected"), "{err}");
        let err = config.set("test/kit", "kit.other", "\"x\"").unwrap_err();
        assert!(
            err.contains("`kit.other`") && err.contains("test/kit") && err.contains("declare"),
            "{err}"
        );
        let err = config
            .set("acme/other", "kit.greeting", "\"x\"")
            .unwrap_err();
        assert!(
            err.contains("acme/other") && err.contains("test/kit"),
            "{err}"
        );
        let err = config
            .set("test/kit", "tui.theme", "\"light\"")
            .unwrap_err();
        assert!(
            err.contains("`tui.theme`") && err.contains("smith config set"),
            "{err}"
        );
        assert_eq!(config.get("kit.greeting").as_deref(), Some("\"hello\""));
        assert!(config.take_changed().is_empty());
    }

    #[test]
    fn nothing_is_settable_before_the_configuration_is_resolved() {
        let config = PluginConfig::new();
        assert_eq!(config.get("tui.theme"), None);
        let err = config.set("test/kit", "kit.greeting", "\"x\"").unwrap_err();
        assert!(
            err.contains("test/kit") && err.contains("`kit.greeting`"),
            "{err}"
        );
    }

    /// test/kit (plugins/tests/guests/kit) with its effects going through
    /// `config`.
    fn kit(config: &Arc<PluginConfig>) -> WasmExtension {
        use smith_engine::journal::{EffectJournal, MemoryJournal};
        use smith_plugins::effects::{Effects, Grants};
        use std::sync::atomic::AtomicU64;
        let bytes = std::fs::read(
            std::path::Path::new(smith_plugins::builtin::GUESTS_DIR).join("smith_plugin_kit.wasm"),
        )
        .unwrap();
        let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
        let effects = Effects::new(
            "test/kit",
            Grants::default(),
            journal,
            Arc::new(AtomicU64::new(1)),
            smith_plugins::API_GENERATION,
        )
        .with_config(config.clone());
        smith_plugins::ExtensionComponent::load(
            "test/kit",
            &bytes,
            None,
            smith_plugins::Limits::default(),
        )
        .unwrap()
        .instantiate_with(Some(effects))
        .unwrap()
    }

    fn notices(actions: &[smith_plugins::extension::Action]) -> Vec<String> {
        actions
            .iter()
            .filter_map(|a| match a {
                smith_plugins::extension::Action::Ui(intent) => match &intent.kind {
                    smith_plugins::extension::IntentKind::Notify(text) => Some(text.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    #[test]
    fn kit_greet_changes_the_option_for_the_runtime_only() {
        let dir = tempfile::tempdir().unwrap();
        let paths = smith_config::Paths::under(dir.path());
        let file = paths.user_config_file();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let text = "// mine\ntui {\n    theme default\n}\n";
        std::fs::write(&file, text).unwrap();
        let config = PluginConfig::new();
        let mut kit = kit(&config);
        let (resolved, warnings) =
            resolve_with(Loader::new(paths), std::slice::from_ref(&kit)).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let entry = resolved.plugin_entry("kit.greeting").unwrap();
        assert_eq!(entry.option.plugin, "test/kit");
        assert_eq!(
            entry.option.description,
            "The greeting the kit-greet command shows."
        );
        config.install(resolved);

        let shown = kit.run_command("kit-greet", "").unwrap();
        assert_eq!(notices(&shown), ["greeting \"hello\""]);
        let set = kit.run_command("kit-greet", "hi").unwrap();
        assert_eq!(notices(&set), ["greeting set to hi"]);
        let shown = kit.run_command("kit-greet", "").unwrap();
        assert_eq!(notices(&shown), ["greeting \"hi\""]);
        assert_eq!(config.take_changed(), ["kit.greeting"]);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

        // The schema asks for at least one character: refused, named.
        let err = config.set("test/kit", "kit.greeting", "\"\"").unwrap_err();
        assert!(
            err.contains("test/kit") && err.contains("`kit.greeting`"),
            "{err}"
        );
        assert_eq!(config.get("kit.greeting").as_deref(), Some("\"hi\""));
    }
}
