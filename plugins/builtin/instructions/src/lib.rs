//! smith/instructions: the project's instruction files (SMITH.md,
//! AGENTS.md, CLAUDE.md) as prompt fragments, through the plugin contract.
//!
//! Where they come from, in the order they reach the model: smith's
//! configuration folder (global), then every folder from the repository
//! root (the nearest folder holding `.git`, or the filesystem root when
//! there is none) down to the working folder. In each folder the first of
//! SMITH.md, AGENTS.md, CLAUDE.md that exists is read (one file per folder,
//! as codex reads one per folder), so the nearest file comes last and wins
//! where they disagree. Project files are read only in a trusted project;
//! an untrusted project's files are named in one notice. The option
//! `instructions.max-bytes` (default 32 KiB, docs/config.md) bounds the total: the nearest
//! files are kept first, the farthest are cut or left out, and a notice
//! says which, how big they are, and the option to raise.
//!
//! The files are stat'ed (size and modification time) before each turn
//! (`provide.context`); only a change reads them again and rebuilds the
//! fragments, otherwise the host reuses the assembled prompt.

use std::cell::RefCell;

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::extension::exports::smith::plugin::provide as pro;
use smith_plugin_sdk::host;

struct Instructions;

/// The names read in each folder, in the order tried.
const NAMES: [&str; 3] = ["SMITH.md", "AGENTS.md", "CLAUDE.md"];

/// smith's option that bounds the total size (docs/config.md).
const INSTRUCTIONS_MAX_BYTES: &str = "instructions.max-bytes";

/// The option's default, when the host answers none: 32 KiB.
const DEFAULT_BUDGET: u64 = 32 * 1024;

/// Where the fragments sit in the prompt: after smith/product's base (0).
const FIRST_ORDER: i32 = 100;

/// One file found, and what the host said about it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Found {
    path: String,
    global: bool,
    size: u64,
    modified_ns: u64,
}

/// What the plugin remembers between calls (one instance per runtime).
#[derive(Default)]
struct State {
    /// The files and trust of the last scan; `None` before the first.
    last: Option<(Vec<Found>, bool, u64)>,
    /// Notices not yet handed to the host.
    pending: Vec<String>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn budget() -> u64 {
    host::config_get(INSTRUCTIONS_MAX_BYTES)
        .and_then(|json| json.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_BUDGET)
}

fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

fn parent(dir: &str) -> Option<String> {
    let trimmed = dir.trim_end_matches('/');
    let cut = trimmed.rfind('/')?;
    Some(if cut == 0 {
        "/".to_owned()
    } else {
        trimmed[..cut].to_owned()
    })
}

fn exists(path: &str) -> bool {
    matches!(host::stat_file(path), Ok(Some(_)))
}

/// The first of [`NAMES`] in `dir` that is a file.
fn first_in(dir: &str, global: bool) -> Option<Found> {
    NAMES.iter().find_map(|name| {
        let path = join(dir, name);
        match host::stat_file(&path) {
            Ok(Some(stat)) if !stat.is_dir => Some(Found {
                path,
                global,
                size: stat.size,
                modified_ns: stat.modified_ns,
            }),
            _ => None,
        }
    })
}

/// The folders from the repository root (or the filesystem root) down to
/// the working folder.
fn project_dirs() -> Vec<String> {
    let Ok(cwd) = host::resolve_path(".") else {
        return Vec::new();
    };
    let mut dirs = vec![cwd.absolute];
    loop {
        let current = dirs.last().cloned().unwrap_or_default();
        if exists(&join(&current, ".git")) {
            break;
        }
        match parent(&current) {
            Some(up) if up != current => dirs.push(up),
            _ => break,
        }
    }
    dirs.reverse();
    dirs
}

/// Every file that applies, global first, then root to working folder;
/// and the command that trusts the project.
fn scan() -> (Vec<Found>, String) {
    let mut found = Vec::new();
    if let Ok(Some(dir)) = host::config_dir() {
        found.extend(first_in(&dir, true));
    }
    let dirs = project_dirs();
    // The project is the nearest folder holding `.smith`; without one,
    // trusting needs a `.smith` at the repository root first.
    let trust = match dirs.iter().rev().find(|d| exists(&join(d, ".smith"))) {
        Some(project) => format!("run `smith trust {project}`"),
        None => {
            let root = dirs.first().cloned().unwrap_or_default();
            format!(
                "create the project's folder `{}` and run `smith trust {root}`",
                join(&root, ".smith")
            )
        }
    };
    for dir in dirs {
        if let Some(file) = first_in(&dir, false) {
            // The configuration folder can lie inside the project (a
            // SMITH_HOME there): read it once, as the global file.
            if !found.iter().any(|f: &Found| f.path == file.path) {
                found.push(file);
            }
        }
    }
    (found, trust)
}

fn size_text(bytes: u64) -> String {
    if bytes >= 1024 {
        format!("{bytes} bytes ({:.1} KiB)", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} bytes")
    }
}

/// The longest prefix of `text` at most `max` bytes, at a char boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Scans again when something changed; returns the fragments then.
fn refresh() -> Option<Vec<pro::Fragment>> {
    let (found, trust) = scan();
    let trusted = host::project_trusted().unwrap_or(false);
    let budget = budget();
    let unchanged = STATE.with(|state| {
        state
            .borrow()
            .last
            .as_ref()
            .is_some_and(|(files, was_trusted, was_budget)| {
                *files == found && *was_trusted == trusted && *was_budget == budget
            })
    });
    if unchanged {
        return None;
    }
    let mut notices = Vec::new();
    let (usable, skipped): (Vec<&Found>, Vec<&Found>) =
        found.iter().partition(|f| f.global || trusted);
    if !skipped.is_empty() {
        let names: Vec<&str> = skipped.iter().map(|f| f.path.as_str()).collect();
        notices.push(format!(
            "the instruction files {} were not sent to the model: this project is not trusted, and a project's instruction files are read only once you trust it; {trust} to have them followed",
            names.join(", ")
        ));
    }
    // Read the files, then keep the nearest first within the budget.
    let texts: Vec<(&Found, String)> = usable
        .iter()
        .filter_map(|f| match host::peek_file(&f.path) {
            Ok(Some(text)) => Some((*f, text)),
            Ok(None) => None,
            Err(err) => {
                notices.push(format!(
                    "the instruction file {} could not be read ({err:?}), so it was not sent; check that it is a readable file",
                    f.path
                ));
                None
            }
        })
        .collect();
    let mut left = usize::try_from(budget).unwrap_or(usize::MAX);
    let mut kept: Vec<(usize, String, bool)> = Vec::new();
    let mut cut = Vec::new();
    for (index, (file, text)) in texts.iter().enumerate().rev() {
        if text.len() <= left {
            left -= text.len();
            kept.push((index, text.clone(), false));
        } else if left > 0 {
            let part = prefix(text, left);
            left = 0;
            cut.push(format!(
                "{} ({}, cut to {})",
                file.path,
                size_text(text.len() as u64),
                size_text(part.len() as u64)
            ));
            kept.push((index, part.to_owned(), true));
        } else {
            cut.push(format!(
                "{} ({}, left out)",
                file.path,
                size_text(text.len() as u64)
            ));
        }
    }
    if !cut.is_empty() {
        notices.push(format!(
            "the instruction files exceed the budget of {}; the farthest were cut: {}. raise the option `{INSTRUCTIONS_MAX_BYTES}` (`smith config set {INSTRUCTIONS_MAX_BYTES} BYTES`, or SMITH_INSTRUCTIONS_MAX_BYTES) to send more",
            size_text(budget),
            cut.join(", ")
        ));
    }
    kept.sort_by_key(|(index, _, _)| *index);
    let mut fragments = Vec::new();
    if !kept.is_empty() {
        fragments.push(pro::Fragment {
            id: "instructions".to_owned(),
            text: "The instruction files below apply to this work, the global ones first, then from the repository root down to the working folder; where they disagree, the later (nearer) file wins.".to_owned(),
            order: FIRST_ORDER,
        });
    }
    for (position, (index, text, was_cut)) in kept.into_iter().enumerate() {
        let path = &texts[index].0.path;
        let mut body = format!("# {path}\n\n{}", text.trim_end());
        if was_cut {
            body.push_str("\n\n[cut: over the instruction budget]");
        }
        fragments.push(pro::Fragment {
            id: path.clone(),
            text: body,
            order: FIRST_ORDER + 1 + i32::try_from(position).unwrap_or(i32::MAX - FIRST_ORDER - 1),
        });
    }
    STATE.with(|state| {
        let mut state = state.borrow_mut();
        state.last = Some((found, trusted, budget));
        state.pending.extend(notices);
    });
    Some(fragments)
}

impl ext::Guest for Instructions {
    fn contribute() -> ext::Contributions {
        ext::Contributions {
            commands: Vec::new(),
            keybindings: Vec::new(),
            themes: Vec::new(),
            layout: Vec::new(),
            prompt_fragments: Vec::new(),
            tools: Vec::new(),
            tool_presentations: Vec::new(),
            config: Vec::new(),
        }
    }

