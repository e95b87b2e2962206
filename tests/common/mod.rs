//! Helpers the binary's plugin tests share: running `smith` in a home of
//! its own, installing a test guest as a user plugin, reading a session's
//! records, and driving `smith rpc` one request at a time. Each test file
//! uses part of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// Runs `smith ARGS` with `home` as its home and working folder, without
/// color.
pub fn smith(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("NO_COLOR", "1")
        .current_dir(home)
        .args(args)
        .output()
        .unwrap()
}

/// [`smith`], asserting it exits with `code`; its standard output and
/// error.
pub fn run(home: &Path, args: &[&str], code: i32) -> (String, String) {
    let o = smith(home, args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(code),
        "smith {args:?}:\nstdout: {out}\nstderr: {err}"
    );
    (out, err)
}

/// Runs `smith ARGS` in the project folder `cwd`, with `home/smith` as
/// smith's home and `home` as the user's (where other agents keep global
/// files), without color; the exit code, standard output and error.
pub fn smith_in(home: &Path, cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home.join("smith"))
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("NO_COLOR", "1")
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The requests the scripted provider recorded (`--mock-record FILE`), in
/// order; none when the file was never written.
pub fn recorded_requests(record: &Path) -> Vec<Value> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            if v.get("request").is_some() {
                v["request"].clone()
            } else {
                v
            }
        })
        .collect()
}

/// Installs the test guest `wasm` (a file of the guest build) into `home`
/// as the user plugin `name` of world `extension`, granted the
/// `capabilities` block's lines (each line ending in a newline).
pub fn install_guest(home: &Path, name: &str, wasm: &str, capabilities: &str) {
    let folder = home.join(format!("{}-src", name.replace('/', "-")));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("plugin.kdl"),
        format!(
            "name \"{name}\"\nversion \"0.1.0\"\ndescription \"A test guest\"\napi 1\nworld \"extension\"\ncapabilities {{\n{capabilities}}}\n"
        ),
    )
    .unwrap();
    std::fs::copy(
        Path::new(smith_plugins::builtin::GUESTS_DIR).join(wasm),
        folder.join("plugin.wasm"),
    )
    .unwrap();
    run(
        home,
        &["plugin", "install", &folder.display().to_string()],
        0,
    );
}

/// The records of session `name` (`smith session dump`).
pub fn dump(home: &Path, name: &str) -> Vec<Value> {
    let (out, _) = run(home, &["session", "dump", name], 0);
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub struct Client {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Client {
    pub fn start(home: &Path, args: &[&str]) -> Client {
        Client::start_in(home, home, args)
    }

    /// `smith rpc ARGS` with `home` as smith's home, in the project folder
    /// `cwd`.
    pub fn start_in(home: &Path, cwd: &Path, args: &[&str]) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
            .env("SMITH_HOME", home)
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .current_dir(cwd)
            .arg("rpc")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        Client {
            child,
            stdin,
            lines,
        }
    }

    pub fn send(&mut self, id: u64, method: &str, params: Value) {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// Writes one record as it is (a request, or anything a test sends).
    pub fn write(&mut self, record: &Value) {
        writeln!(self.stdin, "{record}").unwrap();
    }

    /// Reads records until one satisfies `wanted`, and returns it.
    pub fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        for line in self.lines.by_ref() {
            let record: Value = serde_json::from_str(&line.unwrap()).unwrap();
            if wanted(&record) {
                return record;
            }
        }
        panic!("smith rpc ended before the record the test waits for");
    }

    /// Closes the input and returns the records not read yet and standard
    /// error, once smith has exited.
    pub fn finish(self) -> (Vec<Value>, String) {
        let Client {
            child,
            stdin,
            lines,
        } = self;
        drop(stdin);
        let records = lines
            .map(|line| serde_json::from_str::<Value>(&line.unwrap()).unwrap())
            .collect();
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        (
            records,
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

/// Starts `command` with the ending signals at their default dispositions,
/// whatever the test runner inherited: a job started under `nohup` or in
/// the background ignores SIGHUP or SIGINT, which smith rightly keeps.
pub fn default_signals(command: &mut Command) {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, || {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}
