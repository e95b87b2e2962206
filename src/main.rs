//! The `smith` binary: the command-line surface and the composition root.
//!
//! Each subcommand lives in its own module under `cmd/`, exposing a clap
//! `Args` struct and a `run` function that returns the process exit code.
//! Only commands that work are listed; later work adds its own.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[cfg(test)]
mod cli_doc;
mod cmd;
mod prompt_guard;
mod report;
mod settings;
mod signals;

/// Every allocation in the process is charged to a lifetime scope.
#[global_allocator]
static GLOBAL: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();

/// smith: a fast coding-agent harness.
///
/// With no arguments on a terminal smith opens the fullscreen interface; with
/// a prompt (`smith fix the tests`) it runs that prompt as `smith eval` does.
/// `--provider`, `--model`, `--base-url`, `--thinking`, `--plan`, `--agent`,
/// `-c`/`--continue`, `--resume [REF]` and `--session REF` apply either way: with a prompt it runs on that
/// session with that provider, without one the interface opens on them.
///
/// Standard input is read only when it is not a terminal: piped with no
/// prompt (`echo "fix the tests" | smith`) it is the prompt; piped with a
/// prompt (`cat log | smith explain this`) it is appended to the prompt
/// after a blank line. It is read as a prompt given as `-` is: at most 16
/// MiB, given up after 30 s without data (run with `< /dev/null` where
/// standard input is a pipe that nothing writes to). With neither a prompt nor text
/// on standard input and no terminal, smith prints this overview.
///
/// A command line that looks mistyped never becomes a prompt (nothing runs,
/// status 2, the diagnostic says what was meant): a prompt of one bare word
/// (lowercase letters, digits, `-`, `_`: `smith sesion`, `smith docter`,
/// `smith hi`); a prompt whose first word is a bare word within one edit of
/// a command or of an option without its dashes (`smith sesion list`,
/// `smith continue the work`; words of 4 letters or more) or a command
/// smith does not have (`acp`, `login`); an option written after
/// the prompt's first word (`smith fix it --model M`); an option whose
/// dashes became one typographic dash (`smith —continue`); a command
/// after top-level options (`smith -c session list`). With `-c`,
/// `--resume` or `--session` only the last three apply (`smith -c yes`
/// runs).
/// `smith -- WORDS`
/// always sends WORDS as the prompt, and a prompt quoted as one argument
/// (`smith "hi there"`) is never taken for a command.
///
/// A command whose standard output is closed by its reader (`smith session
/// dump NAME | head`) ends quietly with status 141, as one ended by SIGPIPE.
#[derive(Debug, Parser)]
#[command(
    name = "smith",
    version,
    about,
    propagate_version = true,
    disable_help_subcommand = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// A prompt to run without the TUI, as `smith eval PROMPT` does (`-` reads it from standard input; after `--` it is never taken for a command).
    #[arg(value_name = "PROMPT", trailing_var_arg = true)]
    prompt: Vec<String>,

    #[command(flatten)]
    provider: cmd::eval::ProviderChoice,

    #[command(flatten)]
    session: SessionFlags,
}

/// The session `smith` (no subcommand) runs a prompt on or opens the
/// interface on.
#[derive(Debug, Clone, Default, clap::Args)]
struct SessionFlags {
    /// Continue the most recently changed session: a prompt runs on it (refused when there is none); without a prompt the interface opens on it (a new session when there is none), as `smith tui --continue` does.
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "session"])]
    continue_latest: bool,
    /// Resume session REF (a name, an id or a unique id prefix), as --session does; without REF, the most recently changed session, as --continue does. REF is the word after --resume: to resume the latest session with a prompt, use -c.
    #[arg(long, value_name = "REF", conflicts_with = "session")]
    resume: Option<Option<String>>,
    /// Run on this session (a name, an id or a unique id prefix): a prompt runs on it; without a prompt the interface opens on it.
    #[arg(long, value_name = "REF")]
    session: Option<String>,
}

impl SessionFlags {
    /// The session named by reference, if any.
    fn reference(&self) -> Option<&str> {
        match (&self.session, &self.resume) {
            (Some(r), _) | (None, Some(Some(r))) => Some(r),
            _ => None,
        }
    }

    /// Whether the latest session is asked for (`-c`, `--resume`).
    fn latest(&self) -> bool {
        self.continue_latest || matches!(self.resume, Some(None))
    }

