//! `smith rpc`: JSON-RPC 2.0 over standard input and output (see
//! `docs/rpc.md` and the `smith_rpc::rpc` module).
//!
//! The first runtime records into a new session (named with `--name`, else
//! `rpc-<time>`) or continues `--session REF`. Standard output carries
//! protocol records only; diagnostics go to standard error.
//!
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT abort the running run (as `abort`
//! does), wait for its end to be recorded, print how to continue the
//! session on standard error and exit with 128 plus the signal's number.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use smith_engine::journal::store::StoreJournal;
use smith_engine::provider::HostTransport;
use smith_host::extensions::{Asker, Headless};
use smith_host::{
    Extensions, Live, LiveProviders, RuntimeOptions, SessionChoice, choose_provider, mock,
};
use smith_plugins::hooks::Frontend;
use smith_rpc::{Output, RpcServer};

/// Serve JSON-RPC 2.0 on standard input and output.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The provider, model and base URL.
    #[command(flatten)]
    pub choice: super::eval::ProviderChoice,
    /// Play this script with the mock provider (see docs/mock-provider.md); it restarts with each runtime.
    #[arg(long, value_name = "FILE")]
    pub mock_script: Option<PathBuf>,
    /// Write every request the mock provider receives to FILE as JSON Lines.
    #[arg(long, value_name = "FILE")]
    pub mock_record: Option<PathBuf>,
    /// Continue this session (a name, an id or a unique id prefix).
    #[arg(long, value_name = "REF", conflicts_with = "name")]
    pub session: Option<String>,
    /// Name the first session (default: rpc-<time>).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Stop each run after this many turns.
    #[arg(long, value_name = "N", value_parser = super::eval::turn_count)]
    pub max_turns: Option<u32>,
    /// Work in this directory instead of the current one (as if smith were started there: its project's configuration, trust and plugins apply).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Run without extension plugins (built-in, user and project).
    #[arg(long)]
    pub no_plugins: bool,
    /// How much tools may do without asking: read-only, ask, workspace or full (default: workspace; ask asks the client with ui_question; see docs/security.md).
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "ask", "workspace", "full"])]
    pub approval: Option<String>,
}

/// Runs the server until standard input ends or `shutdown` is called.
///
/// # Errors
///
/// When the first runtime cannot start, or standard input or output fail.
pub fn run(mut args: Args) -> anyhow::Result<u8> {
    if let Some(code) = args.choice.apply(args.no_plugins) {
        return Ok(code);
    }
    let cwd = match args.cwd.clone() {
        Some(dir) => super::enter_cwd(&dir, [&mut args.mock_script, &mut args.mock_record])?,
        None => std::env::current_dir()
            .context("could not read the current directory; pass --cwd DIR")?,
    };
    if let Some(code) = args.choice.settle(args.no_plugins) {
        return Ok(code);
    }
    smith_host::catalog::start_background_refresh();
    let live = live_providers(
        args.mock_script.clone(),
        args.mock_record.clone(),
        &args.choice,
    )?;
    // Standard output carries the responses, the notifications and the
    // extensions' questions (`ui_question`), one record per line.
    let out = Output::new(std::io::stdout());
    let questions = out.clone();
    let asker = Asker(Arc::new(move |plugin, intent| {
        // A client that went away cannot answer; the server notices the
        // closed output itself.
        let _ = questions.notify("ui_question", ui_question(plugin, intent));
    }));
    let approval = smith_host::settings::approval_mode(
        smith_host::settings::config()?,
        args.approval.as_deref(),
        smith_engine::approval::Approval::Workspace,
    );
    let options = RuntimeOptions {
        approval: smith_engine::approval::ApprovalCell::new(approval),
        model: args.choice.model,
        max_turns: args.max_turns,
        extensions: (!args.no_plugins).then(|| {
            Extensions(Arc::new(move |journal: &Arc<StoreJournal>| {
                Box::new(Headless {
                    name: "rpc",
                    journal: Some(Arc::clone(journal)),
                    asker: Some(asker.clone()),
                }) as Box<dyn Frontend>
            }))
        }),
        ..RuntimeOptions::new(live, cwd, smith_host::settings::session_root()?)
    };
    let choice = match args.session {
        Some(reference) => SessionChoice::Open(reference),
        None => SessionChoice::New(Some(
            args.name
                .unwrap_or_else(|| format!("rpc-{}", smith_store::now_ms())),
        )),
    };
    let server = RpcServer::new(options, &choice, out)?;
    // SIGINT, SIGTERM, SIGHUP and SIGQUIT abort the running run as the
    // `abort` method does, wait for it to be recorded, and exit with 128
    // plus the signal's number.
    let interrupter = server.interrupter();
    let watcher = crate::signals::end_on_signal(
        move || interrupter.end(smith_tui::signals::GRACE),
        |name| format!("smith rpc --session {name}"),
    );
    let served = server.serve(std::io::stdin().lock());
    crate::signals::finish(watcher);
    served.context("standard input or output failed; the client may have gone away")?;
    Ok(0)
}

