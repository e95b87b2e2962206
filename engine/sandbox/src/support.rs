//! What the running kernel supports, and what a policy will enforce on it.

use std::fmt;

use smith_diag::Diagnostic;

use crate::policy::{Network, Policy};

/// How a network namespace can be made for a confined process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespaceKind {
    /// Directly: smith holds `CAP_SYS_ADMIN`.
    Privileged,
    /// Inside a new user namespace that maps smith's own user and group.
    UserNamespace,
}

/// What the running kernel offers the sandbox. Probed once per process
/// ([`Support::probe`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version, or why Landlock is unavailable.
    pub landlock_abi: Result<u32, String>,
    /// How a network namespace is made, or why none can be.
    pub network_namespace: Result<NamespaceKind, String>,
}

/// The Landlock ABI that brought TCP bind and connect rules (Linux 6.7).
pub const ABI_TCP: u32 = 4;
/// The Landlock ABI that brought scoping of abstract UNIX sockets and
/// signals (Linux 6.12).
pub const ABI_SCOPE: u32 = 6;
/// The Landlock ABI that brought rules on connecting to pathname UNIX
/// sockets (Linux 7.1).
pub const ABI_UNIX: u32 = 9;
/// The Landlock ABI that brought UDP bind and send rules (Linux 7.2).
pub const ABI_UDP: u32 = 10;
/// The Landlock ABI that made truncation a controlled right (Linux 6.2).
pub const ABI_TRUNCATE: u32 = 3;
/// The Landlock ABI that made linking and renaming across folders a
/// controlled right (Linux 5.19); before it such moves are always refused.
pub const ABI_REFER: u32 = 2;
/// The Landlock ABI that made device `ioctl` a controlled right (Linux 6.10).
pub const ABI_IOCTL: u32 = 5;

impl Support {
    /// The running kernel's support, probed on the first call (a Landlock
    /// version query, and making the empty network namespace confined
    /// children later join) and cached for the life of the process.
    pub fn probe() -> &'static Support {
        static SUPPORT: std::sync::OnceLock<Support> = std::sync::OnceLock::new();
        SUPPORT.get_or_init(crate::sys::probe)
    }

    /// The Landlock ABI version, or 0 without Landlock.
    pub fn abi(&self) -> u32 {
        self.landlock_abi.as_ref().copied().unwrap_or(0)
    }

    /// What `policy` will enforce on this kernel, layer by layer.
    pub fn enforcement(&self, policy: &Policy) -> Enforcement {
        let abi = self.abi();
        let mut layers = Vec::new();
        let fs = match &self.landlock_abi {
            Err(why) => Coverage::Unavailable(format!("Landlock is unavailable: {why}")),
            Ok(_) => {
                let mut gaps = Vec::new();
                if abi < ABI_REFER {
                    gaps.push("links and renames across folders are always refused (ABI < 2)");
                }
                if abi < ABI_TRUNCATE {
                    gaps.push("truncating an existing file outside the write roots is not refused (ABI < 3)");
                }
                if abi < ABI_IOCTL {
                    gaps.push("device ioctl is not confined (ABI < 5)");
                }
                if gaps.is_empty() {
                    Coverage::Enforced
                } else {
                    Coverage::Partial(gaps.join("; "))
                }
            }
        };
        layers.push(Layer {
            name: "filesystem",
            mechanism: "Landlock path rules",
            coverage: fs,
            detail: format!(
                "read and execute everywhere except {} read-denied path(s); write beneath {} write root(s) and the usual devices",
                policy.read_denied().len(),
                policy.write_roots().len()
            ),
        });
        if policy.network() == Network::On {
            layers.push(Layer {
                name: "network",
                mechanism: "none",
                coverage: Coverage::NotRequested,
                detail: "the policy allows the network".into(),
            });
            return Enforcement { layers };
        }
        let ns = match &self.network_namespace {
            Ok(kind) => Layer {
                name: "network",
                mechanism: "empty network namespace",
                coverage: Coverage::Enforced,
                detail: match kind {
                    NamespaceKind::Privileged => "an empty network namespace: no interface is up, so TCP, UDP, raw sockets and abstract UNIX sockets reach nothing outside".into(),
                    NamespaceKind::UserNamespace => "an empty network namespace inside a new user namespace mapping smith's user: TCP, UDP, raw sockets and abstract UNIX sockets reach nothing outside".into(),
                },
            },
            Err(why) => Layer {
                name: "network",
                mechanism: "empty network namespace",
                coverage: Coverage::Unavailable(format!(
                    "no network namespace can be made: {why}"
                )),
                detail: "UDP and other non-TCP traffic is not cut".into(),
            },
        };
        layers.push(ns);
        layers.push(Layer {
            name: "tcp",
            mechanism: "Landlock TCP rules",
            coverage: if abi >= ABI_TCP {
                Coverage::Enforced
            } else {
                Coverage::Unavailable(format!(
                    "Landlock ABI {abi} has no TCP rules (needs ABI {ABI_TCP}, Linux 6.7)"
                ))
            },
            detail: "TCP connect and bind are refused on every port".into(),
        });
        layers.push(Layer {
            name: "udp",
            mechanism: "Landlock UDP rules",
            coverage: if abi >= ABI_UDP {
                Coverage::Enforced
            } else {
                Coverage::Unavailable(format!(
                    "Landlock ABI {abi} has no UDP rules (needs ABI {ABI_UDP})"
                ))
            },
            detail: "UDP bind and send are refused on every port".into(),
        });
        layers.push(Layer {
            name: "abstract-unix",
            mechanism: "Landlock scope",
            coverage: if abi >= ABI_SCOPE {
                Coverage::Enforced
            } else {
                Coverage::Unavailable(format!(
                    "Landlock ABI {abi} cannot scope abstract UNIX sockets (needs ABI {ABI_SCOPE}, Linux 6.12)"
                ))
            },
            detail: "abstract UNIX sockets made outside the sandbox cannot be reached".into(),
        });
        layers.push(Layer {
            name: "unix-path",
            mechanism: "Landlock path rules",
            coverage: if abi >= ABI_UNIX {
                Coverage::Enforced
            } else {
                Coverage::Unavailable(format!(
                    "Landlock ABI {abi} cannot refuse connecting to pathname UNIX sockets (needs ABI {ABI_UNIX})"
                ))
            },
            detail: "pathname UNIX sockets outside the write roots cannot be connected to".into(),
        });
        Enforcement { layers }
    }
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.landlock_abi {
            Ok(abi) => {
                writeln!(f, "landlock: ABI {abi}")?;
                let yes_no = |b: bool| if b { "yes" } else { "no" };
                writeln!(f, "  filesystem rules: yes")?;
                writeln!(f, "  refer (ABI 2): {}", yes_no(*abi >= ABI_REFER))?;
                writeln!(f, "  truncate (ABI 3): {}", yes_no(*abi >= ABI_TRUNCATE))?;
                writeln!(f, "  tcp rules (ABI 4): {}", yes_no(*abi >= ABI_TCP))?;
                writeln!(f, "  device ioctl (ABI 5): {}", yes_no(*abi >= ABI_IOCTL))?;
                writeln!(f, "  scopes (ABI 6): {}", yes_no(*abi >= ABI_SCOPE))?;
                writeln!(
                    f,
                    "  unix socket rules (ABI 9): {}",
                    yes_no(*abi >= ABI_UNIX)
                )?;
                writeln!(f, "  udp rules (ABI 10): {}", yes_no(*abi >= ABI_UDP))?;
            }
            Err(why) => writeln!(f, "landlock: unavailable ({why})")?,
        }
        match &self.network_namespace {
            Ok(NamespaceKind::Privileged) => write!(f, "network namespace: yes (privileged)"),
            Ok(NamespaceKind::UserNamespace) => {
                write!(f, "network namespace: yes (inside a user namespace)")
            }
            Err(why) => write!(f, "network namespace: unavailable ({why})"),
        }
    }
}

