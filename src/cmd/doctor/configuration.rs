//! Configuration: every file smith reads its options from and the
//! `SMITH_*` variables, each checked on its own by the loader's own code
//! ([`smith_config::Loader::check_layers`]), and the user's model catalog
//! (`models.kdl`, parsed as the catalog parses it).

use serde_json::json;
use smith_config::check::{LayerCheck, LayerState};
use smith_config::{Level, Loader};
use smith_diag::Diagnostic;

use super::Context;
use super::finding::{Area, Finding};

const AREA: Area = Area::Configuration;

/// The findings of the configuration area.
pub fn check(cx: &Context, out: &mut Vec<Finding>) {
    let loader = match Loader::from_process() {
        Ok(loader) => loader,
        Err(e) => {
            out.push(Finding::problem(AREA, "config.paths", e.into_diagnostic()));
            return;
        }
    };
    for layer in loader.check_layers() {
        out.extend(layer_findings(&layer));
    }
    if let Some(paths) = &cx.paths {
        out.extend(models_file(
            &paths.config_dir.join(smith_host::catalog::USER_FILE),
        ));
    }
}

fn check_id(level: Level) -> &'static str {
    match level {
        Level::User => "config.user-file",
        Level::Project => "config.project-file",
        _ => "config.environment",
    }
}

fn state_name(state: LayerState) -> &'static str {
    match state {
        LayerState::Absent => "absent",
        LayerState::Read { .. } => "read",
        LayerState::Untrusted => "untrusted",
        LayerState::Failed => "failed",
    }
}

/// One line for a layer without problems; one finding per problem
/// otherwise (each names its file and position).
fn layer_findings(layer: &LayerCheck) -> Vec<Finding> {
    let check = check_id(layer.level);
    let path = layer.path.as_ref().map(|p| p.display().to_string());
    let (settings, rules) = match layer.state {
        LayerState::Read { settings, rules } => (settings, rules),
        _ => (0, 0),
    };
    let details = json!({
        "layer": layer.level.as_str(),
        "path": path,
        "state": state_name(layer.state),
        "settings": settings,
        "permission_rules": rules,
    });
    if !layer.problems.is_empty() {
        return layer
            .problems
            .iter()
            .map(|d| Finding::problem(AREA, check, d.clone()).details(details.clone()))
            .collect();
    }
    let what = match (layer.level, &path, layer.state) {
        (Level::User, Some(p), LayerState::Absent) => {
            format!("user configuration {p}: no such file, the defaults apply")
        }
        (Level::User, Some(p), _) => format!(
            "user configuration {p} (layer user): {}",
            counted(settings, rules)
        ),
        (Level::Project, None, _) => {
            "project configuration: none (no .smith folder from here up to the repository root or home)"
                .to_owned()
        }
        (Level::Project, Some(p), LayerState::Absent) => {
            format!("project configuration {p} (layer project, trusted): no such file")
        }
        (Level::Project, Some(p), _) => format!(
            "project configuration {p} (layer project, trusted): {}",
            counted(settings, rules)
        ),
        (_, _, LayerState::Absent) => "environment: no SMITH_* variable sets an option".to_owned(),
        _ => format!(
            "environment (layer env): {settings} option(s) set by SMITH_* variables"
        ),
    };
    vec![Finding::ok(AREA, check, what).details(details)]
}

fn counted(settings: usize, rules: usize) -> String {
    let mut s = format!("{settings} option(s) set");
    if rules > 0 {
        s.push_str(&format!(", {rules} permission rule(s)"));
    }
    s.push_str(", valid");
    s
}

/// The user's model catalog, parsed as the catalog parses it when a run
/// starts.
fn models_file(path: &std::path::Path) -> Vec<Finding> {
    let check = "config.models-file";
    let details = json!({"path": path.display().to_string()});
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return vec![
                Finding::ok(
                    AREA,
                    check,
                    format!(
                        "model catalog {}: no such file, the bundled catalog applies",
                        path.display()
                    ),
                )
                .details(details),
            ];
        }
        Err(e) => {
            return vec![
                Finding::problem(
                    AREA,
                    check,
                    Diagnostic::error(
                        "catalog.read",
                        format!("could not read {}", path.display()),
                        format!("the system reported: {e}"),
                        "fix the file's permissions or move it aside",
                    )
                    .with_surface(smith_diag::Surface::file(path)),
                )
                .details(details),
            ];
        }
    };
    let (models, routes) = match smith_catalog::parse_user_file(&text, path) {
        Ok(parsed) => parsed,
        Err(d) => return vec![Finding::problem(AREA, check, d).details(details)],
    };
    let count = models.len();
    // Aliases and groups are resolved against the catalog a run sees, as
    // `smith models` checks them.
    let problems = match smith_catalog::bundled() {
        Ok(bundled) => {
            let catalog = smith_catalog::Catalog::new(bundled);
            catalog.set_user(models);
            routes.check(&catalog.snapshot())
        }
        Err(d) => vec![d],
    };
    if problems.is_empty() {
        return vec![
            Finding::ok(
                AREA,
                check,
                format!(
                    "model catalog {}: {count} model(s), its aliases and groups resolve",
                    path.display()
                ),
            )
            .details(details),
        ];
    }
    problems
        .into_iter()
        .map(|d| {
            Finding::problem(
                AREA,
                check,
                d.with_severity(smith_diag::Severity::Warning)
                    .with_surface(smith_diag::Surface::file(path)),
            )
            .details(details.clone())
        })
        .collect()
}
