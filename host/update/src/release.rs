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

/// The target whose archive `smith update` installs here: on Linux the
/// static musl build of this architecture, which is what releases publish
/// and which runs whatever the C library, so a glibc build moves to it too;
/// elsewhere this binary's own target.
pub const RELEASE_TARGET: &str = release_target();

const fn release_target() -> &'static str {
    if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        "x86_64-unknown-linux-musl"
    } else if cfg!(all(target_arch = "aarch64", target_os = "linux")) {
        "aarch64-unknown-linux-musl"
    } else {
        TARGET
    }
}

/// The targets whose archive this binary can install, in the order it
/// prefers them: [`RELEASE_TARGET`], then [`TARGET`] when that differs (a
/// glibc build also takes a release that publishes only the glibc archive
/// of its architecture, such as one packaged from a glibc build).
pub fn archive_targets() -> Vec<&'static str> {
    let mut targets = vec![RELEASE_TARGET];
    if TARGET != RELEASE_TARGET {
        targets.push(TARGET);
    }
    targets
}

/// The first of `targets` whose archive of `version` `listed` says the
/// release holds (`listed` is asked about archive names, e.g. whether the
/// signed checksum list has an entry).
pub fn choose_target<'t>(
    version: &Version,
    targets: &[&'t str],
    listed: impl Fn(&str) -> bool,
) -> Option<&'t str> {
    targets
        .iter()
        .copied()
        .find(|target| listed(&archive_name(version, target)))
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
        assert_eq!(
            archive_name(&version, "aarch64-unknown-linux-musl"),
            "smith-1.2.3-aarch64-unknown-linux-musl.tar.gz"
        );
        assert_eq!(join("http://h/r/", "latest"), "http://h/r/latest");
        assert_eq!(
            join("http://h/r", "1.2.3/SHA256SUMS"),
            "http://h/r/1.2.3/SHA256SUMS"
        );
    }

    #[test]
    fn linux_builds_install_the_static_musl_archive_of_their_architecture() {
        let targets = archive_targets();
        assert_eq!(targets[0], RELEASE_TARGET);
        if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            assert_eq!(RELEASE_TARGET, "x86_64-unknown-linux-musl");
        }
        if cfg!(all(target_arch = "aarch64", target_os = "linux")) {
            assert_eq!(RELEASE_TARGET, "aarch64-unknown-linux-musl");
        }
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            // A glibc build takes its own archive only when the musl one
            // is missing.
            assert_eq!(targets.len(), 2);
            assert_eq!(targets[1], TARGET);
            assert!(TARGET.ends_with("-unknown-linux-gnu"), "{TARGET}");
        }
        if cfg!(target_env = "musl") {
            assert_eq!(targets, [TARGET]);
        }
    }

    #[test]
    fn the_first_target_the_release_lists_is_chosen() {
        let version = v("0.2.0");
        let musl = "x86_64-unknown-linux-musl";
        let gnu = "x86_64-unknown-linux-gnu";
        let listing = |names: &'static [&'static str]| move |name: &str| names.contains(&name);
        let both = listing(&[
            "smith-0.2.0-aarch64-unknown-linux-musl.tar.gz",
            "smith-0.2.0-x86_64-unknown-linux-gnu.tar.gz",
            "smith-0.2.0-x86_64-unknown-linux-musl.tar.gz",
        ]);
        assert_eq!(choose_target(&version, &[musl, gnu], both), Some(musl));
        let glibc_only = listing(&["smith-0.2.0-x86_64-unknown-linux-gnu.tar.gz"]);
        assert_eq!(choose_target(&version, &[musl, gnu], glibc_only), Some(gnu));
        assert_eq!(choose_target(&version, &[musl], glibc_only), None);
        // Another version's archive is not this release's.
        let other = listing(&["smith-0.1.0-x86_64-unknown-linux-musl.tar.gz"]);
        assert_eq!(choose_target(&version, &[musl, gnu], other), None);
    }
}
