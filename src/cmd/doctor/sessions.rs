//! Sessions: the session store every command uses (`session.dir`, else
//! `<data dir>/sessions`), how many sessions it holds and how much disk
//! they take, and each session loaded as a resume loads it (the store's
//! frame walk): files a `smith session repair` would fix (corrupt frames,
//! a torn tail), files that do not load at all, and effects with a
//! recorded intent and no completion (their outcome is unknown). Loading
//! stops after [`BUDGET`], newest session first, so a huge store cannot
//! hold the report up; what was left unchecked is said. Nothing is
//! written: the store is opened only when it exists.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use smith_config::options::SESSION_DIR;
use smith_diag::{Diagnostic, Surface};
use smith_store::{ErrorKind, SessionInfo, Store};

use super::Context;
use super::finding::{Area, Finding};
use super::plugins::size_text;

const AREA: Area = Area::Sessions;

/// How long sessions are loaded for before the rest are left unchecked.
pub const BUDGET: Duration = Duration::from_millis(300);

/// The findings of the sessions area.
pub fn check(cx: &Context, out: &mut Vec<Finding>) {
    let check = "sessions.store";
    let (root, source) = match (cx.config, &cx.paths) {
        (Some(config), _) => (
            smith_host::settings::sessions_dir(config),
            config.source(&SESSION_DIR).map_or_else(
                || "the default".to_owned(),
                |s| format!("session.dir from {s}"),
            ),
        ),
        (None, Some(paths)) => (
            paths.sessions_dir(),
            "the default: the configuration does not load, see above".to_owned(),
        ),
        (None, None) => return,
    };
    let details = json!({"path": root.display().to_string(), "source": source});
    if !root.exists() {
        out.push(
            Finding::ok(
                AREA,
                check,
                format!(
                    "session store {} ({source}): none yet; the first run creates it",
                    root.display()
                ),
            )
            .details(details),
        );
        return;
    }
    let store = match Store::open(&root) {
        Ok(store) => store,
        Err(e) => {
            out.push(
                Finding::problem(
                    AREA,
                    check,
                    crate::report::diagnose(&anyhow::Error::from(e))
                        .with_surface(Surface::file(&root)),
                )
                .details(details),
            );
            return;
        }
    };
    let listed = match store.list() {
        Ok(listed) => listed,
        Err(e) => {
            out.push(
                Finding::problem(
                    AREA,
                    check,
                    crate::report::diagnose(&anyhow::Error::from(e)),
                )
                .details(details),
            );
            return;
        }
    };
    let on_disk = disk_use(&root);
    let unlisted = unreadable_files(&root, &listed);
    let started = Instant::now();
    let mut checked = 0usize;
    let mut damaged = Vec::new();
    let mut problems = Vec::new();
    for info in &listed {
        if started.elapsed() >= BUDGET {
            break;
        }
        checked += 1;
        let reference = info.name.clone().unwrap_or_else(|| info.id.to_hex());
        let path = store.path_of(info.id);
        match store.load(&info.id.to_hex()) {
            Ok(session) => {
                let report = session.report();
                let scan = report.scan;
                if scan.corrupt_skipped > 0 || scan.torn_tail_at.is_some() {
                    damaged.push(json!({
                        "id": info.id.to_hex(),
                        "name": info.name,
                        "path": path.display().to_string(),
                        "corrupt_frames": scan.corrupt_skipped,
                        "torn_tail_bytes": scan.torn_tail_bytes,
                    }));
                    problems.push(repairable(&reference, &path, &scan));
                }
                let open = session.open_intents().len();
                if open > 0 {
                    problems.push(open_effects(&reference, &path, open));
                }
            }
            Err(e) => problems.push(unloadable(&reference, &path, e)),
        }
    }
    for path in &unlisted {
        problems.push(
            Finding::problem(
                AREA,
                "sessions.file",
                Diagnostic::error(
                    "store.bad-header",
                    format!("{} is not a session smith can read", path.display()),
                    "its header is missing or damaged, so no command lists or loads it, and no repair can tell what it holds",
                    format!(
                        "move it out of {} (keep it if it matters: `smith session import` takes a dump, not this file)",
                        root.display()
                    ),
                )
                .with_surface(Surface::file(path)),
            )
            .details(json!({"path": path.display().to_string()})),
        );
    }
    let unchecked = listed.len() - checked;
    let summary = format!(
        "session store {} ({source}): {} session(s), {} on disk; {checked} checked{}",
        root.display(),
        listed.len(),
        size_text(on_disk),
        if damaged.is_empty() && problems.is_empty() {
            ", all intact"
        } else {
            ""
        }
    );
    out.push(Finding::ok(AREA, check, summary).details(json!({
        "path": root.display().to_string(),
        "source": source,
        "sessions": listed.len(),
        "bytes": on_disk,
        "checked": checked,
        "unchecked": unchecked,
        "repairable": damaged,
        "unreadable": unlisted.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
    })));
    out.extend(problems);
    if unchecked > 0 {
        out.push(Finding::info(
            AREA,
            "sessions.store",
            format!(
                "{unchecked} older session(s) not checked: loading stops after {} ms",
                BUDGET.as_millis()
            ),
            "doctor stays fast on a large store; the newest sessions were checked first",
            "`smith session info REF` checks one session fully",
        ));
    }
    if let Some(f) = leftovers(&root) {
        out.push(f);
    }
}

