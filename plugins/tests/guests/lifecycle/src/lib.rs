//! test/lifecycle: an extension guest that reports the lifecycle events it
//! receives as notices and decides at the session and context decision
//! points, for the binary's tests. Quiet unless asked:
//!
//! - `plugin-loaded`, `plugin-unloaded`, `session-start`,
//!   `session-shutdown`, `before-provider-request`, `model-change`,
//!   `config-changed`, `vcs-operation`, `resize` and `answer` each become a
//!   notice (`session-start <id>`, `resize 100x30`, `answer <id> <text>`...);
//! - an input containing `block input` is blocked at the `input` decision
//!   point (it is never sent);
//! - an input containing `block context` makes every later `context`
//!   decision a block, one containing `replace context` a replacement (which
//!   the host must refuse);
//! - an input containing `persist` makes the end of that run ask a
//!   `confirm` intent whose policy is `persist`;
//! - an input containing `ask me` makes the end of that run ask a `select`
//!   intent `pick-1` ("Which target?": staging or production, policy
//!   `refuse`);
//! - a `session-fork` whose reference contains `nofork`, and a
//!   `session-switch` whose target contains `noswitch`, are blocked;
//! - an input containing `flood` makes the next `before-provider-request`
//!   write 100,000 warning log lines (`flood N`) and return 100,000 notices
//!   (id `flood`, text `flood N`): a plugin flooding the host;
//! - an input containing `flood notices` makes it return the 100,000
//!   notices only; one containing `dry flood` makes it do the same work
//!   (every notice made, and laid out as returning them would lay them
//!   out) but return only the 500 that the default cap per run admits; one containing `capped flood` makes it
//!   write 1000 log lines and return 500 notices, what the default caps
//!   admit. A flood's cost to the host beyond its caps is the difference
//!   of a flood and its capped twin;
//! - an input containing `mixed flood` makes it return 1000 notices
//!   (`flood N`) with a `set-theme` action (`theme N`) after every 100th.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;

struct Lifecycle;

static BLOCK_CONTEXT: AtomicBool = AtomicBool::new(false);
static REPLACE_CONTEXT: AtomicBool = AtomicBool::new(false);
static PERSIST: AtomicBool = AtomicBool::new(false);
static ASK: AtomicBool = AtomicBool::new(false);
/// The flood the next `before-provider-request` sends ([`Flood`]).
static FLOOD: AtomicU8 = AtomicU8::new(Flood::None as u8);

/// What a flood sends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flood {
    None,
    /// Log lines and notices.
    Everything,
    /// Notices only.
    Notices,
    /// As many log lines and notices as the default caps per run admit.
    Capped,
    /// The notices made, those the default cap admits returned, the rest
    /// kept.
    Dry,
    /// 1000 notices with a theme change after every 100th.
    Mixed,
}

/// How many notices and log lines a flood sends.
const FLOOD_ITEMS: usize = 100_000;
/// The default caps per run: UI intents and log lines.
const CAP_NOTICES: usize = 500;
const CAP_LOG_LINES: usize = 1000;

fn flood(flood: Flood) -> ext::HandlerResult {
    let (lines, notices) = match flood {
        Flood::None => (0, 0),
        Flood::Everything => (FLOOD_ITEMS, FLOOD_ITEMS),
        Flood::Notices | Flood::Dry => (0, FLOOD_ITEMS),
        Flood::Capped => (CAP_LOG_LINES, CAP_NOTICES),
        Flood::Mixed => (0, 1000),
    };
    let mut actions = Vec::with_capacity(notices);
    for n in 0..lines.max(notices) {
        if n < lines {
            smith_plugin_sdk::host::warn(&format!("flood {n}"));
        }
        if n < notices {
            actions.push(ext::Action::Ui(ext::UiIntent {
                id: "flood".to_owned(),
                kind: ext::IntentKind::Notify(format!("flood {n}")),
                policy: ext::IntentPolicy::Drop,
            }));
            if flood == Flood::Mixed && n % 100 == 99 {
                actions.push(ext::Action::SetTheme(format!("theme {n}")));
            }
        }
    }
    if flood == Flood::Dry {
        lay_out(&actions);
        actions.truncate(CAP_NOTICES);
    }
    ext::HandlerResult::Actions(actions)
}

/// What returning `actions` costs the plugin itself, done without
/// returning them: the bindings' lowering writes the canonical ABI's list,
/// one 36-byte record per action (the action's case tag; the intent's id
/// as a pointer and a length; the kind's case tag and its text as a pointer
/// and a length, padded to the kind's largest case; the policy), into a
/// buffer allocated while the actions still live, and the post-return
/// frees it. The dry flood pays that too, so that a flood and its twin
/// differ only by what the host does with the notices over the cap.
fn lay_out(actions: &[ext::Action]) {
    const UI_CASE: u32 = 4;
    const NOTIFY_CASE: u32 = 0;
    let mut list: Vec<[u32; 9]> = Vec::with_capacity(actions.len());
    for action in actions {
        if let ext::Action::Ui(ext::UiIntent {
            id,
            kind: ext::IntentKind::Notify(text),
            policy,
        }) = action
        {
            // Addresses in a 32-bit linear memory: the casts keep them.
            #[allow(clippy::cast_possible_truncation)]
            list.push([
                UI_CASE,
                id.as_ptr() as u32,
                id.len() as u32,
                NOTIFY_CASE,
                text.as_ptr() as u32,
                text.len() as u32,
                0,
                0,
                *policy as u32,
            ]);
        }
    }
    std::hint::black_box(&list);
}

