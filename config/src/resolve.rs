//! Loading every layer and resolving each option to one value with a source.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use smith_diag::{Diagnostic, Surface};

use crate::error::{ConfigError, ErrorKind};
use crate::file;
use crate::options::{self, OptionDecl};
use crate::paths::Paths;
use crate::permissions::PermissionRule;
use crate::plugin::{PluginEntry, PluginOption};
use crate::source::{Level, Source};
use crate::suggest;
use crate::trust::{Project, TrustStatus, TrustStore, untrusted_warning};
use crate::value::{self, Value};

/// Collects the inputs of every layer, then [`Loader::load`]s them.
///
/// ```no_run
/// # fn main() -> Result<(), smith_config::ConfigError> {
/// let config = smith_config::Loader::from_process()?
///     .flag("--model", "small")
///     .load()?;
/// for warning in config.warnings() {
///     eprint!("{}", warning.render_terminal(smith_diag::Style::for_stderr()));
/// }
/// let timeout = config.int(&smith_config::options::NET_HEAD_TIMEOUT_S);
/// # let _ = timeout; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Loader {
    paths: Paths,
    env: BTreeMap<String, String>,
    start_dir: Option<PathBuf>,
    builtin: Vec<(String, String, Value)>,
    plugin: Vec<(String, String, Value)>,
    plugin_options: Vec<PluginOption>,
    flags: Vec<(String, String)>,
}

impl Loader {
    /// A loader over `paths` with no environment, no project, no plugins and
    /// no flags.
    pub fn new(paths: Paths) -> Loader {
        Loader {
            paths,
            env: BTreeMap::new(),
            start_dir: None,
            builtin: Vec::new(),
            plugin: Vec::new(),
            plugin_options: Vec::new(),
            flags: Vec::new(),
        }
    }

    /// A loader over the process: paths and variables from the environment,
    /// the project searched from the current directory.
    ///
    /// # Errors
    ///
    /// As for [`Paths::from_process`].
    pub fn from_process() -> Result<Loader, ConfigError> {
        let mut loader = Loader::new(Paths::from_process()?)
            .env(std::env::vars().filter(|(k, _)| k.starts_with("SMITH_")));
        if let Ok(cwd) = std::env::current_dir() {
            loader = loader.start_dir(cwd);
        }
        Ok(loader)
    }