    /// The option that chose the session, for messages.
    fn given(&self) -> Option<&'static str> {
        if self.continue_latest {
            Some("--continue")
        } else if self.resume.is_some() {
            Some("--resume")
        } else if self.session.is_some() {
            Some("--session")
        } else {
            None
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    // Each variant is one line; its module owns the arguments and behavior.
    /// Run the performance gates: medians, limits and ratios to a floor.
    Bench(cmd::bench::Args),
    /// Show or change configuration: `config show [KEY] [--sources] [--json]`, `config set KEY VALUE [--project]`.
    Config(cmd::config::Args),
    /// Show what every request carries before the conversation: prompt fragments and tool definitions with their sizes: `context [--json]`.
    Context(cmd::context::Args),
    /// Trust a project's .smith directory (configuration, plugins) as it is now.
    Trust(cmd::trust::Args),
    /// Show what the sandbox enforces here: kernel support, each layer, write roots, denied paths, bash per approval mode: `sandbox [--json]`.
    Sandbox(cmd::sandbox::Args),
    /// Say what is wrong with this setup: configuration, credentials, terminal, sandbox, plugins, sessions, each finding with what to do: `doctor [--json] [--live]`.
    #[command(after_long_help = cmd::doctor::HELP)]
    Doctor(cmd::doctor::Args),
    /// Manage stored sessions: list, info, dump, export, import, fork, rename, delete, prune, search, pack, repair.
    Session(cmd::session::Args),
    /// Show how many sessions and runs are stored, and tokens and cost by provider and model (unknown counts stay unknown): `stats [--json]`.
    Stats(cmd::stats::Args),
    /// List the skills (SKILL.md folders) smith/skills finds here: source, level, shadowing, unreadable files: `skills list [--json]`.
    Skills(cmd::skills::Args),
    /// List the custom agents (NAME.md files) smith/agents finds here: source, tools, model, shadowing, unreadable files: `agents list [--json]`.
    Agents(cmd::agents::Args),
    /// List the hook commands smith/hooks runs here (Claude Code's hooks format): event, matcher, command, source file, whether they run: `hooks list`.
    Hooks(cmd::hooks::Args),
    /// Run one prompt without the TUI: `eval "prompt" [--json | --output-format stream-json|json] [--session REF | --no-session] [--provider P] [--model M] [--base-url URL]`.
    #[command(alias = "run")]
    Eval(cmd::eval::Args),
    /// Start the fullscreen interface: `tui [--session REF | --continue] [--provider P] [--model M]`.
    Tui(cmd::tui::Args),
    /// List the model catalog: `models [--provider P] [--json] [--sources] [--resolve NAME]`.
    Models(cmd::models::Args),
    /// Manage credentials: `auth set PROVIDER` (value from stdin or a hidden prompt), `status`, `check PROVIDER [--live]`, `logout PROVIDER`.
    Auth(cmd::auth::Args),
    /// Manage the secrets smith redacts: `secret add NAME [--allow TOOL]` (value from stdin or a hidden prompt), `list`, `remove NAME`.
    Secret(cmd::secret::Args),
    /// Serve JSON-RPC 2.0 on standard input and output: sessions, prompts, queues, streamed events.
    Rpc(cmd::rpc::Args),
    /// Serve the Model Context Protocol on stdio: built-in tools, sessions as resources.
    Mcp(cmd::mcp::Args),
    /// Serve the Agent Client Protocol on stdio for editors (Zed, JetBrains, Neovim): sessions, streamed updates, permission requests.
    Acp(cmd::acp::Args),
    /// Checkpoints of the project around each write, edit and bash call: `checkpoint list | turns | diff [FROM [TO]] | undo [fx-N | --turn N] | redo [fx-N | --turn N] | restore ID|fx-N | rewind TURN|@ENTRY [--force] [--dry-run]`.
    Checkpoint(cmd::checkpoint::Args),
    /// Play a recorded session back without a provider: `replay REF [--speed N | --realtime | --instant] [--turns A..B] [--compare] [--json]`.
    Replay(cmd::replay::Args),
    /// Manage plugins: `plugin list | info NAME | install PATH | uninstall NAME | enable NAME | disable NAME | reload NAME`.
    Plugin(cmd::plugin::Args),
    /// Install the newest signed release in place of this binary: `update [--check | --rollback]`.
    #[command(after_long_help = cmd::update::HELP)]
    Update(cmd::update::Args),
    /// Release keys, signing and verification for whoever publishes releases (docs/release.md).
    #[command(hide = true, name = "release-tool")]
    Release(cmd::release::Args),
    /// Print help: `help COMMAND...` for a command, `help plugins [ITEM]` for the plugin contract.
    Help(cmd::help::Args),
    /// Print a shell completion script: `completions bash|zsh|fish|elvish|powershell` (e.g. `smith completions bash > ~/.local/share/bash-completion/completions/smith`).
    Completions(cmd::completions::CompletionArgs),
    /// Print a manual page (roff): `man [COMMAND...]` (e.g. `smith man | man -l -`, `smith man session list`).
    Man(cmd::completions::ManArgs),
}

fn main() -> ExitCode {
    // Nothing is loaded or opened here: the log decides its level and file
    // when the first line is written.
    smith_diag::log::install(smith_host::settings::process_log_settings);
    let cli = report::parse_cli::<Cli>();
    let Some(command) = cli.command else {
        return run_default(cli.prompt, cli.provider, cli.session);
    };
    let result: anyhow::Result<u8> = match command {
        Command::Bench(args) => cmd::bench::run(args),
        Command::Config(args) => cmd::config::run(args),
        Command::Context(args) => cmd::context::run(args),
        Command::Trust(args) => cmd::trust::run(args),
        Command::Sandbox(args) => cmd::sandbox::run(args),
        Command::Doctor(args) => cmd::doctor::run(args),
        Command::Session(args) => cmd::session::run(args),
        Command::Skills(args) => cmd::skills::run(args),
        Command::Agents(args) => cmd::agents::run(args),
        Command::Hooks(args) => cmd::hooks::run(args),
        Command::Stats(args) => cmd::stats::run(args),
        Command::Eval(args) if args.json => return report::exit_json(cmd::eval::run(args)),
        Command::Eval(args) => cmd::eval::run(args),
        Command::Tui(args) => cmd::tui::run(args),
        Command::Models(args) => cmd::models::run(args),
        Command::Auth(args) => cmd::auth::run(args),
        Command::Secret(args) => cmd::secret::run(args),
        Command::Rpc(args) => cmd::rpc::run(args),
        Command::Mcp(args) => cmd::mcp::run(args),
        Command::Acp(args) => cmd::acp::run(args),
        Command::Checkpoint(args) => cmd::checkpoint::run(args),
        Command::Replay(args) => cmd::replay::run(args),
        Command::Plugin(args) => cmd::plugin::run(args),
        // `smith update the readme` is a prompt (prompt_guard::PROMPT_VERBS).
        Command::Update(args) if !args.prompt.is_empty() => {
            let mut words = vec!["update".to_owned()];
            words.extend(args.prompt);
            return run_default(words, cli.provider, cli.session);
        }
        Command::Update(args) => cmd::update::run(args),
        Command::Release(args) => cmd::release::run(args),
        Command::Help(args) => cmd::help::run(args, <Cli as clap::CommandFactory>::command()),
        Command::Completions(args) => {
            cmd::completions::completions(args, <Cli as clap::CommandFactory>::command())
        }
        Command::Man(args) => cmd::completions::man(args, <Cli as clap::CommandFactory>::command()),
    };
    exit_code(result)
}

/// With no subcommand: a prompt (with what is piped to standard input
/// appended), or else what is piped to standard input, runs as `smith eval`
/// does; otherwise the fullscreen interface opens when standard input and
/// output are a terminal, and the command overview is printed when they
/// are not. A prompt that looks like a mistyped command line runs nothing
/// ([`prompt_guard`]).
fn run_default(
    prompt: Vec<String>,
    provider: cmd::eval::ProviderChoice,
    session: SessionFlags,
) -> ExitCode {
    use std::io::IsTerminal;
    if !prompt.is_empty() && !prompt_forced(prompt.len()) {
        let root = <Cli as clap::CommandFactory>::command();
        if let Some(d) = prompt_guard::check(&prompt, &root, session.given().is_some()) {
            // The refusal repeats the prompt's words: every credential smith
            // can see is registered first, so that none is ever shown.
            let _ = smith_host::secrets::process_registry();
            report::diagnostic(&d);
            return ExitCode::from(2);
        }
    }
    let piped = !std::io::stdin().is_terminal();
    let text = if prompt.len() == 1 && prompt[0] == "-" {
        // `smith -`: the prompt is standard input, read by eval.
        Some("-".to_owned())
    } else if !prompt.is_empty() {
        let mut text = prompt.join(" ");
        if piped {
            match cmd::eval::read_stdin("piped to smith with a prompt", STDIN_NEXT) {
                Ok(input) if input.trim().is_empty() => {}
                Ok(input) => {
                    text.push_str("\n\n");
                    text.push_str(&input);
                }
                Err(err) => return exit_code(Err(err)),
            }
        }
        Some(text)
    } else if piped {
        match cmd::eval::read_stdin("piped to smith without a prompt", STDIN_NEXT) {
            Ok(input) if input.trim().is_empty() => None,
            Ok(input) => Some(input),
            Err(err) => return exit_code(Err(err)),
        }
    } else {
        None
    };
    if let Some(text) = text {
        let reference = match session_for_prompt(&session) {
            Ok(reference) => reference,
            Err(err) => return exit_code(Err(err)),
        };
        return exit_code(cmd::eval::run_prompt(text, provider, reference));
    }
    if !piped && std::io::stdout().is_terminal() {
        let continue_latest = session.latest();
        return exit_code(cmd::tui::run(cmd::tui::Args {
            choice: provider,
            session: session.reference().map(str::to_owned),
            continue_latest,
            ..cmd::tui::Args::default()
        }));
    }
    let given = session.given().or(provider
        .provider
        .as_ref()
        .map(|_| "--provider")
        .or(provider.model.as_ref().map(|_| "--model"))
        .or(provider.base_url.as_ref().map(|_| "--base-url"))
        .or(provider.thinking.as_ref().map(|_| "--thinking"))
        .or(provider.plan.then_some("--plan")));
    if let Some(flag) = given {
        report::diagnostic(
            &smith_diag::Diagnostic::error(
                "cli.nothing-to-run",
                format!("smith {flag} was given nothing to run"),
                "there is no prompt, standard input brought no text, and standard input and output are not both a terminal, so the interface cannot open",
                format!(
                    "give a prompt after the options (`smith {flag} ... fix the tests`), pipe one in, or run smith on a terminal to open the interface"
                ),
            )
            .with_surface(smith_diag::Surface::flag(flag)),
        );
        return ExitCode::from(2);
    }
    print_overview()
}

/// What to do when standard input, which is not a terminal, cannot be
/// read as text to go with the prompt.
const STDIN_NEXT: &str = "pipe UTF-8 text that ends; when nothing is meant to be piped, give smith no standard input (`smith fix the tests < /dev/null`)";

/// Whether the `len` words of the prompt follow `--` on the command line
/// (`smith -- sesion list`): then they are a prompt whatever they look like.
fn prompt_forced(len: usize) -> bool {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    raw.len() > len && raw[raw.len() - len - 1] == "--"
}

/// The session a prompt runs on: the one `--session` or `--resume REF`
/// names, or the most recently changed one for `-c` and `--resume`;
/// `None` for a new session.
///
/// # Errors
///
/// When the latest session is asked for and there is none, or the session
/// store cannot be read.
fn session_for_prompt(flags: &SessionFlags) -> anyhow::Result<Option<String>> {
    if let Some(reference) = flags.reference() {
        return Ok(Some(reference.to_owned()));
    }
    if !flags.latest() {
        return Ok(None);
    }
    let root = smith_host::settings::session_root()?;
    let store = smith_store::Store::open(&root)?;
    match store.latest()? {
        Some(info) => Ok(Some(info.id.to_hex())),
        None => Err(smith_diag::Diagnostic::error(
            "cli.nothing-to-continue",
            format!(
                "there is no session to continue ({})",
                flags.given().unwrap_or("--continue")
            ),
            format!(
                "the session store {} holds no session, and a prompt meant to follow an earlier conversation would be sent without it",
                root.display()
            ),
            "run the prompt without --continue to start a new session",
        )
        .with_surface(smith_diag::Surface::flag(flags.given().unwrap_or("--continue")))
        .into()),
    }
}

/// Turns a command's result into the process exit status, reporting an error
/// on standard error.
fn exit_code(result: anyhow::Result<u8>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        // The reader of standard output went away (`smith session dump |
        // head`): the command ends quietly, with the status a process
        // ended by SIGPIPE has (smith ignores the signal so that no run is
        // ever cut short by it).
        Err(_) if report::stdout_pipe_is_closed() => ExitCode::from(report::SIGPIPE_STATUS),
        Err(err) => {
            report::error(&err);
            ExitCode::from(1)
        }
    }
}

/// Prints the command overview (used when smith is not on a terminal).
fn print_overview() -> ExitCode {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    match cmd.print_help() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("smith: could not write the help text to standard output: {err}");
            ExitCode::from(1)
        }
    }
}
