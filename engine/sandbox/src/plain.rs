//! Resolution in one lookup: whether a normalized absolute path is already
//! its own resolution (no component of it a symbolic link), asked of the
//! kernel once for the whole path.
//!
//! Resolving a path component by component costs one lookup per component,
//! and each lookup walks the path from `/` again. Most paths a tool call
//! names contain no link at all; for those a single `openat2` with
//! `RESOLVE_NO_SYMLINKS` answers for every component at once: it opens the
//! path only when no component is a link, and fails with `ELOOP` at the
//! first link it meets. Whoever gets no answer here (a link on the way, a
//! kernel without `openat2`, a folder that cannot be searched) resolves the
//! path component by component as before, so the answer never differs from
//! the full resolution, only its cost.

use std::path::Path;

/// What one lookup says about a normalized absolute path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plain {
    /// No component is a symbolic link and the path exists: it is its own
    /// resolution.
    Exists,
    /// No component that exists is a symbolic link and some component does
    /// not exist (nothing below a missing entry can be a link): the path is
    /// its own resolution, and nothing is there yet.
    Missing,
}

/// Whether `path` is absolute and normalized: it starts with `/`, and has
/// no empty, `.` or `..` component and no trailing `/` (`/` itself is
/// normalized).
pub fn is_normalized(path: &[u8]) -> bool {
    if path == b"/" {
        return true;
    }
    let Some(rest) = path.strip_prefix(b"/") else {
        return false;
    };
    rest.split(|b| *b == b'/')
        .all(|name| !name.is_empty() && name != b"." && name != b"..")
}

/// [`Plain`] for `path` when one lookup can tell: `None` when `path` is not
/// absolute and normalized ([`is_normalized`]), holds a NUL byte, when a
/// component is a symbolic link, or when the lookup fails for another
/// reason (no `openat2`, a folder that cannot be searched); then the path
/// needs the full resolution.
pub fn plain(path: &Path) -> Option<Plain> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    if !is_normalized(bytes) || bytes.contains(&0) {
        return None;
    }
    lookup(bytes)
}

/// Paths up to this length are terminated on the stack.
const STACK_PATH: usize = 1024;

/// Set once `openat2` is found missing (an old kernel) or filtered (a
/// seccomp policy): every later path goes straight to the full resolution.
#[cfg(target_os = "linux")]
static UNAVAILABLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[cfg(target_os = "linux")]
fn lookup(bytes: &[u8]) -> Option<Plain> {
    use std::sync::atomic::Ordering;
    if UNAVAILABLE.load(Ordering::Relaxed) {
        return None;
    }
    let mut stack = [0u8; STACK_PATH];
    let heap;
    let terminated: &[u8] = if bytes.len() < STACK_PATH {
        stack[..bytes.len()].copy_from_slice(bytes);
        &stack[..=bytes.len()]
    } else {
        let mut owned = Vec::with_capacity(bytes.len() + 1);
        owned.extend_from_slice(bytes);
        owned.push(0);
        heap = owned;
        &heap
    };
    // SAFETY: `open_how` is plain data; zero is a valid value of each field.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `terminated` is NUL-terminated and outlives the call; `how`
    // is a valid `open_how` of the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            terminated.as_ptr(),
            &raw const how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd >= 0 {
        // SAFETY: the descriptor was just opened here and is closed once.
        unsafe { libc::close(fd as libc::c_int) };
        return Some(Plain::Exists);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR) => Some(Plain::Missing),
        Some(libc::ENOSYS | libc::EPERM) => {
            UNAVAILABLE.store(true, Ordering::Relaxed);
            None
        }
        _ => None,
    }
}

#[cfg(not(target_os = "linux"))]
fn lookup(_bytes: &[u8]) -> Option<Plain> {
    None
}

/// Whether the normalized absolute path `path` is `root` or lies beneath it
/// (`root` normalized too): a byte comparison, no component parsing.
pub fn is_beneath(path: &[u8], root: &[u8]) -> bool {
    path.starts_with(root) && (path.len() == root.len() || root == b"/" || path[root.len()] == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalized_paths_are_absolute_without_dots_or_empty_names() {
        for ok in ["/", "/a", "/a/b.rs", "/a/.hidden/..x"] {
            assert!(is_normalized(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "", "a", "a/b", "/a/", "//a", "/a//b", "/./a", "/a/.", "/a/../b", "/..",
        ] {
            assert!(!is_normalized(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn beneath_is_at_a_component_boundary() {
        assert!(is_beneath(b"/p", b"/p"));
        assert!(is_beneath(b"/p/src", b"/p"));
        assert!(is_beneath(b"/p/src", b"/"));
        assert!(!is_beneath(b"/project", b"/p"));
        assert!(!is_beneath(b"/", b"/p"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn one_lookup_answers_for_plain_paths_and_defers_links() {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = crate::resolve(dir.path()).expect("resolve");
        std::fs::create_dir(base.join("src")).expect("mkdir");
        std::fs::write(base.join("src/main.rs"), "fn main() {}\n").expect("write");
        std::os::unix::fs::symlink(base.join("src"), base.join("link")).expect("symlink");
        std::os::unix::fs::symlink(base.join("src/main.rs"), base.join("src/alias.rs"))
            .expect("symlink");
        assert_eq!(plain(&base.join("src/main.rs")), Some(Plain::Exists));
        assert_eq!(plain(&base.join("src")), Some(Plain::Exists));
        assert_eq!(plain(&base.join("src/new.rs")), Some(Plain::Missing));
        assert_eq!(plain(&base.join("gone/deeper/x")), Some(Plain::Missing));
        assert_eq!(plain(&base.join("src/main.rs/x")), Some(Plain::Missing));
        // A link anywhere, last component included, needs the full resolution.
        assert_eq!(plain(&base.join("link/main.rs")), None);
        assert_eq!(plain(&base.join("link")), None);
        assert_eq!(plain(&base.join("src/alias.rs")), None);
        // So does anything not normalized.
        assert_eq!(plain(&base.join("src/../src/main.rs")), None);
        assert_eq!(plain(Path::new("src/main.rs")), None);
        // A long path is looked up as well as a short one.
        let mut deep = base.clone();
        for _ in 0..120 {
            deep.push("abcdefghij");
        }
        std::fs::create_dir_all(&deep).expect("mkdir deep");
        assert!(deep.as_os_str().len() > STACK_PATH);
        assert_eq!(plain(&deep), Some(Plain::Exists));
        assert_eq!(plain(&deep.join("none")), Some(Plain::Missing));
    }
}