    /// Adds environment variables (only `SMITH_*` ones matter).
    #[must_use]
    pub fn env<K: Into<String>, V: Into<String>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Loader {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Searches for a project configuration from `dir` upward.
    #[must_use]
    pub fn start_dir(mut self, dir: impl Into<PathBuf>) -> Loader {
        self.start_dir = Some(dir.into());
        self
    }

    /// A default supplied by built-in plugin `plugin`.
    #[must_use]
    pub fn builtin_plugin_default(mut self, plugin: &str, key: &str, value: Value) -> Loader {
        self.builtin
            .push((plugin.to_owned(), key.to_owned(), value));
        self
    }

    /// An option a plugin declares for itself (a key not in the option
    /// table), with its default.
    #[must_use]
    pub fn plugin_option(mut self, option: PluginOption) -> Loader {
        self.plugin_options.push(option);
        self
    }

    /// A value contributed by plugin `plugin` when it loads.
    #[must_use]
    pub fn plugin_contribution(mut self, plugin: &str, key: &str, value: Value) -> Loader {
        self.plugin.push((plugin.to_owned(), key.to_owned(), value));
        self
    }

    /// A command-line override: `flag` as typed (e.g. `--model`), `raw` its
    /// argument.
    #[must_use]
    pub fn flag(mut self, flag: &str, raw: &str) -> Loader {
        self.flags.push((flag.to_owned(), raw.to_owned()));
        self
    }

    /// The paths this loader uses.
    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// The project found from the start directory, if any.
    pub fn project(&self) -> Option<Project> {
        let start = self.start_dir.as_deref()?;
        Project::discover(start, self.paths.home.as_deref())
    }

    /// Checks the user file, the project file and the `SMITH_*` variables
    /// each on its own, read by the code [`Loader::load`] reads them with,
    /// so that a problem in one layer does not hide those in the others.
    /// Nothing is resolved; the plugin and flag layers are not looked at.
    /// See [`crate::check`].
    pub fn check_layers(&self) -> Vec<crate::check::LayerCheck> {
        vec![
            crate::check::file(Level::User, &self.paths.user_config_file()),
            crate::check::project(&self.paths, self.project()),
            crate::check::env(&self.env),
        ]
    }

    /// Reads every layer and resolves every option.
    ///
    /// # Errors
    ///
    /// The first invalid value, unknown key in a `reject` section, or
    /// unreadable file, in precedence order from lowest to highest.
    pub fn load(self) -> Result<Config, ConfigError> {
        let mut settings: Vec<(&'static OptionDecl, Value, Source)> = Vec::new();
        let mut warnings = Vec::new();
        for decl in options::ALL {
            if let Some(lit) = decl.default {
                settings.push((decl, Value::from_lit(lit), Source::Default));
            }
        }
        for (plugin, key, value) in &self.builtin {
            let source = Source::BuiltinPlugin {
                plugin: plugin.clone(),
            };
            let decl = plugin_decl(key, &source)?;
            settings.push((decl, checked(decl, value.clone(), &source)?, source));
        }
        for (plugin, key, value) in &self.plugin {
            let source = Source::Plugin {
                plugin: plugin.clone(),
            };
            let decl = plugin_decl(key, &source)?;
            settings.push((decl, checked(decl, value.clone(), &source)?, source));
        }
        let mut permission_rules = Vec::new();
        let mut mcp_servers = Vec::new();
        let user_file = self.paths.user_config_file();
        if let Some(text) = read_optional(&user_file)? {
            let (parsed, rules) = file::parse(&text, &user_file, &mut warnings)?;
            permission_rules.extend(rules);
            mcp_servers.extend(crate::mcp::from_text(&text, &user_file)?);
            for s in parsed {
                let source = Source::User {
                    path: user_file.clone(),
                    at: s.at,
                };
                settings.push((s.decl, s.value, source));
            }
        }
        let mut project_state = None;
        if let Some(project) = self.project() {
            let config_file = project.config_file();
            let status = TrustStore::open(&self.paths.trust_file())?.status(&project)?;
            if status == TrustStatus::Trusted {
                if let Some(text) = read_optional(&config_file)? {
                    let (parsed, rules) = file::parse(&text, &config_file, &mut warnings)?;
                    permission_rules.extend(rules);
                    mcp_servers.extend(crate::mcp::from_text(&text, &config_file)?);
                    for s in parsed {
                        let source = Source::Project {
                            path: config_file.clone(),
                            at: s.at,
                        };
                        settings.push((s.decl, s.value, source));
                    }
                }
            } else {
                warnings.push(untrusted_warning(&project, &status));
            }
            project_state = Some((project, status));
        }
        for (var, raw) in &self.env {
            if let Some((decl, value)) = env_setting(var, raw, &mut warnings)? {
                settings.push((decl, value, Source::Env { var: var.clone() }));
            }
        }
        for (flag, raw) in &self.flags {
            let Some(decl) = options::find_by_flag(flag) else {
                let near = suggest::did_you_mean(flag, options::ALL.iter().map(|d| d.flag));
                return Err(ConfigError::new(
                    ErrorKind::UnknownKey,
                    Diagnostic::error(
                        "config.unknown-flag",
                        format!("unknown option flag {flag}"),
                        format!("no option is set by that flag{near}"),
                        "use a flag listed by `smith config show`",
                    )
                    .with_surface(Surface::flag(flag.clone()))
                    .with_value(raw),
                ));
            };
            let value = value::parse_text(decl, raw).map_err(|why| {
                invalid(
                    decl,
                    raw,
                    Surface::flag(flag.clone()),
                    why,
                    format!("{flag} {}", value::example_text(decl)),
                )
            })?;
            settings.push((decl, value, Source::Flag { flag: flag.clone() }));
        }
        let mut plugin_entries: Vec<PluginEntry> = Vec::new();
        for option in self.plugin_options {
            if let Some(reason) = refused(&option, &plugin_entries) {
                warnings.push(reason);
                continue;
            }
            let source = option.default_source();
            plugin_entries.push(PluginEntry {
                layers: vec![(option.default.clone(), source)],
                option,
            });
        }
        let mut config = Config {
            plugin_entries,
            paths: self.paths,
            entries: options::ALL
                .iter()
                .map(|decl| Entry {
                    decl,
                    layers: Vec::new(),
                })
                .collect(),
            warnings,
            project: project_state,
            permission_rules,
            mcp_servers,
        };
        for (decl, value, source) in settings {
            config.push(decl, value, source);
        }
        Ok(config)
    }
}

/// One variable of the environment layer, read as [`Loader::load`] reads
/// it: the option it sets and its value, or `None` for a variable that is
/// no option (a warning is pushed onto `warnings` when it looks like a
/// misspelling of one).
///
/// # Errors
///
/// `config.invalid-value` when the variable is an option's and its value
/// does not fit the option.
pub(crate) fn env_setting(
    var: &str,
    raw: &str,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<(&'static OptionDecl, Value)>, ConfigError> {
    let Some(decl) = options::find_by_env(var) else {
        if options::RESERVED_ENV.contains(&var) {
            return Ok(None);
        }
        if let Some(near) = suggest::closest(var, options::ALL.iter().map(|d| d.env)) {
            warnings.push(
                Diagnostic::warning(
                    "config.unknown-env",
                    format!("environment variable {var} is not a smith option"),
                    format!("it is close to {near}, which is one"),
                    format!("rename it to {near} if that is what you meant, or unset it"),
                )
                .with_surface(Surface::env(var.to_owned()))
                .with_field(var.to_owned()),
            );
        }
        return Ok(None);
    };
    let value = value::parse_text(decl, raw).map_err(|why| {
        invalid(
            decl,
            raw,
            Surface::env(var.to_owned()),
            why,
            format!("export {var}={}", value::example_text(decl)),
        )
    })?;
    Ok(Some((decl, value)))
}

/// Why a plugin option cannot be declared: its key is a table option or
/// one another plugin declared first.
fn refused(option: &PluginOption, declared: &[PluginEntry]) -> Option<Diagnostic> {
    let plugin = &option.plugin;
    let key = &option.key;
    let (why, fix) = if options::find(key).is_some() {
        (
            format!("`{key}` is one of smith's own options, which plugins can only give defaults"),
            format!("ask the author of {plugin} to rename its option"),
        )
    } else if let Some(first) = declared.iter().find(|e| &e.option.key == key) {
        let first = &first.option.plugin;
        (
            format!("plugin {first} already declares `{key}`, and keeps it"),
            format!(
                "disable one of the two plugins (`smith plugin disable {plugin}`) or ask their authors to rename the option"
            ),
        )
    } else {
        return None;
    };
    Some(
        Diagnostic::warning(
            "config.plugin-option",
            format!("plugin {plugin} declares the option `{key}`, which is ignored"),
            why,
            fix,
        )
        .with_surface(Surface::plugin(plugin.clone()))
        .with_field(key.clone()),
    )
}

fn plugin_decl(key: &str, source: &Source) -> Result<&'static OptionDecl, ConfigError> {
    options::find(key).ok_or_else(|| {
        let near = suggest::did_you_mean(key, options::ALL.iter().map(|d| d.key));
        ConfigError::new(
            ErrorKind::UnknownKey,
            Diagnostic::error(
                "config.unknown-key",
                format!("{source} set unknown option `{key}`"),
                format!("no option `{key}` is declared{near}"),
                format!("fix or remove the setting in {source}"),
            )
            .with_surface(source.surface())
            .with_field(key.to_owned()),
        )
    })
}

fn checked(decl: &OptionDecl, value: Value, source: &Source) -> Result<Value, ConfigError> {
    let raw = value.to_string();
    value::check(decl, value)
        .map_err(|why| invalid(decl, &raw, source.surface(), why, value::example(decl)))
}

fn invalid(
    decl: &OptionDecl,
    raw: &str,
    surface: Surface,
    why: String,
    example: String,
) -> ConfigError {
    ConfigError::new(
        ErrorKind::InvalidValue,
        Diagnostic::error(
            "config.invalid-value",
            format!("invalid value for `{}` from {surface}", decl.key),
            why,
            format!("set `{}` to {}", decl.key, value::expected(decl)),
        )
        .with_value(raw)
        .with_surface(surface)
        .with_field(decl.key)
        .with_example(example),
    )
}

fn read_optional(path: &Path) -> Result<Option<String>, ConfigError> {
    crate::file::read_text(path, "configuration file")
}

/// One option's resolution: every layer that set it, highest precedence
/// first. The first is the value in effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The option.
    pub decl: &'static OptionDecl,
    /// `(value, source)`, highest precedence first; within one level the
    /// later setting wins.
    pub layers: Vec<(Value, Source)>,
}

impl Entry {
    /// The value in effect, if any layer set it.
    pub fn value(&self) -> Option<&Value> {
        self.layers.first().map(|(v, _)| v)
    }

