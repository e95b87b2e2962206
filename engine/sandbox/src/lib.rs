//! One sandbox for every tool smith runs.
//!
//! A [`Policy`] says what confined work may touch: the write roots (the
//! project root, the session's temporary directory, configured extra
//! paths), the read-denied paths (smith's credential store, `~/.ssh`,
//! `~/.aws`, `~/.gnupg`, `~/.config/gcloud`, configured extra paths) and
//! whether the network is on. Every path in it is absolute, normalized and
//! has its symbolic links resolved.
//!
//! The same policy is enforced two ways:
//!
//! - **In process**, for the file tools that run inside smith:
//!   [`Policy::check_read`] and [`Policy::check_write`] resolve the path the
//!   way the kernel would (`..`, links) and return a diagnostic naming the
//!   path and the rule when it is refused.
//! - **By the kernel**, for child processes (`bash`, plugin `process`
//!   effects, MCP servers, hook commands): [`Confinement::prepare`] builds a
//!   Landlock ruleset from the policy in the parent, and
//!   [`Confinement::apply`] installs a `pre_exec` hook that, between fork and
//!   exec, joins an empty network namespace when the network is off (made
//!   once per process and held open; inside a user namespace mapping smith's
//!   own user when smith is not privileged), sets no-new-privileges and
//!   enters the Landlock domain. The hook makes only
//!   system calls on memory prepared before the fork. Every descendant of the
//!   child inherits the confinement.
//!
//! Landlock is an allow-list over file hierarchies, so "read everywhere
//! except X" is built by walking from `/` down to each denied path and
//! granting every sibling on the way; the folders on the way get only
//! listing. Writes are granted beneath the write roots and on the usual
//! devices (`/dev/null`, `/dev/tty`, `/dev/pts`, ...).
//!
//! [`Support::probe`] reports what the running kernel offers (the Landlock
//! ABI, whether a network namespace can be made) and
//! [`Support::enforcement`] what a given policy will enforce on it, layer by
//! layer, with the reason for each layer that is missing. In
//! [`Mode::Strict`] a command is refused rather than run without the
//! filesystem rules or, with the network off, without the network
//! namespace. `docs/security.md` describes the model and its limits.
#![deny(missing_docs)]

pub mod plain;
mod policy;
mod support;

#[cfg(target_os = "linux")]
mod sys;
#[cfg(not(target_os = "linux"))]
#[path = "sys_other.rs"]
mod sys;

use std::process::Command;
use std::sync::Arc;

use smith_diag::Diagnostic;

pub use policy::{
    Denied, DeniedKind, HOME_SECRETS, Network, Policy, PolicyBuilder, WriteRoot, WriteRootKind,
    resolve,
};
pub use support::{Coverage, Enforcement, Layer, NamespaceKind, Support};

/// What to do when the kernel lacks a layer the policy needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Run with the layers that are available; the report names the rest.
    #[default]
    BestEffort,
    /// Refuse to prepare a confinement (so no command runs) without the
    /// filesystem rules, or, with the network off, without the network
    /// namespace.
    Strict,
}

/// A policy made ready for child processes: built once, applied to any
/// number of commands.
///
/// The Landlock rules name the files that exist when it is prepared; a
/// file created later directly in a folder on the way to a read-denied path
/// is not readable by confined work until the confinement is prepared again
/// (see `docs/security.md`).
#[derive(Clone, Debug)]
pub struct Confinement {
    prepared: Arc<sys::Prepared>,
    enforcement: Enforcement,
}

impl Confinement {
    /// Prepares `policy` for the running kernel ([`Support::probe`]).
    ///
    /// # Errors
    ///
    /// In [`Mode::Strict`], `sandbox.unconfined` when a needed layer is
    /// unavailable (the reason names it); `sandbox.landlock` when the kernel
    /// refuses the rules.
    pub fn prepare(policy: &Policy, mode: Mode) -> Result<Confinement, Diagnostic> {
        Self::prepare_with(policy, mode, Support::probe())
    }

    /// [`Confinement::prepare`] against a given support report (a probe of
    /// this kernel, or one with layers taken away, to see what strict mode
    /// does without them).
    ///
    /// # Errors
    ///
    /// As for [`Confinement::prepare`].
    pub fn prepare_with(
        policy: &Policy,
        mode: Mode,
        support: &Support,
    ) -> Result<Confinement, Diagnostic> {
        let enforcement = support.enforcement(policy);
        if mode == Mode::Strict {
            enforcement.require_strict()?;
        }
        let prepared = sys::prepare(policy, support)?;
        Ok(Confinement {
            prepared: Arc::new(prepared),
            enforcement,
        })
    }

    /// What this confinement enforces.
    pub fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// Whether child processes enter a Landlock domain.
    pub fn confines_filesystem(&self) -> bool {
        self.prepared.has_ruleset()
    }

    /// Whether child processes join the empty network namespace.
    pub fn isolates_network(&self) -> bool {
        self.prepared.has_namespace()
    }

    /// Installs the confinement on `command`: a `pre_exec` hook entered by
    /// the child between fork and exec. Hooks run in the order installed;
    /// one installed after this one runs confined.
    ///
    /// When the child cannot enter the confinement, the spawn fails with the
    /// system error (for example `EPERM` from `unshare`); nothing runs
    /// unconfined.
    pub fn apply(&self, command: &mut Command) {
        use std::os::unix::process::CommandExt as _;
        let prepared = Arc::clone(&self.prepared);
        // SAFETY: `enter` makes only async-signal-safe system calls
        // (unshare, open, write, close, prctl, landlock_restrict_self) on
        // memory allocated before fork, and allocates nothing.
        unsafe {
            command.pre_exec(move || prepared.enter());
        }
    }
}
