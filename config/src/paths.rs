//! Where smith keeps user files, per platform, with the `SMITH_HOME` override.
//!
//! | dir | `SMITH_HOME` set | Linux, BSD | macOS | Windows |
//! |---|---|---|---|---|
//! | config | `$SMITH_HOME` | `$XDG_CONFIG_HOME/smith`, else `~/.config/smith` | same as Linux | `%APPDATA%\smith\config` |
//! | data | `$SMITH_HOME/data` | `$XDG_DATA_HOME/smith`, else `~/.local/share/smith` | `~/Library/Application Support/smith` | `%LOCALAPPDATA%\smith\data` |
//! | cache | `$SMITH_HOME/cache` | `$XDG_CACHE_HOME/smith`, else `~/.cache/smith` | `~/Library/Caches/smith` | `%LOCALAPPDATA%\smith\cache` |
//! | state | `$SMITH_HOME/state` | `$XDG_STATE_HOME/smith`, else `~/.local/state/smith` | `~/Library/Application Support/smith/state` | `%LOCALAPPDATA%\smith\state` |
//!
//! XDG variables that are empty or hold a relative path are ignored, as the
//! XDG base-directory specification requires. The user configuration file is
//! `<config dir>/config.kdl`; the trust store is `<data dir>/trust.json`.
//!
//! The free functions ([`config_dir`], [`data_dir`], ...) read the process
//! environment; [`Paths::resolve`] takes an explicit [`PathEnv`] so tests never
//! touch the process environment.

use std::path::{Path, PathBuf};

use smith_diag::Diagnostic;

use crate::error::{ConfigError, ErrorKind};

/// The environment variables the paths depend on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathEnv {
    /// `SMITH_HOME`.
    pub smith_home: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `XDG_DATA_HOME`.
    pub xdg_data_home: Option<PathBuf>,
    /// `XDG_CACHE_HOME`.
    pub xdg_cache_home: Option<PathBuf>,
    /// `XDG_STATE_HOME`.
    pub xdg_state_home: Option<PathBuf>,
    /// `HOME` (`USERPROFILE` on Windows).
    pub home: Option<PathBuf>,
    /// `APPDATA` (Windows).
    pub appdata: Option<PathBuf>,
    /// `LOCALAPPDATA` (Windows).
    pub local_appdata: Option<PathBuf>,
}

impl PathEnv {
    /// Reads the variables through `get`.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> PathEnv {
        let path = |name: &str| get(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        PathEnv {
            smith_home: path("SMITH_HOME"),
            xdg_config_home: path("XDG_CONFIG_HOME"),
            xdg_data_home: path("XDG_DATA_HOME"),
            xdg_cache_home: path("XDG_CACHE_HOME"),
            xdg_state_home: path("XDG_STATE_HOME"),
            home: if cfg!(windows) {
                path("USERPROFILE")
            } else {
                path("HOME")
            },
            appdata: path("APPDATA"),
            local_appdata: path("LOCALAPPDATA"),
        }
    }

    /// Reads the process environment.
    pub fn from_process() -> PathEnv {
        PathEnv::from_vars(|name| std::env::var(name).ok())
    }
}

/// The resolved user directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// Configuration: `config.kdl` lives here.
    pub config_dir: PathBuf,
    /// Durable data: sessions, the trust store, installed plugins.
    pub data_dir: PathBuf,
    /// Disposable caches.
    pub cache_dir: PathBuf,
    /// State that survives restarts but is not precious: logs, history.
    pub state_dir: PathBuf,
    /// The user's home directory, when known (for `~/` expansion and to stop
    /// the project search).
    pub home: Option<PathBuf>,
}

fn absolute(p: &Option<PathBuf>) -> Option<&Path> {
    p.as_deref().filter(|p| p.is_absolute())
}

impl Paths {
    /// Everything under one root, laid out as under `SMITH_HOME`.
    pub fn under(root: impl Into<PathBuf>) -> Paths {
        let root = root.into();
        Paths {
            data_dir: root.join("data"),
            cache_dir: root.join("cache"),
            state_dir: root.join("state"),
            config_dir: root,
            home: None,
        }
    }

