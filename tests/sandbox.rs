//! The sandbox end to end through the built binary, in a home and a
//! project of their own, in the default approval mode (`workspace`): a
//! confined `bash` cannot write outside the project, cannot read a file
//! under `$HOME/.ssh` (its content reaches neither the output nor the
//! session), cannot connect to a listener on 127.0.0.1, and its allowed
//! work (writing in the project and in `TMPDIR`, reading a project file)
//! succeeds; `write` outside the project and `read` of `$HOME/.ssh/...`
//! are refused with the sandbox's diagnostic; `sandbox.network on` lets
//! the connection through; `--approval full` runs the tools without the
//! sandbox; `smith sandbox` reports what is enforced.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

const SECRET: &str = "SSH-KEY-CONTENT-3141";

/// A temporary home (with `~/.ssh/id_test`), a project with `data.txt`,
/// and a folder outside both.
struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    outside: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let home = base.join("home");
    let project = base.join("project");
    let outside = base.join("outside");
    for d in [home.join(".ssh"), project.clone(), outside.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".ssh/id_test"), SECRET).unwrap();
    std::fs::write(project.join("data.txt"), "project data\n").unwrap();
    World {
        _dir: dir,
        home,
        project,
        outside,
    }
}

impl World {
    /// `smith ARGS` in the project with the temporary home, and `env`.
    fn smith(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
        cmd.env("HOME", &self.home)
            .env("SMITH_HOME", self.home.join(".smith"))
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_STATE_HOME")
            .env("NO_COLOR", "1")
            .current_dir(&self.project)
            .args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// Runs a mock turn making `calls` (tool name, arguments), then
    /// answering `done`; the `tool_execution_end` events by call id, and
    /// the whole output.
    fn eval(
        &self,
        name: &str,
        calls: &[(&str, Value)],
        env: &[(&str, &str)],
    ) -> (Vec<Value>, String) {
        self.eval_with(name, calls, env, &[])
    }

    /// [`World::eval`] with extra `eval` flags.
    fn eval_with(
        &self,
        name: &str,
        calls: &[(&str, Value)],
        env: &[(&str, &str)],
        flags: &[&str],
    ) -> (Vec<Value>, String) {
        let mut first: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (tool, args))| {
                json!({"tool_call": {"id": format!("c{i}"), "name": tool, "arguments": args}})
            })
            .collect();
        first.push(json!({"stop": {"reason": "tool_use"}}));
        let script = json!([first, [{"text": "done"}, {"stop": {"reason": "end"}}]]);
        let path = self.outside.join(format!("{name}.json"));
        std::fs::write(&path, script.to_string()).unwrap();
        let path = path.display().to_string();
        let mut args = vec!["eval", "--json", "--name", name, "--mock-script", &path];
        args.extend_from_slice(flags);
        args.push("go");
        let o = self.smith(&args, env);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let ends: Vec<Value> = out
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "tool_execution_end")
            .collect();
        assert_eq!(ends.len(), calls.len(), "{out}\n{err}");
        (ends, format!("{out}\n{err}"))
    }

    /// Everything session `name` recorded, as text.
    fn session_text(&self, name: &str) -> String {
        let o = self.smith(&["session", "dump", name], &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

fn content(end: &Value) -> String {
    match &end["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A listener on 127.0.0.1 that is asked later whether anything connected.
fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

fn connected(l: &TcpListener) -> bool {
    l.accept().is_ok()
}

fn connect_command(port: u16) -> String {
    format!("echo hello > /dev/tcp/127.0.0.1/{port} && echo connected")
}

#[test]
fn a_confined_bash_keeps_to_the_project_and_off_the_network() {
    let w = world();
    let (listener, port) = listener();
    let escaped = w.outside.join("escaped");
    let key = w.home.join(".ssh/id_test");
    let (ends, all) = w.eval(
        "confined",
        &[
            ("bash", json!({"command": format!("echo out > {}", escaped.display())})),
            ("bash", json!({"command": format!("cat {}", key.display())})),
            ("bash", json!({"command": connect_command(port)})),
            (
                "bash",
                json!({"command": "echo in > inside.txt && echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && cat data.txt"}),
            ),
        ],
        &[],
    );
    assert!(!escaped.exists(), "{all}");
    assert!(
        content(&ends[0]).contains("Permission denied"),
        "{}",
        ends[0]
    );
    assert!(!content(&ends[1]).contains(SECRET), "{}", ends[1]);
    assert!(
        content(&ends[1]).contains("Permission denied"),
        "{}",
        ends[1]
    );
    assert!(!content(&ends[2]).contains("connected"), "{}", ends[2]);
    assert!(
        !connected(&listener),
        "the confined command reached the listener"
    );
    let ok = content(&ends[3]);
    assert_eq!(ends[3]["status"], "ok", "{}", ends[3]);
    assert!(ok.contains("tmp\n") && ok.contains("project data"), "{ok}");
    assert_eq!(
        std::fs::read_to_string(w.project.join("inside.txt")).unwrap(),
        "in\n"
    );
    let session = w.session_text("confined");
    assert!(!session.contains(SECRET), "the secret reached the session");
    assert!(!all.contains(SECRET));
}

#[test]
fn the_file_tools_are_refused_outside_the_policy_with_the_diagnostic() {
    let w = world();
    let target = w.outside.join("written.txt");
    let key = w.home.join(".ssh/id_test");
    // A permission rule lets the write outside the project through (the
    // read needs none: read-only tools run): the sandbox still refuses
    // both, since rules decide whether a call runs, not what it may touch.
    let config = w.home.join(".smith");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.kdl"),
        format!(
            "permissions {{\n    allow \"write\" path=\"{}\"\n}}\n",
            target.display()
        ),
    )
    .unwrap();
    let (ends, all) = w.eval(
        "files",
        &[
            (
                "write",
                json!({"path": target.display().to_string(), "content": "x"}),
            ),
            ("read", json!({"path": key.display().to_string()})),
            ("write", json!({"path": "notes.txt", "content": "kept"})),
        ],
        &[],
    );
    assert!(!target.exists(), "{all}");
    let write = content(&ends[0]);
    assert_eq!(ends[0]["status"], "error", "{}", ends[0]);
    assert!(write.contains("is refused by the sandbox"), "{write}");
    assert!(write.contains("beneath no write root"), "{write}");
    assert!(
        write.contains("Next: write inside the project root"),
        "{write}"
    );
    let read = content(&ends[1]);
    assert_eq!(ends[1]["status"], "error", "{}", ends[1]);
    assert!(read.contains("reading"), "{read}");
    assert!(
        read.contains("a secret folder in the home directory"),
        "{read}"
    );
    assert!(read.contains("Next:"), "{read}");
    assert!(!read.contains(SECRET));
    assert_eq!(ends[2]["status"], "ok", "{}", ends[2]);
    assert_eq!(
        std::fs::read_to_string(w.project.join("notes.txt")).unwrap(),
        "kept"
    );
    assert!(!w.session_text("files").contains(SECRET));
}

#[test]
fn approval_full_runs_the_tools_without_the_sandbox() {
    let w = world();
    let escaped = w.outside.join("escaped");
    let target = w.outside.join("written.txt");
    let calls = [
        (
            "bash",
            json!({"command": format!("echo out > {}", escaped.display())}),
        ),
        (
            "write",
            json!({"path": target.display().to_string(), "content": "x"}),
        ),
    ];
    let (ends, all) = w.eval_with("full", &calls, &[], &["--approval", "full"]);
    assert!(escaped.exists(), "{all}");
    // The tools' own roots still hold: `write` stays in the project.
    assert_eq!(ends[1]["status"], "error", "{}", ends[1]);
    assert!(
        !content(&ends[1]).contains("refused by the sandbox"),
        "{}",
        ends[1]
    );
    assert!(
        content(&ends[1]).contains("outside the allowed roots"),
        "{}",
        ends[1]
    );
}

#[test]
fn sandbox_network_on_lets_the_connection_through() {
    let w = world();
    let (listener, port) = listener();
    let escaped = w.outside.join("escaped");
    let (ends, all) = w.eval(
        "network",
        &[
            ("bash", json!({"command": connect_command(port)})),
            (
                "bash",
                json!({"command": format!("echo out > {}", escaped.display())}),
            ),
        ],
        &[("SMITH_SANDBOX_NETWORK", "on")],
    );
    assert!(content(&ends[0]).contains("connected"), "{all}");
    assert!(connected(&listener), "the connection did not arrive");
    // The file rules still hold.
    assert!(!escaped.exists(), "{all}");
}

#[test]
fn smith_sandbox_reports_the_layers_the_paths_and_the_modes() {
    let w = world();
    let extra = w.outside.join("cache");
    std::fs::create_dir_all(&extra).unwrap();
    let env = [
        ("SMITH_SANDBOX_WRITE_PATHS", extra.to_str().unwrap()),
        ("SMITH_SANDBOX_DENY_READ", "~/private"),
    ];
    let o = w.smith(&["sandbox"], &env);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("landlock: ABI"), "{text}");
    assert!(
        text.contains(&format!("{} (the project root)", w.project.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} (a configured write path)", extra.display())),
        "{text}"
    );
    for denied in [".ssh", ".aws", "private"] {
        assert!(
            text.contains(&format!("{}", w.home.join(denied).display())),
            "{denied}: {text}"
        );
    }
    assert!(
        text.contains("auth.json (smith's credential store)"),
        "{text}"
    );
    assert!(text.contains("filesystem     enforced"), "{text}");
    assert!(text.contains("workspace  confined"), "{text}");
    assert!(text.contains("full       unconfined"), "{text}");

    let o = w.smith(&["sandbox", "--json"], &env);
    assert!(o.status.success());
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(report["support"]["landlock_abi"].as_u64().unwrap() >= 1);
    assert_eq!(report["network"], "auto");
    let layer = |name: &str| {
        report["layers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(layer("filesystem")["coverage"], "enforced");
    assert_eq!(layer("tcp")["coverage"], "enforced");
    let kinds: Vec<&str> = report["write_roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["project", "configured", "session-temp"]);
    let modes: Vec<(&str, &str)> = report["modes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["mode"].as_str().unwrap(), m["bash"].as_str().unwrap()))
        .collect();
    assert_eq!(
        modes,
        [
            ("read-only", "confined"),
            ("ask", "confined"),
            ("workspace", "confined"),
            ("full", "unconfined")
        ]
    );
}