fn notice(text: String) -> ext::HandlerResult {
    ext::HandlerResult::Actions(vec![ext::Action::Ui(ext::UiIntent {
        id: String::new(),
        kind: ext::IntentKind::Notify(text),
        policy: ext::IntentPolicy::Drop,
    })])
}

fn block(reason: String) -> ext::HandlerResult {
    ext::HandlerResult::Decision(ext::Decision::Block(reason))
}

impl ext::Guest for Lifecycle {
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
        Err(format!("test/lifecycle has no command {name}"))
    }

    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        use ext::LifecycleEvent as E;
        match event {
            E::PluginLoaded(name) => notice(format!("plugin-loaded {name}")),
            E::SessionStart(id) => notice(format!("session-start {id}")),
            E::SessionShutdown => notice("session-shutdown".to_owned()),
            E::BeforeProviderRequest(_) if FLOOD.load(Ordering::SeqCst) != Flood::None as u8 => {
                let mode = match FLOOD.swap(Flood::None as u8, Ordering::SeqCst) {
                    1 => Flood::Everything,
                    2 => Flood::Notices,
                    3 => Flood::Capped,
                    4 => Flood::Dry,
                    _ => Flood::Mixed,
                };
                flood(mode)
            }
            E::BeforeProviderRequest(model) => notice(format!("before-provider-request {model}")),
            E::ModelChange(model) => notice(format!("model-change {model}")),
            E::PluginUnloaded(name) => notice(format!("plugin-unloaded {name}")),
            E::ConfigChanged(key) => notice(format!("config-changed {key}")),
            E::VcsOperation(operation) => notice(format!("vcs-operation {operation}")),
            E::Resize((columns, rows)) => notice(format!("resize {columns}x{rows}")),
            E::Answer((id, answer)) => notice(format!("answer {id} {answer:?}")),
            E::Input(text) if text.contains("block input") => {
                block("test/lifecycle keeps this input from the model".to_owned())
            }
            E::Input(text) => {
                if text.contains("block context") {
                    BLOCK_CONTEXT.store(true, Ordering::SeqCst);
                }
                if text.contains("replace context") {
                    REPLACE_CONTEXT.store(true, Ordering::SeqCst);
                }
                if text.contains("persist") {
                    PERSIST.store(true, Ordering::SeqCst);
                }
                if text.contains("ask me") {
                    ASK.store(true, Ordering::SeqCst);
                }
                let flood = if text.contains("mixed flood") {
                    Flood::Mixed
                } else if text.contains("dry flood") {
                    Flood::Dry
                } else if text.contains("capped flood") {
                    Flood::Capped
                } else if text.contains("flood notices") {
                    Flood::Notices
                } else if text.contains("flood") {
                    Flood::Everything
                } else {
                    Flood::None
                };
                if flood != Flood::None {
                    FLOOD.store(flood as u8, Ordering::SeqCst);
                }
                ext::HandlerResult::None
            }
            E::Context(messages) if BLOCK_CONTEXT.load(Ordering::SeqCst) => {
                block(format!("test/lifecycle holds back the {messages} messages"))
            }
            E::Context(_) if REPLACE_CONTEXT.load(Ordering::SeqCst) => {
                ext::HandlerResult::Decision(ext::Decision::Replace("[]".to_owned()))
            }
            E::AgentEnd if PERSIST.swap(false, Ordering::SeqCst) => {
                ext::HandlerResult::Actions(vec![ext::Action::Ui(ext::UiIntent {
                    id: "keep-notes".to_owned(),
                    kind: ext::IntentKind::Confirm("Keep the release notes?".to_owned()),
                    policy: ext::IntentPolicy::Persist,
                })])
            }
            E::AgentEnd if ASK.swap(false, Ordering::SeqCst) => {
                ext::HandlerResult::Actions(vec![ext::Action::Ui(ext::UiIntent {
                    id: "pick-1".to_owned(),
                    kind: ext::IntentKind::Select((
                        "Which target?".to_owned(),
                        vec!["staging".to_owned(), "production".to_owned()],
                    )),
                    policy: ext::IntentPolicy::Refuse,
                })])
            }
            E::SessionFork(from) if from.contains("nofork") => {
                block(format!("{from} stays in one piece"))
            }
            E::SessionSwitch(to) if to.contains("noswitch") => block(format!("{to} is off limits")),
            _ => ext::HandlerResult::None,
        }
    }
}

smith_plugin_sdk::extension::export_extension!(Lifecycle);
