//! smith/agents end to end through the built binary with the scripted
//! provider: agent files found in a trusted project's `.smith/agents` and
//! `.claude/agents` and in the user's folder, with shadowing and unreadable
//! files, in `smith agents list`; an untrusted project's agents skipped;
//! `--agent NAME` (and `SMITH_AGENT`) changing the recorded request's
//! system prompt, tools and model, with unknown tools warned about naming
//! the file; an unknown agent refused with the agents there are; disabling
//! the plugin removing agents and nothing else. Two of the agents are real
//! Claude Code files (tests/data/agents, Apache-2.0, see its README).

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::recorded_requests as requests;
use serde_json::Value;

/// Runs `smith ARGS` with `home` as smith's home and the user's home, in
/// `cwd`, with `env` set; asserts the exit status `code` and returns
/// standard output and error.
fn smith_env(
    home: &Path,
    cwd: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    code: i32,
) -> (String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_smith"));
    command
        .env("SMITH_HOME", home.join("smith"))
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("SMITH_AGENT")
        .env("NO_COLOR", "1")
        .current_dir(cwd)
        .args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let o = command.output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "smith {args:?}:\n{out}\n{err}");
    (out, err)
}

fn smith_in(home: &Path, cwd: &Path, args: &[&str], code: i32) -> (String, String) {
    smith_env(home, cwd, &[], args, code)
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/agents")
        .join(format!("{name}.md"))
}

/// A home (smith's in `home/smith`, with the user's agent `reviewer`) and
/// a repository `home/proj` with `.smith`, the two real agents in
/// `.claude/agents`, a `.smith/agents/code-explorer.md` that shadows the
/// real one, and a broken file; returns the home and the project.
fn setup() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let user = home.path().join("smith/agents");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("reviewer.md"),
        "---\ndescription: Reviews a diff for bugs\ntools: read, grep\nmodel: mock-review\n---\nREVIEWER-PROMPT: look for bugs.\n",
    )
    .unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let claude = proj.join(".claude/agents");
    std::fs::create_dir_all(&claude).unwrap();
    for name in ["code-explorer", "conversation-analyzer"] {
        std::fs::copy(data(name), claude.join(format!("{name}.md"))).unwrap();
    }
    std::fs::write(claude.join("broken.md"), "no frontmatter here\n").unwrap();
    let own = proj.join(".smith/agents");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(
        own.join("explorer.md"),
        "---\nname: code-explorer\ndescription: smith's own explorer\ntools: [read]\n---\nOWN-EXPLORER\n",
    )
    .unwrap();
    let proj = proj.canonicalize().unwrap();
    (home, proj)
}

fn trust(home: &Path, proj: &Path) {
    smith_in(home, proj, &["trust", &proj.display().to_string()], 0);
}