/// How much of one layer is enforced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Fully enforced.
    Enforced,
    /// Enforced with the named gaps.
    Partial(String),
    /// Not enforced, for the given reason.
    Unavailable(String),
    /// The policy does not ask for it.
    NotRequested,
}

/// One layer of confinement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    /// A short stable name: `filesystem`, `network`, `tcp`, `udp`,
    /// `abstract-unix`, `unix-path`.
    pub name: &'static str,
    /// The kernel mechanism.
    pub mechanism: &'static str,
    /// How much of it holds here.
    pub coverage: Coverage,
    /// What it does.
    pub detail: String,
}

/// What a policy will enforce on the running kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enforcement {
    /// The layers, filesystem first.
    pub layers: Vec<Layer>,
}

impl Enforcement {
    /// The layer named `name`.
    pub fn layer(&self, name: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.name == name)
    }

    /// Why strict mode refuses to run a command under this enforcement, or
    /// `None` when it may run. Strict mode needs the filesystem rules and,
    /// with the network off, the network namespace (the layer that cuts
    /// every protocol); the finer Landlock network layers back it up and
    /// their absence alone does not refuse.
    pub fn strict_refusal(&self) -> Option<String> {
        let mut reasons = Vec::new();
        for name in ["filesystem", "network"] {
            if let Some(Layer {
                coverage: Coverage::Unavailable(why),
                ..
            }) = self.layer(name)
            {
                reasons.push(format!("{name}: {why}"));
            }
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }

    /// `Ok` when strict mode may run a command, else the diagnostic it
    /// reports.
    ///
    /// # Errors
    ///
    /// `sandbox.unconfined` with the missing layers as the reason.
    pub fn require_strict(&self) -> Result<(), Diagnostic> {
        match self.strict_refusal() {
            None => Ok(()),
            Some(why) => Err(Diagnostic::error(
                "sandbox.unconfined",
                "the command was not run: the sandbox cannot confine it on this kernel",
                why,
                "run on a kernel with Landlock enabled and network namespaces allowed, or turn the sandbox's strict mode off to run with the layers that are available",
            )),
        }
    }
}

impl fmt::Display for Enforcement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, l) in self.layers.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            let state = match &l.coverage {
                Coverage::Enforced => "enforced".to_owned(),
                Coverage::Partial(gaps) => format!("partial ({gaps})"),
                Coverage::Unavailable(why) => format!("NOT enforced ({why})"),
                Coverage::NotRequested => "not requested".to_owned(),
            };
            write!(f, "{}: {state} — {} via {}", l.name, l.detail, l.mechanism)?;
        }
        Ok(())
    }
}
