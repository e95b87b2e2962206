//! Release keys: ed25519 key files, the public key compiled into smith, and
//! signing and verifying `SHA256SUMS`.
//!
//! A key file holds one line of hex (64 digits: the 32-byte public key, or
//! the 32-byte secret seed); lines starting with `#` and blank lines are
//! ignored. A signature file holds the 64-byte signature as one line of hex
//! (128 digits). The secret key never appears in any message.

use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use smith_diag::{Diagnostic, Surface};
use zeroize::Zeroizing;

use crate::hex;

/// The public half of the release key, as committed in
/// `scripts/release-key.pub`: every smith trusts it.
pub const RELEASE_KEY: &str = include_str!("../../../scripts/release-key.pub");

/// A public key smith trusts to sign releases, with where it came from.
#[derive(Debug, Clone)]
pub struct PublicKey {
    key: VerifyingKey,
    origin: String,
}

impl PublicKey {
    /// Parses a public key in the key-file format; `origin` says where the
    /// text came from (a file, an option), for messages.
    ///
    /// # Errors
    ///
    /// `update.bad-key` when the text is not one line of 64 hex digits or
    /// not a valid ed25519 point.
    pub fn parse(text: &str, origin: &str) -> Result<PublicKey, Diagnostic> {
        let bad = |why: &str| {
            Diagnostic::error(
                "update.bad-key",
                format!("the public key from {origin} cannot be used"),
                why.to_owned(),
                "give the key as one line of 64 hex digits, as `smith release-tool keygen` writes it to its .pub file",
            )
            .with_surface(Surface::other(origin.to_owned()))
        };
        let line = key_line(text).ok_or_else(|| bad("it holds no key line"))?;
        let bytes = hex::decode::<32>(line).ok_or_else(|| {
            bad("an ed25519 public key is 32 bytes, written as 64 hex digits, and this is not")
        })?;
        let key = VerifyingKey::from_bytes(&bytes)
            .map_err(|_| bad("the 32 bytes are not a valid ed25519 public key"))?;
        Ok(PublicKey {
            key,
            origin: origin.to_owned(),
        })
    }

    /// The release key compiled into this binary.
    pub fn compiled_in() -> PublicKey {
        #[allow(clippy::expect_used)]
        PublicKey::parse(RELEASE_KEY, "the release key compiled into smith")
            .expect("scripts/release-key.pub is a valid key: a unit test parses it")
    }

    /// Where the key came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The key as 64 hex digits.
    pub fn to_hex(&self) -> String {
        hex::encode(self.key.as_bytes())
    }
}

/// The first line that is neither blank nor a `#` comment, trimmed.
fn key_line(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Checks `signature_text` (the content of a `.sig` file, from
/// `signature_origin`) over `data` (from `data_origin`) against `keys`;
/// returns the key that signed it.
///
/// # Errors
///
/// `update.bad-signature` when the signature is malformed or no key in
/// `keys` made it.
pub fn verify<'k>(
    keys: &'k [PublicKey],
    data: &[u8],
    data_origin: &str,
    signature_text: &[u8],
    signature_origin: &str,
) -> Result<&'k PublicKey, Diagnostic> {
    let trusted = keys
        .iter()
        .map(|k| k.origin.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let fail = |what: String, why: String| {
        Diagnostic::error(
            "update.bad-signature",
            what,
            why,
            format!(
                "do not install this release; the signature or the list of checksums was changed after signing, or it was signed with a key smith does not trust ({trusted}). Report it to whoever publishes the releases, or check that update.url points at them"
            ),
        )
        .with_surface(Surface::other(signature_origin.to_owned()))
    };
    let text = std::str::from_utf8(signature_text).ok();
    let bytes = text
        .and_then(key_line)
        .and_then(hex::decode::<64>)
        .ok_or_else(|| {
            fail(
                format!("the signature {signature_origin} is not a signature"),
                "an ed25519 signature is 64 bytes written as 128 hex digits on one line".to_owned(),
            )
        })?;
    let signature = Signature::from_bytes(&bytes);
    keys.iter()
        .find(|k| k.key.verify_strict(data, &signature).is_ok())
        .ok_or_else(|| {
            fail(
                format!("the signature {signature_origin} does not match {data_origin}"),
                format!(
                    "none of the {} trusted release keys made this signature over these bytes",
                    keys.len()
                ),
            )
        })
}

/// A secret signing key, read from a file; zeroed when dropped.
pub struct SecretKey {
    key: SigningKey,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(withheld)")
    }
}

