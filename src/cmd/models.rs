//! `smith models [--provider P] [--json] [--sources] [--refresh] [--resolve NAME]`:
//! the model catalog as smith sees it now — the reviewed bundled catalog,
//! the user's `models.kdl` in the configuration directory (which always
//! wins), and provider data cached by earlier refreshes. Unknown values
//! print as `?`. `--resolve` shows where an alias or group routes, in
//! failover order. `--refresh` first asks the providers for their model
//! lists (waiting for them), saves what they said to the catalog cache, and
//! lists with provenance.
//!
//! [`start_background_refresh`] is the `catalog.refresh = "background"`
//! option: the commands that run the agent call it, it returns at once,
//! and the refresh it starts only writes the cache for later runs.

use std::collections::BTreeMap;

use smith_catalog::{Entry, Snapshot, Source, Target};
use smith_diag::Diagnostic;

use super::config::{report, style};

/// `smith models`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this provider's models (e.g. anthropic, openai, google, ollama).
    #[arg(long, value_name = "P")]
    provider: Option<String>,
    /// Print JSON: each model with the source of every field, and conflicts.
    #[arg(long)]
    json: bool,
    /// Also show where each value came from and where sources disagree.
    #[arg(long)]
    sources: bool,
    /// Resolve an alias, group or model reference to its ordered targets instead.
    #[arg(long, value_name = "NAME", conflicts_with = "refresh")]
    resolve: Option<String>,
    /// First ask the providers (all, or --provider's) for their model lists and wait: prints, per provider, how many models were published, why it failed, or why it was skipped; saves the lists to the catalog cache; then lists with provenance.
    #[arg(long)]
    refresh: bool,
}

use smith_host::catalog::{Refreshed, load, refresh_now, source_label, utc};

