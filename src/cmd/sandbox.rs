//! `smith sandbox [--json]`: what the kernel offers the sandbox and what
//! the sandbox a runtime in the current folder gets enforces here.
//!
//! Prints the kernel's support (the Landlock ABI, how a network namespace
//! is made), the policy (`sandbox.network`, the write roots, the
//! read-denied paths), each layer with the network off as `enforced`,
//! `partial (gaps)`, `NOT enforced (reason)` or `not requested`, and, for
//! each approval mode, whether `bash` runs confined, is refused (the
//! missing layer) or runs unconfined (`full`).

use std::io::Write as _;

use serde_json::{Value, json};
use smith_engine::approval::Approval;
use smith_engine::tools::sandbox::{
    Coverage, DeniedKind, Enforcement, NamespaceKind, Network, Policy, Sandbox, WriteRootKind,
    refusal,
};

use super::config::{report, style};

/// `smith sandbox`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `smith sandbox`.
///
/// # Errors
///
/// When the current folder cannot be determined or standard output cannot
/// be written; a policy that cannot be built is reported as a diagnostic
/// with exit code 1.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let cwd = std::env::current_dir()?;
    let sandbox = smith_host::sandbox::for_runtime(&cwd);
    let policy = match sandbox.policy() {
        Ok(p) => p,
        Err(d) => {
            report(d, args.json, style(None));
            return Ok(1);
        }
    };
    let Ok(enforcement) = sandbox.enforcement(Network::Off) else {
        return Ok(1);
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let report = to_json(&sandbox, policy, &enforcement);
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write!(out, "{}", text(&sandbox, policy, &enforcement))?;
    }
    Ok(0)
}

/// What `bash` does in `mode` here: `confined`, `refused` (with the
/// reason) or `unconfined`.
pub(crate) fn bash_in(mode: Approval, enforcement: &Enforcement) -> (&'static str, Option<String>) {
    if !mode.sandboxed() {
        return ("unconfined", None);
    }
    match refusal(enforcement, mode) {
        Some(why) => ("refused", Some(why)),
        None => ("confined", None),
    }
}

fn write_root_kind(kind: WriteRootKind) -> &'static str {
    match kind {
        WriteRootKind::Project => "project",
        WriteRootKind::SessionTemp => "session-temp",
        WriteRootKind::Configured => "configured",
    }
}

fn denied_kind(kind: DeniedKind) -> &'static str {
    match kind {
        DeniedKind::AuthStore => "auth-store",
        DeniedKind::HomeSecret => "home-secret",
        DeniedKind::Configured => "configured",
    }
}

fn network_text(sandbox: &Sandbox) -> &'static str {
    match sandbox.network().as_str() {
        "off" => "off: confined commands never reach the network",
        "on" => "on: confined commands use the network as it is",
        _ => {
            "auto: off in read-only and workspace; on in ask for bash (each call ran once the permission policy let it through); plugin processes off"
        }
    }
}

fn coverage(c: &Coverage) -> (&'static str, Option<&str>) {
    match c {
        Coverage::Enforced => ("enforced", None),
        Coverage::Partial(gaps) => ("partial", Some(gaps)),
        Coverage::Unavailable(why) => ("not-enforced", Some(why)),
        Coverage::NotRequested => ("not-requested", None),
    }
}

