//! `smith acp`: the Agent Client Protocol over standard input and output
//! (see `docs/acp.md` and the `smith_rpc::acp` module), for editors such
//! as Zed.
//!
//! Each ACP session records into a smith session of its own (new ones
//! are named `acp-<time>`), working in the directory the editor names.
//! Standard output carries protocol records only; diagnostics go to
//! standard error.
//!
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT abort the running prompts (as
//! `session/cancel` does), wait for their end to be recorded, print how
//! to continue the session on standard error and exit with 128 plus the
//! signal's number.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use smith_engine::journal::store::StoreJournal;
use smith_host::extensions::Headless;
use smith_host::{Extensions, RuntimeOptions};
use smith_plugins::hooks::Frontend;
use smith_rpc::{AcpServer, Output};

/// Serve the Agent Client Protocol on standard input and output.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The provider, model and base URL.
    #[command(flatten)]
    pub choice: super::eval::ProviderChoice,
    /// Play this script with the mock provider (see docs/mock-provider.md); it restarts with each session.
    #[arg(long, value_name = "FILE")]
    pub mock_script: Option<PathBuf>,
    /// Write every request the mock provider receives to FILE as JSON Lines.
    #[arg(long, value_name = "FILE")]
    pub mock_record: Option<PathBuf>,
    /// Stop each prompt's run after this many turns (the prompt answers max_turn_requests).
    #[arg(long, value_name = "N", value_parser = super::eval::turn_count)]
    pub max_turns: Option<u32>,
    /// Run without extension plugins (built-in, user and project); nothing asks for permission then.
    #[arg(long)]
    pub no_plugins: bool,
    /// How much tools may do without asking: read-only, ask, workspace or full (default: ask; ask sends session/request_permission to the editor; see docs/security.md).
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "ask", "workspace", "full"])]
    pub approval: Option<String>,
}

/// Runs the server until standard input ends.
///
/// # Errors
///
/// When the provider or the settings cannot be set up, or standard input
/// or output fail.
pub fn run(mut args: Args) -> anyhow::Result<u8> {
    if let Some(code) = args.choice.apply(args.no_plugins) {
        return Ok(code);
    }
    if let Some(code) = args.choice.settle(args.no_plugins) {
        return Ok(code);
    }
    let cwd = std::env::current_dir().context(
        "could not read the current directory; start smith acp from an existing directory",
    )?;
    for path in [&mut args.mock_script, &mut args.mock_record]
        .into_iter()
        .flatten()
    {
        // Sessions work in the directories the editor names; a relative
        // script or record path means the directory smith started in.
        if path.is_relative() {
            *path = cwd.join(&*path);
        }
    }
    smith_host::catalog::start_background_refresh();
    let live = super::rpc::live_providers(
        args.mock_script.clone(),
        args.mock_record.clone(),
        &args.choice,
    )?;
    let approval = smith_host::settings::approval_mode(
        smith_host::settings::config()?,
        args.approval.as_deref(),
        smith_engine::approval::Approval::Ask,
    );
    let options = RuntimeOptions {
        model: args.choice.model,
        max_turns: args.max_turns,
        extensions: (!args.no_plugins).then(|| {
            Extensions(Arc::new(move |journal: &Arc<StoreJournal>| {
                Box::new(Headless {
                    name: "acp",
                    journal: Some(Arc::clone(journal)),
                    asker: None,
                }) as Box<dyn Frontend>
            }))
        }),
        ..RuntimeOptions::new(live, cwd, smith_host::settings::session_root()?)
    };
    let server = AcpServer::new(options, approval, Output::new(std::io::stdout()));
    let interrupter = server.interrupter();
    let watcher = crate::signals::end_on_signal(
        move || interrupter.end(smith_tui::signals::GRACE),
        |name| format!("smith --session {name}"),
    );
    let served = server.serve(std::io::stdin().lock());
    crate::signals::finish(watcher);
    served.context("standard input or output failed; the editor may have gone away")?;
    Ok(0)
}
