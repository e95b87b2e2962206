//! The option table: every option smith reads, declared once.
//!
//! One declaration gives an option's KDL path (its key), command-line flag,
//! environment variable, type, default and help; the section it lives in
//! declares what happens to keys it does not know. `docs/config.md` is
//! generated from this table ([`crate::docs::render_markdown`]) and a test
//! fails when the two differ.
//!
//! Naming is mechanical so users can guess: key `net.head-timeout-s` ↔ flag
//! `--net-head-timeout-s` ↔ variable `SMITH_NET_HEAD_TIMEOUT_S`. A unit test
//! holds every declaration to that rule.

use std::fmt;

/// The type of an option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `#true` / `#false` in KDL; `true`, `false`, `1`, `0`, `yes`, `no` on
    /// the command line and in the environment.
    Bool,
    /// A whole number within an inclusive range.
    Int {
        /// Smallest allowed value.
        min: i64,
        /// Largest allowed value.
        max: i64,
    },
    /// Free text.
    Str,
    /// One of a fixed set of words.
    Enum(&'static [&'static str]),
    /// A filesystem path: absolute, or starting with `~/` for the home
    /// directory.
    Path,
    /// Filesystem paths separated by `:` (as in `PATH`), each absolute or
    /// starting with `~/`; empty for none.
    PathList,
}

impl Kind {
    /// A short description for docs and errors, e.g. `integer 1..=3600`.
    pub fn describe(&self) -> String {
        match self {
            Kind::Bool => "boolean".to_owned(),
            Kind::Int { min, max } => format!("integer {min}..={max}"),
            Kind::Str => "string".to_owned(),
            Kind::Enum(choices) => format!("one of {}", choices.join(", ")),
            Kind::Path => "path".to_owned(),
            Kind::PathList => "paths separated by `:`".to_owned(),
        }
    }
}

/// A default value as written in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lit {
    /// A boolean.
    Bool(bool),
    /// A whole number.
    Int(i64),
    /// Text (also paths and enum words).
    Str(&'static str),
}

/// What a section does with a key it does not declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownPolicy {
    /// Load the rest and report a warning with a did-you-mean suggestion.
    Warn,
    /// Fail with an error with a did-you-mean suggestion.
    Reject,
}

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnknownPolicy::Warn => "warn",
            UnknownPolicy::Reject => "reject",
        })
    }
}

/// One section (a KDL node with children), or the top level (`path == ""`).
#[derive(Debug, PartialEq, Eq)]
pub struct SectionDecl {
    /// Dotted path; empty for the top level.
    pub path: &'static str,
    /// What happens to keys this section does not declare.
    pub policy: UnknownPolicy,
    /// One sentence on what the section is for.
    pub help: &'static str,
    /// Why the section has its policy.
    pub policy_reason: &'static str,
}

/// One option.
#[derive(Debug, PartialEq, Eq)]
pub struct OptionDecl {
    /// Dotted KDL path, e.g. `tui.theme` (node `theme` inside node `tui`).
    pub key: &'static str,
    /// Command-line flag, e.g. `--tui-theme`.
    pub flag: &'static str,
    /// Environment variable, e.g. `SMITH_TUI_THEME`.
    pub env: &'static str,
    /// Value type.
    pub kind: Kind,
    /// Product default; `None` when the option is unset by default.
    pub default: Option<Lit>,
    /// What an unset option means (shown in docs when `default` is `None`).
    pub unset: &'static str,
    /// What the option does.
    pub help: &'static str,
}

impl OptionDecl {
    /// The section path: everything before the last dot (empty at top level).
    pub fn section(&self) -> &'static str {
        self.key.rsplit_once('.').map_or("", |(s, _)| s)
    }

    /// The node name inside its section: everything after the last dot.
    pub fn leaf(&self) -> &'static str {
        self.key.rsplit_once('.').map_or(self.key, |(_, l)| l)
    }
}