impl SecretKey {
    /// Reads the secret key in `path`, which must not be readable by other
    /// users.
    ///
    /// # Errors
    ///
    /// `update.bad-key` when the file cannot be read, is group- or
    /// world-accessible, or holds no valid key; the key itself is never in
    /// the message.
    pub fn read(path: &Path) -> Result<SecretKey, Diagnostic> {
        let bad = |what: String, why: String, next: &str| {
            Diagnostic::error("update.bad-key", what, why, next.to_owned())
                .with_surface(Surface::file(path))
        };
        let meta = std::fs::metadata(path).map_err(|e| {
            bad(
                format!("the signing key {} cannot be read", path.display()),
                e.to_string(),
                "name the secret key file `smith release-tool keygen` wrote (SMITH_RELEASE_KEY or --key)",
            )
        })?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(bad(
                format!(
                    "the signing key {} can be read by other users (mode {:o})",
                    path.display(),
                    meta.permissions().mode() & 0o777
                ),
                "whoever can read the secret key can sign releases every smith installs".to_owned(),
                "run `chmod 600` on the file, and replace the key pair if anyone else may have read it",
            ));
        }
        let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| {
            bad(
                format!("the signing key {} cannot be read", path.display()),
                e.to_string(),
                "check the file, or generate a new pair with `smith release-tool keygen`",
            )
        })?);
        let seed = key_line(&text)
            .and_then(hex::decode::<32>)
            .map(Zeroizing::new)
            .ok_or_else(|| {
                bad(
                    format!("the signing key {} holds no secret key", path.display()),
                    "a secret key file holds one line of 64 hex digits".to_owned(),
                    "name the secret key file `smith release-tool keygen` wrote, not its .pub file",
                )
            })?;
        Ok(SecretKey {
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// The signature over `data`, as the text of a `.sig` file.
    pub fn sign(&self, data: &[u8]) -> String {
        let mut text = hex::encode(&self.key.sign(data).to_bytes());
        text.push('\n');
        text
    }

    /// The public half, in the key-file format.
    pub fn public_text(&self) -> String {
        format!(
            "# smith release key (ed25519 public key, hex)\n{}\n",
            hex::encode(self.key.verifying_key().as_bytes())
        )
    }
}

/// Generates a key pair: the secret key into `secret` (created, mode 0600;
/// never overwritten) and the public key into `public`. Returns the public
/// key as hex.
///
/// # Errors
///
/// `update.keygen` when the system has no randomness or a file cannot be
/// written; an existing secret key file is never replaced.
pub fn generate(secret: &Path, public: &Path) -> Result<String, Diagnostic> {
    let fail = |path: &Path, what: String, why: String, next: &str| {
        Diagnostic::error("update.keygen", what, why, next.to_owned())
            .with_surface(Surface::file(path))
    };
    let mut seed = Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut seed[..]).map_err(|e| {
        fail(
            secret,
            "no key pair was generated".to_owned(),
            format!("the operating system's random number generator failed: {e}"),
            "run the command again on a machine whose kernel provides getrandom",
        )
    })?;
    let key = SecretKey {
        key: SigningKey::from_bytes(&seed),
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(secret)
        .map_err(|e| {
            fail(
                secret,
                format!("the secret key file {} could not be created", secret.display()),
                e.to_string(),
                "name a file that does not exist yet, in a folder outside any repository that only you can read",
            )
        })?;
    let text = Zeroizing::new(format!("{}\n", hex::encode(key.key.as_bytes())));
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| {
            fail(
                secret,
                format!("the secret key file {} could not be written", secret.display()),
                e.to_string(),
                "free space or fix the folder's permissions, remove the partial file, and run the command again",
            )
        })?;
    std::fs::write(public, key.public_text()).map_err(|e| {
        fail(
            public,
            format!(
                "the public key file {} could not be written",
                public.display()
            ),
            e.to_string(),
            "name a writable path for the public key",
        )
    })?;
    Ok(hex::encode(key.key.verifying_key().as_bytes()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_compiled_in_key_parses() {
        assert_eq!(PublicKey::compiled_in().to_hex().len(), 64);
    }

    #[test]
    fn a_generated_pair_signs_and_verifies_and_nothing_else_does() {
        let dir = tempfile::tempdir().unwrap();
        let (secret, public) = (dir.path().join("k"), dir.path().join("k.pub"));
        let hex = generate(&secret, &public).unwrap();
        assert_eq!(
            std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let key = SecretKey::read(&secret).unwrap();
        let public = PublicKey::parse(&std::fs::read_to_string(&public).unwrap(), "k.pub").unwrap();
        assert_eq!(public.to_hex(), hex);
        let sig = key.sign(b"sums");
        let keys = [PublicKey::compiled_in(), public];
        assert_eq!(
            verify(&keys, b"sums", "SUMS", sig.as_bytes(), "SIG")
                .unwrap()
                .origin(),
            "k.pub"
        );
        let err = verify(&keys, b"sumz", "SUMS", sig.as_bytes(), "SIG").unwrap_err();
        assert_eq!(err.code(), "update.bad-signature");
        let err = verify(&keys[..1], b"sums", "SUMS", sig.as_bytes(), "SIG").unwrap_err();
        assert_eq!(err.code(), "update.bad-signature");
        // An existing secret key is never replaced.
        assert_eq!(
            generate(&secret, &dir.path().join("other.pub"))
                .unwrap_err()
                .code(),
            "update.keygen"
        );
    }

    #[test]
    fn a_secret_key_readable_by_others_is_refused_without_showing_it() {
        let dir = tempfile::tempdir().unwrap();
        let (secret, public) = (dir.path().join("k"), dir.path().join("k.pub"));
        generate(&secret, &public).unwrap();
        let text = std::fs::read_to_string(&secret).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = SecretKey::read(&secret).unwrap_err();
        assert_eq!(err.code(), "update.bad-key");
        assert!(!err.to_string().contains(text.trim()));
    }
}