/// Runs `smith models`.
///
/// # Errors
///
/// Only when standard output cannot be written; catalog problems are
/// reported as diagnostics with exit code 1.
pub fn run(mut args: Args) -> anyhow::Result<u8> {
    let style = style(None);
    // Another spelling of a built-in provider (`llama-cpp`) means its id.
    if let Some(vendor) = args
        .provider
        .as_deref()
        .and_then(smith_provider_host::Vendor::from_id)
    {
        args.provider = Some(vendor.id().to_owned());
    }
    let (catalog, routes) = match load() {
        Ok(c) => c,
        Err(d) => {
            report(&d, args.json, style);
            return Ok(1);
        }
    };
    let mut refreshed = Vec::new();
    if args.refresh {
        refreshed = match refresh_now(&catalog, args.provider.as_deref()) {
            Ok(r) => r,
            Err(d) => {
                report(&d, args.json, style);
                return Ok(1);
            }
        };
        if !args.json {
            for r in &refreshed {
                println!("{}", r.line());
            }
            println!();
        }
    }
    let failed = refreshed.iter().any(|r| r.outcome == "failed");
    let snap = catalog.snapshot();
    if let Some(name) = &args.resolve {
        return match routes.resolve(name, &snap) {
            Ok(targets) => {
                let refs: Vec<String> = targets.iter().map(Target::reference).collect();
                if args.json {
                    println!("{}", serde_json::json!({ "name": name, "targets": refs }));
                } else {
                    for r in refs {
                        println!("{r}");
                    }
                }
                Ok(0)
            }
            Err(d) => {
                report(
                    &d.with_surface(smith_diag::Surface::flag("--resolve")),
                    args.json,
                    style,
                );
                Ok(1)
            }
        };
    }
    for problem in routes.check(&snap) {
        eprint!(
            "{}",
            problem
                .with_severity(smith_diag::Severity::Warning)
                .render_terminal(style)
        );
    }
    let entries: Vec<&Entry> = match &args.provider {
        None => snap.entries.iter().collect(),
        Some(p) => {
            let e: Vec<&Entry> = snap.provider(p).collect();
            if e.is_empty() {
                report(&unknown_provider(p, &snap), args.json, style);
                return Ok(1);
            }
            e
        }
    };
    let conflicts: Vec<_> = snap
        .conflicts
        .iter()
        .filter(|c| {
            args.provider
                .as_ref()
                .is_none_or(|p| c.model.starts_with(&format!("{p}/")))
        })
        .collect();
    let code = u8::from(failed);
    if args.json {
        let runtime: BTreeMap<&String, serde_json::Value> = snap
            .runtime
            .iter()
            .filter(|(p, _)| args.provider.as_ref().is_none_or(|want| want == *p))
            .map(|(p, r)| {
                (
                    p,
                    serde_json::json!({
                        "source": r.source,
                        "refreshed_at": r.refreshed_at,
                        "refreshed_at_utc": r.refreshed_at.map(utc),
                        "models": r.models,
                    }),
                )
            })
            .collect();
        let mut out = serde_json::json!({
            "generation": snap.generation,
            "models": entries,
            "conflicts": conflicts,
            "runtime": runtime,
        });
        if args.refresh {
            out["refresh"] = refreshed.iter().map(Refreshed::to_json).collect();
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(code);
    }
    print_table(&entries);
    if args.sources || args.refresh {
        println!();
        print_sources(&snap, &entries, args.provider.as_deref());
    }
    if !conflicts.is_empty() {
        eprintln!();
        for c in conflicts {
            eprint!("{}", c.diagnostic().render_terminal(style));
        }
    }
    Ok(code)
}

/// Where each value came from: per provider with runtime data, its source
/// and time, then per model each field's source.
fn print_sources(snap: &Snapshot, entries: &[&Entry], only: Option<&str>) {
    for (provider, r) in &snap.runtime {
        if only.is_some_and(|p| p != provider.as_str()) {
            continue;
        }
        let when = r.refreshed_at.map_or_else(
            || "at an unknown time".to_owned(),
            |t| format!("at {}", utc(t)),
        );
        let what = match r.source {
            Source::Refresh => "refreshed in this run",
            _ => "from the catalog cache, refreshed",
        };
        println!("{provider}: {} models {what} {when}", r.models);
    }
    for e in entries {
        let sources: Vec<String> = e
            .provenance
            .iter()
            .map(|(f, s)| format!("{f}={}", source_label(snap, &e.model.provider, s)))
            .collect();
        println!("{}: {}", e.model.reference(), sources.join(" "));
    }
}

fn unknown_provider(p: &str, snap: &Snapshot) -> Diagnostic {
    let mut known: Vec<&str> = snap
        .entries
        .iter()
        .map(|e| e.model.provider.as_str())
        .collect();
    known.dedup();
    Diagnostic::error(
        "catalog.unknown-provider",
        format!("the catalog lists no models of provider `{p}`"),
        format!("the providers listed are: {}", known.join(", ")),
        match smith_provider_host::Vendor::from_id(p).filter(|v| v.is_compatible()) {
            Some(v) => format!(
                "ask the server which models it serves with `smith models --refresh --provider {}`, or describe them in your models.kdl",
                v.id()
            ),
            None => "pick one of those, or add the provider's models to your models.kdl".to_owned(),
        },
    )
    .with_value(p)
    .with_surface(smith_diag::Surface::flag("--provider"))
}

fn print_table(entries: &[&Entry]) {
    fn q<T: ToString>(v: Option<T>) -> String {
        v.map_or_else(|| "?".to_owned(), |v| v.to_string())
    }
    let rows: Vec<[String; 8]> = entries
        .iter()
        .map(|e| {
            let m = &e.model;
            let input = match (m.text_input, m.image_input) {
                (None, None) => "?".to_owned(),
                (t, i) => [(t, "text"), (i, "image")]
                    .iter()
                    .filter(|(v, _)| *v == Some(true))
                    .map(|(_, n)| *n)
                    .collect::<Vec<_>>()
                    .join("+"),
            };
            let p = &m.pricing;
            [
                m.reference(),
                q(m.context),
                q(m.max_output),
                input,
                q(m.tools.map(|t| if t { "yes" } else { "no" })),
                q(smith_catalog::Field::Thinking.render(m)),
                q(m.cache.map(|c| c.to_string())),
                format!(
                    "{}/{} r{} w{}",
                    q(p.input),
                    q(p.output),
                    q(p.cache_read),
                    q(p.cache_write)
                ),
            ]
        })
        .collect();
    let head = [
        "MODEL",
        "CONTEXT",
        "OUTPUT",
        "INPUT",
        "TOOLS",
        "THINKING",
        "CACHE",
        "$/MTOK IN/OUT",
    ];
    let mut widths = head.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        println!("{}", s.trim_end());
    };
    line(head.to_vec());
    for r in &rows {
        line(r.iter().map(String::as_str).collect());
    }
}