    /// Where the value in effect came from.
    pub fn source(&self) -> Option<&Source> {
        self.layers.first().map(|(_, s)| s)
    }

    /// The JSON form: key, value (or null), source, and with `sources` every
    /// layer.
    pub fn to_json(&self, sources: bool) -> serde_json::Value {
        let mut obj = serde_json::Map::new();
        obj.insert("key".into(), self.decl.key.into());
        obj.insert(
            "value".into(),
            self.value().map_or(serde_json::Value::Null, Value::to_json),
        );
        obj.insert(
            "source".into(),
            self.source()
                .map_or(serde_json::Value::Null, Source::to_json),
        );
        if self.value().is_none() {
            obj.insert("unset".into(), self.decl.unset.into());
        }
        if sources {
            obj.insert(
                "sources".into(),
                self.layers
                    .iter()
                    .map(|(v, s)| serde_json::json!({"value": v.to_json(), "source": s.to_json()}))
                    .collect(),
            );
        }
        serde_json::Value::Object(obj)
    }
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    paths: Paths,
    entries: Vec<Entry>,
    plugin_entries: Vec<PluginEntry>,
    warnings: Vec<Diagnostic>,
    project: Option<(Project, TrustStatus)>,
    permission_rules: Vec<PermissionRule>,
    mcp_servers: Vec<crate::mcp::McpServer>,
}

impl Config {
    fn push(&mut self, decl: &'static OptionDecl, value: Value, source: Source) {
        let Some(entry) = self.entries.iter_mut().find(|e| e.decl.key == decl.key) else {
            return;
        };
        let level = source.level();
        // Insert before the first layer of the same or lower level, so the
        // newest setting of a level wins over older ones of that level.
        let at = entry
            .layers
            .iter()
            .position(|(_, s)| s.level() <= level)
            .unwrap_or(entry.layers.len());
        entry.layers.insert(at, (value, source));
    }

