//! Credentials: for each provider, whether a credential is present and
//! where it comes from (never its value), the auth store and the secret
//! store (readable, private), the provider a run here would use, and, with
//! `--live`, one request per usable provider through the path `smith auth
//! check PROVIDER --live` takes.
//!
//! Without `--live` nothing is sent anywhere: credentials are resolved as
//! `smith auth status` resolves them (environment, then the auth store;
//! nothing is renewed) and the provider is chosen as a run chooses it
//! ([`smith_provider_host::select`], which makes no request).

use std::path::Path;

use serde_json::json;
use smith_auth::{AuthStore, Origin, Resolver};
use smith_config::Level;
use smith_config::options::PROVIDER;
use smith_diag::{Diagnostic, Surface};
use smith_provider_host::{Selection, Vendor, builtin_slots, select};

use super::Context;
use super::finding::{Area, Finding};

const AREA: Area = Area::Credentials;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The findings of the credentials area.
pub fn check(cx: &Context, out: &mut Vec<Finding>) {
    let Some(paths) = &cx.paths else {
        return;
    };
    let store = AuthStore::in_data_dir(&paths.data_dir);
    if let Some(f) = private_file(store.path(), "credentials.auth-store", "auth store") {
        out.push(f);
    }
    let resolver = Resolver::new(builtin_slots()).store(store.clone());
    let statuses = match resolver.status() {
        Ok(statuses) => statuses,
        Err(d) => {
            out.push(Finding::problem(AREA, "credentials.auth-store", d));
            return;
        }
    };
    let stored = store.list().unwrap_or_default();
    for status in &statuses {
        out.extend(slot_findings(status, &stored, &store));
    }
    for vendor in std::iter::once(Vendor::OpenAiCompatible).chain(Vendor::LOCAL) {
        if vendor.base_url_from_env(&env).is_some() {
            out.push(
                Finding::ok(
                    AREA,
                    "credentials.local-server",
                    if cx.live {
                        format!(
                            "{}: {} is set (the live check follows)",
                            vendor.id(),
                            vendor.base_url_env()
                        )
                    } else {
                        format!(
                            "{}: {} is set (not contacted; `smith doctor --live` sends it one request)",
                            vendor.id(),
                            vendor.base_url_env()
                        )
                    },
                )
                .details(json!({"provider": vendor.id(), "variable": vendor.base_url_env()})),
            );
        }
    }
    user_secrets(&paths.data_dir, out);
    out.push(selection(cx, &resolver, paths));
    if cx.live {
        live(&resolver, out);
    }
}

/// A warning when the file at `path` exists and other users may read it.
fn private_file(path: &Path, check: &'static str, what: &str) -> Option<Finding> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        if mode & 0o077 == 0 {
            return None;
        }
        Some(
            Finding::problem(
                AREA,
                check,
                Diagnostic::warning(
                    "doctor.file-not-private",
                    format!(
                        "the {what} {} can be read or written by other users (mode {mode:03o})",
                        path.display()
                    ),
                    "it holds credentials in plain text; smith creates it readable by you alone (mode 600)",
                    format!("run `chmod 600 {}`", path.display()),
                )
                .with_value(format!("{mode:03o}"))
                .with_surface(Surface::file(path)),
            )
            .details(json!({"path": path.display().to_string(), "mode": format!("{mode:03o}")})),
        )
    }
    #[cfg(not(unix))]
    {
        let _ = (path, check, what);
        None
    }
}

