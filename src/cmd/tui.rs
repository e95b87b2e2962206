//! `smith tui` (and `smith` with no subcommand on a terminal): the
//! fullscreen interface over the agent runtime. The arguments are turned
//! into [`smith_interface::Args`]; the interface itself is
//! [`smith_interface::run`].

use std::path::PathBuf;

use super::eval::ProviderChoice;

/// Start the fullscreen interface.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// The provider, model and base URL.
    #[command(flatten)]
    pub choice: ProviderChoice,
    /// Play this script with the mock provider (see docs/mock-provider.md).
    #[arg(long, value_name = "FILE")]
    pub mock_script: Option<PathBuf>,
    /// Resume this session (a name, an id or a unique id prefix).
    #[arg(long, value_name = "REF", conflicts_with = "continue_latest")]
    pub session: Option<String>,
    /// Continue the most recently changed session.
    #[arg(long = "continue", short = 'c')]
    pub continue_latest: bool,
    /// Work in this directory instead of the current one (as if smith were started there: its project's configuration, trust and plugins apply).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Run without extension plugins' hooks (the interface's own product
    /// still comes from smith/product).
    #[arg(long)]
    pub no_plugins: bool,
    /// How much tools may do without asking: read-only, ask, workspace or full (default: ask; see docs/security.md).
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "ask", "workspace", "full"])]
    pub approval: Option<String>,
}

/// Runs the interface until the user quits.
///
/// # Errors
///
/// When there is no terminal, or the provider, working directory or session
/// store cannot be set up.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let Args {
        mut choice,
        mut mock_script,
        session,
        continue_latest,
        cwd,
        no_plugins,
        approval,
    } = args;
    if let Some(code) = choice.apply(no_plugins) {
        return Ok(code);
    }
    let cwd = match cwd {
        Some(dir) => Some(super::enter_cwd(&dir, [&mut mock_script])?),
        None => None,
    };
    if let Some(code) = choice.settle(no_plugins) {
        return Ok(code);
    }
    smith_interface::run(smith_interface::Args {
        choice: smith_interface::ProviderChoice {
            provider: choice.provider,
            model: choice.model,
            base_url: choice.base_url,
            thinking: choice.thinking,
        },
        mock_script,
        session,
        continue_latest,
        cwd,
        no_plugins,
        approval,
    })
}
