//! Each configuration layer checked on its own ([`Loader::check_layers`]).
//!
//! [`Loader::load`] stops at the first invalid value, so a broken user file
//! hides every problem of the project file and the environment after it.
//! A check reads each layer alone — the user file, the trusted project
//! file, the `SMITH_*` variables — with the very functions the loader reads
//! it with, and keeps every problem it meets: the warnings (unknown keys in
//! sections that warn, misspelled variables, an untrusted project) and the
//! error that stops that layer (at most one per file, since a file is read
//! until its first error; one per variable). `smith doctor` reports them.
//!
//! [`Loader::check_layers`]: crate::Loader::check_layers
//! [`Loader::load`]: crate::Loader::load

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use smith_diag::Diagnostic;

use crate::paths::Paths;
use crate::source::Level;
use crate::trust::{Project, TrustStatus, TrustStore, untrusted_warning};

/// What a check found in one layer.
#[derive(Debug, Clone)]
pub struct LayerCheck {
    /// The layer: [`Level::User`], [`Level::Project`] or [`Level::Env`].
    pub level: Level,
    /// The file, for a file layer (`None` when no project was found).
    pub path: Option<PathBuf>,
    /// Whether the layer applies.
    pub state: LayerState,
    /// Its warnings and its errors, in the order they were met. A layer
    /// whose state is [`LayerState::Failed`] holds at least one error.
    pub problems: Vec<Diagnostic>,
}

/// Whether a layer applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerState {
    /// There is no such file, no project, or no variable that is an option.
    Absent,
    /// Read: how many options it sets and how many permission rules it
    /// holds (always 0 for the environment).
    Read {
        /// Option settings.
        settings: usize,
        /// Permission rules (`permissions { ... }`).
        rules: usize,
    },
    /// Not read: the project is not trusted, or changed since it was.
    Untrusted,
    /// A run refuses to start with it: an error is among the problems.
    Failed,
}

impl LayerCheck {
    fn new(level: Level, path: Option<PathBuf>) -> LayerCheck {
        LayerCheck {
            level,
            path,
            state: LayerState::Absent,
            problems: Vec::new(),
        }
    }
}

/// The configuration file `path` of layer `level`, read and parsed as the
/// loader does.
pub(crate) fn file(level: Level, path: &Path) -> LayerCheck {
    let mut check = LayerCheck::new(level, Some(path.to_path_buf()));
    let text = match crate::file::read_text(path, "configuration file") {
        Ok(Some(text)) => text,
        Ok(None) => return check,
        Err(e) => {
            check.problems.push(e.into_diagnostic());
            check.state = LayerState::Failed;
            return check;
        }
    };
    let parsed = crate::file::parse(&text, path, &mut check.problems).and_then(|parsed| {
        // The `mcp` block is read by the loader too: a broken one stops a run.
        crate::mcp::from_text(&text, path).map(|_| parsed)
    });
    check.state = match parsed {
        Ok((settings, rules)) => LayerState::Read {
            settings: settings.len(),
            rules: rules.len(),
        },
        Err(e) => {
            check.problems.push(e.into_diagnostic());
            LayerState::Failed
        }
    };
    check
}

/// The project's configuration file, read only when the trust store says
/// the project is trusted, as the loader does.
pub(crate) fn project(paths: &Paths, project: Option<Project>) -> LayerCheck {
    let Some(project) = project else {
        return LayerCheck::new(Level::Project, None);
    };
    let config_file = project.config_file();
    match TrustStore::open(&paths.trust_file()).and_then(|store| store.status(&project)) {
        Ok(TrustStatus::Trusted) => file(Level::Project, &config_file),
        Ok(status) => LayerCheck {
            state: LayerState::Untrusted,
            problems: vec![untrusted_warning(&project, &status)],
            ..LayerCheck::new(Level::Project, Some(config_file))
        },
        Err(e) => LayerCheck {
            state: LayerState::Failed,
            problems: vec![e.into_diagnostic()],
            ..LayerCheck::new(Level::Project, Some(config_file))
        },
    }
}

/// Every variable of the environment layer, each read as the loader reads
/// it; unlike a load, an invalid value does not stop the others.
pub(crate) fn env(vars: &BTreeMap<String, String>) -> LayerCheck {
    let mut check = LayerCheck::new(Level::Env, None);
    let mut settings = 0;
    let mut failed = false;
    for (var, raw) in vars {
        match crate::resolve::env_setting(var, raw, &mut check.problems) {
            Ok(Some(_)) => settings += 1,
            Ok(None) => {}
            Err(e) => {
                failed = true;
                check.problems.push(e.into_diagnostic());
            }
        }
    }
    check.state = if failed {
        LayerState::Failed
    } else if settings == 0 {
        LayerState::Absent
    } else {
        LayerState::Read { settings, rules: 0 }
    };
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Loader;

    #[test]
    fn every_layer_is_checked_even_after_one_that_fails() {
        let dir = tempfile::tempdir().expect("temp dir");
        let paths = Paths::under(dir.path().join("home"));
        std::fs::create_dir_all(&paths.config_dir).expect("config dir");
        std::fs::write(
            paths.user_config_file(),
            "tui {\n    colour \"dark\"\n}\nnet {\n    head-timeout-s \"soon\"\n}\n",
        )
        .expect("user file");
        let loader = Loader::new(paths.clone()).env([
            ("SMITH_MODLE", "big"),
            ("SMITH_NET_CONNECT_TIMEOUT_S", "never"),
            ("SMITH_MODEL", "small"),
        ]);
        // A load stops at the user file's invalid value.
        let load = loader.clone().load().expect_err("invalid value");
        assert_eq!(load.diagnostic().code(), "config.invalid-value");

        let checks = loader.check_layers();
        let user = &checks[0];
        assert_eq!(user.level, Level::User);
        assert_eq!(user.state, LayerState::Failed);
        let codes: Vec<&str> = user.problems.iter().map(Diagnostic::code).collect();
        assert_eq!(codes, ["config.unknown-key", "config.invalid-value"]);
        assert_eq!(
            user.problems[0].surface().map(ToString::to_string),
            Some(format!("{}:2:5", paths.user_config_file().display()))
        );

        assert_eq!(checks[1].level, Level::Project);
        assert_eq!(checks[1].state, LayerState::Absent);
        assert!(checks[1].path.is_none());

        let env = &checks[2];
        assert_eq!(env.state, LayerState::Failed);
        let codes: Vec<&str> = env.problems.iter().map(Diagnostic::code).collect();
        assert_eq!(codes, ["config.unknown-env", "config.invalid-value"]);
    }

    #[test]
    fn a_missing_file_is_absent_and_a_good_one_is_counted() {
        let dir = tempfile::tempdir().expect("temp dir");
        let paths = Paths::under(dir.path());
        let checks = Loader::new(paths.clone()).check_layers();
        assert_eq!(checks[0].state, LayerState::Absent);
        assert_eq!(checks[2].state, LayerState::Absent);
        std::fs::write(
            paths.user_config_file(),
            "model \"m\"\npermissions {\n    allow \"read\"\n}\n",
        )
        .expect("user file");
        let checks = Loader::new(paths).check_layers();
        assert_eq!(
            checks[0].state,
            LayerState::Read {
                settings: 1,
                rules: 1
            },
            "{:?}",
            checks[0].problems
        );
        assert!(checks[0].problems.is_empty());
    }
}