fn script(home: &Path) -> String {
    let path = home.join("script.json");
    std::fs::write(
        &path,
        r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    path.display().to_string()
}

/// `smith eval EXTRA... PROMPT` with the scripted answer, recording
/// requests; the requests and standard error.
fn eval(
    home: &Path,
    cwd: &Path,
    env: &[(&str, &str)],
    extra: &[&str],
    code: i32,
) -> (Vec<Value>, String) {
    let record = home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let script = script(home);
    let record_arg = record.display().to_string();
    let mut args = vec![
        "eval",
        "--mock-script",
        &script,
        "--mock-record",
        &record_arg,
    ];
    args.extend_from_slice(extra);
    args.push("look around");
    let (_, err) = smith_env(home, cwd, env, &args, code);
    (requests(&record), err)
}

fn system(request: &Value) -> String {
    request["system"].as_str().unwrap_or_default().to_owned()
}

fn tool_names(request: &Value) -> Vec<String> {
    let mut names: Vec<String> = request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn agents_list_shows_sources_tools_models_shadowing_and_broken_files() {
    let (home, proj) = setup();
    trust(home.path(), &proj);
    let (out, _) = smith_in(home.path(), &proj, &["agents", "list"], 0);
    let own = proj.join(".smith/agents/explorer.md");
    let real = proj.join(".claude/agents/code-explorer.md");
    let reviewer = home.path().join("smith/agents/reviewer.md");
    for needle in [
        format!("code-explorer  project  {}", own.display()),
        "    smith's own explorer".to_owned(),
        "    tools: read".to_owned(),
        format!("code-explorer  project  {}", real.display()),
        format!("    shadowed by {} (not used)", own.display()),
        "conversation-analyzer  project".to_owned(),
        "    tools: Read (read), Grep (grep)".to_owned(),
        format!("reviewer  global  {}", reviewer.display()),
        "    model: mock-review".to_owned(),
        "Not loaded (the frontmatter could not be read):".to_owned(),
        proj.join(".claude/agents/broken.md").display().to_string(),
        "does not start with a `---` line".to_owned(),
    ] {
        assert!(out.contains(&needle), "{needle:?} missing from\n{out}");
    }
    // The shadowed file shows no details of its own.
    assert!(!out.contains("Deeply analyzes"), "{out}");

    let (out, _) = smith_in(home.path(), &proj, &["agents", "list", "--json"], 0);
    let listing: Value = serde_json::from_str(&out).unwrap();
    let agents = listing["agents"].as_array().unwrap();
    let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "code-explorer",
            "code-explorer",
            "conversation-analyzer",
            "reviewer"
        ]
    );
    assert_eq!(agents[1]["shadowed_by"], own.display().to_string());
    assert_eq!(agents[1]["model"], "sonnet");
    assert_eq!(agents[2]["model"], Value::Null);
    assert_eq!(agents[3]["level"], "global");
    let unreadable = listing["unreadable"].as_array().unwrap();
    assert_eq!(unreadable.len(), 1, "{listing}");
    assert!(
        unreadable[0]["reason"]
            .as_str()
            .unwrap()
            .contains("YAML frontmatter")
    );
}

#[test]
fn an_untrusted_projects_agents_are_not_read() {
    let (home, proj) = setup();
    let (out, _) = smith_in(home.path(), &proj, &["agents", "list"], 0);
    assert!(
        out.contains("Not read (the project is not trusted"),
        "{out}"
    );
    assert!(
        out.contains(&format!("smith trust {}", proj.display())),
        "{out}"
    );
    assert!(!out.contains("code-explorer  project"), "{out}");
    assert!(out.contains("reviewer  global"), "{out}");
    // And --agent says why the project's agent is not there.
    let (_, err) = eval(home.path(), &proj, &[], &["--agent", "code-explorer"], 2);
    assert!(err.contains("not trusted"), "{err}");
    assert!(err.contains("smith trust"), "{err}");
}

#[test]
fn the_main_thread_runs_as_a_claude_code_agent() {
    let (home, proj) = setup();
    trust(home.path(), &proj);
    // The real file, not shadowed: conversation-analyzer.
    let (plain, _) = eval(home.path(), &proj, &[], &[], 0);
    let (requests, err) = eval(
        home.path(),
        &proj,
        &[],
        &["--agent", "conversation-analyzer"],
        0,
    );
    assert_eq!(requests.len(), 1, "{err}");
    let system = system(&requests[0]);
    // The default prompt, then the agent's body.
    assert!(
        system.starts_with(&self::system(&plain[0])),
        "the default prompt comes first:\n{system}"
    );
    let body = system
        .find("You are a conversation analysis specialist")
        .unwrap_or_else(|| panic!("{system}"));
    let header = system.find("# Agent: conversation-analyzer").unwrap();
    assert!(header < body, "{system}");
    // Only the tools it lists (Read, Grep), under smith's names.
    assert_eq!(tool_names(&requests[0]), ["grep", "read"]);
    assert!(tool_names(&plain[0]).len() > 2);
    // `model: inherit`: the caller's model.
    assert_eq!(requests[0]["model"], plain[0]["model"]);
    assert!(!err.contains("agent.unknown-tool"), "{err}");
}

