//! The sandbox a runtime's tools run in, built from the configuration and
//! smith's paths.
//!
//! - **Write roots**: the project root (the runtime's working directory),
//!   the session temporary directory (made per runtime, `TMPDIR` of
//!   confined commands) and `sandbox.write-paths`.
//! - **Read-denied paths**: smith's credential store (`auth.json` and
//!   `secrets.key` in the data directory), the secret folders in the home
//!   directory (`~/.ssh`, `~/.aws`, `~/.gnupg`, `~/.config/gcloud`) and
//!   `sandbox.deny-read`.
//! - **Network**: `sandbox.network` (`auto`, `off`, `on`).
//!
//! The sandbox applies while the runtime's approval mode is sandboxed
//! (every mode but `full`): see `smith_engine::tools::sandbox` and
//! `docs/security.md`.

use std::path::Path;
use std::sync::Arc;

use smith_config::Config;
use smith_config::options::{SANDBOX_DENY_READ, SANDBOX_NETWORK, SANDBOX_WRITE_PATHS};
use smith_config::paths::Paths;
use smith_engine::tools::sandbox::{NetworkSetting, Policy, PolicyBuilder, Sandbox};

/// The policy paths for a project in `cwd`: the project root, the
/// configured write paths, the credential store, the home secrets and the
/// configured denied paths (the session temporary directory is added by
/// [`Sandbox::new`]).
pub fn policy_builder(config: Option<&Config>, paths: Option<&Paths>, cwd: &Path) -> PolicyBuilder {
    let mut builder = Policy::builder().project_root(cwd);
    if let Some(paths) = paths {
        builder = builder
            .auth_store(smith_auth::AuthStore::in_data_dir(&paths.data_dir).path())
            .auth_store(paths.data_dir.join(crate::secrets::KEY_FILE));
        if let Some(home) = &paths.home {
            builder = builder.home(home);
        }
    }
    if let Some(config) = config {
        for path in config.path_list(&SANDBOX_WRITE_PATHS) {
            builder = builder.write_root(path);
        }
        for path in config.path_list(&SANDBOX_DENY_READ) {
            builder = builder.read_denied(path);
        }
    }
    builder
}

/// The `sandbox.network` setting (`auto` when unset or unreadable).
pub fn network_setting(config: Option<&Config>) -> NetworkSetting {
    config
        .and_then(|c| c.str(&SANDBOX_NETWORK))
        .and_then(NetworkSetting::parse)
        .unwrap_or_default()
}

/// The sandbox of a runtime working in `cwd`, from this process's
/// configuration and paths. A configuration that cannot be loaded leaves
/// the defaults (the credential store and home secrets stay denied).
pub fn for_runtime(cwd: &Path) -> Arc<Sandbox> {
    let config = crate::settings::config().ok();
    let paths = Paths::from_process().ok();
    let builder = policy_builder(config, paths.as_ref(), cwd);
    Arc::new(Sandbox::new(builder, network_setting(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_denies_the_credential_store_and_home_secrets() {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).expect("mkdir");
        let paths = Paths {
            home: Some(dir.path().join("home")),
            ..Paths::under(dir.path().join("smith"))
        };
        let policy = policy_builder(None, Some(&paths), &project)
            .build()
            .expect("policy");
        let denied: Vec<String> = policy
            .read_denied()
            .iter()
            .map(|d| d.path.display().to_string())
            .collect();
        for end in [
            "auth.json",
            "secrets.key",
            "home/.ssh",
            "home/.config/gcloud",
        ] {
            assert!(denied.iter().any(|d| d.ends_with(end)), "{end}: {denied:?}");
        }
        assert_eq!(policy.write_roots().len(), 1);
        assert!(policy.check_write(project.join("a")).is_ok());
        assert!(policy.check_read(dir.path().join("home/.ssh/id")).is_err());
    }
}
