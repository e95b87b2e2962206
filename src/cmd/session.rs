//! `smith session ...`: list, inspect, dump, export, import, fork, rename,
//! delete, prune, search and repair sessions in the session store.
//!
//! The store lives in the `session.dir` option's directory, else in
//! `<data dir>/sessions` (`$SMITH_HOME/data/sessions`, else
//! `$XDG_DATA_HOME/smith/sessions`, else `~/.local/share/smith/sessions`). A
//! `REF` is a session name, an id, or a unique prefix of an id (at least four
//! hex digits) — never a path.

use std::io::Write as _;

use anyhow::Context as _;
use smith_store::{PruneOptions, Store, dump};

/// Manage stored sessions.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// List the sessions of the current project, newest first: name,
    /// when, messages, cost, project and first prompt (read from each
    /// session's header and summary, never its entries).
    List {
        /// List the sessions of every project.
        #[arg(long)]
        all: bool,
        /// Print one JSON object per session instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show a session's entries, branches, frames, bytes, compression ratio,
    /// and what loading recovered or skipped.
    Info {
        /// Session name or id.
        #[arg(value_name = "REF")]
        session: String,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a session as JSONL (lossless; unknown frames as base64).
    Dump {
        /// Session name or id.
        #[arg(value_name = "REF")]
        session: String,
        /// Write to this file instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
    },
    /// Write a session's selected branch as a readable document: messages,
    /// thinking, tool calls and results, compactions and each run's usage
    /// and cost, in order.
    Export {
        /// Session name or id.
        #[arg(value_name = "REF")]
        session: String,
        /// Markdown (the default).
        #[arg(long, conflicts_with = "json")]
        markdown: bool,
        /// One JSON object (`session`, `title`, `cwd`, `items`) instead of Markdown.
        #[arg(long)]
        json: bool,
        /// Write to this file instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
    },
    /// Create a session from a JSONL dump; the file's bytes equal the dumped one's.
    ///
    /// Entries are compressed as `session.compression` says, so the bytes are
    /// equal when the dumped file was written with the same setting.
    Import {
        /// The dump file (`-` for standard input).
        #[arg(value_name = "FILE")]
        file: std::path::PathBuf,
        /// Name the imported session.
        #[arg(long)]
        name: Option<String>,
    },
    /// Fork a session's selected branch into a new session that records its origin.
    Fork {
        /// Session name or id.
        #[arg(value_name = "REF")]
        session: String,
        /// Name the new session.
        #[arg(long)]
        name: Option<String>,
    },
    /// Name or rename a session (names are unique).
    Rename {
        /// Session name or id.
        #[arg(value_name = "REF")]
        session: String,
        /// The new name: 1-64 of A-Z a-z 0-9 . _ -
        new_name: String,
    },
    /// Delete a session.
    Delete {
        /// Session name or id.
        #[arg(value_name = "REF")]
        session: String,
    },
    /// Remove empty or old sessions and leftovers of interrupted writes.
    Prune {
        /// Remove sessions with no entries.
        #[arg(long)]
        empty: bool,
        /// Remove sessions not modified for this many days.
        #[arg(long, value_name = "DAYS")]
        older_than: Option<u64>,
    },
    /// Search the text of every stored session (messages, tool calls and
    /// results, compaction summaries), newest session first; smart case: a
    /// query without capitals ignores ASCII case.
    ///
    /// Searches keep a search index, one file per session, in `search/` in
    /// smith's cache directory (`$SMITH_HOME/cache/search`, else
    /// `$XDG_CACHE_HOME/smith/search` or `~/.cache/smith/search`;
    /// `~/Library/Caches/smith/search` on macOS): the trigrams of each group
    /// of entries, so that groups which cannot hold the text are not read.
    /// A search indexes what was written since the last one; the files may
    /// be deleted at any time. Where the directory cannot be written, the
    /// search reads every entry and says so in one line.
    Search {
        /// The text to look for.
        #[arg(value_name = "TEXT")]
        text: String,
        /// Search only this session (name or id).
        #[arg(long, value_name = "REF")]
        session: Option<String>,
        /// Show at most this many hits (all are counted).
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: u64,
        /// Print one JSON object per hit instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite a session with `small` compression, atomically, to make its file smaller.
    ///
    /// Every entry is written again with `session.compression "small"` (zstd
    /// level 5 on content of 256 bytes or more), whatever it was written
    /// with; the result replaces the file atomically. Refused while another
    /// smith has the session open. Later appends use the configured setting.
    Pack {
        /// Session name or id.
        #[arg(value_name = "REF")]
        session: String,
    },
    /// Rewrite a damaged session keeping every complete frame, atomically.
    Repair {
        /// Session name or id.
        #[arg(value_name = "REF")]
        session: String,
        /// Skip over lost framing to the next complete frame instead of failing.
        #[arg(long)]
        resync: bool,
    },
}

fn open_store() -> anyhow::Result<Store> {
    let root = crate::settings::session_root()?;
    Store::open(&root).with_context(|| format!("opening the session store at {}", root.display()))
}

/// Runs a session subcommand; returns the exit code.
///
/// # Errors
/// Store errors (each states what, why and what to do), and output failures.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let store = open_store()?;
    let mut out = std::io::stdout().lock();
    match args.command {
        Sub::List { all, json } => list(&store, &mut out, all, json)?,
        Sub::Search {
            text,
            session,
            limit,
            json,
        } => return search(&store, &mut out, &text, session.as_deref(), limit, json),
        Sub::Info { session, json } => {
            let id = store.resolve(&session)?;
            let s = store.load(&id.to_hex())?;
            let r = s.report();
            let ratio = if r.stored_bytes == 0 {
                1.0
            } else {
                r.content_bytes as f64 / r.stored_bytes as f64
            };
            let v = serde_json::json!({
                "id": id.to_hex(),
                "name": store.name_of(id),
                "created_ms": s.created_ms(),
                "origin": s.origin().map(|o| serde_json::json!({"session": o.session.to_hex(), "leaf": o.leaf})),
                "entries": r.entries,
                "branches": s.leaves().len(),
                "selected_leaf": s.leaf().map(|l| l.id),
                "selected_branch_len": s.branch().len(),
                "frames": r.scan.frames,
                "bytes": r.file_len,
                "content_bytes": r.content_bytes,
                "stored_bytes": r.stored_bytes,
                "compressed_entries": r.compressed_entries,
                "compression_ratio": (ratio * 1000.0).round() / 1000.0,
                "recovered_frames": r.scan.frames,
                "skipped_corrupt_frames": r.scan.corrupt_skipped,
                "torn_tail_bytes": r.scan.torn_tail_bytes,
                "unknown_frames": r.unknown_frames,
                "malformed_entries": r.malformed_entries,
                "orphans": r.orphans,
                "open_effect_intents": s.open_intents().len(),
            });
            if json {
                writeln!(out, "{v}")?;
            } else if let serde_json::Value::Object(m) = v {
                for (k, val) in m {
                    writeln!(out, "{k:<22} {val}")?;
                }
            }
        }
        Sub::Dump { session, out: path } => {
            let f = store.open_file(&session)?;
            let what = f.path().display().to_string();
            let report = match &path {
                Some(p) => {
                    let file = std::fs::File::create(p).with_context(|| {
                        format!(
                            "creating the dump file {}; check the directory exists and is writable",
                            p.display()
                        )
                    })?;
                    let mut w = std::io::BufWriter::new(file);
                    let r = dump::dump(f.bytes(), store.limits(), &what, &mut w)?;
                    w.flush()
                        .with_context(|| format!("writing the dump file {}", p.display()))?;
                    r
                }
                None => {
                    let mut w = std::io::BufWriter::new(&mut out);
                    let r = dump::dump(f.bytes(), store.limits(), &what, &mut w)?;
                    w.flush()?;
                    r
                }
            };
            if report.corrupt_skipped > 0 || report.torn_tail_at.is_some() {
                eprintln!(
                    "smith: the dump of {session} omits {} corrupt frame(s) and {} byte(s) of torn tail, because they hold no complete, verified frame; run `smith session repair {session}` to drop them from the file too",
                    report.corrupt_skipped, report.torn_tail_bytes
                );
            }
        }
        Sub::Export {
            session,
            markdown: _,
            json,
            out: path,
        } => {
            let id = store.resolve(&session)?;
            let s = store.load(&id.to_hex())?;
            let title = store.name_of(id).unwrap_or_else(|| format!("Session {id}"));
            let created = smith_diag::log::utc_minute(s.created_ms());
            let write = |w: &mut dyn std::io::Write| -> anyhow::Result<()> {
                let mut w = std::io::BufWriter::new(w);
                if json {
                    crate::cmd::export::json(&s, &title, &mut w)?;
                } else {
                    crate::cmd::export::markdown(&s, &title, &created, &mut w)?;
                }
                w.flush()?;
                Ok(())
            };
            match &path {
                Some(p) => {
                    let mut file = std::fs::File::create(p).with_context(|| {
                        format!(
                            "creating the export file {}; check the directory exists and is writable",
                            p.display()
                        )
                    })?;
                    write(&mut file)
                        .with_context(|| format!("writing the export file {}", p.display()))?;
                }
                None => write(&mut out)?,
            }
        }
        Sub::Import { file, name } => {
            // Standard input, or the file named: a FIFO or device the user
            // names is streamed with an idle deadline; every line is bounded.
            let path = (file.as_os_str() != "-").then_some(file.as_path());
            let input = smith_diag::input::stream(path, &IMPORT_BOUND)?;
            let bytes = dump::import(std::io::BufReader::with_capacity(256 * 1024, input))?;
            // What is published must resume: every entry a resume reads is
            // decoded first.
            let candidate = smith_store::Session::load_bytes(&bytes, store.limits(), "the import")?;
            smith_engine::journal::store::check_entries(&candidate).map_err(|err| {
                smith_diag::Diagnostic::error(
                    "session.invalid-import",
                    format!("the dump {} cannot be imported", file.display()),
                    format!("{err}, so the session could not be resumed"),
                    "fix that line of the dump (compare with what `smith session dump` writes), then import it again; nothing was published",
                )
                .with_value(file.display())
            })?;
            let s = store.publish_bytes(&bytes, name.as_deref())?;
            writeln!(
                out,
                "imported session {} ({} entries)",
                s.id(),
                s.records().len()
            )?;
        }
        Sub::Fork { session, name } => {
            let s = store.load(&session)?;
            let f = store.fork(&s, name.as_deref())?;
            writeln!(
                out,
                "forked {} into {} ({} entries on the selected branch)",
                s.id(),
                f.id(),
                f.records().len()
            )?;
        }
        Sub::Rename { session, new_name } => {
            let id = store.rename(&session, &new_name)?;
            writeln!(out, "session {id} is now named {new_name}")?;
        }
        Sub::Delete { session } => {
            let roots = store
                .load(&session)
                .map(|s| smith_host::checkpoints::roots_of(&s))
                .unwrap_or_default();
            let id = store.delete(&session)?;
            writeln!(out, "deleted session {id}")?;
            collect_checkpoints(&store, &roots, &mut out)?;
        }
        Sub::Prune { empty, older_than } => {
            if !empty && older_than.is_none() {
                eprintln!(
                    "smith: prune without --empty or --older-than only removes leftovers of interrupted writes; add --empty or --older-than DAYS to remove sessions"
                );
            }
            // The projects each session checkpointed, read before any goes.
            let mut roots_by_session = std::collections::BTreeMap::new();
            for info in store.list()? {
                if let Ok(s) = store.load(&info.id.to_hex()) {
                    roots_by_session.insert(info.id, smith_host::checkpoints::roots_of(&s));
                }
            }
            let rep = store.prune(PruneOptions {
                empty,
                older_than_ms: older_than.map(|d| d * 86_400_000),
                ..PruneOptions::default()
            })?;
            for id in &rep.sessions {
                writeln!(out, "removed session {id}")?;
            }
            writeln!(
                out,
                "removed {} session(s), {} temporary file(s), {} dangling name(s)",
                rep.sessions.len(),
                rep.temp_files,
                rep.dangling_names
            )?;
            let roots = rep
                .sessions
                .iter()
                .filter_map(|id| roots_by_session.remove(id))
                .flatten()
                .collect();
            collect_checkpoints(&store, &roots, &mut out)?;
        }
        Sub::Pack { session } => {
            let p = store.pack(&session, smith_store::compress::Compression::Small)?;
            writeln!(
                out,
                "packed {session}: {} bytes before, {} after ({:.3} of before); {} of {} entries stored compressed{}",
                p.before,
                p.after,
                p.after as f64 / p.before.max(1) as f64,
                p.compressed,
                p.entries,
                if p.torn_tail_bytes > 0 {
                    format!(
                        "; dropped an incomplete last frame of {} bytes left by a writer that stopped mid-append",
                        p.torn_tail_bytes
                    )
                } else {
                    String::new()
                }
            )?;
        }
        Sub::Repair { session, resync } => {
            let r = store.repair(&session, resync)?;
            writeln!(
                out,
                "repaired {session}: kept {} frame(s), dropped {} corrupt frame(s), {} torn-tail byte(s), {} unattributable byte(s)",
                r.frames, r.corrupt_skipped, r.torn_tail_bytes, r.resynced_bytes
            )?;
        }
    }
    Ok(0)
}

/// The widest first prompt a listing row shows, in characters.
const PROMPT_WIDTH: usize = 60;

/// `smith session list`: the sessions of the current project (those whose
/// project is unknown too, since they cannot be placed), or all of them.
fn list(store: &Store, out: &mut impl std::io::Write, all: bool, json: bool) -> anyhow::Result<()> {
    use smith_store::summary::{human_date, in_project, listing_now_ms, one_line, project_label};
    let here = std::env::current_dir().ok();
    let mut list = store.list()?;
    let total = list.len();
    if !all && let Some(here) = &here {
        list.retain(|s| in_project(s, here));
    }
    let hidden = total - list.len();
    let now = listing_now_ms();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    if json {
        for s in &list {
            let m = s.summary.as_ref();
            let v = serde_json::json!({
                "id": s.id.to_hex(),
                "name": s.name,
                "created_ms": s.created_ms,
                "modified_ms": s.modified_ms,
                "modified": human_date(s.modified_ms, now),
                "bytes": s.bytes,
                "project": m.and_then(|m| m.cwd.clone()),
                "first_prompt": m.and_then(|m| m.first_prompt.clone()),
                "messages": m.map(|m| m.messages),
                "cost": m.and_then(|m| m.cost),
            });
            writeln!(out, "{v}")?;
        }
        return Ok(());
    }
    if list.is_empty() {
        if hidden > 0 {
            writeln!(
                out,
                "no sessions of this project in {}; {hidden} of other projects (`smith session list --all` shows them)",
                store.root().display()
            )?;
        } else {
            writeln!(out, "no sessions in {}", store.root().display())?;
        }
        return Ok(());
    }
    let rows: Vec<[String; 8]> = list
        .iter()
        .map(|s| {
            let m = s.summary.as_ref();
            [
                s.id.to_hex(),
                s.name.clone().unwrap_or_else(|| "-".to_owned()),
                human_date(s.modified_ms, now),
                m.map_or_else(|| "?".to_owned(), |m| m.messages.to_string()),
                m.and_then(|m| m.cost)
                    .map_or_else(|| "unknown".to_owned(), dollars),
                human_size(s.bytes),
                m.and_then(|m| m.cwd.as_deref()).map_or_else(
                    || "unknown".to_owned(),
                    |c| project_label(c, home.as_deref()),
                ),
                m.and_then(|m| m.first_prompt.as_deref())
                    .map_or_else(|| "-".to_owned(), |p| one_line(p, PROMPT_WIDTH)),
            ]
        })
        .collect();
    let head = [
        "ID",
        "NAME",
        "WHEN",
        "MSGS",
        "COST",
        "SIZE",
        "PROJECT",
        "FIRST PROMPT",
    ];
    let width = |k: usize| {
        rows.iter()
            .map(|r| r[k].chars().count())
            .chain([head[k].len()])
            .max()
            .unwrap_or(0)
    };
    let w: Vec<usize> = (0..7).map(width).collect();
    let line = |r: [&str; 8]| {
        format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:>w3$}  {:>w4$}  {:>w5$}  {:<w6$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            r[7],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4],
            w5 = w[5],
            w6 = w[6]
        )
        .trim_end()
        .to_owned()
    };
    writeln!(out, "{}", line(head))?;
    for r in &rows {
        writeln!(
            out,
            "{}",
            line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6], &r[7]])
        )?;
    }
    if hidden > 0 {
        writeln!(
            out,
            "{hidden} session(s) of other projects not shown; `smith session list --all` shows them"
        )?;
    }
    Ok(())
}