/// The providers a server's runtimes use (`smith rpc`, `smith acp`).
pub(crate) fn live_providers(
    mock_script: Option<PathBuf>,
    mock_record: Option<PathBuf>,
    choice: &super::eval::ProviderChoice,
) -> anyhow::Result<LiveProviders> {
    // A mock script or recording, or `--provider mock`, means the scripted
    // provider (the smith/mock plugin, started afresh with each runtime so
    // its script plays from the start); otherwise the provider is chosen as
    // for `smith eval`, once now (so a bad choice fails before serving) and
    // afresh for each runtime.
    let scripted = mock_script.is_some()
        || mock_record.is_some()
        || choice.provider.as_deref() == Some("mock");
    if scripted {
        let (script, record) = (mock_script, mock_record);
        let build = move || -> anyhow::Result<Live> {
            Ok(Live {
                provider: mock::provider(script.as_deref(), record.as_deref())?,
                transport: Arc::new(HostTransport),
                model: None,
            })
        };
        // A bad script fails before serving, like a bad provider choice.
        Ok(first_then(build()?, build))
    } else {
        let super::eval::ProviderChoice {
            provider,
            model,
            base_url,
            thinking,
            plan: _,
            agent: _,
        } = choice.clone();
        let choose = move || {
            choose_provider(
                provider.as_deref(),
                model.as_deref(),
                base_url.as_deref(),
                thinking.as_deref(),
                || mock::provider(None, None),
            )
        };
        let first = choose()?;
        if let Some(note) = &first.note {
            eprintln!("{note}");
            smith_diag::log::note(smith_diag::log::Level::Info, "provider.chosen", note);
        }
        // The first runtime takes the provider chosen above; later ones
        // choose afresh.
        Ok(first_then(first.live, move || {
            choose().map(|chosen| chosen.live)
        }))
    }
}

/// Providers for the server's runtimes: `first` for the first, then one
/// from `build` for each later runtime (`smith acp` starts one per
/// session the same way).
pub(crate) fn first_then(
    first: Live,
    build: impl Fn() -> anyhow::Result<Live> + Send + Sync + 'static,
) -> LiveProviders {
    let first = Mutex::new(Some(first));
    LiveProviders(Arc::new(move || {
        let ready = first.lock().ok().and_then(|mut f| f.take());
        match ready {
            Some(live) => Ok(live),
            None => build(),
        }
    }))
}

/// The params of a `ui_question` notification: the plugin, the question's
/// id and kind, its prompt, and for `select` its options (text plain).
fn ui_question(plugin: &str, intent: &smith_plugins::extension::UiIntent) -> serde_json::Value {
    use smith_plugins::extension::IntentKind;
    let (prompt, options) = match &intent.kind {
        IntentKind::Select((prompt, options)) => (prompt.as_str(), Some(options)),
        IntentKind::Confirm(prompt) | IntentKind::Input(prompt) => (prompt.as_str(), None),
        _ => ("", None),
    };
    let mut params = serde_json::json!({
        "plugin": plugin,
        "id": intent.id,
        "kind": smith_plugins::dispatch::kind_name(&intent.kind),
        "prompt": prompt,
    });
    if let Some(options) = options {
        params["options"] = serde_json::json!(options);
    }
    params
}
