//! `smith trust [PATH] [--status] [--revoke]`: approve a project's `.smith`
//! directory (configuration, plugins, anything executable) as it is now.

use std::path::PathBuf;

use smith_config::Paths;
use smith_config::trust::{Project, TrustStatus, TrustStore};

use super::config::{report, style};

/// `smith trust`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project, or any directory inside it (default: the current directory).
    path: Option<PathBuf>,
    /// Only report whether the project is trusted (exit code 3 when it is not).
    #[arg(long, conflicts_with = "revoke")]
    status: bool,
    /// Withdraw trust: the project's .smith directory is ignored again.
    #[arg(long)]
    revoke: bool,
}

/// Runs `smith trust`.
///
/// # Errors
///
/// Only when the current directory cannot be determined; trust problems are
/// reported as diagnostics with exit code 1.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let style = style(None);
    let fail = |e: smith_config::ConfigError| {
        report(e.diagnostic(), false, style);
        Ok(1)
    };
    let paths = match Paths::from_process() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let start = match args.path {
        Some(p) => p,
        None => std::env::current_dir()?,
    };
    let project = match Project::discover(&start, paths.home.as_deref()) {
        Some(p) => p,
        None => match Project::at(&start) {
            Ok(p) => p,
            Err(e) => return fail(e),
        },
    };
    let mut store = match TrustStore::open(&paths.trust_file()) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let root = project.root.display();
    if args.status {
        return match store.status(&project) {
            Ok(TrustStatus::Trusted) => {
                println!("trusted: {root}");
                Ok(0)
            }
            Ok(TrustStatus::Untrusted) => {
                println!(
                    "not trusted: {root} (run `smith trust {root}` after reviewing its .smith directory)"
                );
                Ok(3)
            }
            Ok(TrustStatus::Changed { .. }) => {
                println!(
                    "changed since trusted: {root} (review its .smith directory, then run `smith trust {root}`)"
                );
                Ok(3)
            }
            Err(e) => fail(e),
        };
    }
    if args.revoke {
        return match store.revoke(&project) {
            Ok(true) => {
                println!("no longer trusted: {root}");
                Ok(0)
            }
            Ok(false) => {
                println!("was not trusted: {root}");
                Ok(0)
            }
            Err(e) => fail(e),
        };
    }
    match store.trust(&project) {
        Ok(digest) => {
            println!("trusted: {root}");
            println!(
                "  covers everything under {} ({digest})",
                project.smith_dir().display()
            );
            println!(
                "  any change there makes the project untrusted again until you re-run `smith trust`"
            );
            Ok(0)
        }
        Err(e) => fail(e),
    }
}
