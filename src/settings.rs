//! The configuration options as the commands use them.
//!
//! The process's configuration (defaults < user file < trusted project file
//! < `SMITH_*` variables) is loaded once, on first use ([`config`]). Each
//! option that shapes a command is turned into what that command needs by
//! one function here — the session directory, the HTTP timeouts, the log,
//! the plugin limits, the bench plan, the TUI's mouse and theme — so every
//! command that opens the session store, sends a request or runs a plugin
//! gets the same answer.
//!
//! [`CONSUMERS`] names, for every declared option, the function that reads
//! it; a test holds the table to `smith_config::options::ALL` and to the
//! source, so an option nothing reads cannot be declared silently.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use smith_config::options::{
    BENCH_SAMPLES, LOG_FILE, LOG_LEVEL, NET_BODY_GAP_TIMEOUT_S, NET_CONNECT_TIMEOUT_S,
    NET_HEAD_TIMEOUT_S, OptionDecl, PLUGINS_ABORT_DEADLINE_MS, SESSION_DIR, TUI_MOUSE, TUI_THEME,
};
use smith_config::{Config, ConfigError, Loader, Paths};
use smith_diag::{Diagnostic, log};

static CONFIG: OnceLock<Result<Config, ConfigError>> = OnceLock::new();

/// The process's configuration, loaded on the first call (from the current
/// directory's project, the user file and the `SMITH_*` variables).
///
/// # Errors
///
/// The first invalid value or unreadable file; the diagnostic names it.
pub(crate) fn config() -> Result<&'static Config, ConfigError> {
    CONFIG
        .get_or_init(|| Loader::from_process().and_then(Loader::load))
        .as_ref()
        .map_err(Clone::clone)
}

/// Where sessions are stored: `session.dir` when set, else
/// `<data dir>/sessions`.
pub(crate) fn sessions_dir(config: &Config) -> PathBuf {
    config
        .path(&SESSION_DIR)
        .unwrap_or_else(|| config.paths().sessions_dir())
}

/// The session store's root for this process ([`sessions_dir`] of
/// [`config`]).
///
/// # Errors
///
/// When the configuration cannot be loaded: sessions are not written to a
/// directory the configuration may not mean.
pub(crate) fn session_root() -> anyhow::Result<PathBuf> {
    Ok(sessions_dir(config()?))
}

/// A whole number of seconds as a duration (options are range-checked when
/// loaded, so a negative value never arrives; it would read as zero).
fn seconds(config: &Config, decl: &OptionDecl, default: Duration) -> Duration {
    config
        .int(decl)
        .and_then(|s| u64::try_from(s).ok())
        .map_or(default, Duration::from_secs)
}

/// The HTTP timeouts: `net.connect-timeout-s`, `net.head-timeout-s`,
/// `net.body-gap-timeout-s`.
pub(crate) fn net_timeouts(config: &Config) -> smith_provider_host::Timeouts {
    let defaults = smith_provider_host::Timeouts::default();
    smith_provider_host::Timeouts {
        connect: seconds(config, &NET_CONNECT_TIMEOUT_S, defaults.connect),
        head: seconds(config, &NET_HEAD_TIMEOUT_S, defaults.head),
        body_gap: seconds(config, &NET_BODY_GAP_TIMEOUT_S, defaults.body_gap),
    }
}

/// The log's level and file: `log.level` and `log.file` (default
/// `<state dir>/smith.log`).
pub(crate) fn log_settings(config: &Config) -> log::Settings {
    let level = config
        .str(&LOG_LEVEL)
        .and_then(log::Level::parse)
        .unwrap_or(log::Level::Warn);
    let file = config
        .path(&LOG_FILE)
        .unwrap_or_else(|| default_log_file(config.paths()));
    log::Settings { level, file }
}

/// `<state dir>/smith.log`.
fn default_log_file(paths: &Paths) -> PathBuf {
    paths.state_dir.join("smith.log")
}

/// The log settings for this process, decided when the first line is
/// written ([`smith_diag::log::install`]). A configuration that does not
/// load still leaves its error logged, at the default level and file.
pub(crate) fn process_log_settings() -> Option<log::Settings> {
    match config() {
        Ok(config) => Some(log_settings(config)),
        Err(_) => Paths::from_process().ok().map(|paths| log::Settings {
            level: log::Level::Warn,
            file: default_log_file(&paths),
        }),
    }
}

