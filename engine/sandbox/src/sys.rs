//! The Linux mechanics: probing, building the Landlock ruleset, and the
//! work done in the child between fork and exec.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};
use smith_diag::Diagnostic;

use crate::policy::{Network, Policy};
use crate::support::{NamespaceKind, Support};

/// The newest ABI this crate knows; older kernels get the subset they
/// support (Landlock's best-effort mode).
const TARGET: ABI = ABI::V10;

/// `LANDLOCK_CREATE_RULESET_VERSION`.
const CREATE_RULESET_VERSION: libc::c_uint = 1;

pub(crate) fn probe() -> Support {
    Support {
        landlock_abi: landlock_abi(),
        network_namespace: probe_namespace(),
    }
}

fn landlock_abi() -> Result<u32, String> {
    // SAFETY: the version query takes no attribute pointer and size 0.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if v >= 1 {
        return u32::try_from(v).map_err(|_| format!("the kernel reported ABI {v}"));
    }
    let e = io::Error::last_os_error();
    Err(match e.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel was built without Landlock (ENOSYS)".into(),
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built in but not enabled at boot (add landlock to the lsm= boot parameter)"
                .into()
        }
        _ => format!("the Landlock version query failed: {e}"),
    })
}

/// Everything the namespace-making child needs, prepared before fork so
/// the child only makes system calls.
#[derive(Debug)]
struct Unshare {
    flags: libc::c_int,
    /// `(path, contents)` written after a user namespace is made.
    writes: Vec<(CString, Vec<u8>)>,
}

fn unshare_plan(kind: NamespaceKind) -> Unshare {
    match kind {
        NamespaceKind::Privileged => Unshare {
            flags: libc::CLONE_NEWNET,
            writes: Vec::new(),
        },
        NamespaceKind::UserNamespace => {
            // SAFETY: plain getters.
            let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
            let c = |s: &str| CString::new(s).unwrap_or_default();
            Unshare {
                flags: libc::CLONE_NEWUSER | libc::CLONE_NEWNET,
                writes: vec![
                    (c("/proc/self/setgroups"), b"deny".to_vec()),
                    (
                        c("/proc/self/uid_map"),
                        format!("{uid} {uid} 1").into_bytes(),
                    ),
                    (
                        c("/proc/self/gid_map"),
                        format!("{gid} {gid} 1").into_bytes(),
                    ),
                ],
            }
        }
    }
}

/// Makes the namespaces in the calling (child) process. Only system calls:
/// safe between fork and exec.
fn unshare_now(plan: &Unshare) -> io::Result<()> {
    // SAFETY: unshare, open, write and close are async-signal-safe; the
    // buffers were allocated before fork and are only read.
    unsafe {
        if libc::unshare(plan.flags) == -1 {
            return Err(io::Error::last_os_error());
        }
        for (path, contents) in &plan.writes {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd == -1 {
                return Err(io::Error::last_os_error());
            }
            let n = libc::write(fd, contents.as_ptr().cast(), contents.len());
            let err = io::Error::last_os_error();
            libc::close(fd);
            if usize::try_from(n).ok() != Some(contents.len()) {
                return Err(err);
            }
        }
    }
    Ok(())
}

fn has_cap_sys_admin() -> bool {
    // The effective capability set, from /proc (no libcap needed).
    let Ok(status) = fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 21) != 0)
}

/// Which namespace to make: directly with `CAP_SYS_ADMIN`, else inside a
/// user namespace.
fn namespace_kind() -> NamespaceKind {
    if has_cap_sys_admin() {
        NamespaceKind::Privileged
    } else {
        NamespaceKind::UserNamespace
    }
}

/// Whether a network namespace can be made here, found by making the one
/// [`held`] keeps (the only reliable test: sysctls, security modules and
/// container runtimes all have a say).
fn probe_namespace() -> Result<NamespaceKind, String> {
    let kind = namespace_kind();
    held(kind).map(|_| kind)
}

/// An empty network namespace (and, for an unprivileged smith, the user
/// namespace that owns it), made once per process and held open by file
/// descriptors. Confined children join it with `setns`, which costs far
/// less than making a namespace for every command. Its loopback interface
/// is down, so commands sharing it cannot reach one another over it either.
#[derive(Debug)]
pub(crate) struct HeldNamespace {
    user: Option<OwnedFd>,
    net: OwnedFd,
}