    /// The paths the configuration was loaded with.
    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// Every option, in table order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The resolution of the option with dotted key `key`.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.decl.key == key)
    }

    /// The options plugins declared, in load order.
    pub fn plugin_entries(&self) -> &[PluginEntry] {
        &self.plugin_entries
    }

    /// The resolution of the plugin-declared option `key`.
    pub fn plugin_entry(&self, key: &str) -> Option<&PluginEntry> {
        self.plugin_entries.iter().find(|e| e.option.key == key)
    }

    /// The value in effect for `key` as JSON, a table option's or a plugin
    /// option's; none when it is unset or no option has that key.
    pub fn json_value(&self, key: &str) -> Option<serde_json::Value> {
        match self.entry(key) {
            Some(entry) => entry.value().map(Value::to_json),
            None => self.plugin_entry(key).and_then(|e| e.value().cloned()),
        }
    }

    /// Changes the option `key` that `plugin` declared to `value` for this
    /// runtime only (nothing is written). The caller has checked `value`
    /// against the option's schema.
    ///
    /// # Errors
    ///
    /// When no plugin declared `key`, or another plugin did; the diagnostic
    /// names the key, the plugin and what to do.
    pub fn set_plugin_runtime(
        &mut self,
        plugin: &str,
        key: &str,
        value: serde_json::Value,
    ) -> Result<(), ConfigError> {
        let refuse = |why: String, fix: String| {
            ConfigError::new(
                ErrorKind::UnknownKey,
                Diagnostic::error(
                    "config.plugin-set",
                    format!("plugin {plugin} cannot set `{key}`"),
                    why,
                    fix,
                )
                .with_surface(Surface::plugin(plugin.to_owned()))
                .with_field(key.to_owned()),
            )
        };
        let Some(entry) = self.plugin_entries.iter_mut().find(|e| e.option.key == key) else {
            return Err(refuse(
                format!(
                    "plugin {plugin} did not declare an option `{key}`; a plugin sets only the options it declares in its contributions"
                ),
                format!(
                    "declare `{key}` in the plugin's `config` contributions, or set a smith option with `smith config set`"
                ),
            ));
        };
        if entry.option.plugin != plugin {
            return Err(refuse(
                format!(
                    "`{key}` is declared by plugin {}, not by {plugin}",
                    entry.option.plugin
                ),
                format!("set only options plugin {plugin} declares itself"),
            ));
        }
        let source = Source::Runtime {
            plugin: plugin.to_owned(),
        };
        entry.layers.retain(|(_, s)| s != &source);
        entry.layers.insert(0, (value, source));
        Ok(())
    }