/// The plugin host's limits: `plugins.abort-deadline-ms` is the grace a
/// plugin gets after an abort before it is destroyed.
pub(crate) fn plugin_limits(config: &Config) -> smith_plugins::Limits {
    let defaults = smith_plugins::Limits::default();
    smith_plugins::Limits {
        abort_grace: config
            .int(&PLUGINS_ABORT_DEADLINE_MS)
            .and_then(|ms| u64::try_from(ms).ok())
            .map_or(defaults.abort_grace, Duration::from_millis),
        ..defaults
    }
}

/// The plugin limits for this process ([`plugin_limits`] of [`config`]);
/// the defaults when the configuration does not load (the command that
/// needs the configuration reports why).
pub(crate) fn process_plugin_limits() -> smith_plugins::Limits {
    config().map_or_else(|_| smith_plugins::Limits::default(), plugin_limits)
}

/// The measuring plan of `smith bench`: `--quick` takes the quick plan
/// whatever is configured; otherwise the full plan with `bench.samples`
/// samples per benchmark.
pub(crate) fn bench_plan(config: &Config, quick: bool) -> smith_perf::Plan {
    if quick {
        return smith_perf::Plan::QUICK;
    }
    let full = smith_perf::Plan::FULL;
    smith_perf::Plan {
        samples: config
            .int(&BENCH_SAMPLES)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(full.samples),
        ..full
    }
}

/// Whether the TUI captures the mouse: `tui.mouse`.
pub(crate) fn tui_mouse(config: &Config) -> bool {
    config.bool(&TUI_MOUSE).unwrap_or(true)
}

/// The theme named by `tui.theme` among the themes the product provides,
/// or the product's `default` with a warning naming the value, where it
/// was set and the themes there are.
pub(crate) fn tui_theme(
    config: &Config,
    product: &smith_tui::Product,
) -> (smith_tui::product::Theme, Option<Diagnostic>) {
    let themes = product.themes();
    let name = config.str(&TUI_THEME).unwrap_or(product.default_theme());
    if let Some((_, theme)) = themes.iter().find(|(n, _)| *n == name) {
        return (*theme, None);
    }
    let names: Vec<&str> = themes.iter().map(|(n, _)| *n).collect();
    let mut warning = Diagnostic::warning(
        "config.unknown-theme",
        format!("there is no theme `{name}`; the interface draws with `default`"),
        format!(
            "`tui.theme` names a theme no loaded plugin provides; the themes there are: {}",
            names.join(", ")
        ),
        format!(
            "set `tui.theme` to one of {}, e.g. `smith config set tui.theme default`",
            names.join(", ")
        ),
    )
    .with_value(name)
    .with_field(TUI_THEME.key);
    if let Some(source) = config.source(&TUI_THEME) {
        warning = warning.with_surface(source.surface());
    }
    (product.theme, Some(warning))
}