/// One line for a credential slot, plus a note when a stored credential
/// is shadowed by a variable.
fn slot_findings(
    status: &smith_auth::SlotStatus,
    stored: &[(String, String)],
    store: &AuthStore,
) -> Vec<Finding> {
    let check = "credentials.slot";
    let (provider, slot) = status
        .handle
        .split_once('.')
        .unwrap_or((status.handle.as_str(), ""));
    let source = status
        .found
        .as_ref()
        .map(|(origin, _, _)| origin.to_string());
    let details = json!({
        "provider": provider,
        "slot": slot,
        "state": status.state,
        "source": source,
        "kind": status.found.as_ref().map(|f| f.1),
        "expires_at": status.found.as_ref().and_then(|f| f.2),
    });
    let vars = Vendor::from_id(provider)
        .map(|v| v.credential_env().join(" or "))
        .filter(|v| !v.is_empty());
    let mut out = Vec::new();
    let finding = match (&status.found, status.state) {
        (Some((origin, kind, _)), "ready") => Finding::ok(
            AREA,
            check,
            format!("{}: {kind} from {origin}", status.handle),
        ),
        (Some((origin, kind, _)), "renewable") => Finding::ok(
            AREA,
            check,
            format!(
                "{}: {kind} from {origin}, expired; it is renewed before its next use",
                status.handle
            ),
        ),
        (Some((origin, kind, _)), _) => Finding::problem(
            AREA,
            check,
            Diagnostic::warning(
                "auth.expired",
                format!("the {kind} `{}` from {origin} has expired", status.handle),
                "a request with it is refused, and smith has no way to renew it",
                format!("store a new one with `smith auth set {provider}`"),
            )
            .with_value(status.handle.clone())
            .with_surface(Surface::other(origin.to_string())),
        ),
        (None, _) => Finding::ok(
            AREA,
            check,
            match &vars {
                Some(vars) => format!(
                    "{}: no credential ({vars} unset, none in the auth store)",
                    status.handle
                ),
                None => format!(
                    "{}: no credential stored (optional: for servers that ask for a key, `smith auth set {provider}`)",
                    status.handle
                ),
            },
        ),
    };
    out.push(finding.details(details));
    if let Some((Origin::Env(var), _, _)) = &status.found
        && stored.iter().any(|(p, s)| p == provider && s == slot)
    {
        out.push(
            Finding::info(
                AREA,
                check,
                format!(
                    "{}: the credential stored in {} is not used while {var} is set",
                    status.handle,
                    store.path().display()
                ),
                "a variable comes before the auth store",
                format!(
                    "unset {var} to use the stored one, or remove the stored one with `smith auth logout {provider}`"
                ),
            )
            .details(json!({"provider": provider, "slot": slot, "variable": var})),
        );
    }
    out
}

/// The secrets `smith secret add` stored: readable, private, how many.
/// Their values are registered for redaction and never shown.
fn user_secrets(data_dir: &Path, out: &mut Vec<Finding>) {
    let secrets = smith_host::secrets::UserSecrets::in_data_dir(data_dir);
    let check = "credentials.secrets";
    let path = secrets.path().display().to_string();
    match secrets.list() {
        Ok(list) if list.is_empty() => {}
        Ok(list) => {
            for secret in &list {
                smith_diag::secrets::register(&secret.value);
            }
            if let Some(f) = private_file(secrets.path(), check, "secret store") {
                out.push(f);
            }
            out.push(
                Finding::ok(
                    AREA,
                    check,
                    format!(
                        "secret store {path}: {} secret(s) redacted in every run (`smith secret list`)",
                        list.len()
                    ),
                )
                .details(json!({"path": path, "secrets": list.len()})),
            );
        }
        Err(d) => out.push(Finding::problem(AREA, check, d).details(json!({"path": path}))),
    }
}