    /// Resolves the directories from `env` for the current platform.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoHome`] when neither `SMITH_HOME` nor the platform's
    /// variables locate a directory.
    pub fn resolve(env: &PathEnv) -> Result<Paths, ConfigError> {
        let home = absolute(&env.home).map(Path::to_path_buf);
        if let Some(root) = absolute(&env.smith_home) {
            let mut paths = Paths::under(root);
            paths.home = home;
            return Ok(paths);
        }
        let no_home = || {
            ConfigError::new(
                ErrorKind::NoHome,
                Diagnostic::error(
                    "config.no-home",
                    "smith cannot tell where to keep its files",
                    "SMITH_HOME is unset and the home directory is unknown (HOME, or USERPROFILE on Windows, is unset or not absolute)",
                    "set SMITH_HOME to an absolute directory smith may own",
                )
                .with_example("export SMITH_HOME=\"$PWD/.smith-home\""),
            )
        };
        if cfg!(windows) {
            let roaming = absolute(&env.appdata).ok_or_else(no_home)?.join("smith");
            let local = absolute(&env.local_appdata)
                .ok_or_else(no_home)?
                .join("smith");
            return Ok(Paths {
                config_dir: roaming.join("config"),
                data_dir: local.join("data"),
                cache_dir: local.join("cache"),
                state_dir: local.join("state"),
                home,
            });
        }
        let xdg = |var: &Option<PathBuf>, fallback: &[&str]| -> Result<PathBuf, ConfigError> {
            if let Some(p) = absolute(var) {
                return Ok(p.join("smith"));
            }
            let mut p = home.clone().ok_or_else(no_home)?;
            for part in fallback {
                p.push(part);
            }
            p.push("smith");
            Ok(p)
        };
        let config_dir = xdg(&env.xdg_config_home, &[".config"])?;
        if cfg!(target_os = "macos") {
            let base = home.clone().ok_or_else(no_home)?.join("Library");
            let data_dir = base.join("Application Support").join("smith");
            return Ok(Paths {
                config_dir,
                state_dir: data_dir.join("state"),
                data_dir,
                cache_dir: base.join("Caches").join("smith"),
                home,
            });
        }
        Ok(Paths {
            config_dir,
            data_dir: xdg(&env.xdg_data_home, &[".local", "share"])?,
            cache_dir: xdg(&env.xdg_cache_home, &[".cache"])?,
            state_dir: xdg(&env.xdg_state_home, &[".local", "state"])?,
            home,
        })
    }

    /// Resolves the directories from the process environment.
    ///
    /// # Errors
    ///
    /// As for [`Paths::resolve`].
    pub fn from_process() -> Result<Paths, ConfigError> {
        Paths::resolve(&PathEnv::from_process())
    }

    /// `<config dir>/config.kdl`.
    pub fn user_config_file(&self) -> PathBuf {
        self.config_dir.join("config.kdl")
    }

    /// `<data dir>/trust.json`, the project trust store.
    pub fn trust_file(&self) -> PathBuf {
        self.data_dir.join("trust.json")
    }

    /// `<data dir>/sessions`, where sessions go unless `session.dir` says
    /// otherwise.
    pub fn sessions_dir(&self) -> PathBuf {
        self.data_dir.join("sessions")
    }

    /// Expands a leading `~/` of a path option against the home directory.
    pub fn expand(&self, path: &str) -> PathBuf {
        match (path.strip_prefix("~/"), &self.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(path),
        }
    }
}

/// The user configuration directory, from the process environment.
///
/// # Errors
///
/// As for [`Paths::resolve`].
pub fn config_dir() -> Result<PathBuf, ConfigError> {
    Paths::from_process().map(|p| p.config_dir)
}

/// The user data directory, from the process environment.
///
/// # Errors
///
/// As for [`Paths::resolve`].
pub fn data_dir() -> Result<PathBuf, ConfigError> {
    Paths::from_process().map(|p| p.data_dir)
}

/// The user cache directory, from the process environment.
///
/// # Errors
///
/// As for [`Paths::resolve`].
pub fn cache_dir() -> Result<PathBuf, ConfigError> {
    Paths::from_process().map(|p| p.cache_dir)
}

/// The user state directory, from the process environment.
///
/// # Errors
///
/// As for [`Paths::resolve`].
pub fn state_dir() -> Result<PathBuf, ConfigError> {
    Paths::from_process().map(|p| p.state_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> PathEnv {
        PathEnv::from_vars(|k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn smith_home_overrides_everything() {
        let p = Paths::resolve(&env(&[
            ("SMITH_HOME", "/sh"),
            ("XDG_CONFIG_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ]))
        .unwrap();
        assert_eq!(p.user_config_file(), PathBuf::from("/sh/config.kdl"));
        assert_eq!(p.data_dir, PathBuf::from("/sh/data"));
        assert_eq!(p.cache_dir, PathBuf::from("/sh/cache"));
        assert_eq!(p.state_dir, PathBuf::from("/sh/state"));
        assert_eq!(p.trust_file(), PathBuf::from("/sh/data/trust.json"));
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn xdg_then_home_fallbacks() {
        let p = Paths::resolve(&env(&[("XDG_CONFIG_HOME", "/xdg"), ("HOME", "/home/u")])).unwrap();
        assert_eq!(p.user_config_file(), PathBuf::from("/xdg/smith/config.kdl"));
        assert_eq!(p.data_dir, PathBuf::from("/home/u/.local/share/smith"));
        assert_eq!(p.cache_dir, PathBuf::from("/home/u/.cache/smith"));
        assert_eq!(p.state_dir, PathBuf::from("/home/u/.local/state/smith"));
        // Relative XDG values are ignored.
        let p = Paths::resolve(&env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/home/u")])).unwrap();
        assert_eq!(
            p.user_config_file(),
            PathBuf::from("/home/u/.config/smith/config.kdl")
        );
        assert_eq!(p.expand("~/s"), PathBuf::from("/home/u/s"));
    }

    #[cfg(unix)]
    #[test]
    fn no_home_is_a_diagnostic() {
        let err = Paths::resolve(&env(&[])).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NoHome);
        assert!(err.diagnostic().next().contains("SMITH_HOME"));
    }
}
