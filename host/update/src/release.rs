//! Release names and versions: where a release's files live under
//! `update.url`, what they are called, and which version is newer.

use std::cmp::Ordering;
use std::fmt;

use smith_diag::{Diagnostic, Surface};

/// The target triple this binary was built for, as release archives name
/// it, e.g. `x86_64-unknown-linux-gnu`.
pub const TARGET: &str = target();

const fn target() -> &'static str {
    if cfg!(all(
        target_arch = "x86_64",
        target_os = "linux",
        target_env = "gnu"
    )) {
        "x86_64-unknown-linux-gnu"
    } else if cfg!(all(
        target_arch = "aarch64",
        target_os = "linux",
        target_env = "gnu"
    )) {
        "aarch64-unknown-linux-gnu"
    } else if cfg!(all(
        target_arch = "x86_64",
        target_os = "linux",
        target_env = "musl"
    )) {
        "x86_64-unknown-linux-musl"
    } else if cfg!(all(
        target_arch = "aarch64",
        target_os = "linux",
        target_env = "musl"
    )) {
        "aarch64-unknown-linux-musl"
    } else if cfg!(all(target_arch = "aarch64", target_os = "macos")) {
        "aarch64-apple-darwin"
    } else if cfg!(all(target_arch = "x86_64", target_os = "macos")) {
        "x86_64-apple-darwin"
    } else {
        "unsupported"
    }
}

/// The name of the pointer file under `update.url` that holds the newest
/// version.
pub const LATEST: &str = "latest";
/// The checksum list of a release.
pub const SUMS: &str = "SHA256SUMS";
/// The signature over [`SUMS`].
pub const SIGNATURE: &str = "SHA256SUMS.sig";

/// The archive of `version` for `target`: `smith-VERSION-TARGET.tar.gz`.
pub fn archive_name(version: &Version, target: &str) -> String {
    format!("{}.tar.gz", archive_stem(version, target))
}

/// The folder inside the archive: `smith-VERSION-TARGET`.
pub fn archive_stem(version: &Version, target: &str) -> String {
    format!("smith-{version}-{target}")
}

/// `base` (the `update.url` value) joined with `path`, with exactly one
/// slash between them.
pub fn join(base: &str, path: &str) -> String {
    format!("{}/{path}", base.trim_end_matches('/'))
}

/// A release version: `MAJOR.MINOR.PATCH`, optionally `-PRE` (a
/// pre-release sorts before the release it precedes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    numbers: [u64; 3],
    pre: Option<String>,
}

impl Version {
    /// Parses `text` (surrounding whitespace ignored); `origin` says where it
    /// came from, for messages.
    ///
    /// # Errors
    ///
    /// `update.bad-version` when `text` is not a version.
    pub fn parse(text: &str, origin: &str) -> Result<Version, Diagnostic> {
        let text = text.trim();
        let bad = || {
            Diagnostic::error(
                "update.bad-version",
                format!("{origin} does not hold a version"),
                "it should hold one version such as `1.4.0` (MAJOR.MINOR.PATCH, optionally -PRE)",
                "check that update.url points at a folder of smith releases, whose `latest` file names the newest",
            )
            .with_value(text.chars().take(80).collect::<String>())
            .with_surface(Surface::other(origin.to_owned()))
        };
        let (core, pre) = match text.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (text, None),
        };
        let mut numbers = [0u64; 3];
        let mut parts = core.split('.');
        for n in &mut numbers {
            let part = parts.next().ok_or_else(bad)?;
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            *n = part.parse().map_err(|_| bad())?;
        }
        let pre_ok = pre.is_none_or(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        });
        if parts.next().is_some() || !pre_ok {
            return Err(bad());
        }
        Ok(Version {
            numbers,
            pre: pre.map(str::to_owned),
        })
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.numbers
            .cmp(&other.numbers)
            .then_with(|| match (&self.pre, &other.pre) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(a), Some(b)) => a.cmp(b),
            })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c] = self.numbers;
        write!(f, "{a}.{b}.{c}")?;
        if let Some(pre) = &self.pre {
            write!(f, "-{pre}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s, "test").unwrap()
    }

    #[test]
    fn versions_order_numerically_with_pre_releases_first() {
        assert!(v("0.10.0") > v("0.9.9"));
        assert!(v("1.0.0") > v("1.0.0-rc.1"));
        assert!(v("1.0.0-rc.2") > v("1.0.0-rc.1"));
        assert_eq!(v(" 1.2.3\n").to_string(), "1.2.3");
        for bad in ["1.2", "1.2.3.4", "a.b.c", "1.2.3-", "<html>", "1..2"] {
            assert_eq!(
                Version::parse(bad, "t").unwrap_err().code(),
                "update.bad-version"
            );
        }
    }

    #[test]
    fn names_follow_the_release_layout() {
        let version = v("1.2.3");
        assert_eq!(
            archive_name(&version, "x86_64-unknown-linux-gnu"),
            "smith-1.2.3-x86_64-unknown-linux-gnu.tar.gz"
        );
        assert_eq!(join("http://h/r/", "latest"), "http://h/r/latest");
        assert_eq!(
            join("http://h/r", "1.2.3/SHA256SUMS"),
            "http://h/r/1.2.3/SHA256SUMS"
        );
    }
}
