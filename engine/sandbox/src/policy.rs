//! The policy value, path resolution, and the in-process checks.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use smith_diag::Diagnostic;

use crate::plain;

/// Whether confined processes may use the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Network {
    /// No network: TCP connect and bind are denied (Landlock) and the process
    /// runs in an empty network namespace, which cuts UDP, raw sockets and
    /// abstract UNIX sockets too.
    #[default]
    Off,
    /// The network is left as it is.
    On,
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Network::Off => "off",
            Network::On => "on",
        })
    }
}

/// Why a path is a write root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteRootKind {
    /// The project root.
    Project,
    /// The session's temporary directory.
    SessionTemp,
    /// An extra path from the configuration.
    Configured,
}

impl fmt::Display for WriteRootKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WriteRootKind::Project => "the project root",
            WriteRootKind::SessionTemp => "the session temporary directory",
            WriteRootKind::Configured => "a configured write path",
        })
    }
}

/// Why a path is read-denied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeniedKind {
    /// smith's own credential store.
    AuthStore,
    /// A well-known secret folder in the home directory (`~/.ssh`, `~/.aws`,
    /// `~/.gnupg`, `~/.config/gcloud`).
    HomeSecret,
    /// An extra path from the configuration.
    Configured,
}

impl fmt::Display for DeniedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeniedKind::AuthStore => "smith's credential store",
            DeniedKind::HomeSecret => "a secret folder in the home directory",
            DeniedKind::Configured => "a configured read-denied path",
        })
    }
}

/// A write root: confined work may create, change and remove anything
/// beneath it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRoot {
    /// The resolved path (absolute, normalized, symlinks resolved).
    pub path: PathBuf,
    /// Why it is a write root.
    pub kind: WriteRootKind,
}

/// A read-denied path: confined work may not read it or anything beneath
/// it, nor write there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    /// The resolved path (absolute, normalized, symlinks resolved as far
    /// as the path exists).
    pub path: PathBuf,
    /// Why it is denied.
    pub kind: DeniedKind,
}

/// The home-relative folders denied by [`PolicyBuilder::home`].
pub const HOME_SECRETS: [&str; 4] = [".ssh", ".aws", ".gnupg", ".config/gcloud"];

/// What confined work may touch: write roots, read-denied paths, network.
///
/// Built with [`Policy::builder`]; every path in it is absolute, normalized
/// and has its symbolic links resolved, so the in-process checks and the
/// kernel rules compare like with like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    write_roots: Vec<WriteRoot>,
    read_denied: Vec<Denied>,
    network: Network,
}

/// Builds a [`Policy`].
#[derive(Clone, Debug, Default)]
pub struct PolicyBuilder {
    write: Vec<(PathBuf, WriteRootKind)>,
    denied: Vec<(PathBuf, DeniedKind)>,
    network: Network,
}

impl PolicyBuilder {
    /// Adds the project root as a write root.
    pub fn project_root(mut self, path: impl Into<PathBuf>) -> Self {
        self.write.push((path.into(), WriteRootKind::Project));
        self
    }

    /// Adds the session's temporary directory as a write root.
    pub fn session_temp(mut self, path: impl Into<PathBuf>) -> Self {
        self.write.push((path.into(), WriteRootKind::SessionTemp));
        self
    }

    /// Adds a configured extra write root.
    pub fn write_root(mut self, path: impl Into<PathBuf>) -> Self {
        self.write.push((path.into(), WriteRootKind::Configured));
        self
    }

    /// Denies reading smith's credential store at `path`.
    pub fn auth_store(mut self, path: impl Into<PathBuf>) -> Self {
        self.denied.push((path.into(), DeniedKind::AuthStore));
        self
    }

    /// Denies reading the usual secret folders under `home`
    /// ([`HOME_SECRETS`]), whether they exist yet or not.
    pub fn home(mut self, home: impl AsRef<Path>) -> Self {
        for name in HOME_SECRETS {
            self.denied
                .push((home.as_ref().join(name), DeniedKind::HomeSecret));
        }
        self
    }

