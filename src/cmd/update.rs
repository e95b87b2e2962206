//! `smith update [--check | --rollback]`: install the newest signed release
//! in place of the running binary, or put the previous binary back.

use smith_config::options::{UPDATE_TRUSTED_KEYS, UPDATE_URL};
use smith_config::{Config, Level};
use smith_diag::{Diagnostic, Surface};
use smith_update::install::Install;
use smith_update::keys::{self, PublicKey};
use smith_update::release::{self, Version};
use smith_update::{archive, fetch, sums::Sums};

use crate::report;

/// Exit statuses, listed in `smith update --help`.
pub const HELP: &str = "\
Releases are read from update.url (`URL/latest`, then `URL/VERSION/`), and a
release is installed only when SHA256SUMS carries a valid signature by the
release key compiled into smith (or a key in update.trusted-keys of the user
configuration file) and the archive matches its checksum there. The new
binary is renamed over the running one in its folder; the replaced one is
kept beside it as `smith.previous`.

Not replaced (refused, with the command to run instead): a development build
in a cargo target folder, a binary a package manager installed (/usr/bin,
/nix/store, Homebrew, ...), a binary in a folder this user cannot write.

Exit status:
  0  updated, rolled back, or already the newest release
  1  failed (download, signature, checksum, archive, file system); the
     installed binary is unchanged
  3  --check: a newer release is available
  4  refused: this binary is not `smith update`'s to replace";

/// `smith update`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only report whether a newer release is available (exit status 3 when one is); change nothing.
    #[arg(long, conflicts_with = "rollback")]
    check: bool,
    /// Put back the binary the last update replaced (kept as `smith.previous` beside it); the replaced one becomes the previous one.
    #[arg(long)]
    rollback: bool,
    /// Words after `update` make the line a prompt (`smith update the readme`), run as `smith -- update the readme` would be.
    #[arg(value_name = "PROMPT", trailing_var_arg = true, hide = true, conflicts_with_all = ["check", "rollback"])]
    pub prompt: Vec<String>,
}

/// Runs `smith update`.
///
/// # Errors
///
/// Never for update failures, which are reported as diagnostics with the
/// exit statuses in [`HELP`]; only when the configuration cannot be read.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let config = crate::settings::config()?;
    if args.rollback {
        let install = match Install::current() {
            Ok(install) => install,
            Err(d) => return Ok(refused(&d)),
        };
        return Ok(match install.rollback() {
            Ok(()) => {
                println!(
                    "rolled back: {} is the previous binary again; the one it replaced is kept as {} (`smith update --rollback` again undoes this)",
                    install.exe().display(),
                    install.previous().display()
                );
                0
            }
            Err(d) => failed(&d),
        });
    }
    match update(config, args.check) {
        Ok(code) => Ok(code),
        Err(Failure::Refused(d)) => Ok(refused(&d)),
        Err(Failure::Failed(d)) => Ok(failed(&d)),
    }
}

enum Failure {
    Refused(Diagnostic),
    Failed(Diagnostic),
}

impl From<Diagnostic> for Failure {
    fn from(d: Diagnostic) -> Failure {
        Failure::Failed(d)
    }
}

fn refused(d: &Diagnostic) -> u8 {
    report::diagnostic(d);
    4
}

fn failed(d: &Diagnostic) -> u8 {
    report::diagnostic(d);
    1
}