macro_rules! options {
    ($( $(#[$meta:meta])* $name:ident = $decl:expr; )*) => {
        $( $(#[$meta])* pub static $name: OptionDecl = $decl; )*
        /// Every option, in documentation order.
        pub static ALL: &[&OptionDecl] = &[ $( &$name ),* ];
    };
}

/// Every section, in documentation order. The top level comes first.
pub static SECTIONS: &[SectionDecl] = &[
    SectionDecl {
        path: "",
        policy: UnknownPolicy::Warn,
        help: "Top-level options.",
        policy_reason: "plugins may add their own top-level nodes, which are not known until they load",
    },
    SectionDecl {
        path: "log",
        policy: UnknownPolicy::Reject,
        help: "Logging.",
        policy_reason: "a mistyped log setting would silently lose the logs it was meant to produce",
    },
    SectionDecl {
        path: "session",
        policy: UnknownPolicy::Reject,
        help: "Where sessions are stored, and how their files are compressed.",
        policy_reason: "a mistyped storage setting could put session history somewhere unexpected",
    },
    SectionDecl {
        path: "tui",
        policy: UnknownPolicy::Warn,
        help: "The terminal interface.",
        policy_reason: "presentation settings are harmless to ignore, and theme plugins may add more",
    },
    SectionDecl {
        path: "net",
        policy: UnknownPolicy::Reject,
        help: "Network behavior of the HTTP engine.",
        policy_reason: "a mistyped timeout would silently keep a default the user meant to change",
    },
    SectionDecl {
        path: "catalog",
        policy: UnknownPolicy::Reject,
        help: "The model catalog.",
        policy_reason: "a mistyped refresh setting would silently keep the catalog from refreshing, or refresh it against the user's wish",
    },
    SectionDecl {
        path: "openai",
        policy: UnknownPolicy::Reject,
        help: "The `openai` provider.",
        policy_reason: "a mistyped API choice would silently send requests in the other dialect",
    },
    SectionDecl {
        path: "plugins",
        policy: UnknownPolicy::Reject,
        help: "The plugin host.",
        policy_reason: "plugin limits are part of the sandbox; a mistyped one must not pass unnoticed",
    },
    SectionDecl {
        path: "instructions",
        policy: UnknownPolicy::Reject,
        help: "The instruction files (SMITH.md, AGENTS.md, CLAUDE.md) smith/instructions sends to the model.",
        policy_reason: "a mistyped budget would silently keep cutting the instructions the user meant to send",
    },
    SectionDecl {
        path: "sandbox",
        policy: UnknownPolicy::Reject,
        help: "The sandbox that confines the tools in every approval mode but `full` (see docs/security.md).",
        policy_reason: "a mistyped sandbox setting would silently leave a path writable or readable the user meant to change",
    },
    SectionDecl {
        path: "bash",
        policy: UnknownPolicy::Reject,
        help: "The `bash` tool's background jobs (see docs/tools.md).",
        policy_reason: "a mistyped job setting would silently kill commands the user meant to keep running, or the reverse",
    },
    SectionDecl {
        path: "update",
        policy: UnknownPolicy::Reject,
        help: "`smith update`: where releases are published and which keys may sign them (see docs/release.md).",
        policy_reason: "a mistyped key setting would silently leave a signing key untrusted, or a release source unused",
    },
    SectionDecl {
        path: "web",
        policy: UnknownPolicy::Reject,
        help: "The web tools of smith/web, `web_fetch` and `web_search` (see docs/web.md).",
        policy_reason: "a mistyped allow list or search setting would silently keep a host refused, or search with a provider the user did not choose",
    },
    SectionDecl {
        path: "bench",
        policy: UnknownPolicy::Reject,
        help: "`smith bench`, the performance gates.",
        policy_reason: "a mistyped gate setting would make a benchmark run measure something else",
    },
];

options! {
    /// Provider plugin serving model requests.
    PROVIDER = OptionDecl {
        key: "provider",
        flag: "--provider",
        env: "SMITH_PROVIDER",
        kind: Kind::Str,
        default: Some(Lit::Str("mock")),
        unset: "",
        help: "Provider plugin that serves model requests. `mock` is the offline, deterministic provider that needs no credentials; it is what runs when nothing else is configured.",
    };
    /// How much tools may do without asking.
    APPROVAL = OptionDecl {
        key: "approval",
        flag: "--approval",
        env: "SMITH_APPROVAL",
        kind: Kind::Enum(&["read-only", "ask", "workspace", "full"]),
        default: None,
        unset: "the frontend's default: `ask` in the interface; `workspace` in `smith eval` (`full` with `--yes`), `smith rpc` and `smith mcp`",
        help: "How much tools may do without asking (see docs/security.md). `read-only`: no mutating tool runs. `ask`: every mutating call no rule allows asks the user. `workspace`: changes inside the project root run and commands run in the sandbox; anything else is refused. `full`: nothing asks and nothing is confined. Deny rules hold in every mode.",
    };
    /// Model to request.
    MODEL = OptionDecl {
        key: "model",
        flag: "--model",
        env: "SMITH_MODEL",
        kind: Kind::Str,
        default: None,
        unset: "the provider's default model",
        help: "Model to request: a catalog model name or an alias. Resolution is offline and deterministic.",
    };
    /// Thinking level to ask for.
    THINKING = OptionDecl {
        key: "thinking",
        flag: "--thinking",
        env: "SMITH_THINKING",
        kind: Kind::Enum(&["off", "minimal", "low", "medium", "high", "max"]),
        default: None,
        unset: "requests ask for no thinking (`off`)",
        help: "How much the model thinks before it answers: `off`, or a level of the catalog (`minimal`, `low`, `medium`, `high`, `max`). A request carries the vendor's encoding (Anthropic's thinking budget, OpenAI's reasoning effort, Google's thinking budget) only when the model's catalog entry lists the level; otherwise the nearest level it lists below (else its lowest) is used, or none for a model listed without thinking, with warning `gate.thinking`. `/thinking LEVEL` changes it in the interface.",
    };
    /// Whether sessions start in plan mode.
    PLAN = OptionDecl {
        key: "plan",
        flag: "--plan",
        env: "SMITH_PLAN",
        kind: Kind::Bool,
        default: Some(Lit::Bool(false)),
        unset: "",
        help: "Start every session a run opens in plan mode (the built-in plugin smith/plan): the agent researches and proposes a plan, and every tool that can change something is blocked until the user approves the plan. The mode is kept in the session, so a resumed session stays in it until the plan is approved or `/normal` leaves it; `/plan` turns it on in the interface. With smith/plan disabled (or `--no-plugins`) `--plan` refuses to run, and the option set otherwise runs with a warning.",
    };
    /// The agent the main thread runs as.
    AGENT = OptionDecl {
        key: "agent",
        flag: "--agent",
        env: "SMITH_AGENT",
        kind: Kind::Str,
        default: None,
        unset: "the main thread runs as smith's default agent",
        help: "Run the main thread as the custom agent NAME (the built-in plugin smith/agents reads NAME.md from the project's .smith/agents and .claude/agents, then the user's `agents` folder and ~/.claude/agents). Its body is added to the system prompt after everything else, its `tools` become the only tools offered (a name the runtime does not have is warned about), and its `model` and `provider` are used unless --model or --provider is given. An unknown name is an error listing the agents there are; with smith/agents disabled (or `--no-plugins`) `--agent` refuses to run. `smith agents list` lists the agents.",
    };
    /// When to color terminal output.
    COLOR = OptionDecl {
        key: "color",
        flag: "--color",
        env: "SMITH_COLOR",
        kind: Kind::Enum(&["auto", "always", "never"]),
        default: Some(Lit::Str("auto")),
        unset: "",
        help: "When to color terminal output. `auto` colors only when the output is a terminal and `NO_COLOR` is unset or empty.",
    };
    /// Least severe log level written.
    LOG_LEVEL = OptionDecl {
        key: "log.level",
        flag: "--log-level",
        env: "SMITH_LOG_LEVEL",
        kind: Kind::Enum(&["error", "warn", "info", "debug", "trace"]),
        default: Some(Lit::Str("warn")),
        unset: "",
        help: "Least severe level written to the log (`log.file`): `error` writes only the errors smith reports, `warn` also its warnings, `info` also notes on what it chose (such as the provider); `debug` and `trace` write everything `info` does.",
    };
    /// Log file.
    LOG_FILE = OptionDecl {
        key: "log.file",
        flag: "--log-file",
        env: "SMITH_LOG_FILE",
        kind: Kind::Path,
        default: None,
        unset: "`<state dir>/smith.log`",
        help: "File the log is appended to: one line per reported diagnostic at or above `log.level` (UTC time, level, code, what, why, next, value and where it came from), secrets redacted. The file (and its directory) is created on the first line written; when it cannot be opened smith warns once, naming the file and the error, and goes on without a log.",
    };
    /// Session store directory.
    SESSION_DIR = OptionDecl {
        key: "session.dir",
        flag: "--session-dir",
        env: "SMITH_SESSION_DIR",
        kind: Kind::Path,
        default: None,
        unset: "`<data dir>/sessions`",
        help: "Directory that holds session files. Every command that stores or reads sessions (`eval`, the TUI, `session`, `replay`, `rpc`, `mcp`) uses it.",
    };
    /// How session files are compressed.
    SESSION_COMPRESSION = OptionDecl {
        key: "session.compression",
        flag: "--session-compression",
        env: "SMITH_SESSION_COMPRESSION",
        kind: Kind::Enum(&["fast", "small"]),
        default: Some(Lit::Str("fast")),
        unset: "",
        help: "How entries written to session files are compressed (zstd, each entry's content alone). `fast`: content of 6 KiB or more at level -1; appends and the readers (`session dump`, `replay`, `search`, resume) stay cheapest, and a file is about 0.7 of pi's JSONL for the same conversation. `small`: content of 256 bytes or more at level 5; a file is under half of pi's JSONL, for about ten times the CPU to write each entry (14 ms instead of 1.3 per 1,000 entries) and 1.4 to 2 times the CPU to read the same conversation (`session dump`, `replay`, `search`). Applies to what is written from then on (appends, `session import`, `session fork`); earlier entries stay as they were written, and a file mixing both reads the same. `smith session pack` rewrites a whole session with `small`.",
    };
    /// Ask before leaving the TUI with work in flight.
    TUI_CONFIRM_EXIT = OptionDecl {
        key: "tui.confirm-exit",
        flag: "--tui-confirm-exit",
        env: "SMITH_TUI_CONFIRM_EXIT",
        kind: Kind::Bool,
        default: Some(Lit::Bool(true)),
        unset: "",
        help: "Ask for confirmation before the TUI exits while a turn or tool is still running.",
    };
    /// Theme name.
    TUI_THEME = OptionDecl {
        key: "tui.theme",
        flag: "--tui-theme",
        env: "SMITH_TUI_THEME",
        kind: Kind::Str,
        default: Some(Lit::Str("default")),
        unset: "",
        help: "Name of the theme the TUI draws with; themes are provided by plugins (smith/product provides `default`). An unknown name gets a warning naming the value, where it was set and the themes there are, and `default` is used.",
    };
    /// Mouse capture.
    TUI_MOUSE = OptionDecl {
        key: "tui.mouse",
        flag: "--tui-mouse",
        env: "SMITH_TUI_MOUSE",
        kind: Kind::Bool,
        default: Some(Lit::Bool(true)),
        unset: "",
        help: "Capture the mouse so the wheel scrolls the transcript (by `tui.scroll-lines`). Turn off to keep the terminal's own selection.",
    };
    /// Lines per scroll step.
    TUI_SCROLL_LINES = OptionDecl {
        key: "tui.scroll-lines",
        flag: "--tui-scroll-lines",
        env: "SMITH_TUI_SCROLL_LINES",
        kind: Kind::Int { min: 1, max: 100 },
        default: Some(Lit::Int(3)),
        unset: "",
        help: "Transcript lines moved per mouse-wheel step or scroll key press.",
    };
    /// Connect timeout.
    NET_CONNECT_TIMEOUT_S = OptionDecl {
        key: "net.connect-timeout-s",
        flag: "--net-connect-timeout-s",
        env: "SMITH_NET_CONNECT_TIMEOUT_S",
        kind: Kind::Int { min: 1, max: 600 },
        default: Some(Lit::Int(30)),
        unset: "",
        help: "Seconds allowed to open a connection (DNS, TCP and TLS) before the request fails.",
    };
    /// Response head timeout.
    NET_HEAD_TIMEOUT_S = OptionDecl {
        key: "net.head-timeout-s",
        flag: "--net-head-timeout-s",
        env: "SMITH_NET_HEAD_TIMEOUT_S",
        kind: Kind::Int { min: 1, max: 3600 },
        default: Some(Lit::Int(120)),
        unset: "",
        help: "Seconds allowed between sending a request and receiving the response head.",
    };
    /// Gap allowed between response body chunks.
    NET_BODY_GAP_TIMEOUT_S = OptionDecl {
        key: "net.body-gap-timeout-s",
        flag: "--net-body-gap-timeout-s",
        env: "SMITH_NET_BODY_GAP_TIMEOUT_S",
        kind: Kind::Int { min: 1, max: 3600 },
        default: Some(Lit::Int(300)),
        unset: "",
        help: "Seconds allowed between two chunks of a streaming response body before the stream is treated as stalled.",
    };
    /// Whether sessions refresh the model catalog from the providers.
    CATALOG_REFRESH = OptionDecl {
        key: "catalog.refresh",
        flag: "--catalog-refresh",
        env: "SMITH_CATALOG_REFRESH",
        kind: Kind::Enum(&["off", "background"]),
        default: Some(Lit::Str("off")),
        unset: "",
        help: "Whether `smith eval`, `smith rpc` and `smith tui` ask the providers with credentials (and the OpenAI-compatible server and the local servers whose base URL is set) for their model lists at startup. `background` refreshes on its own thread, which startup never waits for, and writes the catalog cache that later runs read offline; `off` asks nothing. `smith models --refresh` refreshes on demand either way.",
    };
    /// Which OpenAI API the `openai` provider speaks.
    OPENAI_API = OptionDecl {
        key: "openai.api",
        flag: "--openai-api",
        env: "SMITH_OPENAI_API",
        kind: Kind::Enum(&["responses", "chat"]),
        default: Some(Lit::Str("responses")),
        unset: "",
        help: "Which OpenAI API the `openai` provider sends requests to: `responses` (`POST /v1/responses`) or `chat` (Chat Completions, `POST /v1/chat/completions`, for gateways and proxies at OPENAI_BASE_URL that speak only that dialect). The other providers are not affected.",
    };
    /// Plugin abort deadline.
    PLUGINS_ABORT_DEADLINE_MS = OptionDecl {
        key: "plugins.abort-deadline-ms",
        flag: "--plugins-abort-deadline-ms",
        env: "SMITH_PLUGINS_ABORT_DEADLINE_MS",
        kind: Kind::Int { min: 1, max: 60000 },
        default: Some(Lit::Int(250)),
        unset: "",
        help: "Milliseconds a plugin call may keep running after an abort before the host destroys the instance; the diagnostic names this grace.",
    };
    /// UI intents kept per plugin per run.
    PLUGINS_MAX_UI_INTENTS = OptionDecl {
        key: "plugins.max-ui-intents",
        flag: "--plugins-max-ui-intents",
        env: "SMITH_PLUGINS_MAX_UI_INTENTS",
        kind: Kind::Int { min: 0, max: 1_000_000 },
        default: Some(Lit::Int(500)),
        unset: "",
        help: "UI intents (notices, status, questions...) each extension plugin may send in one run; the rest are dropped unshown and unrecorded, one `plugin.rate-limited` warning says so, and the run's end records how many were dropped in the session.",
    };
    /// Log lines kept per plugin per run.
    PLUGINS_MAX_LOG_LINES = OptionDecl {
        key: "plugins.max-log-lines",
        flag: "--plugins-max-log-lines",
        env: "SMITH_PLUGINS_MAX_LOG_LINES",
        kind: Kind::Int { min: 0, max: 1_000_000 },
        default: Some(Lit::Int(1000)),
        unset: "",
        help: "Lines each extension plugin may write to smith's log (`host.log`) in one run (the host keeps at most 1000 from one call into the plugin whatever this says); the rest are dropped, one `plugin.rate-limited` warning says so, and the run's end records how many were dropped in the session.",
    };
    /// Journal entries recorded per plugin per run.
    PLUGINS_MAX_JOURNAL_ENTRIES = OptionDecl {
        key: "plugins.max-journal-entries",
        flag: "--plugins-max-journal-entries",
        env: "SMITH_PLUGINS_MAX_JOURNAL_ENTRIES",
        kind: Kind::Int { min: 0, max: 10_000_000 },
        default: Some(Lit::Int(10000)),
        unset: "",
        help: "Session journal entries each extension plugin's host effects may cause in one run (two per effect: its intent and its completion); past it the plugin's effects fail without running or being recorded (UI intents are dropped), one `plugin.rate-limited` warning says so, and the run's end records how many entries were dropped in the session.",
    };
    /// The most bytes of instruction files sent to the model.
    INSTRUCTIONS_MAX_BYTES = OptionDecl {
        key: "instructions.max-bytes",
        flag: "--instructions-max-bytes",
        env: "SMITH_INSTRUCTIONS_MAX_BYTES",
        kind: Kind::Int { min: 0, max: 16_777_216 },
        default: Some(Lit::Int(32768)),
        unset: "",
        help: "The most bytes of instruction files (SMITH.md, AGENTS.md, CLAUDE.md; read by the built-in plugin smith/instructions) sent to the model in all; the nearest files are kept first, the farthest are cut or left out, and a notice names them with their sizes.",
    };
    /// Whether sandboxed commands may use the network.
    SANDBOX_NETWORK = OptionDecl {
        key: "sandbox.network",
        flag: "--sandbox-network",
        env: "SMITH_SANDBOX_NETWORK",
        kind: Kind::Enum(&["auto", "off", "on"]),
        default: Some(Lit::Str("auto")),
        unset: "",
        help: "Whether commands the sandbox confines (`bash`, plugin processes) may use the network. `auto`: off in the `read-only` and `workspace` approval modes, on in `ask` for `bash`, whose calls run only once the permission policy lets them through (the user approved the call or wrote the rule that allows it), off for plugin processes; `off`: never; `on`: always (the file rules still hold).",
    };
    /// Extra folders sandboxed commands may write.
    SANDBOX_WRITE_PATHS = OptionDecl {
        key: "sandbox.write-paths",
        flag: "--sandbox-write-paths",
        env: "SMITH_SANDBOX_WRITE_PATHS",
        kind: Kind::PathList,
        default: None,
        unset: "only the project root and the session temporary directory",
        help: "Folders, besides the project root and the session temporary directory, that sandboxed tools may write beneath, separated by `:`. Each must exist when a runtime starts.",
    };
    /// Extra paths sandboxed tools may not read.
    SANDBOX_DENY_READ = OptionDecl {
        key: "sandbox.deny-read",
        flag: "--sandbox-deny-read",
        env: "SMITH_SANDBOX_DENY_READ",
        kind: Kind::PathList,
        default: None,
        unset: "only smith's credential store, `~/.ssh`, `~/.aws`, `~/.gnupg` and `~/.config/gcloud`",
        help: "Paths, besides smith's credential store and the secret folders in the home directory, that sandboxed tools may neither read nor write, separated by `:`. A path that does not exist yet is denied when it appears.",
    };
    /// What happens to a `bash` command that outruns its timeout.
    BASH_ON_TIMEOUT = OptionDecl {
        key: "bash.on-timeout",
        flag: "--bash-on-timeout",
        env: "SMITH_BASH_ON_TIMEOUT",
        kind: Kind::Enum(&["background", "kill"]),
        default: Some(Lit::Str("background")),
        unset: "",
        help: "What happens to a `bash` command still running at its timeout. `background`: it keeps running as a background job, and the call returns its output so far with the job's id (the model reads on with `bash_output` and stops it with `bash_kill`); `kill`: its process group is terminated (SIGTERM, then SIGKILL after 2 seconds). Commands run in an editor's terminal are always killed.",
    };
    /// The most background jobs running at once in one runtime.
    BASH_MAX_JOBS = OptionDecl {
        key: "bash.max-jobs",
        flag: "--bash-max-jobs",
        env: "SMITH_BASH_MAX_JOBS",
        kind: Kind::Int { min: 1, max: 256 },
        default: Some(Lit::Int(16)),
        unset: "",
        help: "The most `bash` background jobs one runtime runs at once; past it `bash` with `background: true` is refused and a command that outruns its timeout is killed instead of moved to the background.",
    };
    /// Where `smith update` looks for releases.
    UPDATE_URL = OptionDecl {
        key: "update.url",
        flag: "--update-url",
        env: "SMITH_UPDATE_URL",
        kind: Kind::Str,
        default: None,
        unset: "`smith update` has nowhere to look and says to set this",
        help: "The address releases are published at: `URL/latest` names the newest version and `URL/VERSION/` holds its archives, `SHA256SUMS` and `SHA256SUMS.sig` (docs/release.md). `https://`, or `http://` to this machine only. Whatever serves it, a release is installed only when its signature verifies.",
    };
    /// Extra keys `smith update` trusts.
    UPDATE_TRUSTED_KEYS = OptionDecl {
        key: "update.trusted-keys",
        flag: "--update-trusted-keys",
        env: "SMITH_UPDATE_TRUSTED_KEYS",
        kind: Kind::Str,
        default: None,
        unset: "only the release key compiled into smith",
        help: "Ed25519 public keys (64 hex digits each, separated by spaces or commas) that `smith update` trusts to sign releases besides the release key compiled into smith, which always applies. Read from the user configuration file only: a value from a project's configuration, a variable or a flag is ignored with a warning, so that no project can choose what smith installs.",
    };
    /// Hosts the web tools may reach at non-public addresses.
    WEB_ALLOW_HOSTS = OptionDecl {
        key: "web.allow-hosts",
        flag: "--web-allow-hosts",
        env: "SMITH_WEB_ALLOW_HOSTS",
        kind: Kind::Str,
        default: None,
        unset: "every host must resolve to public addresses only",
        help: "Hosts (`host` for any port, or `host:port`; `[v6]:port` for IPv6 literals), separated by commas or spaces, that `web_fetch` and `web_search` may reach even though they resolve to a loopback, private, link-local or other non-public address (for example `localhost:8080` or an intranet name). Every other host is refused after DNS resolution when any of its addresses is not public, so that a URL from the model cannot reach this machine, the private network or a cloud metadata service.",
    };
    /// Time cap of one web request.
    WEB_TIMEOUT_S = OptionDecl {
        key: "web.timeout-s",
        flag: "--web-timeout-s",
        env: "SMITH_WEB_TIMEOUT_S",
        kind: Kind::Int { min: 1, max: 300 },
        default: Some(Lit::Int(30)),
        unset: "",
        help: "Seconds one `web_fetch` request (each redirect hop) or `web_search` request may take, from connecting to the end of the body, before it fails with a message saying so.",
    };
    /// Which search provider plugin answers `web_search`.
    WEB_SEARCH_PROVIDER = OptionDecl {
        key: "web.search-provider",
        flag: "--web-search-provider",
        env: "SMITH_WEB_SEARCH_PROVIDER",
        kind: Kind::Str,
        default: None,
        unset: "the first enabled search provider plugin that is configured: smith/searxng when `web.searxng-url` is set, else smith/brave when the secret `brave.api_key` is stored, else an installed one",
        help: "The search provider plugin `web_search` asks, by plugin name: `smith/searxng` (a SearXNG instance's JSON API at `web.searxng-url`), `smith/brave` (the Brave Search API with the key stored by `smith auth set brave`) or an installed plugin of the `search-provider` world; the built-ins may be named without `smith/` (`searxng`, `brave`).",
    };
    /// The SearXNG instance.
    WEB_SEARXNG_URL = OptionDecl {
        key: "web.searxng-url",
        flag: "--web-searxng-url",
        env: "SMITH_WEB_SEARXNG_URL",
        kind: Kind::Str,
        default: None,
        unset: "no SearXNG instance",
        help: "The base URL of a SearXNG instance whose JSON API (`/search?format=json&q=`) answers `web_search` (the instance must allow the `json` format). A self-hosted instance on this machine or the private network must also be listed in `web.allow-hosts`.",
    };
    /// The Brave Search API endpoint.
    WEB_BRAVE_URL = OptionDecl {
        key: "web.brave-url",
        flag: "--web-brave-url",
        env: "SMITH_WEB_BRAVE_URL",
        kind: Kind::Str,
        default: Some(Lit::Str("https://api.search.brave.com/res/v1/web/search")),
        unset: "",
        help: "The Brave Search API's web search endpoint; change it only to go through a relay or to test against a local server (which `web.allow-hosts` must then list). The key (`smith auth set brave`, the secret `brave.api_key`) is sent as the `X-Subscription-Token` header by smith, never handed to the plugin.",
    };
    /// Benchmark samples.
    BENCH_SAMPLES = OptionDecl {
        key: "bench.samples",
        flag: "--bench-samples",
        env: "SMITH_BENCH_SAMPLES",
        kind: Kind::Int { min: 1, max: 100000 },
        default: Some(Lit::Int(101)),
        unset: "",
        help: "Samples taken per benchmark by `smith bench`; the median of an odd count is one real sample. `smith bench --quick` ignores this and takes 21 shorter samples with a shorter warm-up.",
    };
}

/// `SMITH_*` environment variables smith reads that are not options; they
/// are never reported as misspelled options.
pub static RESERVED_ENV: &[&str] = &[
    "SMITH_HOME",
    "SMITH_BLESS",
    "SMITH_DIAG_LOG",
    "SMITH_DIAG_AUDIT_CHILD",
    "SMITH_INPUT_LIMIT_MIB",
    "SMITH_RELEASE_KEY",
];

/// The option with dotted key `key`.
pub fn find(key: &str) -> Option<&'static OptionDecl> {
    ALL.iter().copied().find(|d| d.key == key)
}

/// The option with dotted key `key`, or a diagnostic naming `surface` with a
/// did-you-mean suggestion.
///
/// # Errors
///
/// [`crate::ErrorKind::UnknownKey`] when no option has that key.
pub fn lookup(
    key: &str,
    surface: smith_diag::Surface,
) -> Result<&'static OptionDecl, crate::ConfigError> {
    find(key).ok_or_else(|| {
        let near = crate::suggest::did_you_mean(key, ALL.iter().map(|d| d.key));
        crate::ConfigError::new(
            crate::ErrorKind::UnknownKey,
            smith_diag::Diagnostic::error(
                "config.unknown-key",
                format!("there is no option `{key}`"),
                format!("`{key}` is not declared{near}"),
                "run `smith config show` to list every option",
            )
            .with_surface(surface)
            .with_value(key),
        )
    })
}

/// The option whose flag is `flag` (with its leading dashes).
pub fn find_by_flag(flag: &str) -> Option<&'static OptionDecl> {
    ALL.iter().copied().find(|d| d.flag == flag)
}

/// The option whose environment variable is `var`.
pub fn find_by_env(var: &str) -> Option<&'static OptionDecl> {
    ALL.iter().copied().find(|d| d.env == var)
}

/// The section with dotted path `path` (empty for the top level).
pub fn section(path: &str) -> Option<&'static SectionDecl> {
    SECTIONS.iter().find(|s| s.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_follow_the_rule_and_are_unique() {
        let mut seen = HashSet::new();
        for d in ALL {
            let flag = format!("--{}", d.key.replace('.', "-"));
            let env = format!("SMITH_{}", d.key.replace(['.', '-'], "_").to_uppercase());
            assert_eq!(d.flag, flag, "{}", d.key);
            assert_eq!(d.env, env, "{}", d.key);
            assert!(seen.insert(d.key), "duplicate {}", d.key);
            assert!(section(d.section()).is_some(), "{} has no section", d.key);
            assert!(!d.help.is_empty());
            assert_eq!(d.default.is_none(), !d.unset.is_empty(), "{}", d.key);
        }
    }

    #[test]
    fn defaults_satisfy_their_own_types() {
        for d in ALL {
            if let Some(lit) = d.default {
                let v = crate::Value::from_lit(lit);
                assert_eq!(crate::value::check(d, v.clone()), Ok(v), "{}", d.key);
            }
        }
    }
}