    /// The value of `decl`, if set.
    pub fn get(&self, decl: &OptionDecl) -> Option<&Value> {
        self.entry(decl.key).and_then(Entry::value)
    }

    /// Where the value of `decl` came from.
    pub fn source(&self, decl: &OptionDecl) -> Option<&Source> {
        self.entry(decl.key).and_then(Entry::source)
    }

    /// The text value of `decl` (strings, enum words, paths as written).
    pub fn str(&self, decl: &OptionDecl) -> Option<&str> {
        self.get(decl).and_then(Value::as_str)
    }

    /// The number value of `decl`.
    pub fn int(&self, decl: &OptionDecl) -> Option<i64> {
        self.get(decl).and_then(Value::as_int)
    }

    /// The boolean value of `decl`.
    pub fn bool(&self, decl: &OptionDecl) -> Option<bool> {
        self.get(decl).and_then(Value::as_bool)
    }

    /// The path value of `decl` with `~/` expanded.
    pub fn path(&self, decl: &OptionDecl) -> Option<PathBuf> {
        self.str(decl).map(|p| self.paths.expand(p))
    }

    /// The paths of a `:`-separated path-list value of `decl`, each with
    /// `~/` expanded (empty when unset).
    pub fn path_list(&self, decl: &OptionDecl) -> Vec<PathBuf> {
        self.str(decl)
            .map(|list| {
                list.split(':')
                    .filter(|p| !p.is_empty())
                    .map(|p| self.paths.expand(p))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Warnings produced while loading (unknown keys in `warn` sections, an
    /// ignored untrusted project, near-miss environment variables).
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// The project found, with its trust status.
    pub fn project(&self) -> Option<(&Project, &TrustStatus)> {
        self.project.as_ref().map(|(p, s)| (p, s))
    }

    /// The permission rules in effect: the user file's, then (only in a
    /// trusted project) the project file's, each in file order.
    pub fn permission_rules(&self) -> &[PermissionRule] {
        &self.permission_rules
    }

    /// The MCP servers configured (`mcp` blocks): the user file's, then
    /// (only in a trusted project) the project file's, each in file order.
    pub fn mcp_servers(&self) -> &[crate::mcp::McpServer] {
        &self.mcp_servers
    }

    /// The project, only when it is trusted and unchanged: the gate for
    /// project plugins and any other project-local executable behavior.
    pub fn trusted_project(&self) -> Option<&Project> {
        match &self.project {
            Some((p, TrustStatus::Trusted)) => Some(p),
            _ => None,
        }
    }

    /// Applies a change requested by a handler of `plugin`. The change lives
    /// at the plugin-contribution level — so user, project, environment and
    /// flag settings still win — and only in memory: nothing here writes a
    /// file.
    ///
    /// # Errors
    ///
    /// When `key` is not an option or `value` does not fit it; the
    /// diagnostic names the plugin.
    pub fn set_runtime(
        &mut self,
        plugin: &str,
        key: &str,
        value: Value,
    ) -> Result<(), ConfigError> {
        let source = Source::Runtime {
            plugin: plugin.to_owned(),
        };
        let decl = plugin_decl(key, &source)?;
        let value = checked(decl, value, &source)?;
        self.push(decl, value, source);
        Ok(())
    }

    /// The JSON form of `config show --json` (`plugin_options` only when a
    /// plugin declared options).
    pub fn to_json(&self, sources: bool) -> serde_json::Value {
        let mut json = serde_json::json!({
            "options": self.entries.iter().map(|e| e.to_json(sources)).collect::<Vec<_>>(),
            "warnings": self.warnings.iter().map(Diagnostic::to_json).collect::<Vec<_>>(),
        });
        if !self.plugin_entries.is_empty() {
            json["plugin_options"] = self
                .plugin_entries
                .iter()
                .map(|e| e.to_json(sources))
                .collect();
        }
        json
    }

    /// Levels, lowest first, with a value for `key` — for tests and
    /// `--sources`.
    pub fn levels(&self, key: &str) -> Vec<Level> {
        self.entry(key)
            .map(|e| e.layers.iter().rev().map(|(_, s)| s.level()).collect())
            .unwrap_or_default()
    }
}
