//! `SHA256SUMS`: the SHA-256 of every file of a release, in `sha256sum`'s
//! format (`HEX  NAME` per line; `HEX *NAME` for binary mode is accepted).

use sha2::{Digest as _, Sha256};
use smith_diag::{Diagnostic, Surface};

use crate::hex;

/// The parsed lines of a `SHA256SUMS` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sums {
    entries: Vec<(String, [u8; 32])>,
}

impl Sums {
    /// Parses `text` (from `origin`, for messages).
    ///
    /// # Errors
    ///
    /// `update.bad-sums` naming the first line that is not `HEX  NAME`, or
    /// a name listed twice.
    pub fn parse(text: &[u8], origin: &str) -> Result<Sums, Diagnostic> {
        let bad = |why: String| {
            Diagnostic::error(
                "update.bad-sums",
                format!("the checksum list {origin} cannot be read"),
                why,
                "do not install this release; report the file to whoever publishes the releases",
            )
            .with_surface(Surface::other(origin.to_owned()))
        };
        let text = std::str::from_utf8(text).map_err(|_| bad("it is not UTF-8 text".into()))?;
        let mut entries: Vec<(String, [u8; 32])> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let parsed = line
                .split_once("  ")
                .or_else(|| line.split_once(" *"))
                .and_then(|(h, name)| Some((hex::decode::<32>(h)?, name)));
            let Some((digest, name)) = parsed else {
                return Err(bad(format!(
                    "line {} is not `SHA256-HEX  FILE-NAME`: {line:?}",
                    n + 1
                )));
            };
            if entries.iter().any(|(e, _)| e == name) {
                return Err(bad(format!("{name} is listed twice")));
            }
            entries.push((name.to_owned(), digest));
        }
        Ok(Sums { entries })
    }

    /// The digest listed for `name`.
    pub fn get(&self, name: &str) -> Option<&[u8; 32]> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, d)| d)
    }

    /// The names listed, in file order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// Checks that `bytes` (downloaded from `origin`) are the file `name`
    /// this list names.
    ///
    /// # Errors
    ///
    /// `update.bad-checksum` when `name` is not listed or its digest
    /// differs.
    pub fn check(&self, name: &str, bytes: &[u8], origin: &str) -> Result<(), Diagnostic> {
        let Some(expected) = self.get(name) else {
            return Err(Diagnostic::error(
                "update.bad-checksum",
                format!("the signed checksum list does not list {name}"),
                "only files the signed list names are installed",
                "do not install this file; check that update.url points at smith's releases",
            )
            .with_surface(Surface::other(origin.to_owned())));
        };
        let actual = sha256(bytes);
        if &actual != expected {
            return Err(Diagnostic::error(
                "update.bad-checksum",
                format!(
                    "{origin} ({} bytes) has SHA-256 {}, but the signed SHA256SUMS says {}",
                    bytes.len(),
                    hex::encode(&actual),
                    hex::encode(expected)
                ),
                "the file was changed or damaged after the release was signed (or by a proxy on the way)",
                "nothing was installed; run `smith update` again later, and report it to whoever publishes the releases if it persists",
            )
            .with_surface(Surface::other(origin.to_owned())));
        }
        Ok(())
    }
}

/// The SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn reads_sha256sum_output_and_checks_files() {
        let text = format!(
            "{}  a.tar.gz\n{} *b.tar.gz\n",
            hex::encode(&sha256(b"a")),
            hex::encode(&sha256(b"b"))
        );
        let sums = Sums::parse(text.as_bytes(), "SUMS").unwrap();
        assert_eq!(sums.names().collect::<Vec<_>>(), ["a.tar.gz", "b.tar.gz"]);
        sums.check("a.tar.gz", b"a", "a").unwrap();
        assert_eq!(
            sums.check("a.tar.gz", b"b", "a").unwrap_err().code(),
            "update.bad-checksum"
        );
        assert_eq!(
            sums.check("c.tar.gz", b"c", "c").unwrap_err().code(),
            "update.bad-checksum"
        );
        assert_eq!(
            Sums::parse(b"zz  a\n", "SUMS").unwrap_err().code(),
            "update.bad-sums"
        );
    }
}
