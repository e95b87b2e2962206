//! The sandbox: what the kernel offers (Landlock, a network namespace),
//! whether the policy for a runtime in the current folder can be built,
//! and whether `bash` runs confined, is refused or runs unconfined in each
//! approval mode — the report `smith sandbox` prints, judged.

use serde_json::json;
use smith_diag::Diagnostic;
use smith_engine::approval::Approval;
use smith_engine::tools::sandbox::{Coverage, NamespaceKind, Network};

use super::Context;
use super::finding::{Area, Finding};
use crate::cmd::sandbox::bash_in;

const AREA: Area = Area::Sandbox;

/// The findings of the sandbox area.
pub fn check(cx: &Context, out: &mut Vec<Finding>) {
    let sandbox = smith_host::sandbox::for_runtime(&cx.cwd);
    let support = sandbox.support();
    let namespace = support.network_namespace.as_ref().map(|kind| match kind {
        NamespaceKind::Privileged => "privileged",
        NamespaceKind::UserNamespace => "user namespace",
    });
    let kernel = format!(
        "kernel: Landlock {}; network namespace {}",
        match &support.landlock_abi {
            Ok(abi) => format!("ABI {abi}"),
            Err(why) => format!("unavailable ({why})"),
        },
        match &namespace {
            Ok(kind) => format!("yes ({kind})"),
            Err(why) => format!("unavailable ({why})"),
        }
    );
    let details = json!({
        "landlock_abi": support.landlock_abi.as_ref().ok(),
        "landlock_unavailable": support.landlock_abi.as_ref().err(),
        "network_namespace": namespace.as_ref().ok(),
        "network_namespace_unavailable": support.network_namespace.as_ref().err(),
    });
    out.push(if support.landlock_abi.is_ok() && namespace.is_ok() {
        Finding::ok(AREA, "sandbox.kernel", kernel).details(details)
    } else {
        Finding::info(
            AREA,
            "sandbox.kernel",
            kernel,
            "the sandbox confines commands with Landlock (files) and an empty network namespace (network)",
            "see the bash finding below for what this means here; docs/security.md says what each needs",
        )
        .details(details)
    });
    if let Err(d) = sandbox.policy() {
        out.push(Finding::problem(AREA, "sandbox.policy", d.clone()));
        return;
    }
    let Ok(enforcement) = sandbox.enforcement(Network::Off) else {
        return;
    };
    let network = sandbox.network().as_str();
    let modes: Vec<(Approval, &str, Option<String>)> = Approval::ALL
        .iter()
        .map(|&mode| {
            let (bash, reason) = bash_in(mode, &enforcement);
            (mode, bash, reason)
        })
        .collect();
    let details = json!({
        "network": network,
        "modes": modes.iter().map(|(mode, bash, reason)| json!({
            "mode": mode.as_str(), "bash": bash, "reason": reason,
        })).collect::<Vec<_>>(),
    });
    let refused: Vec<&(Approval, &str, Option<String>)> = modes
        .iter()
        .filter(|(_, bash, _)| *bash == "refused")
        .collect();
    if refused.is_empty() {
        out.push(
            Finding::ok(
                AREA,
                "sandbox.bash",
                format!(
                    "bash runs confined in read-only, ask and workspace (sandbox.network {network}); `full` runs it unconfined"
                ),
            )
            .details(details),
        );
    } else {
        let names: Vec<&str> = refused.iter().map(|(mode, _, _)| mode.as_str()).collect();
        let reason = refused
            .iter()
            .find_map(|(_, _, reason)| reason.clone())
            .unwrap_or_default();
        out.push(
            Finding::problem(
                AREA,
                "sandbox.bash",
                Diagnostic::warning(
                    "sandbox.unavailable",
                    format!(
                        "bash is refused here in the {} approval mode(s): the sandbox cannot be entered",
                        names.join(" and ")
                    ),
                    reason,
                    "run smith on a Linux kernel with Landlock enabled (5.13 or later, `landlock` in the `lsm=` boot list) and user namespaces allowed; or run with `--approval ask` (each command asks) or `--approval full` (no sandbox)",
                )
                .with_value(names.join(", ")),
            )
            .details(details),
        );
    }
    let gaps: Vec<String> = enforcement
        .layers
        .iter()
        .filter_map(|layer| match &layer.coverage {
            Coverage::Partial(why) | Coverage::Unavailable(why) => {
                Some(format!("{} ({why})", layer.name))
            }
            _ => None,
        })
        .collect();
    if !gaps.is_empty() {
        out.push(Finding::info(
            AREA,
            "sandbox.layers",
            format!("layers not (fully) enforced here: {}", gaps.join("; ")),
            "the other layers still hold; these need a newer kernel",
            "nothing to do; `smith sandbox` shows every layer",
        ));
    }
}