/// The held namespace of `kind`, made on first use.
fn held(kind: NamespaceKind) -> Result<&'static HeldNamespace, String> {
    static PRIVILEGED: OnceLock<Result<HeldNamespace, String>> = OnceLock::new();
    static USER: OnceLock<Result<HeldNamespace, String>> = OnceLock::new();
    let cell = match kind {
        NamespaceKind::Privileged => &PRIVILEGED,
        NamespaceKind::UserNamespace => &USER,
    };
    cell.get_or_init(|| make_held(kind))
        .as_ref()
        .map_err(Clone::clone)
}

fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(format!(
            "cannot make a pipe: {}",
            io::Error::last_os_error()
        ));
    }
    // SAFETY: both descriptors were just opened and are owned here alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Makes the namespaces in a child that waits while this process opens
/// them through `/proc`, then lets it go.
fn make_held(kind: NamespaceKind) -> Result<HeldNamespace, String> {
    let plan = unshare_plan(kind);
    let (ready_r, ready_w) = pipe()?;
    let (release_r, release_w) = pipe()?;
    // SAFETY: the child runs only async-signal-safe calls (unshare, open,
    // write, read, close, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        return Err(format!(
            "cannot start a process to make the namespace: {}",
            io::Error::last_os_error()
        ));
    }
    if pid == 0 {
        let code: u8 = match unshare_now(&plan) {
            Ok(()) => 0,
            Err(e) => u8::try_from(e.raw_os_error().unwrap_or(255).clamp(1, 255)).unwrap_or(255),
        };
        // SAFETY: writes one byte, then blocks until the parent closes its
        // end of the release pipe, then leaves without running destructors.
        unsafe {
            libc::write(ready_w.as_raw_fd(), (&raw const code).cast(), 1);
            libc::close(release_w.as_raw_fd());
            let mut byte = 0u8;
            libc::read(release_r.as_raw_fd(), (&raw mut byte).cast(), 1);
            libc::_exit(0);
        }
    }
    drop(ready_w);
    drop(release_r);
    let mut code = 255u8;
    // SAFETY: reads one byte into `code`.
    let n = unsafe { libc::read(ready_r.as_raw_fd(), (&raw mut code).cast(), 1) };
    let result = if n != 1 {
        Err("the process making the namespace ended early".to_owned())
    } else if code != 0 {
        let e = io::Error::from_raw_os_error(i32::from(code));
        Err(match kind {
            NamespaceKind::Privileged => format!("unshare(CLONE_NEWNET) failed: {e}"),
            NamespaceKind::UserNamespace => format!(
                "smith is not privileged and a user namespace cannot be made ({e}); check kernel.unprivileged_userns_clone, user.max_user_namespaces and any AppArmor user-namespace restriction"
            ),
        })
    } else {
        let open = |name: &str| {
            fs::File::open(format!("/proc/{pid}/ns/{name}"))
                .map(OwnedFd::from)
                .map_err(|e| format!("cannot open the {name} namespace of process {pid}: {e}"))
        };
        match kind {
            NamespaceKind::Privileged => open("net").map(|net| HeldNamespace { user: None, net }),
            NamespaceKind::UserNamespace => open("user").and_then(|user| {
                open("net").map(|net| HeldNamespace {
                    user: Some(user),
                    net,
                })
            }),
        }
    };
    drop(release_w);
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    result
}

/// A confinement prepared in the parent: the Landlock ruleset (a file
/// descriptor) and the held network namespace to join.
#[derive(Debug)]
pub(crate) struct Prepared {
    ruleset: Option<OwnedFd>,
    netns: Option<&'static HeldNamespace>,
}

fn landlock_error(e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        "sandbox.landlock",
        "the sandbox could not build its Landlock rules",
        format!("the kernel refused: {e}"),
        "report this with the output of `uname -r`; meanwhile turn the sandbox off or its strict mode off",
    )
}

