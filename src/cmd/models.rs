//! `smith models [--provider P] [--json] [--sources] [--resolve NAME]`: the
//! model catalog as smith sees it now — the reviewed bundled catalog, the
//! user's `models.kdl` in the configuration directory (which always wins),
//! and provider data cached by earlier refreshes. Unknown values print as
//! `?`. `--resolve` shows where an alias or group routes, in failover order.

use std::path::Path;

use smith_catalog::{Catalog, Entry, Routes, Snapshot, Target, bundled, parse_user_file};
use smith_config::Paths;
use smith_diag::Diagnostic;

use super::config::{report, style};

/// `smith models`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this provider's models (e.g. anthropic, openai, google).
    #[arg(long, value_name = "P")]
    provider: Option<String>,
    /// Print JSON: each model with the source of every field, and conflicts.
    #[arg(long)]
    json: bool,
    /// Also show where each value came from and where sources disagree.
    #[arg(long)]
    sources: bool,
    /// Resolve an alias, group or model reference to its ordered targets instead.
    #[arg(long, value_name = "NAME")]
    resolve: Option<String>,
}

/// The user's own model entries, next to `config.kdl`.
pub const USER_FILE: &str = "models.kdl";

/// Runs `smith models`.
///
/// # Errors
///
/// Only when standard output cannot be written; catalog problems are
/// reported as diagnostics with exit code 1.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let style = style(None);
    let (catalog, routes) = match load() {
        Ok(c) => c,
        Err(d) => {
            report(&d, args.json, style);
            return Ok(1);
        }
    };
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
    if args.json {
        let out = serde_json::json!({
            "generation": snap.generation,
            "models": entries,
            "conflicts": conflicts,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(0);
    }
    print_table(&entries);
    if args.sources {
        println!();
        for e in &entries {
            let sources: Vec<String> = e
                .provenance
                .iter()
                .map(|(f, s)| format!("{f}={}", s.as_str()))
                .collect();
            println!("{}: {}", e.model.reference(), sources.join(" "));
        }
    }
    if !conflicts.is_empty() {
        eprintln!();
        for c in conflicts {
            eprint!("{}", c.diagnostic().render_terminal(style));
        }
    }
    Ok(0)
}

pub(crate) fn load() -> Result<(Catalog, Routes), Diagnostic> {
    let catalog = Catalog::new(bundled()?);
    let paths = Paths::from_process().map_err(|e| e.into_diagnostic())?;
    let user = paths.config_dir.join(USER_FILE);
    let mut routes = Routes::new();
    if let Some(text) = read_optional(&user)? {
        let (models, r) = parse_user_file(&text, &user)?;
        catalog.set_user(models);
        routes = r;
    }
    for warning in smith_catalog::cache::load_dir(&catalog, &paths.cache_dir.join("catalog")) {
        eprint!("{}", warning.render_terminal(style(None)));
    }
    Ok((catalog, routes))
}

fn read_optional(path: &Path) -> Result<Option<String>, Diagnostic> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Diagnostic::error(
            "catalog.read",
            format!("could not read {}", path.display()),
            format!("the system reported: {e}"),
            "fix the file's permissions or move it aside",
        )
        .with_surface(smith_diag::Surface::file(path))),
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
        "pick one of those, or add the provider's models to your models.kdl",
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