fn update(config: &Config, check_only: bool) -> Result<u8, Failure> {
    let (url, url_origin) = release_url(config)?;
    fetch::check_url(&url, &url_origin)?;
    // Refuse before downloading anything: the answer does not depend on
    // the release.
    let install = if check_only {
        None
    } else {
        Some(Install::current().map_err(Failure::Refused)?)
    };
    let keys = trusted_keys(config)?;
    let current = Version::parse(env!("CARGO_PKG_VERSION"), "this smith's version")?;
    let client = smith_net::Client::new().map_err(|e| {
        Diagnostic::error(
            "update.download",
            "the HTTP engine could not start",
            e.why().to_owned(),
            e.next_action().to_owned(),
        )
    })?;
    let latest_url = release::join(&url, release::LATEST);
    let latest = Version::parse(
        &String::from_utf8_lossy(&fetch::get(&client, &latest_url)?),
        &latest_url,
    )?;
    if latest <= current {
        println!("smith {current} is up to date (the newest release at {url} is {latest})");
        return Ok(0);
    }
    if check_only {
        println!(
            "smith {latest} is available at {url} (this is {current}); run `smith update` to install it"
        );
        return Ok(3);
    }
    let Some(install) = install else {
        return Ok(0);
    };
    let folder = release::join(&url, &latest.to_string());
    let sums_url = release::join(&folder, release::SUMS);
    let sig_url = release::join(&folder, release::SIGNATURE);
    let sums_bytes = fetch::get(&client, &sums_url)?;
    let signature = fetch::get(&client, &sig_url)?;
    let signer = keys::verify(&keys, &sums_bytes, &sums_url, &signature, &sig_url)?;
    let sums = Sums::parse(&sums_bytes, &sums_url)?;
    let targets = release::archive_targets();
    let Some(target) = release::choose_target(&latest, &targets, |name| sums.get(name).is_some())
    else {
        return Err(Diagnostic::error(
            "update.no-archive",
            format!(
                "release {latest} has no archive for this platform ({})",
                targets.join(" or ")
            ),
            format!(
                "its signed {sums_url} lists {}",
                sums.names().collect::<Vec<_>>().join(", ")
            ),
            "download a build for this platform by hand, or stay on this version until one is published",
        )
        .with_surface(Surface::other(sums_url))
        .into());
    };
    let name = release::archive_name(&latest, target);
    let archive_url = release::join(&folder, &name);
    let archive_bytes = fetch::get(&client, &archive_url)?;
    sums.check(&name, &archive_bytes, &archive_url)?;
    let binary = archive::binary(
        &archive_bytes,
        &release::archive_stem(&latest, target),
        &archive_url,
    )?;
    for stale in install.clean_stale()? {
        println!("removed {}, left by an interrupted update", stale.display());
    }
    install.replace(&binary)?;
    println!(
        "updated smith {current} to {latest}: {} (signed by {}); the previous binary is kept as {} (`smith update --rollback` puts it back)",
        install.exe().display(),
        signer.origin(),
        install.previous().display()
    );
    Ok(0)
}

/// `update.url` and where it was set.
fn release_url(config: &Config) -> Result<(String, String), Diagnostic> {
    match (config.str(&UPDATE_URL), config.source(&UPDATE_URL)) {
        (Some(url), Some(source)) => Ok((url.to_owned(), source.surface().to_string())),
        _ => Err(Diagnostic::error(
            "update.no-url",
            "smith does not know where releases are published: update.url is not set",
            "`smith update` reads the newest version from update.url and downloads the release from there",
            "set it to the address the releases are published at: `smith config set update.url https://.../releases` (or SMITH_UPDATE_URL)",
        )
        .with_field(UPDATE_URL.key)),
    }
}

/// The keys a release may be signed with: the compiled-in release key,
/// and the keys of `update.trusted-keys` in the user configuration file.
/// The option set anywhere else is ignored with a warning.
fn trusted_keys(config: &Config) -> Result<Vec<PublicKey>, Diagnostic> {
    let mut keys = vec![PublicKey::compiled_in()];
    let Some(entry) = config.entry(UPDATE_TRUSTED_KEYS.key) else {
        return Ok(keys);
    };
    for (value, source) in &entry.layers {
        let Some(text) = value.as_str() else { continue };
        if source.level() != Level::User {
            report::diagnostic(
                &Diagnostic::warning(
                    "update.ignored-key",
                    format!(
                        "update.trusted-keys from {} is ignored",
                        source.surface()
                    ),
                    "only the user configuration file may add keys smith trusts to sign what it installs; a project, a variable or a flag could otherwise make smith install anything",
                    "to trust the key, set update.trusted-keys in the user configuration file (`smith config set update.trusted-keys KEY`); otherwise remove it from there",
                )
                .with_field(UPDATE_TRUSTED_KEYS.key)
                .with_surface(source.surface()),
            );
            continue;
        }
        let origin = format!("update.trusted-keys in {}", source.surface());
        for key in text.split([' ', ',', '\n', '\t']).filter(|k| !k.is_empty()) {
            keys.push(
                PublicKey::parse(key, &origin)
                    .map_err(|d| d.with_field(UPDATE_TRUSTED_KEYS.key))?,
            );
        }
    }
    Ok(keys)
}