fn text(sandbox: &Sandbox, policy: &Policy, enforcement: &Enforcement) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let support = sandbox.support();
    let _ = writeln!(s, "kernel");
    for line in support.to_string().lines() {
        let _ = writeln!(s, "  {line}");
    }
    let _ = writeln!(s, "\nnetwork: {}", network_text(sandbox));
    let _ = writeln!(s, "\nwrite roots");
    for root in policy.write_roots() {
        let note = if root.kind == WriteRootKind::SessionTemp {
            "; each runtime makes its own"
        } else {
            ""
        };
        let _ = writeln!(s, "  {} ({}{note})", root.path.display(), root.kind);
    }
    let _ = writeln!(s, "\nread-denied");
    for denied in policy.read_denied() {
        let _ = writeln!(s, "  {} ({})", denied.path.display(), denied.kind);
    }
    let _ = writeln!(s, "\nlayers with the network off");
    for layer in &enforcement.layers {
        let state = match &layer.coverage {
            Coverage::Enforced => "enforced".to_owned(),
            Coverage::Partial(gaps) => format!("partial ({gaps})"),
            Coverage::Unavailable(why) => format!("NOT enforced ({why})"),
            Coverage::NotRequested => "not requested".to_owned(),
        };
        let _ = writeln!(s, "  {:<14} {state}", layer.name);
        let _ = writeln!(s, "  {:<14} {}: {}", "", layer.mechanism, layer.detail);
    }
    let _ = writeln!(s, "\nbash by approval mode");
    for mode in Approval::ALL {
        let line = match bash_in(mode, enforcement) {
            ("refused", Some(why)) => format!("refused: {why}"),
            ("confined", _) if mode == Approval::Ask => {
                "confined (with the layers above that are enforced)".to_owned()
            }
            ("confined", _) => "confined".to_owned(),
            _ => "unconfined (no sandbox)".to_owned(),
        };
        let _ = writeln!(s, "  {:<10} {line}", mode.as_str());
    }
    s
}

fn to_json(sandbox: &Sandbox, policy: &Policy, enforcement: &Enforcement) -> Value {
    let support = sandbox.support();
    let namespace = support
        .network_namespace
        .as_ref()
        .ok()
        .map(|kind| match kind {
            NamespaceKind::Privileged => "privileged",
            NamespaceKind::UserNamespace => "user-namespace",
        });
    json!({
        "support": {
            "landlock_abi": support.landlock_abi.as_ref().ok(),
            "landlock_unavailable": support.landlock_abi.as_ref().err(),
            "network_namespace": namespace,
            "network_namespace_unavailable": support.network_namespace.as_ref().err(),
        },
        "network": sandbox.network().as_str(),
        "write_roots": policy.write_roots().iter().map(|r| json!({
            "path": r.path.display().to_string(),
            "kind": write_root_kind(r.kind),
        })).collect::<Vec<_>>(),
        "read_denied": policy.read_denied().iter().map(|d| json!({
            "path": d.path.display().to_string(),
            "kind": denied_kind(d.kind),
        })).collect::<Vec<_>>(),
        "layers": enforcement.layers.iter().map(|l| {
            let (state, reason) = coverage(&l.coverage);
            json!({
                "name": l.name,
                "mechanism": l.mechanism,
                "coverage": state,
                "reason": reason,
                "detail": l.detail,
            })
        }).collect::<Vec<_>>(),
        "modes": Approval::ALL.iter().map(|&mode| {
            let (bash, reason) = bash_in(mode, enforcement);
            json!({"mode": mode.as_str(), "bash": bash, "reason": reason})
        }).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use smith_engine::tools::sandbox::Support;

    use super::*;

    #[test]
    fn a_kernel_without_landlock_refuses_bash_in_the_modes_nobody_approves() {
        let dir = tempfile::tempdir().expect("temp dir");
        let builder = Policy::builder().project_root(dir.path());
        let sandbox = Sandbox::new(builder, Default::default()).with_support(Support {
            landlock_abi: Err("the kernel was built without Landlock (ENOSYS)".into()),
            network_namespace: Err("no user namespaces".into()),
        });
        let enforcement = sandbox.enforcement(Network::Off).expect("policy");
        let policy = sandbox.policy().expect("policy");
        let report = to_json(&sandbox, policy, &enforcement);
        let modes: Vec<(&str, &str)> = report["modes"]
            .as_array()
            .expect("modes")
            .iter()
            .map(|m| {
                (
                    m["mode"].as_str().unwrap_or(""),
                    m["bash"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            modes,
            [
                ("read-only", "refused"),
                ("ask", "confined"),
                ("workspace", "refused"),
                ("full", "unconfined")
            ]
        );
        let text = text(&sandbox, policy, &enforcement);
        assert!(
            text.contains("NOT enforced (Landlock is unavailable"),
            "{text}"
        );
        assert!(text.contains("workspace  refused: filesystem:"), "{text}");
    }
}