/// For every declared option: the file and the function that reads it.
/// A test checks each function exists, mentions the option's declaration
/// and is called, and that every option of `smith_config::options::ALL` is
/// listed once.
#[cfg(test)]
pub(crate) static CONSUMERS: &[(&str, &str, &str)] = &[
    ("provider", "src/cmd/eval.rs", "choose_provider"),
    ("model", "src/cmd/eval.rs", "choose_provider"),
    ("color", "src/cmd/tui/config.rs", "load_options"),
    ("log.level", "src/settings.rs", "log_settings"),
    ("log.file", "src/settings.rs", "log_settings"),
    ("session.dir", "src/settings.rs", "sessions_dir"),
    ("tui.confirm-exit", "src/cmd/tui/config.rs", "load_options"),
    ("tui.theme", "src/settings.rs", "tui_theme"),
    ("tui.mouse", "src/settings.rs", "tui_mouse"),
    ("tui.scroll-lines", "src/cmd/tui/config.rs", "load_options"),
    ("net.connect-timeout-s", "src/settings.rs", "net_timeouts"),
    ("net.head-timeout-s", "src/settings.rs", "net_timeouts"),
    ("net.body-gap-timeout-s", "src/settings.rs", "net_timeouts"),
    ("catalog.refresh", "src/cmd/models.rs", "background_refresh"),
    (
        "plugins.abort-deadline-ms",
        "src/settings.rs",
        "plugin_limits",
    ),
    ("bench.samples", "src/settings.rs", "bench_plan"),
];

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// A configuration over an empty home with these `SMITH_*` variables.
    fn with_env(vars: &[(&str, &str)]) -> (tempfile::TempDir, Config) {
        let home = tempfile::tempdir().unwrap();
        let config = Loader::new(Paths::under(home.path()))
            .env(vars.iter().copied())
            .load()
            .unwrap();
        (home, config)
    }

    #[test]
    fn the_session_dir_is_configured_or_under_the_data_dir() {
        let (home, config) = with_env(&[]);
        assert_eq!(
            sessions_dir(&config),
            home.path().join("data").join("sessions")
        );
        let (_home, config) = with_env(&[("SMITH_SESSION_DIR", "/srv/smith-sessions")]);
        assert_eq!(sessions_dir(&config), Path::new("/srv/smith-sessions"));
    }

    #[test]
    fn net_timeouts_come_from_their_options() {
        let (_home, config) = with_env(&[
            ("SMITH_NET_CONNECT_TIMEOUT_S", "4"),
            ("SMITH_NET_HEAD_TIMEOUT_S", "9"),
            ("SMITH_NET_BODY_GAP_TIMEOUT_S", "16"),
        ]);
        let t = net_timeouts(&config);
        assert_eq!(t.connect, Duration::from_secs(4));
        assert_eq!(t.head, Duration::from_secs(9));
        assert_eq!(t.body_gap, Duration::from_secs(16));
        let (_home, config) = with_env(&[]);
        assert_eq!(
            net_timeouts(&config),
            smith_provider_host::Timeouts::default()
        );
    }

    #[test]
    fn log_settings_come_from_their_options() {
        let (home, config) = with_env(&[]);
        assert_eq!(
            log_settings(&config),
            log::Settings {
                level: log::Level::Warn,
                file: home.path().join("state").join("smith.log"),
            }
        );
        let (_home, config) = with_env(&[
            ("SMITH_LOG_LEVEL", "error"),
            ("SMITH_LOG_FILE", "/var/log/smith-test.log"),
        ]);
        assert_eq!(
            log_settings(&config),
            log::Settings {
                level: log::Level::Error,
                file: PathBuf::from("/var/log/smith-test.log"),
            }
        );
    }

    #[test]
    fn every_log_level_choice_is_a_log_level() {
        let smith_config::options::Kind::Enum(choices) = LOG_LEVEL.kind else {
            panic!("log.level is a choice of words");
        };
        for choice in choices {
            assert!(log::Level::parse(choice).is_some(), "{choice}");
        }
    }

    #[test]
    fn the_abort_deadline_is_the_plugin_abort_grace() {
        let (_home, config) = with_env(&[("SMITH_PLUGINS_ABORT_DEADLINE_MS", "50")]);
        let limits = plugin_limits(&config);
        assert_eq!(limits.abort_grace, Duration::from_millis(50));
        assert_eq!(
            limits.call_deadline,
            smith_plugins::Limits::default().call_deadline
        );
        let (_home, config) = with_env(&[]);
        assert_eq!(plugin_limits(&config), smith_plugins::Limits::default());
    }

    /// A provider plugin that ignores cancellation, under the limits the
    /// configuration gives, is destroyed once the configured grace after an
    /// abort has passed, and the diagnostic names that grace.
    #[test]
    fn a_plugin_ignoring_an_abort_is_destroyed_after_the_configured_grace() {
        use smith_engine::provider::Provider as _;
        let (_home, config) = with_env(&[("SMITH_PLUGINS_ABORT_DEADLINE_MS", "50")]);
        let limits = smith_plugins::Limits {
            call_deadline: Duration::from_secs(30),
            ..plugin_limits(&config)
        };
        let wasm = Path::new(smith_plugins::GUEST_DIR).join("smith_plugin_hostile.wasm");
        let component = smith_plugins::ProviderComponent::load(
            "test/hostile",
            &std::fs::read(&wasm).unwrap(),
            None,
            limits,
        )
        .unwrap();
        let mut provider = component
            .instantiate(&[("mode".to_owned(), "ignore-cancel".to_owned())])
            .unwrap();
        let handle = provider.abort_handle();
        let aborter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            handle.abort();
        });
        let request = smith_engine::provider::Request {
            model: "m".into(),
            system: None,
            messages: Vec::new(),
            tools: Vec::new(),
            max_output_tokens: None,
        };
        assert!(provider.encode(&request).is_err());
        aborter.join().unwrap();
        let error = provider.last_error().expect("the failure is recorded");
        assert_eq!(error.kind, smith_plugins::ErrorKind::AbortGrace, "{error}");
        let d = error.to_diagnostic();
        assert!(
            d.render_plain()
                .contains("kept running 50 ms after it was asked to stop"),
            "{d}"
        );
    }

    #[test]
    fn bench_samples_set_the_full_plan_and_quick_keeps_its_own() {
        let (_home, config) = with_env(&[]);
        assert_eq!(bench_plan(&config, false), smith_perf::Plan::FULL);
        let (_home, config) = with_env(&[("SMITH_BENCH_SAMPLES", "7")]);
        let plan = bench_plan(&config, false);
        assert_eq!(plan.samples, 7);
        assert_eq!(plan.name, smith_perf::Plan::FULL.name);
        assert_eq!(bench_plan(&config, true), smith_perf::Plan::QUICK);
    }

    #[test]
    fn the_bench_samples_default_is_the_full_plan() {
        assert_eq!(
            BENCH_SAMPLES.default,
            Some(smith_config::options::Lit::Int(
                i64::try_from(smith_perf::Plan::FULL.samples).unwrap()
            ))
        );
    }

    #[test]
    fn tui_mouse_follows_its_option() {
        let (_home, config) = with_env(&[]);
        assert!(tui_mouse(&config));
        let (_home, config) = with_env(&[("SMITH_TUI_MOUSE", "false")]);
        assert!(!tui_mouse(&config));
    }

    #[test]
    fn a_known_theme_is_used_and_an_unknown_one_falls_back_with_a_warning() {
        let product = smith_tui::fixture::product();
        let (_home, config) = with_env(&[("SMITH_TUI_THEME", "default")]);
        let (theme, warning) = tui_theme(&config, &product);
        assert_eq!(theme, product.theme);
        assert!(warning.is_none());

        let (_home, config) = with_env(&[("SMITH_TUI_THEME", "solarized")]);
        let (theme, warning) = tui_theme(&config, &product);
        assert_eq!(theme, product.theme);
        let text = warning
            .expect("an unknown theme is warned about")
            .render_plain();
        assert!(text.starts_with("warning[config.unknown-theme]"), "{text}");
        assert!(text.contains("`solarized`"), "{text}");
        assert!(
            text.contains("environment variable SMITH_TUI_THEME"),
            "{text}"
        );
        assert!(text.contains("the themes there are: default"), "{text}");
    }

    /// The text of `fn name` in `source`: from its signature to the brace
    /// that closes its body.
    fn function_body<'a>(source: &'a str, name: &str) -> Option<&'a str> {
        let start = source.find(&format!("fn {name}("))?;
        let open = start + source[start..].find('{')?;
        let mut depth = 0usize;
        for (i, c) in source[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(&source[start..=open + i]);
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn rust_sources(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                // Calls from tests do not count as reading an option.
                let code = text
                    .split("#[cfg(test)]\nmod tests")
                    .next()
                    .unwrap_or_default();
                out.push(code.to_owned());
            }
        }
    }

    /// The static a declaration is named by: `tui.scroll-lines` ->
    /// `TUI_SCROLL_LINES`.
    fn static_name(key: &str) -> String {
        key.replace(['.', '-'], "_").to_uppercase()
    }

    /// How often `ident` occurs in `text` as a whole identifier that is not
    /// in a string literal's quotes nor a method of something else
    /// (`.ident`).
    fn identifier_uses(text: &str, ident: &str) -> usize {
        let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '"');
        text.match_indices(ident)
            .filter(|(at, _)| {
                let before = text[..*at].chars().next_back();
                !part(before)
                    && before != Some('.')
                    && !part(text[at + ident.len()..].chars().next())
            })
            .count()
    }

    #[test]
    fn every_declared_option_is_read_by_a_named_function() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let declared: Vec<&str> = smith_config::options::ALL.iter().map(|d| d.key).collect();
        let listed: Vec<&str> = CONSUMERS.iter().map(|(key, _, _)| *key).collect();
        assert_eq!(
            listed, declared,
            "CONSUMERS must list every declared option once, in declaration order"
        );
        let mut sources = Vec::new();
        rust_sources(&root.join("src"), &mut sources);
        for (key, file, function) in CONSUMERS {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            let body = function_body(&text, function)
                .unwrap_or_else(|| panic!("{key}: {file} has no fn {function}"));
            let name = static_name(key);
            assert!(
                identifier_uses(body, &name) > 0,
                "{key}: fn {function} in {file} does not read {name}"
            );
            let uses: usize = sources.iter().map(|s| identifier_uses(s, function)).sum();
            let definitions: usize = sources
                .iter()
                .map(|s| s.matches(&format!("fn {function}(")).count())
                .sum();
            let calls = uses - definitions;
            assert!(calls > 0, "{key}: fn {function} in {file} is never called");
        }
    }
}
