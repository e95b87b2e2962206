//! test/probe: an extension guest that exercises the host effects and the
//! safe-point rules for the host's tests.
//!
//! Commands: `read PATH` (read-file), `get URL` (http-request GET),
//! `get-spin URL` (http-request GET, then spin ignoring cancellation: an
//! effect completed inside a call that is then stopped), `intent KIND
//! POLICY` (one UI intent), `model ID` (set-model).
//! Handlers: a `message-update` returns a `send-message` action with the
//! piece (so a test can see it is held until a safe point); an `input` of
//! exactly `spin` spins ignoring cancellation; an `error` event is logged
//! at error level.

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::host;

struct Probe;

fn effect_error(err: host::EffectError) -> String {
    match err {
        host::EffectError::Denied(m) => format!("denied: {m}"),
        host::EffectError::Invalid(m) => format!("invalid: {m}"),
        host::EffectError::Failed(m) => format!("failed: {m}"),
    }
}

fn notify(text: String) -> ext::Action {
    ext::Action::Ui(ext::UiIntent {
        id: String::new(),
        kind: ext::IntentKind::Notify(text),
        policy: ext::IntentPolicy::Drop,
    })
}

impl ext::Guest for Probe {
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

    fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> {
        match name.as_str() {
            "read" => {
                let bytes = host::read_file(&argument).map_err(effect_error)?;
                Ok(vec![notify(String::from_utf8_lossy(&bytes).into_owned())])
            }
            "get" => {
                let response = host::http_request(
                    "GET",
                    &argument,
                    &[("x-probe".to_owned(), "1".to_owned())],
                    &[],
                )
                .map_err(effect_error)?;
                Ok(vec![notify(format!(
                    "{} {}",
                    response.status,
                    String::from_utf8_lossy(&response.body)
                ))])
            }
            "intent" => {
                let (kind, policy) = argument.split_once(' ').unwrap_or((&argument, "drop"));
                let kind = match kind {
                    "notify" => ext::IntentKind::Notify("hello \u{1b}[31mred".to_owned()),
                    "confirm" => ext::IntentKind::Confirm("Proceed?".to_owned()),
                    "select" => ext::IntentKind::Select((
                        "Pick".to_owned(),
                        vec!["a".to_owned(), "b".to_owned()],
                    )),
                    "progress" => ext::IntentKind::Progress(("build".to_owned(), 425)),
                    other => return Err(format!("unknown intent kind {other}")),
                };
                let policy = match policy {
                    "drop" => ext::IntentPolicy::Drop,
                    "text" => ext::IntentPolicy::Text,
                    "refuse" => ext::IntentPolicy::Refuse,
                    "persist" => ext::IntentPolicy::Persist,
                    other => return Err(format!("unknown policy {other}")),
                };
                Ok(vec![ext::Action::Ui(ext::UiIntent {
                    id: format!("q-{}", argument.replace(' ', "-")),
                    kind,
                    policy,
                })])
            }
            "model" => Ok(vec![ext::Action::SetModel(argument)]),
            "get-spin" => {
                let response = host::http_request("GET", &argument, &[], &[]);
                let _ = std::hint::black_box(response);
                spin()
            }
            other => Err(format!("test/probe has no command {other}")),
        }
    }

    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        match event {
            ext::LifecycleEvent::MessageUpdate(piece) => {
                ext::HandlerResult::Actions(vec![ext::Action::SendMessage(piece)])
            }
            ext::LifecycleEvent::Error(message) => {
                host::error(&message);
                ext::HandlerResult::None
            }
            ext::LifecycleEvent::Input(text) if text == "spin" => spin(),
            _ => ext::HandlerResult::None,
        }
    }
}

/// Runs until the host stops it, never looking at cancellation.
fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

smith_plugin_sdk::extension::export_extension!(Probe);
