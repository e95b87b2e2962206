//! test/probe: an extension guest that exercises the host effects and the
//! safe-point rules for the host's tests.
//!
//! Commands: `read PATH` (read-file), `ls PATH` (list-dir), `write
//! PATH<US>BYTES` (write-file), `edit PATH<US>OLD<US>NEW` (edit-file),
//! `run TIMEOUT-MS<US>CWD<US>STDIN<US>PROGRAM<US>ARGS...` (run-process),
//! `session OFFSET LIMIT` (session-entries), where `<US>` is the unit
//! separator U+001F; `get URL` (http-request GET),
//! `get-spin URL` (http-request GET, then spin ignoring cancellation: an
//! effect completed inside a call that is then stopped), `get-auth
//! URL<US>VALUE` (http-request GET with VALUE as its authorization header),
//! `secret HANDLE` (secret-available), `register-secret VALUE`, `snapshot
//! LABEL` (vcs-snapshot), `diff FROM<US>TO` (vcs-diff), `restore ID`
//! (vcs-restore), `intent KIND
//! POLICY` (one UI intent), `model ID` (set-model).
//! Handlers: a `message-update` returns a `send-message` action with the
//! piece (so a test can see it is held until a safe point); an `input` of
//! exactly `spin` spins ignoring cancellation; an `error` event is logged
//! at error level.

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::host;

struct Probe;

/// Separates the fields of a command's argument.
const US: char = '\u{1f}';

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
            "ls" => {
                let listing = host::list_dir(&argument).map_err(effect_error)?;
                let entries: Vec<String> = listing
                    .entries
                    .iter()
                    .map(|e| {
                        let kind = match e.kind {
                            host::EntryKind::File => "file",
                            host::EntryKind::Dir => "dir",
                            host::EntryKind::Symlink => "symlink",
                            host::EntryKind::Other => "other",
                        };
                        format!("{}:{kind}", e.name)
                    })
                    .collect();
                Ok(vec![notify(format!(
                    "{} truncated={}",
                    entries.join(","),
                    listing.truncated
                ))])
            }
            "write" => {
                let (path, bytes) = argument.split_once(US).unwrap_or((&argument, ""));
                host::write_file(path, bytes.as_bytes()).map_err(effect_error)?;
                Ok(vec![notify(format!("wrote {path}"))])
            }
            "edit" => {
                let mut fields = argument.split(US);
                let path = fields.next().unwrap_or("");
                let old = fields.next().unwrap_or("");
                let new = fields.next().unwrap_or("");
                host::edit_file(path, old, new).map_err(effect_error)?;
                Ok(vec![notify(format!("edited {path}"))])
            }
            "run" => {
                let fields: Vec<&str> = argument.split(US).collect();
                let [timeout, cwd, stdin, program, args @ ..] = fields.as_slice() else {
                    return Err("run TIMEOUT<US>CWD<US>STDIN<US>PROGRAM<US>ARGS...".to_owned());
                };
                let timeout: u32 = timeout
                    .parse()
                    .map_err(|_| format!("bad timeout {timeout}"))?;
                let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
                let out = host::run_process(program, &args, cwd, timeout, stdin.as_bytes())
                    .map_err(effect_error)?;
                let end = match out.end {
                    host::ProcessEnd::Exited(code) => format!("exited {code}"),
                    host::ProcessEnd::Signalled(signal) => format!("signalled {signal}"),
                    host::ProcessEnd::TimedOut => "timed-out".to_owned(),
                    host::ProcessEnd::Cancelled => "cancelled".to_owned(),
                };
                let shown = |bytes: &[u8]| {
                    if bytes.len() <= 4096 {
                        String::from_utf8_lossy(bytes).into_owned()
                    } else {
                        format!("<{} bytes>", bytes.len())
                    }
                };
                Ok(vec![
                    notify(end),
                    notify(format!(
                        "stdout[{}{}]={}",
                        out.stdout.len(),
                        if out.stdout_truncated {
                            ",truncated"
                        } else {
                            ""
                        },
                        shown(&out.stdout)
                    )),
                    notify(format!(
                        "stderr[{}{}]={}",
                        out.stderr.len(),
                        if out.stderr_truncated {
                            ",truncated"
                        } else {
                            ""
                        },
                        shown(&out.stderr)
                    )),
                ])
            }
            "session" => {
                let (offset, limit) = argument.split_once(' ').unwrap_or((&argument, "10"));
                let offset: u64 = offset.parse().map_err(|_| format!("bad offset {offset}"))?;
                let limit: u32 = limit.parse().map_err(|_| format!("bad limit {limit}"))?;
                let entries = host::session_entries(offset, limit).map_err(effect_error)?;
                Ok(entries
                    .into_iter()
                    .map(|e| notify(format!("{}: {}", e.role, e.text)))
                    .collect())
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
            "get-auth" => {
                // `get-auth URL<US>HEADER-VALUE`: the server echoes what it
                // received as the authorization header.
                let (url, value) = argument.split_once(US).unwrap_or((&argument, ""));
                let response = host::http_request(
                    "GET",
                    url,
                    &[("authorization".to_owned(), value.to_owned())],
                    &[],
                )
                .map_err(effect_error)?;
                Ok(vec![notify(format!(
                    "{} {}",
                    response.status,
                    String::from_utf8_lossy(&response.body)
                ))])
            }
            "secret" => {
                let available = host::secret_available(&argument).map_err(effect_error)?;
                Ok(vec![notify(format!("{argument} available={available}"))])
            }
            "register-secret" => {
                host::register_secret(&argument).map_err(effect_error)?;
                Ok(vec![notify("registered".to_owned())])
            }
            "snapshot" => {
                let id = host::vcs_snapshot(&argument).map_err(effect_error)?;
                Ok(vec![notify(id)])
            }
            "diff" => {
                let (from, to) = argument.split_once(US).unwrap_or((&argument, ""));
                let diff = host::vcs_diff(from, to).map_err(effect_error)?;
                Ok(vec![notify(diff.text), notify(format!("truncated={}", diff.truncated))])
            }
            "restore" => {
                let before = host::vcs_restore(&argument).map_err(effect_error)?;
                Ok(vec![notify(before)])
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
