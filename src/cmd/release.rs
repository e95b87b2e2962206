//! `smith release-tool keygen | sign | verify`: the key handling and the
//! signature check `scripts/release` and CI use (docs/release.md). Hidden
//! from the help: it serves whoever publishes releases, not smith's users.

use std::path::{Path, PathBuf};

use smith_diag::{Diagnostic, Surface};
use smith_update::keys::{self, PublicKey, SecretKey};
use smith_update::release;
use smith_update::sums::Sums;

use crate::report;

/// `smith release`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Generate an ed25519 key pair: the secret key (mode 0600, never overwritten) and the public key file.
    Keygen {
        /// Where to write the secret key: outside any repository, readable only by you.
        #[arg(long, value_name = "FILE")]
        secret: PathBuf,
        /// Where to write the public key (`scripts/release-key.pub` for the release key).
        #[arg(long, value_name = "FILE")]
        public: PathBuf,
    },
    /// Sign a SHA256SUMS file: writes FILE.sig beside it.
    Sign {
        /// The secret key file.
        #[arg(
            long,
            value_name = "FILE",
            env = "SMITH_RELEASE_KEY",
            hide_env_values = true
        )]
        key: PathBuf,
        /// The checksum list to sign.
        sums: PathBuf,
    },
    /// Verify a release folder: the signature over its SHA256SUMS (by the compiled-in release key or a --key) and every file it lists.
    Verify {
        /// The folder holding SHA256SUMS, SHA256SUMS.sig and the archives.
        dir: PathBuf,
        /// Also trust this public key file (e.g. a throwaway key of a test build).
        #[arg(long, value_name = "FILE")]
        key: Vec<PathBuf>,
        /// Skip listed files that are not in the folder (one archive downloaded of several); at least one must be there.
        #[arg(long)]
        ignore_missing: bool,
    },
}

/// Runs `smith release`.
///
/// # Errors
///
/// Never: failures are reported as diagnostics with exit status 1.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let result = match args.command {
        Command::Keygen { secret, public } => keys::generate(&secret, &public).map(|hex| {
            println!(
                "generated a key pair: secret key {} (keep it private, outside the repository), public key {} ({hex})",
                secret.display(),
                public.display()
            );
        }),
        Command::Sign { key, sums } => sign(&key, &sums),
        Command::Verify {
            dir,
            key,
            ignore_missing,
        } => verify(&dir, &key, ignore_missing),
    };
    Ok(match result {
        Ok(()) => 0,
        Err(d) => {
            report::diagnostic(&d);
            1
        }
    })
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, Diagnostic> {
    std::fs::read(path).map_err(|e| {
        Diagnostic::error(
            "update.io",
            format!("{what} {} cannot be read", path.display()),
            e.to_string(),
            "check the path; `scripts/release` writes a release folder with SHA256SUMS, SHA256SUMS.sig and the archives",
        )
        .with_surface(Surface::file(path))
    })
}

fn sign(key: &Path, sums: &Path) -> Result<(), Diagnostic> {
    let key = SecretKey::read(key)?;
    let data = read(sums, "the checksum list")?;
    Sums::parse(&data, &sums.display().to_string())?;
    let mut out = sums.as_os_str().to_owned();
    out.push(".sig");
    let out = PathBuf::from(out);
    std::fs::write(&out, key.sign(&data)).map_err(|e| {
        Diagnostic::error(
            "update.io",
            format!("the signature {} cannot be written", out.display()),
            e.to_string(),
            "make the release folder writable and run the command again",
        )
        .with_surface(Surface::file(&out))
    })?;
    println!("signed {} -> {}", sums.display(), out.display());
    Ok(())
}

fn verify(dir: &Path, extra: &[PathBuf], ignore_missing: bool) -> Result<(), Diagnostic> {
    let mut keys = vec![PublicKey::compiled_in()];
    for path in extra {
        let text = read(path, "the public key")?;
        keys.push(PublicKey::parse(
            &String::from_utf8_lossy(&text),
            &path.display().to_string(),
        )?);
    }
    let sums_path = dir.join(release::SUMS);
    let sig_path = dir.join(release::SIGNATURE);
    let data = read(&sums_path, "the checksum list")?;
    let signature = read(&sig_path, "the signature")?;
    let signer = keys::verify(
        &keys,
        &data,
        &sums_path.display().to_string(),
        &signature,
        &sig_path.display().to_string(),
    )?;
    let sums = Sums::parse(&data, &sums_path.display().to_string())?;
    let mut count = 0;
    for name in sums.names() {
        let path = dir.join(name);
        if ignore_missing && !path.exists() {
            continue;
        }
        sums.check(
            name,
            &read(&path, "the release file")?,
            &path.display().to_string(),
        )?;
        count += 1;
    }
    if count == 0 {
        return Err(Diagnostic::error(
            "update.io",
            format!(
                "{} holds none of the files its SHA256SUMS lists",
                dir.display()
            ),
            "a signature over a list of checksums vouches only for files that are there to check",
            "download an archive the list names into the folder, then verify again",
        )
        .with_surface(Surface::file(dir)));
    }
    println!(
        "verified {}: signed by {}, {count} files match their checksums",
        dir.display(),
        signer.origin()
    );
    Ok(())
}