    /// Denies reading a configured extra path.
    pub fn read_denied(mut self, path: impl Into<PathBuf>) -> Self {
        self.denied.push((path.into(), DeniedKind::Configured));
        self
    }

    /// Sets the network rule (off unless set).
    pub fn network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// The policy, with every path resolved.
    ///
    /// # Errors
    ///
    /// A diagnostic when a write root does not exist or is not a directory
    /// (the kernel can only grant a folder that exists), or when a path
    /// cannot be resolved.
    pub fn build(self) -> Result<Policy, Diagnostic> {
        let mut write_roots: Vec<WriteRoot> = Vec::new();
        for (given, kind) in self.write {
            let path = resolve(&given).map_err(|e| unresolvable(&given, &e))?;
            if !path.is_dir() {
                return Err(Diagnostic::error(
                    "sandbox.write-root-missing",
                    format!("the sandbox write root {} ({kind}) is not a directory", given.display()),
                    "the sandbox grants writes beneath folders that exist; a missing path cannot be granted",
                    "create the folder or remove it from the sandbox's write paths in the configuration",
                )
                .with_value(given.display()));
            }
            if !write_roots.iter().any(|r| r.path == path) {
                write_roots.push(WriteRoot { path, kind });
            }
        }
        let mut read_denied: Vec<Denied> = Vec::new();
        for (given, kind) in self.denied {
            let path = resolve(&given).map_err(|e| unresolvable(&given, &e))?;
            if path == Path::new("/") {
                return Err(Diagnostic::error(
                    "sandbox.deny-root",
                    "the sandbox read-denied paths include /",
                    "denying the whole file system leaves nothing a command could run",
                    "remove / from the sandbox's read-denied paths in the configuration",
                ));
            }
            if !read_denied.iter().any(|d| d.path == path) {
                read_denied.push(Denied { path, kind });
            }
        }
        Ok(Policy {
            write_roots,
            read_denied,
            network: self.network,
        })
    }
}

fn unresolvable(given: &Path, e: &io::Error) -> Diagnostic {
    Diagnostic::error(
        "sandbox.unresolvable-path",
        format!("the sandbox cannot resolve {}", given.display()),
        format!("looking up the path failed: {e}"),
        "check the path exists and its folders can be searched, or correct it in the configuration",
    )
    .with_value(given.display())
}

