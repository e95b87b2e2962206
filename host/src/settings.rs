//! Settings resolution: the configuration options as every frontend uses
//! them.
//!
//! The process's configuration (defaults < user file < trusted project file
//! < `SMITH_*` variables) is loaded once, on first use ([`config`]). Each
//! option that shapes a runtime is turned into what it needs by one
//! function here — the session directory, the HTTP timeouts, the log, the
//! plugin limits — so every command that opens the session store, sends a
//! request or runs a plugin gets the same answer. Options only one frontend
//! reads (the TUI's mouse and theme, the bench plan) are resolved by that
//! frontend.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use smith_config::options::{
    APPROVAL, BASH_MAX_JOBS, BASH_ON_TIMEOUT, LOG_FILE, LOG_LEVEL, NET_BODY_GAP_TIMEOUT_S,
    NET_CONNECT_TIMEOUT_S, NET_HEAD_TIMEOUT_S, OptionDecl, PLUGINS_ABORT_DEADLINE_MS,
    PLUGINS_MAX_JOURNAL_ENTRIES, PLUGINS_MAX_LOG_LINES, PLUGINS_MAX_UI_INTENTS,
    SESSION_COMPRESSION, SESSION_DIR,
};
use smith_config::trust::{Project, TrustStatus, TrustStore};
use smith_config::{Config, ConfigError, Loader, Paths, Source};
use smith_diag::log;
use smith_diag::{Diagnostic, Surface};
use smith_engine::tools::Limits;

static CONFIG: OnceLock<Result<Config, ConfigError>> = OnceLock::new();

/// The process's configuration, loaded on the first call (from the current
/// directory's project, the user file and the `SMITH_*` variables).
///
/// # Errors
///
/// The first invalid value or unreadable file; the diagnostic names it.
pub fn config() -> Result<&'static Config, ConfigError> {
    CONFIG
        .get_or_init(|| Loader::from_process().and_then(Loader::load))
        .as_ref()
        .map_err(Clone::clone)
}

/// Options given as command-line flags of the running command, as
/// `(flag, value)`: set once by the command line, before any runtime starts.
static COMMAND_LINE: OnceLock<Vec<(String, String)>> = OnceLock::new();

/// Records options given as command-line flags (`("--plan", "true")`) so
/// that the configuration the runtimes' plugins read ([`with_command_line`])
/// has them at the flag level, above files and variables. Only the first
/// call counts: a command line is parsed once.
pub fn set_command_line(flags: Vec<(String, String)>) {
    let _ = COMMAND_LINE.set(flags);
}

/// `loader` with the options [`set_command_line`] recorded.
pub fn with_command_line(loader: Loader) -> Loader {
    COMMAND_LINE
        .get()
        .into_iter()
        .flatten()
        .fold(loader, |loader, (flag, value)| loader.flag(flag, value))
}

/// Where sessions are stored: `session.dir` when set, else
/// `<data dir>/sessions`.
pub fn sessions_dir(config: &Config) -> PathBuf {
    config
        .path(&SESSION_DIR)
        .unwrap_or_else(|| config.paths().sessions_dir())
}

/// How session files are written: `session.compression` (checked against
/// its names when the configuration loads, so an unknown one cannot
/// arrive; one would read as the default, `fast`).
pub fn session_compression(config: &Config) -> smith_store::compress::Compression {
    config
        .str(&SESSION_COMPRESSION)
        .and_then(smith_store::compress::Compression::parse)
        .unwrap_or_default()
}

/// The session store's root for this process ([`sessions_dir`] of
/// [`config`]). Every command that opens the session store asks for it
/// first, so this is also where the process's session writers get their
/// compression ([`session_compression`], set for the whole process with
/// [`smith_store::compress::set_process_compression`]).
///
/// # Errors
///
/// When the configuration cannot be loaded: sessions are not written to a
/// directory the configuration may not mean.
pub fn session_root() -> anyhow::Result<PathBuf> {
    let config = config()?;
    smith_store::compress::set_process_compression(session_compression(config));
    Ok(sessions_dir(config))
}

/// Where `smith session search` and `/search-all` keep their search index
/// (one file per session, docs/session-format.md §14): `search` in smith's
/// cache directory.
///
/// # Errors
///
/// When the configuration cannot be loaded.
pub fn search_index_dir() -> anyhow::Result<PathBuf> {
    Ok(config()?.paths().cache_dir.join("search"))
}