/// The provider a run here would use, as a run chooses it.
fn selection(cx: &Context, resolver: &Resolver, paths: &smith_config::Paths) -> Finding {
    let check = "credentials.provider";
    let configured = cx.config.and_then(|config| {
        let source = config.source(&PROVIDER)?;
        (source.level() != Level::Default)
            .then(|| Some((config.str(&PROVIDER)?.to_owned(), source.to_string())))?
    });
    let chosen = select(
        None,
        configured.as_ref().map(|(v, s)| (v.as_str(), s.as_str())),
        &env,
        resolver,
    );
    let (selection, why) = match chosen {
        Ok(chosen) => chosen,
        Err(d) => return Finding::problem(AREA, check, d),
    };
    let vendor = match selection {
        Selection::Mock if configured.is_some() => {
            return Finding::ok(
                AREA,
                check,
                format!("runs here use the offline mock provider ({why})"),
            )
            .details(json!({"provider": "mock", "reason": why}));
        }
        Selection::Mock => {
            return Finding::info(
                AREA,
                check,
                "runs here use the offline mock provider, which answers from a script",
                why.clone(),
                "to talk to a model, export ANTHROPIC_API_KEY (or OPENAI_API_KEY, GEMINI_API_KEY) or run `smith auth set PROVIDER`; for a local server set OLLAMA_BASE_URL (or LLAMA_CPP_BASE_URL, LMSTUDIO_BASE_URL, VLLM_BASE_URL)",
            )
            .details(json!({"provider": "mock", "reason": why}));
        }
        Selection::Live(vendor) => vendor,
    };
    let details = json!({"provider": vendor.id(), "reason": why});
    let disabled = smith_host::plugins::disabled(paths);
    if disabled.iter().any(|d| d == vendor.plugin()) {
        return Finding::problem(
            AREA,
            check,
            Diagnostic::error(
                "plugin.disabled",
                format!(
                    "runs here use provider {} ({why}), but its plugin {} is disabled",
                    vendor.id(),
                    vendor.plugin()
                ),
                "a disabled provider plugin is not used, so every run fails before anything is sent",
                format!("run `smith plugin enable {}`", vendor.plugin()),
            )
            .with_value(vendor.plugin())
            .with_surface(Surface::file(smith_host::plugins::disabled_file(paths))),
        )
        .details(details);
    }
    if vendor == Vendor::OpenAiCompatible && vendor.base_url_from_env(&env).is_none() {
        return Finding::problem(
            AREA,
            check,
            Diagnostic::warning(
                "provider.no-base-url",
                format!("runs here use provider openai-compatible ({why}), which has no base URL"),
                "the OpenAI-compatible provider has no default address",
                "export OPENAI_COMPATIBLE_BASE_URL (e.g. http://localhost:11434/v1), or give --base-url on each run",
            )
            .with_surface(Surface::env("OPENAI_COMPATIBLE_BASE_URL")),
        )
        .details(details);
    }
    if let Some((provider, slot)) = vendor.credential_slot().and_then(|h| h.split_once('.'))
        && vendor != Vendor::OpenAiCompatible
        && let Err(d) = resolver.resolve(provider, slot)
    {
        return Finding::problem(
            AREA,
            check,
            Diagnostic::error(
                d.code().to_owned(),
                format!(
                    "runs here use provider {} ({why}), but {}",
                    vendor.id(),
                    d.what()
                ),
                d.why().to_owned(),
                d.next().to_owned(),
            )
            .with_value(vendor.id()),
        )
        .details(details);
    }
    Finding::ok(
        AREA,
        check,
        format!("runs here use provider {} ({why})", vendor.id()),
    )
    .details(details)
}

/// `--live`: one request to each provider with a credential (or a base
/// URL), as `smith auth check PROVIDER --live` sends it.
fn live(resolver: &Resolver, out: &mut Vec<Finding>) {
    let check = "credentials.live";
    let usable = Vendor::ALL
        .into_iter()
        .filter(|v| match v.credential_slot() {
            _ if v.is_compatible() => v.base_url_from_env(&env).is_some(),
            Some(handle) => handle
                .split_once('.')
                .is_some_and(|(p, s)| resolver.resolve(p, s).is_ok()),
            None => false,
        });
    let mut any = false;
    for vendor in usable {
        any = true;
        let details = json!({"provider": vendor.id()});
        let finding = match crate::cmd::auth::live::check(vendor.id(), None, None) {
            Ok(report) => {
                let mut lines = report.lines();
                let first = lines.next().unwrap_or_default();
                Finding::ok(
                    AREA,
                    check,
                    first.strip_prefix("ok: ").unwrap_or(first).to_owned(),
                )
                .details(json!({
                    "provider": vendor.id(),
                    "report": lines.map(str::trim).collect::<Vec<_>>(),
                }))
            }
            Err(crate::cmd::auth::live::Failed::Setup(e)) => {
                Finding::problem(AREA, check, crate::report::diagnose(&e)).details(details)
            }
            Err(crate::cmd::auth::live::Failed::Request(d)) => {
                Finding::problem(AREA, check, d).details(details)
            }
        };
        out.push(finding);
    }
    if !any {
        out.push(Finding::info(
            AREA,
            check,
            "--live: no provider has a credential or a base URL, so nothing was sent",
            "a live check needs a provider it can reach",
            "export a provider's key or base URL (see above), then run `smith doctor --live` again",
        ));
    }
}