/// A cost for people: `$1.25`, and below a cent `$0.0042`.
fn dollars(cost: f64) -> String {
    if cost > 0.0 && cost < 0.01 {
        format!("${cost:.4}")
    } else {
        format!("${cost:.2}")
    }
}

/// Collects the checkpoint stores of `roots` (the projects the removed
/// sessions checkpointed) and prints what was freed.
fn collect_checkpoints(
    store: &Store,
    roots: &std::collections::BTreeSet<String>,
    out: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    let Some(data) = smith_host::runtime::checkpoints_root() else {
        return Ok(());
    };
    // The sessions are gone either way: a store that cannot be collected
    // is a warning, and its unused snapshots wait for the next collection.
    match smith_host::checkpoints::collect(store, &data, roots) {
        Ok(collected) => {
            for line in smith_host::checkpoints::lines(&collected) {
                writeln!(out, "{line}")?;
            }
        }
        Err(warning) => eprintln!("{}", warning.render_plain()),
    }
    Ok(())
}

/// A dump is streamed (never held whole as text); the file may be as
/// large as a session, and every line is bounded by the import itself.
const IMPORT_BOUND: smith_diag::input::Bound<'static> = smith_diag::input::Bound {
    what: "session dump",
    max_bytes: 64 * 1024 * 1024 * 1024,
    named: true,
};

