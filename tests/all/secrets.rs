//! Secrets are removed before remote dispatch: a credential smith can see
//! (an API-key environment variable, an auth store entry) that reaches the
//! conversation — through a file the `read` tool reads, a bash command's
//! output or a provider error body that echoes it — never appears in what
//! the provider received (the `--mock-record` log), the session file's
//! bytes, `smith eval --json` output or `smith session dump` output. Its
//! placeholder `{secret:NAME}` does.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Set as `OPENAI_API_KEY` in smith's environment.
const ENV_KEY: &str = "sk-proj-PLANTEDenv0123456789abcdefXYZ";
/// Stored in the auth store as `anthropic.api_key`.
const STORED_KEY: &str = "sk-ant-api03-PLANTEDstore0123456789abc";

fn smith(home: &Path, work: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env("OPENAI_API_KEY", ENV_KEY)
        .current_dir(work)
        .args(args)
        .output()
        .unwrap()
}

/// A home whose auth store holds `STORED_KEY`, and a project whose `.env`
/// holds both keys.
fn setup() -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let auth = data.join("auth.json");
    std::fs::write(
        &auth,
        format!(
            r#"{{"version":1,"credentials":{{"anthropic":{{"api_key":{{"kind":"api-key","key":"{STORED_KEY}"}}}}}}}}"#
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join(".env"),
        format!("OPENAI_API_KEY={ENV_KEY}\nANTHROPIC_API_KEY={STORED_KEY}\n"),
    )
    .unwrap();
    (home, work)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fn assert_clean(what: &str, bytes: &[u8]) {
    for secret in [ENV_KEY, STORED_KEY] {
        assert!(
            !contains(bytes, secret),
            "{what} contains the planted secret {secret}:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

fn session_file(home: &Path) -> PathBuf {
    let dir = home.join("data").join("sessions");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "smith"))
        .unwrap_or_else(|| panic!("no session file in {}", dir.display()))
}

/// Runs `script` in `smith eval --json` with a request log and a named
/// session, then checks every place a secret must not reach: the request
/// log, the session file, the JSON output (and standard error) and the
/// session dump. `placeholder_in` names the places that must show the
/// placeholders instead (proof that the secret got that far, redacted).
fn run_and_check(script: &str, expect_exit: i32, placeholder_in: &[&str]) {
    let (home, work) = setup();
    let script_path = work.path().join("script.json");
    std::fs::write(&script_path, script).unwrap();
    let log = work.path().join("requests.jsonl");
    let out = smith(
        home.path(),
        work.path(),
        &[
            "eval",
            "--json",
            "--name",
            "planted",
            "--mock-script",
            script_path.to_str().unwrap(),
            "--mock-record",
            log.to_str().unwrap(),
            "show me the credentials",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(expect_exit),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = std::fs::read(&log).unwrap();
    let session = std::fs::read(session_file(home.path())).unwrap();
    let dump = smith(home.path(), work.path(), &["session", "dump", "planted"]);
    assert_eq!(
        dump.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let places: [(&str, &[u8]); 5] = [
        ("the provider request log", &requests),
        ("the session file", &session),
        ("the eval --json output", &out.stdout),
        ("eval's standard error", &out.stderr),
        ("the session dump", &dump.stdout),
    ];
    // What was registered is recorded (name and fingerprint), once.
    let dump_text = String::from_utf8_lossy(&dump.stdout);
    let registrations: Vec<&str> = dump_text
        .lines()
        .filter(|l| l.contains(r#""kind":"secret_registration""#))
        .collect();
    assert_eq!(registrations.len(), 2, "{dump_text}");
    assert!(registrations[0].contains(r#""name":"openai.api_key""#));
    assert!(registrations[0].contains(r#""source":"env:OPENAI_API_KEY""#));
    assert!(registrations[0].contains(r#""fingerprint":"hmac-sha256:"#));
    assert!(registrations[1].contains(r#""name":"anthropic.api_key""#));
    for (what, bytes) in places {
        assert_clean(what, bytes);
        if placeholder_in.contains(&what) {
            for placeholder in ["{secret:openai.api_key}", "{secret:anthropic.api_key}"] {
                assert!(
                    contains(bytes, placeholder),
                    "{what} lacks {placeholder}:\n{}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
    }
}

const EVERYWHERE: &[&str] = &[
    "the provider request log",
    "the session file",
    "the eval --json output",
    "the session dump",
];

#[test]
fn a_secret_in_a_file_the_read_tool_reads_is_replaced_by_its_placeholder() {
    run_and_check(
        r#"[
            [{"tool_call": {"id": "c1", "name": "read", "arguments": {"path": ".env"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "done"}, {"stop": {"reason": "end"}}]
        ]"#,
        0,
        EVERYWHERE,
    );
}

#[test]
fn a_secret_in_bash_output_is_replaced_by_its_placeholder() {
    run_and_check(
        r#"[
            [{"tool_call": {"id": "c1", "name": "bash", "arguments": {"command": "cat .env; printf '%s' \"$OPENAI_API_KEY\""}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "done"}, {"stop": {"reason": "end"}}]
        ]"#,
        0,
        EVERYWHERE,
    );
}

#[test]
fn a_provider_error_body_that_echoes_a_key_is_redacted_before_it_is_shown_or_stored() {
    // The body as a vendor sends it: the key inside a JSON string.
    let body = format!(
        r#"HTTP 401 Unauthorized: {{"error":{{"message":"Incorrect API key provided: {ENV_KEY}. Also tried {STORED_KEY}.","type":"invalid_request_error"}}}}"#
    );
    let script = serde_json::json!([[{"error": {"kind": "auth", "message": body}}]]).to_string();
    run_and_check(
        &script,
        1,
        &[
            "the session file",
            "the eval --json output",
            "the session dump",
        ],
    );
}

#[test]
fn the_rpc_server_streams_placeholders_not_secrets() {
    use std::io::Write as _;
    use std::process::Stdio;
    let (home, work) = setup();
    let script_path = work.path().join("script.json");
    std::fs::write(
        &script_path,
        r#"[
            [{"tool_call": {"id": "c1", "name": "bash", "arguments": {"command": "cat .env"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "done"}, {"stop": {"reason": "end"}}]
        ]"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env("OPENAI_API_KEY", ENV_KEY)
        .current_dir(work.path())
        .args(["rpc", "--mock-script"])
        .arg(&script_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":2,"method":"prompt","params":{"text":"show me"}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":3,"method":"wait_settled","params":{}}"#,
                "\n"
            )
            .as_bytes(),
        )
        .unwrap();
    // Everything up to the answer to wait_settled, then end the session.
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut stdout_bytes = Vec::new();
    loop {
        let mut line = Vec::new();
        let read = std::io::BufRead::read_until(&mut reader, b'\n', &mut line).unwrap();
        stdout_bytes.extend_from_slice(&line);
        if read == 0 || contains(&line, r#""id":3"#) {
            break;
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let out = Output {
        stdout: stdout_bytes,
        ..out
    };
    assert_clean("the rpc output", &out.stdout);
    assert_clean("rpc's standard error", &out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("tool_execution_end"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for placeholder in ["{secret:openai.api_key}", "{secret:anthropic.api_key}"] {
        assert!(stdout.contains(placeholder), "{stdout}");
    }
}

#[test]
fn registrations_are_recorded_once_across_resumes_under_a_private_key() {
    let (home, work) = setup();
    let script_path = work.path().join("script.json");
    std::fs::write(
        &script_path,
        r#"[[{"text": "ok"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    let script = script_path.to_str().unwrap();
    let first = smith(
        home.path(),
        work.path(),
        &["eval", "--name", "twice", "--mock-script", script, "one"],
    );
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let second = smith(
        home.path(),
        work.path(),
        &["eval", "--session", "twice", "--mock-script", script, "two"],
    );
    assert_eq!(second.status.code(), Some(0), "{second:?}");
    let dump = smith(home.path(), work.path(), &["session", "dump", "twice"]);
    let dump = String::from_utf8_lossy(&dump.stdout);
    let registrations = dump
        .lines()
        .filter(|l| l.contains(r#""kind":"secret_registration""#))
        .count();
    assert_eq!(registrations, 2, "{dump}");
    let key = home.path().join("data").join("secrets.key");
    let text = std::fs::read_to_string(&key).unwrap();
    assert_eq!(text.trim().len(), 64, "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