    fn run_command(name: String, _argument: String) -> Result<Vec<ext::Action>, String> {
        Err(format!("smith/instructions has no command /{name}"))
    }

    /// Hands over the notices the last scan left (an untrusted project's
    /// files, the budget's cuts); they are shown at the next safe point.
    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        if matches!(event, ext::LifecycleEvent::AgentStart) {
            // Scan before the first request too, so a notice about it
            // arrives with the first turn's end.
            refresh_kept();
        }
        let notices = STATE.with(|state| std::mem::take(&mut state.borrow_mut().pending));
        if notices.is_empty() {
            return ext::HandlerResult::None;
        }
        ext::HandlerResult::Actions(
            notices
                .into_iter()
                .map(|text| {
                    ext::Action::Ui(ext::UiIntent {
                        id: String::new(),
                        kind: ext::IntentKind::Notify(text),
                        policy: ext::IntentPolicy::Text,
                    })
                })
                .collect(),
        )
    }
}

/// Scans from a handler; keeps changed fragments for the next `context`.
fn refresh_kept() {
    if let Some(fragments) = refresh() {
        FRESH.with(|fresh| *fresh.borrow_mut() = Some(fragments));
    }
}

thread_local! {
    /// Fragments scanned outside `context` and not yet handed over.
    static FRESH: RefCell<Option<Vec<pro::Fragment>>> = const { RefCell::new(None) };
}

impl pro::Guest for Instructions {
    fn tools() -> Vec<pro::ToolSpec> {
        Vec::new()
    }

    fn call_tool(name: String, _arguments: String) -> pro::ToolOutput {
        pro::ToolOutput {
            text: format!("smith/instructions has no tool {name}"),
            structured: None,
            is_error: true,
        }
    }

    /// The fragments when a file appeared, changed, went away, or trust or
    /// the budget changed; none otherwise (checked by size and
    /// modification time, without reading).
    fn context(_messages: u32) -> Option<Vec<pro::Fragment>> {
        let fresh = refresh();
        fresh.or_else(|| FRESH.with(|fresh| fresh.borrow_mut().take()))
    }

    fn queue_policies() -> Vec<pro::QueuePolicy> {
        Vec::new()
    }
}

smith_plugin_sdk::extension::export_extension!(Instructions);
