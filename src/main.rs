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
mod report;
mod settings;
mod signals;

/// Every allocation in the process is charged to a lifetime scope.
#[global_allocator]
static GLOBAL: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();

/// smith: a fast coding-agent harness.
///
/// With no arguments on a terminal smith opens the fullscreen interface; with
/// a prompt (`smith "fix the tests"`) it runs that prompt as `smith eval` does.
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

    /// A prompt to run without the TUI, as `smith eval PROMPT` does (`-` reads it from standard input).
    #[arg(value_name = "PROMPT", trailing_var_arg = true)]
    prompt: Vec<String>,

    #[command(flatten)]
    provider: cmd::eval::ProviderChoice,
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
    /// Manage stored sessions: list, info, dump, import, fork, rename, delete, prune, repair.
    Session(cmd::session::Args),
    /// Run one prompt without the TUI: `eval "prompt" [--json] [--session REF | --no-session] [--provider P] [--model M] [--base-url URL]`.
    #[command(alias = "run")]
    Eval(cmd::eval::Args),
    /// Start the fullscreen interface: `tui [--session REF | --continue] [--provider P] [--model M]`.
    Tui(cmd::tui::Args),
    /// List the model catalog: `models [--provider P] [--json] [--sources] [--resolve NAME]`.
    Models(cmd::models::Args),
    /// Manage credentials: `auth set PROVIDER` (value from stdin or a hidden prompt), `status`, `check PROVIDER`, `logout PROVIDER`.
    Auth(cmd::auth::Args),
    /// Manage the secrets smith redacts: `secret add NAME [--allow TOOL]` (value from stdin or a hidden prompt), `list`, `remove NAME`.
    Secret(cmd::secret::Args),
    /// Serve JSON-RPC 2.0 on standard input and output: sessions, prompts, queues, streamed events.
    Rpc(cmd::rpc::Args),
    /// Serve the Model Context Protocol on stdio: built-in tools, sessions as resources.
    Mcp(cmd::mcp::Args),
    /// Checkpoints of the project around each write, edit and bash call: `checkpoint list | turns | diff [FROM [TO]] | undo [fx-N | --turn N] | redo [fx-N | --turn N] | restore ID|fx-N | rewind TURN|@ENTRY [--force] [--dry-run]`.
    Checkpoint(cmd::checkpoint::Args),
    /// Play a recorded session back without a provider: `replay REF [--speed N | --realtime | --instant] [--turns A..B] [--compare] [--json]`.
    Replay(cmd::replay::Args),
    /// Manage plugins: `plugin list | info NAME | install PATH | uninstall NAME | enable NAME | disable NAME | reload NAME`.
    Plugin(cmd::plugin::Args),
    /// Print help: `help COMMAND...` for a command, `help plugins [ITEM]` for the plugin contract.
    Help(cmd::help::Args),
}

fn main() -> ExitCode {
    // Nothing is loaded or opened here: the log decides its level and file
    // when the first line is written.
    smith_diag::log::install(smith_host::settings::process_log_settings);
    let cli = report::parse_cli::<Cli>();
    let Some(command) = cli.command else {
        return run_default(cli.prompt, cli.provider);
    };
    let result: anyhow::Result<u8> = match command {
        Command::Bench(args) => cmd::bench::run(args),
        Command::Config(args) => cmd::config::run(args),
        Command::Context(args) => cmd::context::run(args),
        Command::Trust(args) => cmd::trust::run(args),
        Command::Sandbox(args) => cmd::sandbox::run(args),
        Command::Session(args) => cmd::session::run(args),
        Command::Eval(args) if args.json => return report::exit_json(cmd::eval::run(args)),
        Command::Eval(args) => cmd::eval::run(args),
        Command::Tui(args) => cmd::tui::run(args),
        Command::Models(args) => cmd::models::run(args),
        Command::Auth(args) => cmd::auth::run(args),
        Command::Secret(args) => cmd::secret::run(args),
        Command::Rpc(args) => cmd::rpc::run(args),
        Command::Mcp(args) => cmd::mcp::run(args),
        Command::Checkpoint(args) => cmd::checkpoint::run(args),
        Command::Replay(args) => cmd::replay::run(args),
        Command::Plugin(args) => cmd::plugin::run(args),
        Command::Help(args) => cmd::help::run(args, <Cli as clap::CommandFactory>::command()),
    };
    exit_code(result)
}

/// With no subcommand: a prompt runs as `smith eval` does; otherwise the
/// fullscreen interface opens when standard input and output are a terminal,
/// and the command overview is printed when they are not.
fn run_default(prompt: Vec<String>, provider: cmd::eval::ProviderChoice) -> ExitCode {
    use std::io::IsTerminal;
    let result = if !prompt.is_empty() {
        cmd::eval::run_prompt(prompt.join(" "), provider)
    } else if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        cmd::tui::run(cmd::tui::Args::default())
    } else {
        return print_overview();
    };
    exit_code(result)
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
        Err(_) if stdout_pipe_is_closed() => ExitCode::from(128 + libc::SIGPIPE as u8),
        Err(err) => {
            report::error(&err);
            ExitCode::from(1)
        }
    }
}

/// Whether standard output is a pipe whose reading end is closed.
fn stdout_pipe_is_closed() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: polls one valid pollfd without waiting.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready == 1 && fd.revents & libc::POLLERR != 0
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
