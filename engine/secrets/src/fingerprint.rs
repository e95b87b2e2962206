//! Fingerprints: what a persisted record keeps instead of a value.
//!
//! A fingerprint is HMAC-SHA-256 of the value under a [`FingerprintKey`],
//! truncated to 128 bits. The key stays local (the embedding keeps it next
//! to the auth store, under the user's file permissions, or draws a fresh
//! one per process); a session file carries only the key's id. Without the
//! key a fingerprint cannot be used to test guesses, so even a short
//! password registered as a secret cannot be recovered from a shared
//! session file.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};
use zeroize::Zeroize;

use crate::error::{Error, ErrorKind};

/// Domain separation for fingerprints, so the key is never used for
/// anything else by accident.
const FINGERPRINT_DOMAIN: &[u8] = b"smith-secrets fingerprint v1\0";
/// Domain separation for key ids.
const KEY_ID_DOMAIN: &[u8] = b"smith-secrets key id v1\0";
/// How a fingerprint's text form starts.
const SCHEME: &str = "hmac-sha256:";

/// The key fingerprints are computed under. Zeroed on drop; `Debug` shows
/// only its id.
#[derive(Clone)]
pub struct FingerprintKey {
    bytes: [u8; 32],
}

impl FingerprintKey {
    /// A key from 32 bytes the embedding keeps.
    pub fn from_bytes(bytes: [u8; 32]) -> FingerprintKey {
        FingerprintKey { bytes }
    }

    /// A fresh random key. Fingerprints under it can be compared only with
    /// others made under the same key, e.g. within one process.
    ///
    /// # Errors
    ///
    /// When the operating system cannot supply random bytes.
    pub fn random() -> Result<FingerprintKey, Error> {
        let mut bytes = [0u8; 32];
        fill_random(&mut bytes)?;
        Ok(FingerprintKey { bytes })
    }

    /// The key's id: the first 8 bytes of a SHA-256 of the key, in hex.
    /// Records carry it so that a reader knows which key a fingerprint
    /// was made under; it reveals nothing about the key.
    pub fn id(&self) -> String {
        let digest = Sha256::new()
            .chain_update(KEY_ID_DOMAIN)
            .chain_update(self.bytes)
            .finalize();
        hex(&digest[..8])
    }

    /// The fingerprint of `value` under this key.
    pub fn fingerprint(&self, value: &[u8]) -> Fingerprint {
        let mac = hmac_sha256(&self.bytes, &[FINGERPRINT_DOMAIN, value]);
        let mut out = [0u8; 16];
        out.copy_from_slice(&mac[..16]);
        Fingerprint(out)
    }
}

impl Drop for FingerprintKey {
    fn drop(&mut self) {
        self.bytes.zeroize();
    }
}

impl fmt::Debug for FingerprintKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FingerprintKey({})", self.id())
    }
}

/// A value's fingerprint: safe to persist, useless without the key.
/// Written as `hmac-sha256:` and 32 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 16]);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(SCHEME)?;
        f.write_str(&hex(&self.0))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Fingerprint {
    type Err = Error;

    fn from_str(text: &str) -> Result<Fingerprint, Error> {
        let bad = || {
            Error::new(
                ErrorKind::Record,
                "secrets.bad-fingerprint",
                format!("the fingerprint {text:?} is not one this build writes"),
                format!("a fingerprint is `{SCHEME}` followed by 32 lowercase hex digits"),
                "check that the record was written by smith and not edited",
            )
        };
        let digits = text.strip_prefix(SCHEME).ok_or_else(bad)?;
        if digits.len() != 32 {
            return Err(bad());
        }
        let mut out = [0u8; 16];
        for (i, byte) in out.iter_mut().enumerate() {
            let pair = digits.get(2 * i..2 * i + 2).ok_or_else(bad)?;
            if pair.bytes().any(|b| b.is_ascii_uppercase()) {
                return Err(bad());
            }
            *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
        }
        Ok(Fingerprint(out))
    }
}

impl serde::Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Fingerprint, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// HMAC-SHA-256 (RFC 2104) of the concatenated `parts` under a 32-byte key.
fn hmac_sha256(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut ipad = [0x36u8; 64];
    let mut opad = [0x5cu8; 64];
    for (i, k) in key.iter().enumerate() {
        ipad[i] ^= k;
        opad[i] ^= k;
    }
    let mut inner = Sha256::new().chain_update(ipad);
    for part in parts {
        inner.update(part);
    }
    let inner = inner.finalize();
    let outer = Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize();
    ipad.zeroize();
    opad.zeroize();
    outer.into()
}

/// Fills `out` with random bytes from the operating system.
pub(crate) fn fill_random(out: &mut [u8]) -> Result<(), Error> {
    getrandom::fill(out).map_err(|e| {
        Error::new(
            ErrorKind::Random,
            "secrets.no-randomness",
            "no random bytes could be read from the operating system",
            format!("the secret registry needs them for keys and handoff tickets: {e}"),
            "check that the system random source (getrandom, /dev/urandom) is available",
        )
    })
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231 test case 2 shape, with the key padded to 32 bytes: the
    /// construction matches a reference HMAC for a 32-byte key.
    #[test]
    fn hmac_matches_rfc_4231_case_with_32_byte_key() {
        // RFC 4231, test case 1 uses a 20-byte key of 0x0b; a key shorter
        // than the block is zero-padded by HMAC, so padding it to 32 bytes
        // gives the same MAC.
        let mut key = [0u8; 32];
        key[..20].copy_from_slice(&[0x0b; 20]);
        let mac = hmac_sha256(&key, &[b"Hi ", b"There"]);
        assert_eq!(
            hex(&mac),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    fn fingerprints_round_trip_and_depend_on_the_key() {
        let a = FingerprintKey::from_bytes([1; 32]);
        let b = FingerprintKey::from_bytes([2; 32]);
        let fa = a.fingerprint(b"sk-test-value-123");
        assert_eq!(fa, a.fingerprint(b"sk-test-value-123"));
        assert_ne!(fa, b.fingerprint(b"sk-test-value-123"));
        assert_ne!(a.id(), b.id());
        let text = fa.to_string();
        assert!(text.starts_with("hmac-sha256:") && text.len() == 12 + 32);
        assert_eq!(text.parse::<Fingerprint>().expect("parses"), fa);
        assert!("hmac-sha256:zz".parse::<Fingerprint>().is_err());
        assert!(text.to_uppercase().parse::<Fingerprint>().is_err());
        assert!(FingerprintKey::random().is_ok());
    }
}