#[test]
fn an_agents_model_applies_and_unknown_tools_are_warned_about_naming_the_file() {
    let (home, proj) = setup();
    // Without smith's own explorer the real code-explorer is used (trust
    // covers `.smith` as it is, so the file goes before trusting).
    std::fs::remove_file(proj.join(".smith/agents/explorer.md")).unwrap();
    trust(home.path(), &proj);
    let (requests, err) = eval(home.path(), &proj, &[], &["--agent", "code-explorer"], 0);
    assert_eq!(requests[0]["model"], "sonnet", "{err}");
    assert!(
        system(&requests[0]).contains("You are an expert code analyst"),
        "{}",
        system(&requests[0])
    );
    // Glob, Grep, LS, Read, TodoWrite map to smith's tools; the rest are
    // not here.
    assert_eq!(
        tool_names(&requests[0]),
        ["find", "grep", "ls", "read", "todo_write"]
    );
    let file = proj.join(".claude/agents/code-explorer.md");
    for tool in [
        "NotebookRead",
        "WebFetch",
        "WebSearch",
        "KillShell",
        "BashOutput",
    ] {
        let line = err
            .lines()
            .find(|l| l.contains(&format!("lists the tool `{tool}`")))
            .unwrap_or_else(|| panic!("no warning for {tool}:\n{err}"));
        assert!(line.contains("does not have"), "{line}");
    }
    assert!(err.contains(&file.display().to_string()), "{err}");
    // --model wins over the agent's model.
    let (requests, _) = eval(
        home.path(),
        &proj,
        &[],
        &["--agent", "code-explorer", "--model", "mock-2"],
        0,
    );
    assert_eq!(requests[0]["model"], "mock-2");
}

#[test]
fn the_agent_option_from_the_environment_selects_the_users_agent() {
    let (home, proj) = setup();
    let (requests, err) = eval(home.path(), &proj, &[("SMITH_AGENT", "reviewer")], &[], 0);
    let system = system(&requests[0]);
    assert!(
        system.contains("REVIEWER-PROMPT: look for bugs."),
        "{system}\n{err}"
    );
    assert_eq!(tool_names(&requests[0]), ["grep", "read"]);
    assert_eq!(requests[0]["model"], "mock-review");
}

#[test]
fn an_unknown_agent_is_refused_with_the_agents_there_are() {
    let (home, proj) = setup();
    trust(home.path(), &proj);
    let (requests, err) = eval(home.path(), &proj, &[], &["--agent", "reveiwer"], 2);
    assert!(requests.is_empty(), "nothing ran");
    assert!(err.contains("no agent is named `reveiwer`"), "{err}");
    assert!(
        err.contains("code-explorer, conversation-analyzer, reviewer"),
        "{err}"
    );
    assert!(err.contains("Did you mean `reviewer`?"), "{err}");
    assert!(err.contains("--agent"), "{err}");
    // A file that cannot be read says why.
    let (_, err) = eval(home.path(), &proj, &[], &["--agent", "broken"], 2);
    assert!(err.contains("could not be loaded"), "{err}");
    assert!(err.contains("broken.md"), "{err}");
}

#[test]
fn disabling_the_plugin_removes_agents_and_nothing_else() {
    let (home, proj) = setup();
    trust(home.path(), &proj);
    let (out, _) = smith_in(home.path(), &proj, &["plugin", "list"], 0);
    let line = out
        .lines()
        .find(|l| l.contains("smith/agents"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("built-in") && line.contains("enabled"),
        "{line}"
    );
    let (before, _) = eval(home.path(), &proj, &[], &[], 0);
    smith_in(
        home.path(),
        &proj,
        &["plugin", "disable", "smith/agents"],
        0,
    );
    let (after, err) = eval(home.path(), &proj, &[], &[], 0);
    // Without an agent asked for, the plugin changes nothing.
    assert_eq!(system(&after[0]), system(&before[0]));
    assert_eq!(tool_names(&after[0]), tool_names(&before[0]));
    assert!(!err.contains("smith/agents"), "{err}");
    // --agent says why it cannot run.
    let (requests, err) = eval(home.path(), &proj, &[], &["--agent", "reviewer"], 2);
    assert!(requests.is_empty());
    assert!(err.contains("smith/agents, which is disabled"), "{err}");
    assert!(err.contains("smith plugin enable smith/agents"), "{err}");
    let (_, err) = smith_in(home.path(), &proj, &["agents", "list"], 1);
    assert!(err.contains("smith/agents is not loaded"), "{err}");
    // --no-plugins refuses --agent too.
    smith_in(home.path(), &proj, &["plugin", "enable", "smith/agents"], 0);
    let (_, err) = eval(
        home.path(),
        &proj,
        &[],
        &["--agent", "reviewer", "--no-plugins"],
        2,
    );
    assert!(err.contains("--no-plugins"), "{err}");
}