/// The approval mode a runtime starts in: `--approval` (`flag`) when
/// given, else the `approval` option (configuration files, `SMITH_APPROVAL`),
/// else the frontend's default. Both are checked against the four names
/// before they get here (clap and the option table), so an unknown name
/// cannot arrive; one would read as the default.
pub fn approval_mode(
    config: &Config,
    flag: Option<&str>,
    frontend_default: smith_engine::approval::Approval,
) -> smith_engine::approval::Approval {
    flag.or_else(|| config.str(&APPROVAL))
        .and_then(smith_engine::approval::Approval::parse)
        .unwrap_or(frontend_default)
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
pub fn net_timeouts(config: &Config) -> smith_provider_host::Timeouts {
    let defaults = smith_provider_host::Timeouts::default();
    smith_provider_host::Timeouts {
        connect: seconds(config, &NET_CONNECT_TIMEOUT_S, defaults.connect),
        head: seconds(config, &NET_HEAD_TIMEOUT_S, defaults.head),
        body_gap: seconds(config, &NET_BODY_GAP_TIMEOUT_S, defaults.body_gap),
    }
}

/// The log's level and file: `log.level` and `log.file` (default
/// `<state dir>/smith.log`).
pub fn log_settings(config: &Config) -> log::Settings {
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
pub fn process_log_settings() -> Option<log::Settings> {
    match config() {
        Ok(config) => Some(log_settings(config)),
        Err(_) => Paths::from_process().ok().map(|paths| log::Settings {
            level: log::Level::Warn,
            file: default_log_file(&paths),
        }),
    }
}

/// The plugin host's limits: `plugins.abort-deadline-ms` is the grace a
/// plugin gets after an abort before it is destroyed; `plugins.max-*` are
/// its caps per run (UI intents, log lines, journal entries).
pub fn plugin_limits(config: &Config) -> smith_plugins::Limits {
    let defaults = smith_plugins::Limits::default();
    let count = |option: &OptionDecl| config.int(option).and_then(|n| u64::try_from(n).ok());
    smith_plugins::Limits {
        abort_grace: config
            .int(&PLUGINS_ABORT_DEADLINE_MS)
            .and_then(|ms| u64::try_from(ms).ok())
            .map_or(defaults.abort_grace, Duration::from_millis),
        rate: smith_plugins::rate::RateLimits {
            ui_intents: count(&PLUGINS_MAX_UI_INTENTS).unwrap_or(defaults.rate.ui_intents),
            log_lines: count(&PLUGINS_MAX_LOG_LINES).unwrap_or(defaults.rate.log_lines),
            journal_entries: count(&PLUGINS_MAX_JOURNAL_ENTRIES)
                .unwrap_or(defaults.rate.journal_entries),
        },
        ..defaults
    }
}

/// The plugin limits for this process ([`plugin_limits`] of [`config`]);
/// the defaults when the configuration does not load (the command that
/// needs the configuration reports why).
pub fn process_plugin_limits() -> smith_plugins::Limits {
    config().map_or_else(|_| smith_plugins::Limits::default(), plugin_limits)
}

/// `smith config set KEY VALUE [--project]`: saves `key = value` in the
/// user's `config.kdl`, or with `project` in the project's
/// `.smith/config.kdl` (a trusted, unchanged project stays trusted), and
/// warns when a higher layer still decides the value. Returns the exit
/// status: 1 after reporting an invalid assignment or an unwritable file.
///
/// # Errors
///
/// When the current directory cannot be read.
pub fn set(key: &str, value: &str, project_file: bool) -> anyhow::Result<u8> {
    let style = crate::output::style(None);
    let fail = |e: ConfigError| {
        crate::output::report(e.diagnostic(), false, style);
        Ok(1)
    };
    let (decl, value) = match smith_config::edit::parse_assignment(key, value) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let loader = match Loader::from_process() {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let paths = loader.paths().clone();
    let (file, project) = if project_file {
        let project = loader.project();
        let root = match &project {
            Some(p) => p.root.clone(),
            None => Project::new_root(&std::env::current_dir()?),
        };
        (root.join(".smith").join("config.kdl"), project)
    } else {
        (paths.user_config_file(), None)
    };
    // A project that was trusted and unchanged stays trusted after smith's
    // own edit; anything else keeps needing the user's review.
    let store_path = paths.trust_file();
    let was_trusted = match &project {
        Some(p) => match TrustStore::open(&store_path).and_then(|s| s.status(p)) {
            Ok(status) => status == TrustStatus::Trusted,
            Err(e) => return fail(e),
        },
        None => false,
    };
    if let Err(e) = smith_config::edit::set_in_file(&file, decl, &value) {
        return fail(e);
    }
    println!("{} = {value}  (saved in {})", decl.key, file.display());
    if project_file {
        let project = match project {
            Some(p) => Ok(p),
            None => Project::at(
                &file
                    .parent()
                    .and_then(|p| p.parent())
                    .map(PathBuf::from)
                    .unwrap_or_default(),
            ),
        };
        match project {
            Ok(p) if was_trusted => {
                if let Err(e) = TrustStore::open(&store_path).and_then(|mut s| s.trust(&p)) {
                    return fail(e);
                }
            }
            Ok(p) => {
                let d = Diagnostic::warning(
                    "trust.untrusted-project",
                    format!(
                        "the value is saved, but {} is not trusted, so it does not apply yet",
                        p.root.display()
                    ),
                    "project configuration applies only after you trust the project",
                    format!(
                        "review {} and run `smith trust {}`",
                        p.smith_dir().display(),
                        p.root.display()
                    ),
                )
                .with_surface(Surface::file(&file));
                eprint!("{}", d.render_terminal(style));
                smith_diag::log::report(&d);
            }
            Err(e) => return fail(e),
        }
    }
    // Say so when a higher layer still decides the value.
    if let Ok(config) = Loader::from_process().and_then(Loader::load) {
        let here = |s: &Source| match s {
            Source::User { path, .. } | Source::Project { path, .. } => {
                std::fs::canonicalize(path).ok() == std::fs::canonicalize(&file).ok()
            }
            _ => false,
        };
        if let Some(source) = config.source(decl)
            && !here(source)
            && source.level() > smith_config::Level::Default
        {
            let d = Diagnostic::warning(
                "config.shadowed",
                format!("`{}` is saved but still comes from {source}", decl.key),
                "that layer has higher precedence than the file just written",
                format!("remove the setting from {source} to let the saved value apply"),
            )
            .with_surface(source.surface())
            .with_field(decl.key);
            eprint!("{}", d.render_terminal(style));
            smith_diag::log::report(&d);
        }
    }
    Ok(0)
}

/// `limits` with the configured `bash.on-timeout` (what a command that
/// outruns its timeout comes to) and `bash.max-jobs` (how many background
/// jobs may run at once); an unset option keeps the limit's default.
pub fn bash_limits(config: &Config, mut limits: Limits) -> Limits {
    if let Some(on_timeout) = config
        .str(&BASH_ON_TIMEOUT)
        .and_then(smith_engine::tools::jobs::OnTimeout::parse)
    {
        limits.bash_on_timeout = on_timeout;
    }
    if let Some(n) = config
        .int(&BASH_MAX_JOBS)
        .and_then(|n| usize::try_from(n).ok())
    {
        limits.bash_max_jobs = n;
    }
    limits
}

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

    #[test]
    fn the_caps_per_run_come_from_their_options() {
        let (_home, config) = with_env(&[
            ("SMITH_PLUGINS_MAX_UI_INTENTS", "7"),
            ("SMITH_PLUGINS_MAX_LOG_LINES", "0"),
            ("SMITH_PLUGINS_MAX_JOURNAL_ENTRIES", "40"),
        ]);
        assert_eq!(
            plugin_limits(&config).rate,
            smith_plugins::rate::RateLimits {
                ui_intents: 7,
                log_lines: 0,
                journal_entries: 40,
            }
        );
        let (_home, config) = with_env(&[]);
        assert_eq!(
            plugin_limits(&config).rate,
            smith_plugins::rate::RateLimits::DEFAULT
        );
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
        // The next call is refused, and says what destroyed the instance.
        let again = provider.encode(&request).unwrap_err().to_string();
        assert!(
            again.contains("destroyed by an earlier failure — call encode (abort-grace)"),
            "{again}"
        );
        assert!(
            again.contains("kept running 50 ms after it was asked to stop"),
            "{again}"
        );
        assert!(!again.contains("reload the plugin"), "{again}");
    }
}