/// `smith session search`: exit 0 with hits, 1 without (as grep does).
fn search(
    store: &Store,
    out: &mut impl std::io::Write,
    text: &str,
    only: Option<&str>,
    limit: u64,
    json: bool,
) -> anyhow::Result<u8> {
    use smith_store::search::{Query, SearchOptions, search_sessions_with};
    let query = Query::new(text)?;
    let mut options = SearchOptions::default();
    let mut note = None;
    match smith_host::settings::search_index_dir() {
        Ok(dir) => options.index_dir = Some(dir),
        Err(err) => {
            note = Some(format!(
                "note: searching without the search index: smith's cache directory is unknown ({err:#}); the search reads every entry"
            ));
        }
    }
    let mut sessions = store.list()?;
    if let Some(r) = only {
        let id = store.resolve(r)?;
        sessions.retain(|s| s.id == id);
    }
    let started = std::time::Instant::now();
    let mut shown = 0u64;
    let mut failed: Option<std::io::Error> = None;
    let searched = search_sessions_with(store, &sessions, &query, &options, |info, hit| {
        // Every hit is counted; the first `limit` are shown.
        if shown >= limit {
            return true;
        }
        let name = info
            .name
            .clone()
            .unwrap_or_else(|| info.id.to_hex()[..8].to_owned());
        let written = if json {
            let v = serde_json::json!({
                "session": info.id.to_hex(),
                "name": info.name,
                "entry": hit.entry,
                "kind": hit.kind.name().unwrap_or("other"),
                "timestamp_ms": hit.timestamp_ms,
                "snippet": hit.snippet,
                "match": [hit.matched.0, hit.matched.1],
            });
            writeln!(out, "{v}")
        } else {
            writeln!(
                out,
                "{name}  #{}  {}  {}  {}",
                hit.entry,
                kind_word(hit.kind),
                smith_diag::log::utc_minute(hit.timestamp_ms),
                hit.snippet
            )
        };
        if let Err(err) = written {
            failed = Some(err);
            return false;
        }
        shown += 1;
        true
    })?;
    if let Some(err) = failed {
        return Err(err.into());
    }
    let elapsed = started.elapsed();
    if only.is_none()
        && let Some(dir) = &options.index_dir
    {
        // The indexes of sessions deleted since.
        let listed: Vec<_> = sessions.iter().map(|s| s.id).collect();
        smith_store::search_index::prune(dir, &listed);
    }
    if let Some(note) = note.as_ref().or(searched.note.as_ref()) {
        eprintln!("{note}");
    }
    let more = if searched.within.hits > shown {
        format!(" (the first {shown} shown: --limit raises it)")
    } else {
        String::new()
    };
    eprintln!(
        "{} {} in {} of {} sessions{more}; searched {} entries, {:.1} MB in {:.0} ms{}",
        searched.within.hits,
        if searched.within.hits == 1 {
            "hit"
        } else {
            "hits"
        },
        searched.sessions,
        sessions.len(),
        searched.within.entries,
        searched.within.bytes as f64 / 1e6,
        elapsed.as_secs_f64() * 1000.0,
        match (searched.ruled_out, searched.indexed) {
            (0, 0) => String::new(),
            (out, 0) => format!(" ({out} ruled out by the search index)"),
            (0, new) => format!(" ({new} newly indexed)"),
            (out, new) => format!(" ({out} ruled out by the search index, {new} newly indexed)"),
        }
    );
    Ok(u8::from(searched.within.hits == 0))
}

/// A short word for an entry kind in listings.
fn kind_word(kind: smith_store::EntryKind) -> &'static str {
    use smith_store::EntryKind as K;
    match kind {
        K::UserMessage => "user",
        K::AssistantMessage => "assistant",
        K::ToolCall => "tool call",
        K::ToolResult => "tool result",
        K::Compaction => "summary",
        _ => "entry",
    }
}

/// `bytes` for people: `812 B`, `4.2 KB`, `18.0 MB`, `1.1 GB` (powers of
/// 1000, one decimal).
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 999.95 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_as_people_write_them() {
        use super::human_size;
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(812), "812 B");
        assert_eq!(human_size(4_200), "4.2 KB");
        assert_eq!(human_size(999_960), "1.0 MB");
        assert_eq!(human_size(18_000_000), "18.0 MB");
        assert_eq!(human_size(1_073_741_824), "1.1 GB");
    }
}