/// The rule list for `policy`: `(path, rights)` pairs, computed from paths
/// (the same walk the in-process checks mirror).
pub(crate) fn plan_rules(policy: &Policy) -> Vec<(PathBuf, BitFlags<AccessFs>)> {
    let net_on = policy.network() == Network::On;
    let mut read = AccessFs::from_read(TARGET);
    if net_on {
        read |= AccessFs::ResolveUnix;
    }
    let all = AccessFs::from_all(TARGET);
    let denied: Vec<&Path> = policy
        .read_denied()
        .iter()
        .map(|d| d.path.as_path())
        .collect();
    let mut rules = Vec::new();
    // Read and execute everywhere except the denied paths, and /dev, whose
    // devices are granted one by one below.
    let mut stops = denied.clone();
    stops.push(Path::new("/dev"));
    grant(&mut rules, Path::new("/"), read, &stops);
    rules.push((PathBuf::from("/dev"), AccessFs::ReadDir.into()));
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev;
    for dev in DEVICES {
        rules.push((PathBuf::from(dev), device));
    }
    rules.push((PathBuf::from("/dev/pts"), device | AccessFs::ReadDir));
    for root in policy.write_roots() {
        if denied.iter().any(|d| root.path.starts_with(d)) {
            continue;
        }
        grant(&mut rules, &root.path, all, &denied);
    }
    rules
}

/// The device files every command may read and write.
const DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
];

/// Grants `access` beneath `path` except at and beneath each of `stops`:
/// a folder on the way to a stop gets only listing, and every other entry
/// in it gets `access` (Landlock rules are an allow-list over
/// hierarchies, so a stop is carved out by granting its siblings).
fn grant(
    rules: &mut Vec<(PathBuf, BitFlags<AccessFs>)>,
    path: &Path,
    access: BitFlags<AccessFs>,
    stops: &[&Path],
) {
    if stops.iter().any(|s| path.starts_with(s)) {
        return;
    }
    if !stops.iter().any(|s| s.starts_with(path)) {
        rules.push((path.to_owned(), access));
        return;
    }
    rules.push((path.to_owned(), access & AccessFs::ReadDir));
    let Ok(entries) = fs::read_dir(path) else {
        // A folder smith cannot list: its entries stay ungranted (refused),
        // which errs on the side of confinement.
        return;
    };
    for entry in entries.flatten() {
        // Links are not granted: what they point at is governed by the
        // rules for the target, so a link into a denied folder stays denied.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        grant(rules, &entry.path(), access, stops);
    }
}

pub(crate) fn prepare(policy: &Policy, support: &Support) -> Result<Prepared, Diagnostic> {
    let ruleset = match support.landlock_abi {
        Ok(_) => Some(build_ruleset(policy)?),
        Err(_) => None,
    }
    .flatten();
    let netns = match (&support.network_namespace, policy.network()) {
        (Ok(kind), Network::Off) => Some(held(*kind).map_err(|why| {
            Diagnostic::error(
                "sandbox.network-namespace",
                "the sandbox could not make its network namespace",
                why,
                "allow user namespaces for smith's user, or allow the network in the sandbox policy",
            )
        })?),
        _ => None,
    };
    Ok(Prepared { ruleset, netns })
}

fn build_ruleset(policy: &Policy) -> Result<Option<OwnedFd>, Diagnostic> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET))
        .map_err(landlock_error)?;
    if policy.network() == Network::Off {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(TARGET))
            .map_err(landlock_error)?
            .scope(Scope::AbstractUnixSocket)
            .map_err(landlock_error)?;
    }
    let mut created = ruleset.create().map_err(landlock_error)?;
    for (path, access) in plan_rules(policy) {
        let fd = match PathFd::new(&path) {
            Ok(fd) => fd,
            // Gone since the walk, or a device this system lacks.
            Err(_) => continue,
        };
        let is_dir = fs::metadata(&path).is_ok_and(|m| m.is_dir());
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(TARGET)
        };
        if access.is_empty() {
            continue;
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(landlock_error)?;
    }
    Ok(Option::<OwnedFd>::from(created))
}

impl Prepared {
    pub(crate) fn has_ruleset(&self) -> bool {
        self.ruleset.is_some()
    }

    pub(crate) fn has_namespace(&self) -> bool {
        self.netns.is_some()
    }

    /// The child side: join the held namespaces first, then
    /// no-new-privileges and the Landlock domain. Only system calls on memory prepared before
    /// fork.
    pub(crate) fn enter(&self) -> io::Result<()> {
        if let Some(ns) = self.netns {
            // SAFETY: setns is async-signal-safe and takes only integers.
            unsafe {
                if let Some(user) = &ns.user
                    && libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER) == -1
                {
                    return Err(io::Error::last_os_error());
                }
                if libc::setns(ns.net.as_raw_fd(), libc::CLONE_NEWNET) == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        if let Some(fd) = &self.ruleset {
            // SAFETY: prctl and the Landlock syscall are async-signal-safe
            // and take only integers.
            unsafe {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}
