//! Plugin marketplaces end to end through the `smith` binary: a real
//! marketplace (a subset of anthropics/claude-plugins-official, in
//! tests/data/marketplace) added from a local folder, from a `.tar.gz`
//! and a `.zip` served on loopback, and from a git repository served over
//! smart HTTP by `git http-backend`; `smith plugin install PLUGIN@MKT`
//! bringing skills and agents as `PLUGIN:NAME` into `smith skills list`,
//! `smith agents list`, the model's catalog and `--agent`; the warning for
//! hooks, MCP servers and commands; refusals of `..`, absolute paths,
//! symlinks and oversize archives with the previous install intact; and
//! uninstall. With a plugin of tests/data/marketplace-enable: its hook,
//! MCP server and command run only after `smith plugin enable PLUGIN@MKT
//! --hooks|--mcp|--commands` (the hook and server through
//! `${CLAUDE_PLUGIN_ROOT}`), stop after `disable`, and an update that
//! changes hooks.json disables the hooks again with a warning.
// Test code: unwraps and expects are the assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/http.rs"]
mod http;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use http::{Reply, Seen, Server};
use serde_json::Value;

const MARKET: &str = "claude-plugins-official";

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/marketplace/claude-plugins-official")
}

/// `smith ARGS` in the project `home/project`, with `home/smith` as
/// smith's home and `home` as the user's; the exit code, standard output
/// and error.
fn smith(home: &Path, args: &[&str]) -> (i32, String, String) {
    let project = home.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_smith"));
    command
        .env("SMITH_HOME", home.join("smith"))
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("NO_COLOR", "1")
        .current_dir(&project)
        .args(args);
    common::default_signals(&mut command);
    let o = command.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn ok(home: &Path, args: &[&str]) -> (String, String) {
    let (code, out, err) = smith(home, args);
    assert_eq!(code, 0, "smith {args:?}:\nstdout: {out}\nstderr: {err}");
    (out, err)
}

fn failing(home: &Path, args: &[&str]) -> String {
    let (code, out, err) = smith(home, args);
    assert_ne!(
        code, 0,
        "smith {args:?} succeeded:\nstdout: {out}\nstderr: {err}"
    );
    err
}

fn json(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn skill_names(home: &Path) -> Vec<String> {
    let (out, _) = ok(home, &["skills", "list", "--json"]);
    json(&out)["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

fn agent_names(home: &Path) -> Vec<String> {
    let (out, _) = ok(home, &["agents", "list", "--json"]);
    json(&out)["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Every file under `dir`, relative, with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap().display().to_string();
                out.push((relative, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The test marketplace as a `.tar.gz`, under `prefix/`, with `extra`
/// entries appended raw (so that unsafe names reach the archive).
fn tar_gz(prefix: &str, extra: &[tar::Header]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes) in files(&data()) {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, format!("{prefix}{name}"), bytes.as_slice())
            .unwrap();
    }
    for header in extra {
        builder.append(header, &[][..]).unwrap();
    }
    gzip(&builder.into_inner().unwrap())
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// A tar header of `kind` whose name is written as is.
fn raw_header(name: &str, kind: tar::EntryType, link: Option<&str>) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_size(0);
    header.set_mode(0o644);
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    if let Some(link) = link {
        header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
    }
    header.set_cksum();
    header
}

/// The test marketplace as a stored (uncompressed) `.zip`.
fn zip() -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    let entries = files(&data());
    for (name, bytes) in &entries {
        let mut crc = flate2::Crc::new();
        crc.update(bytes);
        let offset = out.len() as u32;
        let name = name.as_bytes();
        let sizes = |v: &mut Vec<u8>| {
            v.extend_from_slice(&crc.sum().to_le_bytes());
            v.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            v.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            v.extend_from_slice(&(name.len() as u16).to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes());
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        sizes(&mut out);
        out.extend_from_slice(name);
        out.extend_from_slice(bytes);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&[20, 3, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        sizes(&mut central);
        central.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        central.extend_from_slice(&((0o100_644u32) << 16).to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name);
    }
    let start = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&start.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

/// A server answering every request with what `body` holds at the time.
fn serving(body: std::sync::Arc<std::sync::Mutex<Vec<u8>>>) -> Server {
    Server::start(Box::new(move |_, _| {
        Reply::Status(
            200,
            "application/octet-stream",
            body.lock().unwrap().clone(),
        )
    }))
}

#[test]
fn a_local_marketplace_brings_skills_and_agents_as_plugin_names_and_names_what_it_does_not_run() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let source = data().display().to_string();
    let (out, _) = ok(home, &["plugin", "marketplace", "add", &source]);
    assert!(
        out.contains(&format!("added the marketplace {MARKET}")),
        "{out}"
    );
    let (out, _) = ok(home, &["plugin", "marketplace", "list", "--json"]);
    let list = json(&out);
    assert_eq!(list[0]["name"], MARKET);
    assert_eq!(list[0]["kind"], "local");
    let plugins: Vec<&str> = list[0]["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(plugins, ["feature-dev", "hookify", "example-plugin"]);
    // Adding it twice is refused, naming the way to fetch it again.
    let err = failing(home, &["plugin", "marketplace", "add", &source]);
    assert!(err.contains("marketplace update"), "{err}");

    assert!(!skill_names(home).iter().any(|s| s.contains(':')));
    let (out, err) = ok(home, &["plugin", "install", &format!("hookify@{MARKET}")]);
    assert!(out.contains("skills: hookify:writing-rules"), "{out}");
    assert!(
        out.contains("agents: hookify:conversation-analyzer"),
        "{out}"
    );
    for named in [
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "UserPromptSubmit",
        "configure",
        "hookify",
    ] {
        assert!(err.contains(named), "{named} in {err}");
    }
    assert!(err.contains("warning[marketplace.not-run]"), "{err}");
    assert!(err.contains("smith does not run"), "{err}");
    let (_, err) = ok(
        home,
        &["plugin", "install", &format!("example-plugin@{MARKET}")],
    );
    assert!(err.contains("MCP servers (example-server)"), "{err}");
    assert!(err.contains("commands (example-command)"), "{err}");
    let (_, err) = ok(
        home,
        &["plugin", "install", &format!("feature-dev@{MARKET}")],
    );
    assert!(!err.contains("not-run"), "{err}");

    let skills = skill_names(home);
    for wanted in [
        "hookify:writing-rules",
        "example-plugin:example-skill",
        "example-plugin:example-command",
    ] {
        assert!(skills.iter().any(|s| s == wanted), "{wanted} in {skills:?}");
    }
    let agents = agent_names(home);
    for wanted in [
        "feature-dev:code-reviewer",
        "feature-dev:code-explorer",
        "hookify:conversation-analyzer",
    ] {
        assert!(agents.iter().any(|s| s == wanted), "{wanted} in {agents:?}");
    }
    let (out, _) = ok(home, &["plugin", "list"]);
    assert!(out.contains(&format!("hookify@{MARKET}")), "{out}");
    assert!(out.contains("declared, not run"), "{out}");
    let (out, _) = ok(home, &["plugin", "list", "--json"]);
    let listed = json(&out);
    let example = listed["marketplace_plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["plugin"] == "example-plugin")
        .unwrap()
        .clone();
    assert_eq!(example["marketplace"], MARKET);
    assert_eq!(
        example["mcp_servers"],
        serde_json::json!(["example-server"])
    );
    let (out, err) = ok(home, &["plugin", "info", &format!("hookify@{MARKET}")]);
    assert!(out.contains(&format!("marketplace: {MARKET}")), "{out}");
    assert!(err.contains("PreToolUse"), "{err}");

    // The marketplace stays while plugins installed from it do.
    let err = failing(home, &["plugin", "marketplace", "remove", MARKET]);
    assert!(
        err.contains(&format!("smith plugin uninstall hookify@{MARKET}")),
        "{err}"
    );
    let err = failing(home, &["plugin", "install", &format!("nope@{MARKET}")]);
    assert!(
        err.contains("feature-dev, hookify, example-plugin"),
        "{err}"
    );

    let (out, _) = ok(home, &["plugin", "uninstall", &format!("hookify@{MARKET}")]);
    assert!(out.contains("hookify:writing-rules"), "{out}");
    let skills = skill_names(home);
    assert!(
        !skills.iter().any(|s| s.starts_with("hookify:")),
        "{skills:?}"
    );
    assert!(!agent_names(home).iter().any(|s| s.starts_with("hookify:")));
    for plugin in ["example-plugin", "feature-dev"] {
        ok(
            home,
            &["plugin", "uninstall", &format!("{plugin}@{MARKET}")],
        );
    }
    ok(home, &["plugin", "marketplace", "remove", MARKET]);
    let (out, _) = ok(home, &["plugin", "marketplace", "list", "--json"]);
    assert_eq!(json(&out), serde_json::json!([]));
}

const ANSWER: &str = r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#;

#[test]
fn the_model_sees_the_plugin_skills_and_the_user_invokes_them_and_the_agents() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    ok(
        home,
        &[
            "plugin",
            "marketplace",
            "add",
            &data().display().to_string(),
        ],
    );
    ok(
        home,
        &["plugin", "install", &format!("example-plugin@{MARKET}")],
    );
    ok(
        home,
        &["plugin", "install", &format!("feature-dev@{MARKET}")],
    );
    let script = home.join("script.json");
    std::fs::write(&script, ANSWER).unwrap();
    let record = home.join("requests.jsonl");
    let eval = |prompt: &str, extra: &[&str]| {
        let _ = std::fs::remove_file(&record);
        let mut args = vec![
            "eval",
            "--mock-script",
            script.to_str().unwrap(),
            "--mock-record",
            record.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.push(prompt);
        ok(home, &args);
        common::recorded_requests(&record)
    };
    let requests = eval("hello", &[]);
    let delegate = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "agent")
        .expect("the agent tool")["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        delegate.contains("- feature-dev:code-reviewer: Reviews code"),
        "{delegate}"
    );
    let system = requests[0]["system"].as_str().unwrap().to_owned();
    assert!(
        system.contains("- example-plugin:example-skill: This skill should be used"),
        "{system}"
    );

    let requests = eval("/example-plugin:example-skill show me", &[]);
    let text = requests[0].to_string();
    assert!(text.contains("# Example Skill"), "{text}");
    assert!(
        text.contains("The user invoked the skill example-plugin:example-skill"),
        "{text}"
    );

    let requests = eval("review this", &["--agent", "feature-dev:code-reviewer"]);
    let system = requests[0]["system"].as_str().unwrap().to_owned();
    assert!(system.contains("feature-dev:code-reviewer"), "{system}");
}

#[test]
fn archives_served_over_http_add_and_unsafe_or_oversize_ones_are_refused_leaving_the_previous_install()
 {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let body = std::sync::Arc::new(std::sync::Mutex::new(tar_gz(
        "claude-plugins-official-main/",
        &[],
    )));
    let server = serving(body.clone());
    let url = server.url("/archive/main.tar.gz");
    let (out, _) = ok(home, &["plugin", "marketplace", "add", &url]);
    assert!(out.contains("at sha256:"), "{out}");
    ok(
        home,
        &["plugin", "install", &format!("example-plugin@{MARKET}")],
    );
    assert!(skill_names(home).contains(&"example-plugin:example-skill".to_owned()));

    let zipped = std::sync::Arc::new(std::sync::Mutex::new(zip()));
    let zip_server = serving(zipped);
    let (out, _) = ok(
        home,
        &[
            "plugin",
            "marketplace",
            "add",
            &zip_server.url("/m.zip"),
            "--name",
            "zipped",
        ],
    );
    assert!(out.contains("added the marketplace zipped"), "{out}");
    ok(home, &["plugin", "install", "feature-dev@zipped"]);
    assert!(agent_names(home).contains(&"feature-dev:code-reviewer".to_owned()));

    let market = home.join("smith/marketplaces").join(MARKET);
    let before = files(&market);
    let refusals: [(Vec<u8>, &str); 4] = [
        (
            tar_gz(
                "m/",
                &[raw_header("m/../../escaped", tar::EntryType::Regular, None)],
            ),
            "\"m/../../escaped\"",
        ),
        (
            tar_gz(
                "m/",
                &[raw_header("/tmp/absolute", tar::EntryType::Regular, None)],
            ),
            "\"/tmp/absolute\"",
        ),
        (
            tar_gz(
                "m/",
                &[raw_header("m/link", tar::EntryType::Symlink, Some("/etc"))],
            ),
            "symbolic link",
        ),
        (
            // 300 MiB of zeros: a few hundred KiB compressed.
            {
                let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                let mut builder = tar::Builder::new(gz);
                let mut header = tar::Header::new_gnu();
                header.set_size(300 << 20);
                header.set_mode(0o644);
                header.set_entry_type(tar::EntryType::Regular);
                builder
                    .append_data(&mut header, "m/big", std::io::repeat(0).take(300 << 20))
                    .unwrap();
                builder.into_inner().unwrap().finish().unwrap()
            },
            "expand past 256 MiB",
        ),
    ];
    for (archive, named) in refusals {
        *body.lock().unwrap() = archive;
        let err = failing(home, &["plugin", "marketplace", "update", MARKET]);
        assert!(err.contains(named), "{named} in {err}");
        assert!(err.contains(&url), "the source in {err}");
        assert_eq!(files(&market), before, "the previous copy is intact");
        assert!(skill_names(home).contains(&"example-plugin:example-skill".to_owned()));
    }
    assert!(!home.join("escaped").exists() && !Path::new("/tmp/absolute").exists());
    let leftovers: Vec<_> = std::fs::read_dir(home.join("smith/marketplaces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

use std::io::Read as _;

/// Runs `git http-backend` for one request, as a web server's CGI would.
fn git_backend(root: &Path, seen: &Seen, method: &str) -> Reply {
    let (path, query) = seen.path.split_once('?').unwrap_or((&seen.path, ""));
    let mut command = Command::new("git");
    command
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("REQUEST_METHOD", method)
        .env("CONTENT_LENGTH", seen.raw.len().to_string())
        .env("CONTENT_TYPE", seen.header("content-type").unwrap_or(""))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    if let Some(protocol) = seen.header("git-protocol") {
        command.env("GIT_PROTOCOL", protocol);
    }
    let mut child = command.spawn().unwrap();
    child.stdin.take().unwrap().write_all(&seen.raw).unwrap();
    let out = child.wait_with_output().unwrap();
    let split = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap();
    let head = String::from_utf8_lossy(&out.stdout[..split]).into_owned();
    let body = out.stdout[split + 4..].to_vec();
    let status = head
        .lines()
        .find_map(|l| l.strip_prefix("Status: "))
        .and_then(|s| s.split(' ').next()?.parse().ok())
        .unwrap_or(200);
    let content_type = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .unwrap_or("application/octet-stream")
        .to_owned();
    Reply::Status(status, Box::leak(content_type.into_boxed_str()), body)
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn copy(from: &Path, to: &Path) {
    for (name, bytes) in files(from) {
        let path = to.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

#[test]
fn a_git_repository_over_smart_http_adds_without_a_git_executable_and_a_git_subdir_plugin_installs()
{
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let served = tempfile::tempdir().unwrap();
    let root = served.path().to_owned();
    // The marketplace repository, two commits deep (a shallow fetch takes
    // one), and a second repository holding one plugin in a folder.
    let work = root.join("work");
    copy(&data(), &work);
    git(&work, &["init", "-q", "-b", "main"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "first"]);
    let listing = work.join(".claude-plugin/marketplace.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&listing).unwrap()).unwrap();
    let plugins_work = root.join("plugins-work");
    copy(
        &data().join("plugins/hookify"),
        &plugins_work.join("packages/hookify"),
    );
    git(&plugins_work, &["init", "-q", "-b", "main"]);
    git(&plugins_work, &["add", "-A"]);
    git(&plugins_work, &["commit", "-q", "-m", "hookify"]);
    git(
        &root,
        &["clone", "-q", "--bare", "plugins-work", "plugins.git"],
    );
    let server_root = root.clone();
    let server = Server::start(Box::new(move |_, seen| {
        let method = if seen.path.contains("info/refs") {
            "GET"
        } else {
            "POST"
        };
        git_backend(&server_root, seen, method)
    }));
    manifest["plugins"].as_array_mut().unwrap().push(serde_json::json!({
        "name": "remote-hookify",
        "description": "hookify, from a folder of another repository",
        "source": {"source": "git-subdir", "url": server.url("/plugins.git"), "path": "packages/hookify"}
    }));
    std::fs::write(&listing, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    git(&work, &["commit", "-q", "-am", "second"]);
    git(&root, &["clone", "-q", "--bare", "work", "market.git"]);
    let head = git(&root.join("market.git"), &["rev-parse", "HEAD"]);

    // smith finds no git: the fetch is its own.
    let (code, out, err) = {
        let mut command = Command::new(env!("CARGO_BIN_EXE_smith"));
        std::fs::create_dir_all(home.join("project")).unwrap();
        command
            .env("SMITH_HOME", home.join("smith"))
            .env("HOME", home)
            .env("PATH", "/nonexistent")
            .env("NO_COLOR", "1")
            .current_dir(home.join("project"))
            .args(["plugin", "marketplace", "add", &server.url("/market.git")]);
        common::default_signals(&mut command);
        let o = command.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains(&format!("at {head}")), "{out}");
    let seen = server.seen();
    assert!(
        seen.iter()
            .any(|s| s.raw.windows(8).any(|w| w == b"deepen 1")),
        "a shallow fetch"
    );
    assert!(
        seen.iter()
            .all(|s| s.header("git-protocol") == Some("version=2"))
    );
    let (out, _) = ok(home, &["plugin", "marketplace", "list", "--json"]);
    assert_eq!(json(&out)[0]["revision"], head.as_str());

    let (out, _) = ok(
        home,
        &["plugin", "install", &format!("remote-hookify@{MARKET}")],
    );
    assert!(out.contains("remote-hookify:writing-rules"), "{out}");
    let plugin_head = git(&root.join("plugins.git"), &["rev-parse", "HEAD"]);
    let (out, _) = ok(
        home,
        &["plugin", "info", &format!("remote-hookify@{MARKET}")],
    );
    assert!(out.contains(&format!("revision: {plugin_head}")), "{out}");
    assert!(skill_names(home).contains(&"remote-hookify:writing-rules".to_owned()));
    assert_eq!(
        std::fs::read(home.join(format!(
            "smith/marketplace-plugins/remote-hookify@{MARKET}/hooks/hooks.json"
        )))
        .unwrap(),
        std::fs::read(data().join("plugins/hookify/hooks/hooks.json")).unwrap()
    );

    // A symlink pushed to the repository is refused on update, and the
    // previous copy stays.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/passwd", work.join("plugins/passwd")).unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "link"]);
        git(
            &work,
            &[
                "push",
                "-q",
                &root.join("market.git").display().to_string(),
                "main",
            ],
        );
        let err = failing(home, &["plugin", "marketplace", "update", MARKET]);
        assert!(err.contains("\"plugins/passwd\""), "{err}");
        assert!(err.contains("mode 120000"), "{err}");
        let (out, _) = ok(home, &["plugin", "marketplace", "list", "--json"]);
        assert_eq!(json(&out)[0]["revision"], head.as_str());
    }
}

const ENABLE: &str = "enable-test";

/// A copy of tests/data/marketplace-enable in `home/market`, with the MCP
/// fixture server in the plugin's `server/` folder.
fn enable_market(home: &Path) -> PathBuf {
    let market = home.join("market");
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/marketplace-enable"),
        &market,
    );
    let server = market.join("plugins/tools/server");
    std::fs::create_dir_all(&server).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py"),
        server.join("mcp_server.py"),
    )
    .unwrap();
    market
}

/// `smith eval PROMPT` with the scripted answer; the recorded requests and
/// standard error.
fn eval_recorded(home: &Path, prompt: &str) -> (Vec<Value>, String) {
    let script = home.join("script.json");
    std::fs::write(&script, ANSWER).unwrap();
    let record = home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let (_, err) = ok(
        home,
        &[
            "eval",
            "--mock-script",
            script.to_str().unwrap(),
            "--mock-record",
            record.to_str().unwrap(),
            prompt,
        ],
    );
    (common::recorded_requests(&record), err)
}

/// A plugin's declared hooks run only once enabled, with
/// `${CLAUDE_PLUGIN_ROOT}` and in the project; disabling stops them; an
/// update that changes hooks.json disables them again, saying why.
#[test]
fn a_marketplace_plugins_hooks_run_only_once_enabled_and_until_what_they_declare_changes() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let market = enable_market(home);
    ok(
        home,
        &[
            "plugin",
            "marketplace",
            "add",
            &market.display().to_string(),
        ],
    );
    let id = format!("tools@{ENABLE}");
    let (_, err) = ok(home, &["plugin", "install", &id]);
    assert!(err.contains("warning[marketplace.not-run]"), "{err}");
    assert!(
        err.contains(&format!(
            "smith plugin enable {id} --hooks --mcp --commands"
        )),
        "{err}"
    );
    let root = home.join("smith/marketplace-plugins").join(&id);
    let project = home.join("project");
    let ran = format!(
        "plugin hook from-hooks-json ran: root={} cwd={}",
        root.display(),
        project.display()
    );

    let (requests, _) = eval_recorded(home, "hello");
    let text = requests[0].to_string();
    assert!(!text.contains("plugin hook"), "{text}");

    // Enabling nothing is refused, naming the flags.
    let (code, _, err) = smith(home, &["plugin", "enable", &id]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "smith plugin enable {id} --hooks --mcp --commands"
        )),
        "{err}"
    );
    let (out, err) = ok(home, &["plugin", "enable", &id, "--hooks"]);
    assert!(out.contains(&format!("enabled the hooks of {id}")), "{out}");
    assert!(out.contains("enabled: hooks UserPromptSubmit"), "{out}");
    assert!(
        err.contains(&format!("smith plugin enable {id} --mcp --commands")),
        "{err}"
    );
    assert!(err.contains("its hooks are enabled"), "{err}");
    let (out, _) = ok(home, &["plugin", "info", &id]);
    assert!(out.contains("enabled: hooks UserPromptSubmit"), "{out}");
    let (out, _) = ok(home, &["plugin", "list", "--json"]);
    let listed = json(&out)["marketplace_plugins"][0].clone();
    assert!(
        listed["enabled"]["hooks"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );

    let (requests, _) = eval_recorded(home, "hello");
    let text = requests[0].to_string();
    assert!(text.contains(&ran), "{ran} in {text}");

    // A reinstall of the same content keeps the choice.
    let (_, err) = ok(home, &["plugin", "install", &id]);
    assert!(!err.contains("disabled-again"), "{err}");
    let (requests, _) = eval_recorded(home, "hello");
    assert!(requests[0].to_string().contains(&ran));

    // Disabling stops them.
    let (out, _) = ok(home, &["plugin", "disable", &id, "--hooks"]);
    assert!(
        out.contains(&format!("disabled the hooks of {id}")),
        "{out}"
    );
    let (requests, _) = eval_recorded(home, "hello");
    assert!(!requests[0].to_string().contains("plugin hook"));

    // An update whose hooks.json runs another command disables them again.
    ok(home, &["plugin", "enable", &id, "--hooks"]);
    let hooks = market.join("plugins/tools/hooks/hooks.json");
    let changed = std::fs::read_to_string(&hooks)
        .unwrap()
        .replace("from-hooks-json", "changed-upstream");
    std::fs::write(&hooks, changed).unwrap();
    ok(home, &["plugin", "marketplace", "update", ENABLE]);
    let (_, err) = ok(home, &["plugin", "install", &id]);
    assert!(err.contains("warning[marketplace.disabled-again]"), "{err}");
    assert!(
        err.contains("you approved other commands than these"),
        "{err}"
    );
    assert!(
        err.contains(&format!("smith plugin enable {id} --hooks")),
        "{err}"
    );
    let (requests, _) = eval_recorded(home, "hello");
    assert!(!requests[0].to_string().contains("plugin hook"));
    ok(home, &["plugin", "enable", &id, "--hooks"]);
    let (requests, _) = eval_recorded(home, "hello");
    assert!(
        requests[0]
            .to_string()
            .contains("plugin hook changed-upstream ran"),
        "{}",
        requests[0]
    );
}

/// The names of the tools offered in `request`.
fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A plugin's declared stdio MCP server (the Python SDK fixture, started
/// through `${CLAUDE_PLUGIN_ROOT}`) is started by smith/mcp only once its
/// MCP servers are enabled, named `plugin_PLUGIN_SERVER`; disabling stops
/// offering its tools.
#[test]
fn a_marketplace_plugins_mcp_server_starts_only_once_enabled() {
    let sdk = Command::new("python3")
        .args(["-c", "import mcp.server.mcpserver"])
        .output()
        .expect("python3 starts (install Python 3.10 or newer)");
    assert!(
        sdk.status.success(),
        "the MCP Python SDK is not importable: run scripts/setup (it installs `mcp==2.3.0`)"
    );
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let market = enable_market(home);
    ok(
        home,
        &[
            "plugin",
            "marketplace",
            "add",
            &market.display().to_string(),
        ],
    );
    let id = format!("tools@{ENABLE}");
    ok(home, &["plugin", "install", &id]);
    let tool = "mcp__plugin_tools_fixture__add";

    let (requests, _) = eval_recorded(home, "hello");
    let tools = tool_names(&requests[0]);
    assert!(!tools.iter().any(|t| t.contains("fixture")), "{tools:?}");

    let (out, err) = ok(home, &["plugin", "enable", &id, "--mcp"]);
    assert!(out.contains("enabled: MCP servers fixture"), "{out}");
    assert!(
        err.contains(&format!("smith plugin enable {id} --hooks --commands")),
        "{err}"
    );
    let (requests, err) = eval_recorded(home, "hello");
    let tools = tool_names(&requests[0]);
    assert!(
        tools.iter().any(|t| t == tool),
        "{tool} in {tools:?}\n{err}"
    );
    // The fixture wrote its state under the plugin's folder, where
    // ${CLAUDE_PLUGIN_ROOT} in its arguments pointed.
    let state = home
        .join("smith/marketplace-plugins")
        .join(&id)
        .join("server/state");
    assert!(state.exists(), "{} was not created", state.display());

    ok(home, &["plugin", "disable", &id, "--mcp"]);
    let (requests, _) = eval_recorded(home, "hello");
    let tools = tool_names(&requests[0]);
    assert!(!tools.iter().any(|t| t.contains("fixture")), "{tools:?}");
}

/// A plugin's commands (commands/*.md) become `/PLUGIN:COMMAND` only once
/// enabled: the body is sent with `$ARGUMENTS` and `$1` filled; disabling
/// sends the line as typed again.
#[test]
fn a_marketplace_plugins_commands_are_offered_only_once_enabled() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let market = enable_market(home);
    ok(
        home,
        &[
            "plugin",
            "marketplace",
            "add",
            &market.display().to_string(),
        ],
    );
    let id = format!("tools@{ENABLE}");
    ok(home, &["plugin", "install", &id]);
    let line = "/tools:greet Ada good morning";
    let filled = "Greet Ada warmly. The whole request was: Ada good morning";

    let (requests, _) = eval_recorded(home, line);
    let text = requests[0].to_string();
    assert!(!text.contains(filled), "{text}");
    assert!(text.contains(line), "{text}");

    let (out, err) = ok(home, &["plugin", "enable", &id, "--commands"]);
    assert!(out.contains("enabled: commands greet"), "{out}");
    assert!(
        err.contains(&format!("smith plugin enable {id} --hooks --mcp")),
        "{err}"
    );
    let (requests, _) = eval_recorded(home, line);
    let text = requests[0].to_string();
    assert!(text.contains(filled), "{filled} in {text}");
    assert!(!text.contains("argument-hint"), "{text}");

    // Every kind enabled: no warning is left.
    let (_, err) = ok(home, &["plugin", "enable", &id, "--hooks", "--mcp"]);
    assert!(!err.contains("not-run"), "{err}");
    let (out, _) = ok(home, &["plugin", "info", &id]);
    assert!(!out.contains("declared, not run"), "{out}");
    ok(home, &["plugin", "disable", &id, "--mcp", "--hooks"]);

    ok(home, &["plugin", "disable", &id, "--commands"]);
    let (requests, _) = eval_recorded(home, line);
    let text = requests[0].to_string();
    assert!(!text.contains(filled), "{text}");

    // The flags belong to marketplace plugins only.
    let (code, _, err) = smith(home, &["plugin", "enable", "smith/skills", "--hooks"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("plugin.extras-of-wasm"), "{err}");
}