impl Policy {
    /// A builder with no paths and the network off.
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder::default()
    }

    /// The write roots, resolved.
    pub fn write_roots(&self) -> &[WriteRoot] {
        &self.write_roots
    }

    /// The read-denied paths, resolved.
    pub fn read_denied(&self) -> &[Denied] {
        &self.read_denied
    }

    /// The network rule.
    pub fn network(&self) -> Network {
        self.network
    }

    /// [`resolve`], with whether the resolved path exists when that came
    /// out of the lookups (`None` when it did not). A normalized absolute
    /// path with no link in it is answered by one lookup of the whole path
    /// ([`plain`](crate::plain)). Otherwise the resolution starts from a
    /// write root the path lies under: a write root was resolved when the
    /// policy was built, so only the components below it are looked up. A
    /// path under no write root, or whose rest holds `.` or `..`, is
    /// resolved whole; a link met below the root is followed as [`resolve`]
    /// follows it.
    fn resolve(&self, given: &Path) -> io::Result<(PathBuf, Option<bool>)> {
        if let Some(found) = plain::plain(given) {
            return Ok((given.to_path_buf(), Some(found == plain::Plain::Exists)));
        }
        let absolute = std::path::absolute(given)?;
        let Some((root, rest)) = self
            .write_roots
            .iter()
            .filter_map(|r| Some((&r.path, absolute.strip_prefix(&r.path).ok()?)))
            .max_by_key(|(root, _)| root.as_os_str().len())
        else {
            return Ok((resolve(&absolute)?, None));
        };
        if !rest.components().all(|c| matches!(c, Component::Normal(_))) {
            return Ok((resolve(&absolute)?, None));
        }
        let mut out = root.clone();
        for name in rest.components() {
            out.push(name);
            match std::fs::symlink_metadata(&out) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Ok((resolve(&absolute)?, None));
                }
                Ok(_) => {}
                // Nothing below a missing entry can be a link.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Ok((absolute, Some(false)));
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                    return Ok((absolute, Some(false)));
                }
                Err(e) => return Err(e),
            }
        }
        Ok((out, Some(true)))
    }

    /// The read-denied path at or above `resolved` (resolved, so
    /// normalized), if any.
    pub(crate) fn denied_for(&self, resolved: &Path) -> Option<&Denied> {
        let resolved = resolved.as_os_str().as_bytes();
        self.read_denied
            .iter()
            .find(|d| plain::is_beneath(resolved, d.path.as_os_str().as_bytes()))
    }

    /// Whether reading `path` is allowed: `Ok` with the resolved path, or a
    /// diagnostic naming the path and the rule that refuses it.
    ///
    /// The path is made absolute (from the process's working directory when
    /// relative), `.` and `..` are applied and every symbolic link is
    /// followed, so neither a link nor `..` can step around a rule.
    ///
    /// # Errors
    ///
    /// `sandbox.read-denied` when the resolved path is at or beneath a
    /// read-denied path; `sandbox.unresolvable-path` when it cannot be
    /// resolved (a link loop, a folder that cannot be searched).
    pub fn check_read(&self, path: impl AsRef<Path>) -> Result<PathBuf, Diagnostic> {
        let given = path.as_ref();
        let (resolved, _) = self.resolve(given).map_err(|e| unresolvable(given, &e))?;
        if let Some(d) = self.denied_for(&resolved) {
            return Err(Diagnostic::error(
                "sandbox.read-denied",
                format!("reading {} is refused by the sandbox", given.display()),
                format!(
                    "{}{} is {}, which confined work may not read",
                    via(given, &resolved),
                    d.path.display(),
                    d.kind
                ),
                "work with a file outside the read-denied paths, or remove the path from the sandbox's read-denied paths in the configuration",
            )
            .with_value(given.display()));
        }
        Ok(resolved)
    }

    /// Whether writing `path` (creating, changing or removing it) is
    /// allowed: `Ok` with the resolved path, or a diagnostic naming the
    /// path and the rule that refuses it. Resolution as in
    /// [`Policy::check_read`].
    ///
    /// # Errors
    ///
    /// `sandbox.write-denied` when the path is read-denied;
    /// `sandbox.write-outside-roots` when it is beneath no write root;
    /// `sandbox.write-beside-denied` when it would be a new entry in a
    /// folder, inside a write root, that holds a read-denied path (the
    /// kernel rules cannot grant creating there without granting the
    /// denied path); `sandbox.unresolvable-path` as for reading.
    pub fn check_write(&self, path: impl AsRef<Path>) -> Result<PathBuf, Diagnostic> {
        let given = path.as_ref();
        let (resolved, exists) = self.resolve(given).map_err(|e| unresolvable(given, &e))?;
        if let Some(d) = self.denied_for(&resolved) {
            return Err(Diagnostic::error(
                "sandbox.write-denied",
                format!("writing {} is refused by the sandbox", given.display()),
                format!(
                    "{}{} is {}, which confined work may neither read nor write",
                    via(given, &resolved),
                    d.path.display(),
                    d.kind
                ),
                "write inside the project root instead, or remove the path from the sandbox's read-denied paths in the configuration",
            )
            .with_value(given.display()));
        }
        let bytes = resolved.as_os_str().as_bytes();
        if !self
            .write_roots
            .iter()
            .any(|r| plain::is_beneath(bytes, r.path.as_os_str().as_bytes()))
        {
            let roots = self
                .write_roots
                .iter()
                .map(|r| format!("{} ({})", r.path.display(), r.kind))
                .collect::<Vec<_>>();
            let roots = if roots.is_empty() {
                "there are none".to_owned()
            } else {
                roots.join(", ")
            };
            return Err(Diagnostic::error(
                "sandbox.write-outside-roots",
                format!("writing {} is refused by the sandbox", given.display()),
                format!(
                    "{}it is beneath no write root of the sandbox (write roots: {roots})",
                    via(given, &resolved)
                ),
                "write inside the project root or the session temporary directory, or add the folder to the sandbox's write paths in the configuration",
            )
            .with_value(given.display()));
        }
        let missing = match exists {
            Some(exists) => !exists,
            None => std::fs::symlink_metadata(&resolved).is_err(),
        };
        if missing
            && let Some(parent) = resolved.parent()
            && let Some(d) = self
                .read_denied
                .iter()
                .find(|d| d.path.starts_with(parent) && d.path != parent)
        {
            return Err(Diagnostic::error(
                "sandbox.write-beside-denied",
                format!("creating {} is refused by the sandbox", given.display()),
                format!(
                    "{}its folder {} holds {} ({}), and the kernel rules cannot grant new entries in that folder without granting the denied path",
                    via(given, &resolved),
                    parent.display(),
                    d.path.display(),
                    d.kind
                ),
                "create the file in a subfolder of the write root, or make the project root a folder that holds no read-denied path",
            )
            .with_value(given.display()));
        }
        Ok(resolved)
    }
}

