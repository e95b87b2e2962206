//! `smith mcp`: a Model Context Protocol server over stdio (see
//! `docs/mcp.md` and the `smith_rpc::mcp` module).
//!
//! Tool calls record their effects into a new session (named with
//! `--name`, else `mcp-<time>`) or into `--session REF`. The extension
//! plugins are loaded (unless `--no-plugins`) for their `tool-call`
//! decisions; their questions that wait are asked through MCP elicitation
//! when the client declares it, else answered by `--answer` and `--yes`, or
//! refused.
//!
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT cancel the running calls (as
//! `notifications/cancelled` does), wait for their completions to be
//! recorded, print how to continue the session on standard error and exit
//! with 128 plus the signal's number.

use std::path::PathBuf;

use anyhow::Context;
use smith_host::questions::Policy;
use smith_rpc::{McpOptions, McpServer, Output, SessionChoice};

/// Serve the Model Context Protocol on standard input and output.
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Without a subcommand, serve MCP on stdio.
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    /// Record tool effects in this session (a name, an id or a unique id prefix).
    #[arg(long, value_name = "REF", conflicts_with = "name")]
    pub session: Option<String>,
    /// Name the session that records tool effects (default: mcp-<time>).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Work in this directory instead of the current one (as if smith were started there: its project's configuration, trust and plugins apply).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Run tool calls without extension plugins (built-in, user and project) and their decisions.
    #[arg(long)]
    pub no_plugins: bool,
    /// For clients without elicitation: answer every question a plugin asks and waits for with its default (without it, such questions are refused).
    #[arg(long)]
    pub yes: bool,
    /// For clients without elicitation: answer the plugin question whose prompt is PROMPT with ANSWER (repeatable; split at the last `=`; wins over --yes).
    #[arg(long, value_name = "PROMPT=ANSWER")]
    pub answer: Vec<String>,
    /// How much tools may do without asking: read-only, ask, workspace or full (default: workspace; see docs/security.md).
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "ask", "workspace", "full"])]
    pub approval: Option<String>,
}

/// What `smith mcp` does besides serving.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum McpCommand {
    /// List the MCP servers smith/mcp starts as a client (from the `mcp` block of the configuration and a trusted project's .mcp.json): their state and their tools.
    List(ListArgs),
}

/// `smith mcp list`.
#[derive(Debug, Clone, clap::Args)]
pub struct ListArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `smith mcp list`: loads the extension plugins as a run does (so
/// smith/mcp starts the configured servers and lists their tools), asks
/// smith/mcp for its `/mcp` listing, prints it, and exits (the servers
/// stop with the plugins).
///
/// # Errors
///
/// When smith/mcp is disabled or failed to load (the message says how to
/// enable it), or standard output cannot be written.
pub fn list(args: &ListArgs) -> anyhow::Result<u8> {
    use std::io::Write as _;
    let journal: std::sync::Arc<dyn smith_engine::journal::EffectJournal> =
        std::sync::Arc::new(smith_engine::journal::MemoryJournal::new());
    let ids = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(1));
    let (mut plugins, warnings) = smith_host::extensions::load_into(&journal, &ids, None);
    let Some(plugin) = plugins.iter_mut().find(|p| p.name() == "smith/mcp") else {
        for warning in &warnings {
            smith_host::extensions::warn(warning);
        }
        anyhow::bail!(
            "smith/mcp, the built-in MCP client, is not loaded (disabled, or it failed to load: see the warnings above), so no server can be listed; run `smith plugin enable smith/mcp`"
        );
    };
    let argument = if args.json { "--json" } else { "" };
    let actions = plugin
        .run_command("mcp", argument)
        .map_err(|err| anyhow::anyhow!("smith/mcp could not list its servers: {err}"))?;
    let text = actions
        .into_iter()
        .find_map(|action| match action {
            smith_plugins::extension::Action::Ui(intent) => match intent.kind {
                smith_plugins::extension::IntentKind::Notify(text) => Some(text),
                _ => None,
            },
            _ => None,
        })
        .unwrap_or_default();
    drop(plugins);
    let mut out = std::io::stdout().lock();
    if args.json {
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|err| {
            anyhow::anyhow!("smith/mcp answered a listing that is not JSON: {err}")
        })?;
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        for warning in &warnings {
            smith_host::extensions::warn(warning);
        }
        write!(out, "{text}")?;
    }
    Ok(0)
}

/// Runs the server until standard input ends.
///
/// # Errors
///
/// When the session or working directory cannot be used, or standard input
/// or output fail.
pub fn run(args: Args) -> anyhow::Result<u8> {
    if let Some(McpCommand::List(list_args)) = &args.command {
        return list(list_args);
    }
    let cwd = match args.cwd {
        Some(dir) => super::enter_cwd(&dir, [])?,
        None => std::env::current_dir()
            .context("could not read the current directory; pass --cwd DIR")?,
    };
    let opened = args.session.is_some();
    let session = match args.session {
        Some(reference) => SessionChoice::Open(reference),
        None => SessionChoice::New(Some(
            args.name
                .unwrap_or_else(|| format!("mcp-{}", smith_store::now_ms())),
        )),
    };
    let options = McpOptions {
        cwd,
        store_root: crate::settings::session_root()?,
        session,
        approval: smith_engine::approval::ApprovalCell::new(smith_host::settings::approval_mode(
            smith_host::settings::config()?,
            args.approval.as_deref(),
            smith_engine::approval::Approval::Workspace,
        )),
    };
    let policy = Policy {
        surface: "smith mcp (its client did not declare elicitation)".to_owned(),
        yes: args.yes,
        answers: args
            .answer
            .iter()
            .map(|given| Policy::parse_answer(given))
            .collect::<Result<_, _>>()
            .map_err(|message| anyhow::anyhow!("--answer: {message}"))?,
    };
    let mut server = McpServer::new(&options, Output::new(std::io::stdout()))?;
    if !args.no_plugins {
        server = server.with_plugins(policy);
    }
    eprintln!(
        "smith mcp: recording tool effects in session {}",
        server.session_id()
    );
    // SIGINT, SIGTERM, SIGHUP and SIGQUIT cancel the running calls as
    // `notifications/cancelled` does, wait for their completions to be
    // recorded, and exit with 128 plus the signal's number.
    let interrupter = server.interrupter();
    let name = server.session_name().to_owned();
    let watcher = crate::signals::end_on_signal(
        move || {
            interrupter.end(smith_tui::signals::GRACE);
            Some(name)
        },
        |name| format!("smith mcp --session {name}"),
    );
    let created = (!opened).then(|| server.session_id());
    let store_root = options.store_root.clone();
    let served = server.serve(std::io::stdin().lock());
    crate::signals::finish(watcher);
    // A connection that made no call recorded nothing: the session it
    // created is deleted rather than stored empty. A store that cannot be
    // read here leaves it for `smith session prune --empty`.
    if let Some(id) = created
        && let Ok(store) = smith_store::Store::open(&store_root)
        && let Ok(sid) = store.resolve(&id)
        && store.discard_if_empty(sid).unwrap_or(false)
    {
        eprintln!("smith mcp: no tool was called; the empty session {id} was not kept");
    }
    served.context("standard input or output failed; the client may have gone away")?;
    Ok(0)
}