/// Bytes of every file in the store folder and its `names` folder.
fn disk_use(root: &Path) -> u64 {
    [root.to_path_buf(), root.join("names")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten())
        .filter_map(|e| e.metadata().ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .sum()
}

/// Session files (`<id>.smith`) the store does not list: their header
/// cannot be read.
fn unreadable_files(root: &Path, listed: &[SessionInfo]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let stem = name
                .to_str()?
                .strip_suffix(&format!(".{}", smith_store::EXTENSION))?;
            let id = smith_store::SessionId::from_hex(stem)?;
            (!listed.iter().any(|s| s.id == id)).then(|| e.path())
        })
        .collect();
    out.sort();
    out
}

fn repairable(reference: &str, path: &Path, scan: &smith_store::ScanReport) -> Finding {
    Finding::problem(
        AREA,
        "sessions.file",
        Diagnostic::warning(
            "session.repairable",
            format!(
                "session {reference} needs repair: {} corrupt frame(s), {} byte(s) of torn tail",
                scan.corrupt_skipped, scan.torn_tail_bytes
            ),
            "loading skips them, so the file holds bytes no run reads; a crash while writing or damage to the disk leaves them",
            format!(
                "run `smith session repair {reference}`: it keeps every complete frame and replaces the file atomically"
            ),
        )
        .with_value(reference)
        .with_surface(Surface::file(path)),
    )
    .details(json!({
        "session": reference,
        "path": path.display().to_string(),
        "corrupt_frames": scan.corrupt_skipped,
        "torn_tail_bytes": scan.torn_tail_bytes,
        "repairable": true,
    }))
}

fn open_effects(reference: &str, path: &Path, open: usize) -> Finding {
    Finding::problem(
        AREA,
        "sessions.file",
        Diagnostic::warning(
            "session.open-effects",
            format!(
                "session {reference} has {open} effect(s) with a recorded intent and no completion"
            ),
            "their outcome is unknown: the process that ran them ended (or is still running them) before it recorded one, and smith never retries such an effect",
            format!(
                "unless smith is running this session now, check what they would have changed (`smith checkpoint list --session {reference}`); resuming the session names each one"
            ),
        )
        .with_value(reference)
        .with_surface(Surface::file(path)),
    )
    .details(json!({
        "session": reference,
        "path": path.display().to_string(),
        "open_effects": open,
    }))
}

fn unloadable(reference: &str, path: &Path, e: smith_store::StoreError) -> Finding {
    let resync = matches!(
        e.kind(),
        ErrorKind::FramingAmbiguity | ErrorKind::TooManyCorruptFrames
    );
    let d = crate::report::diagnose(&anyhow::Error::from(e));
    let next = if resync {
        format!(
            "run `smith session repair {reference} --resync`: it skips the lost bytes to the next complete frame and keeps every complete frame"
        )
    } else {
        d.next().to_owned()
    };
    Finding::problem(
        AREA,
        "sessions.file",
        Diagnostic::error(
            d.code().to_owned(),
            format!("session {reference} cannot be loaded: {}", d.what()),
            d.why().to_owned(),
            next,
        )
        .with_value(reference)
        .with_surface(Surface::file(path)),
    )
    .details(json!({
        "session": reference,
        "path": path.display().to_string(),
        "repairable": resync,
    }))
}

/// Temporary files of interrupted publications past their grace, and
/// names of sessions that are gone: what `smith session prune` removes
/// without being asked for more.
fn leftovers(root: &Path) -> Option<Finding> {
    let now = smith_store::now_ms();
    let temp = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(smith_store::publish::TEMP_PREFIX))
                && e.metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .is_some_and(|t| {
                        let ms = t
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                        now.saturating_sub(ms) >= smith_store::TEMP_GRACE_MS
                    })
        })
        .count();
    let dangling = std::fs::read_dir(root.join("names"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path())
                .ok()
                .and_then(|t| smith_store::SessionId::from_hex(t.trim()))
                .is_none_or(|id| {
                    !root
                        .join(format!("{id}.{}", smith_store::EXTENSION))
                        .exists()
                })
        })
        .count();
    if temp == 0 && dangling == 0 {
        return None;
    }
    Some(
        Finding::info(
            AREA,
            "sessions.leftovers",
            format!(
                "{temp} leftover temporary file(s) and {dangling} name(s) of sessions that are gone in {}",
                root.display()
            ),
            "an interrupted write or a removed session file leaves them; they hold nothing a run reads",
            "`smith session prune` removes them (and nothing else unless asked)",
        )
        .details(json!({"temporary_files": temp, "dangling_names": dangling})),
    )
}