/// "it resolves to X, and " when resolution changed the path.
fn via(given: &Path, resolved: &Path) -> String {
    if given == resolved {
        String::new()
    } else {
        format!("it resolves to {}, and ", resolved.display())
    }
}

/// The most symbolic links followed while resolving one path (as Linux's
/// `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// `path` made absolute, with `.` and `..` applied and every symbolic link
/// followed, as far as the path exists; the part that does not exist yet is
/// applied lexically (`..` there removes the previous name).
///
/// # Errors
///
/// When the working directory is needed and unknown, a link loop
/// (`ELOOP`), or a lookup that fails for a reason other than absence.
pub fn resolve(path: &Path) -> io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    // Pending components, last one first.
    let mut pending: Vec<OsString> = Vec::new();
    push_components(&mut pending, &absolute);
    let mut out = PathBuf::from("/");
    let mut exists = true;
    let mut links = 0usize;
    while let Some(name) = pending.pop() {
        if name == "/" {
            out = PathBuf::from("/");
            exists = true;
            continue;
        }
        if name == "." {
            continue;
        }
        if name == ".." {
            out.pop();
            continue;
        }
        out.push(&name);
        if !exists {
            continue;
        }
        match std::fs::symlink_metadata(&out) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                let target = std::fs::read_link(&out)?;
                out.pop();
                push_components(&mut pending, &target);
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => exists = false,
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => exists = false,
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Pushes `path`'s components onto `pending` so they pop in order; an
/// absolute path starts with the marker `/`.
fn push_components(pending: &mut Vec<OsString>, path: &Path) {
    let mut parts: Vec<OsString> = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => parts.push("/".into()),
            Component::CurDir => parts.push(".".into()),
            Component::ParentDir => parts.push("..".into()),
            Component::Normal(n) => parts.push(n.to_owned()),
        }
    }
    pending.extend(parts.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_and_links_resolve() {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = resolve(dir.path()).expect("resolve");
        std::fs::create_dir(base.join("a")).expect("mkdir");
        std::os::unix::fs::symlink(base.join("a"), base.join("link")).expect("symlink");
        assert_eq!(
            resolve(&base.join("a/../a/./x")).expect("resolve"),
            base.join("a/x")
        );
        assert_eq!(
            resolve(&base.join("link/new/../y")).expect("resolve"),
            base.join("a/y")
        );
        std::os::unix::fs::symlink("loop", base.join("loop")).expect("symlink");
        assert_eq!(
            resolve(&base.join("loop")).map_err(|e| e.raw_os_error()),
            Err(Some(libc::ELOOP))
        );
    }
}
