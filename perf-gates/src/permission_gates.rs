//! The gate on the permission policy (smith/permissions):
//!
//! - `permissions.decision`: one `tool-call` decision through the loaded
//!   smith/permissions plugin, as the engine asks it before a call runs —
//!   the event into the component, the approval mode, whether the tool is
//!   read-only, the call's path resolved on disk (absolute, normalized,
//!   symlinks resolved), 20 rules (path and command rules, deny and allow
//!   and ask) applied, and the decision back: a `write` inside the project
//!   in `workspace` mode, which runs; then the sandbox's in-process check
//!   of the same path (the `write` tool's, resolved again). At most 10 µs.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::approval::{Approval, ApprovalCell};
use smith_plugins::builtin::PERMISSIONS as COMPONENT;
use smith_plugins::effects::{Effects, Grants, PermissionAccess, PermissionRule};
use smith_plugins::extension::{Decision, HandlerResult, LifecycleEvent, ToolCallEvent};
use smith_plugins::{ExtensionComponent, Limits};

use crate::gate::{Gate, GateError, Limit, Measurement, Unit};
use crate::measure;
use crate::plugin_gates::Discard;
use crate::table::Context;
use crate::tui_gates::TempDir;

/// The goal for one decision: 10 µs.
pub const DECISION_BUDGET_NS: f64 = 10_000.0;

/// Rules in the gate's workload.
pub const RULES: usize = 20;

/// Gates on the permission policy.
pub const PERMISSIONS: &[Gate] = &[Gate {
    name: "permissions.decision",
    metric: "one tool-call decision through smith/permissions (20 rules, the path resolved on disk) and the sandbox's check of the path (median)",
    unit: Unit::Nanoseconds,
    limits: &[Limit::AtMost(DECISION_BUDGET_NS)],
    floor: None,
    run: decision,
    cores: 1,
}];

/// A project folder of its own under the system temporary directory
/// (removed afterwards) with `src/main.rs` in it.
struct Project {
    root: PathBuf,
    _dir: TempDir,
}

impl Project {
    fn new() -> Result<Project, GateError> {
        let dir = TempDir::new("permissions")?;
        let root = dir.0.clone();
        std::fs::create_dir_all(root.join("src"))
            .and_then(|()| std::fs::write(root.join("src/main.rs"), "fn main() {}\n"))
            .map_err(|err| {
                GateError::new(format!(
                    "cannot make the gate's project folder {}: {err}; check that the temporary directory is writable",
                    root.display()
                ))
            })?;
        Ok(Project { root, _dir: dir })
    }
}

/// The workload's rules: 20, deny, allow and ask, path and command rules.
fn rules() -> Vec<PermissionRule> {
    let rule = |kind: &str, tool: &str, path: Option<&str>, command: Option<&str>| PermissionRule {
        kind: kind.to_owned(),
        tool: tool.to_owned(),
        path: path.map(str::to_owned),
        command: command.map(str::to_owned),
        origin: "bench.kdl:1".to_owned(),
    };
    let mut rules = vec![
        rule("deny", "*", Some(".env"), None),
        rule("deny", "*", Some("secrets/**"), None),
        rule("deny", "bash", None, Some("rm -rf *")),
        rule("deny", "write", Some("/etc/**"), None),
        rule("ask", "write", Some("Cargo.lock"), None),
        rule("ask", "edit", Some("migrations/**/*.sql"), None),
        rule("ask", "bash", None, Some("git push*")),
        rule("allow", "bash", None, Some("git status")),
        rule("allow", "bash", None, Some("git diff *")),
        rule("allow", "bash", None, Some("cargo *")),
        rule("allow", "write", Some("docs/**/*.md"), None),
        rule("allow", "edit", Some("tests/**"), None),
    ];
    for i in rules.len()..RULES {
        rules.push(rule(
            "allow",
            "bash",
            None,
            Some(&format!("make target-{i} *")),
        ));
    }
    rules
}

fn decision(cx: &mut Context) -> Result<Measurement, GateError> {
    let project = Project::new()?;
    let mut access =
        PermissionAccess::new(ApprovalCell::new(Approval::Workspace), project.root.clone());
    access.rules = rules();
    *access
        .tools
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = HashMap::from([
        ("read".to_owned(), true),
        ("write".to_owned(), false),
        ("edit".to_owned(), false),
        ("bash".to_owned(), false),
    ]);
    let effects = Effects::new(
        "smith/permissions",
        Grants {
            ui: true,
            permissions: true,
            ..Grants::default()
        },
        Arc::new(Discard),
        Arc::new(AtomicU64::new(0)),
        1,
    )
    .with_permissions(access);
    let mut plugin = ExtensionComponent::load(
        "smith/permissions",
        COMPONENT,
        None,
        Limits::default(),
    )
    .and_then(|component| component.instantiate_with(Some(effects)))
    .map_err(|err| {
        GateError::new(format!(
            "smith/permissions does not load: {err}; run `cargo test -p smith-plugins permissions`"
        ))
    })?;
    let event = LifecycleEvent::ToolCall(ToolCallEvent {
        id: "call-1".to_owned(),
        name: "write".to_owned(),
        arguments: r#"{"path":"src/main.rs","content":"fn main() {}\n"}"#.to_owned(),
    });
    // The sandbox the write tool checks the same path against.
    let sandbox = smith_engine::tools::sandbox::Policy::builder()
        .project_root(&project.root)
        .home(project.root.join("home"))
        .build()
        .map_err(|d| {
            GateError::new(format!(
                "the gate's sandbox policy cannot be built: {}",
                d.what()
            ))
        })?;
    let target = project.root.join("src/main.rs");
    let mut wrong = 0usize;
    let timing = measure::single(&cx.plan, || {
        match plugin.handle(&event) {
            Ok(HandlerResult::Decision(Decision::Allow)) => {}
            _ => wrong += 1,
        }
        if sandbox.check_write(black_box(&target)).is_err() {
            wrong += 1;
        }
    });
    if wrong > 0 {
        return Err(GateError::new(format!(
            "smith/permissions or the sandbox did not allow a workspace write inside the project {wrong} time(s) while measuring; run `cargo test -p smith-plugins permissions` and `cargo test -p smith-sandbox`"
        )));
    }
    Ok(Measurement {
        median: timing.median_ns,
        floor: None,
        samples: timing.samples,
        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decision_gate_has_its_limit_and_measures_an_allowed_write() {
        assert_eq!(
            crate::table::limits_of("permissions.decision"),
            Some(vec![Limit::AtMost(10_000.0)])
        );
        assert_eq!(rules().len(), RULES);
        let plan = measure::Plan {
            name: "test",
            warmup: std::time::Duration::from_millis(1),
            samples: 3,
            sample_target: std::time::Duration::from_millis(1),
        };
        let mut cx = Context::new(plan);
        let m = decision(&mut cx).unwrap();
        assert!(m.median > 0.0, "{m:?}");
    }
}
