//! smith/agents end to end through the built binary with the scripted
//! provider: agent files found in a trusted project's `.smith/agents` and
//! `.claude/agents` and in the user's folder, with shadowing and unreadable
//! files, in `smith agents list`; an untrusted project's agents skipped;
//! `--agent NAME` (and `SMITH_AGENT`) changing the recorded request's
//! system prompt, tools and model, with unknown tools warned about naming
//! the file; an unknown agent refused with the agents there are; disabling
//! the plugin removing agents and nothing else. Subagents (the `agent`
//! tool): a child whose recorded requests show its prompt and tools, its
//! answer returned as the tool result and its usage added to the parent's;
//! inspect mode leaving out every tool that writes; a custom agent's
//! prompt, tools and model in the child's request; the depth limit and the
//! spawn budget refusing with the reason; plan mode blocking a child's
//! write; SIGINT reaching a child mid-request; the child's session
//! replaying. Two of the agents are real Claude Code files
//! (tests/data/agents, Apache-2.0, see its README).

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
    write_script(home, r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#)
}

fn write_script(home: &Path, json: &str) -> String {
    let path = home.join("script.json");
    std::fs::write(&path, json).unwrap();
    path.display().to_string()
}

/// `smith eval EXTRA... PROMPT` with `script`, recording requests; the
/// requests, standard output and standard error.
fn eval_script(
    home: &Path,
    cwd: &Path,
    script: &str,
    extra: &[&str],
    code: i32,
) -> (Vec<Value>, String, String) {
    let record = home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let script = write_script(home, script);
    let record_arg = record.display().to_string();
    let mut args = vec![
        "eval",
        "--mock-script",
        &script,
        "--mock-record",
        &record_arg,
    ];
    args.extend_from_slice(extra);
    args.push("delegate it");
    let (out, err) = smith_in(home, cwd, &args, code);
    (requests(&record), out, err)
}

/// The last message of a request, as JSON text.
fn last_message(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(Value::to_string)
        .unwrap_or_default()
}

/// The names of the sessions of `home`'s store, newest first.
fn sessions(home: &Path, cwd: &Path) -> Vec<String> {
    let (out, _) = smith_in(home, cwd, &["session", "list"], 0);
    out.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .collect()
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
    // Started elsewhere with --cwd, the project's agents are the folder's.
    trust(home.path(), &proj);
    let proj_arg = proj.display().to_string();
    let (requests, err) = eval(
        home.path(),
        home.path(),
        &[],
        &["--cwd", &proj_arg, "--agent", "conversation-analyzer"],
        0,
    );
    assert!(
        self::system(&requests[0]).contains("You are a conversation analysis specialist"),
        "{err}"
    );
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
    // Without an agent asked for, the plugin brings only the `agent` tool:
    // the prompt is the same, the tools the same but it.
    assert_eq!(system(&after[0]), system(&before[0]));
    let mut tools = tool_names(&before[0]);
    assert!(tools.contains(&"agent".to_owned()), "{tools:?}");
    tools.retain(|t| t != "agent");
    assert_eq!(tool_names(&after[0]), tools);
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

/// A parent that delegates a read to an inspecting child, which reads,
/// tries to write, and answers; then the parent ends.
const INSPECT: &str = r#"[
 [{"tool_call": {"id": "p1", "name": "agent", "arguments": {"description": "read a", "prompt": "CHILD-TASK: read a.txt and say what it holds", "mode": "inspect"}}}, {"usage": {"input": 100, "output": 10}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "a.txt"}}}, {"usage": {"input": 50, "output": 5}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "c2", "name": "write", "arguments": {"path": "b.txt", "content": "x"}}}, {"usage": {"input": 60, "output": 6}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "CHILD-ANSWER: a.txt says hello"}, {"usage": {"input": 70, "output": 7}}, {"stop": {"reason": "end"}}],
 [{"text": "parent done"}, {"usage": {"input": 200, "output": 20}}, {"stop": {"reason": "end"}}]
]"#;

#[test]
fn a_subagent_in_inspect_mode_reads_answers_and_cannot_write() {
    let (home, proj) = setup();
    std::fs::write(proj.join("a.txt"), "hello\n").unwrap();
    let (requests, out, err) = eval_script(home.path(), &proj, INSPECT, &[], 0);
    assert_eq!(requests.len(), 5, "{out}\n{err}");
    // The parent offers the tool.
    assert!(tool_names(&requests[0]).contains(&"agent".to_owned()));
    // The child's first request: the task alone, the subagent prompt, and
    // only read-only tools.
    let child = &requests[1];
    let messages = child["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{child}");
    assert_eq!(
        messages[0]["text"],
        "CHILD-TASK: read a.txt and say what it holds"
    );
    let system = system(child);
    assert!(system.contains("# Subagent"), "{system}");
    assert!(system.contains("You run in inspect mode"), "{system}");
    let tools = tool_names(child);
    assert!(tools.contains(&"read".to_owned()), "{tools:?}");
    for writer in ["write", "edit", "bash"] {
        assert!(!tools.contains(&writer.to_owned()), "{tools:?}");
    }
    // Its read ran; its write was refused and nothing was written.
    assert!(last_message(&requests[2]).contains("hello"));
    assert!(
        last_message(&requests[3]).contains("there is no active tool named `write`"),
        "{}",
        last_message(&requests[3])
    );
    assert!(!proj.join("b.txt").exists());
    // The parent gets the child's answer as the tool result, and continues
    // its own conversation.
    let result = last_message(&requests[4]);
    assert!(result.contains("\"call_id\":\"p1\""), "{result}");
    assert!(
        result.contains("CHILD-ANSWER: a.txt says hello"),
        "{result}"
    );
    assert_eq!(requests[4]["messages"].as_array().unwrap().len(), 3);
    // The child's usage is the parent run's too: 100+50+60+70+200.
    assert!(
        err.contains("usage: 480 input, 48 output") || out.contains("usage: 480 input, 48 output"),
        "{out}\n{err}"
    );
    // The child's session is its own, and replays.
    let names = sessions(home.path(), &proj);
    let child_session = names
        .iter()
        .find(|n| n.contains("agent-read-a"))
        .unwrap_or_else(|| panic!("{names:?}"));
    let (out, err) = smith_in(
        home.path(),
        &proj,
        &["replay", child_session, "--instant"],
        0,
    );
    let replayed = format!("{out}{err}");
    assert!(replayed.contains("[read] ok: hello"), "{replayed}");
    assert!(
        replayed.contains("CHILD-ANSWER: a.txt says hello"),
        "{replayed}"
    );
    assert!(
        replayed.contains("usage: 180 input, 18 output"),
        "{replayed}"
    );
    // The child's tool calls and results are the agent call's live output,
    // one line each.
    let (_, out, _) = eval_script(home.path(), &proj, INSPECT, &["--json"], 0);
    let updates: Vec<String> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_execution_update" && e["call_id"] == "p1")
        .map(|e| e["output"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        updates,
        [
            "[read a] → read path=a.txt\n",
            "[read a] ← read ok\n",
            "[read a] → write path=b.txt content=x\n",
            "[read a] ← write invalid\n",
        ],
        "{out}"
    );
    // The child's events are not the parent's: one agent_start, one
    // agent_end.
    assert_eq!(out.matches("\"type\":\"agent_end\"").count(), 1, "{out}");
    // With --no-session the children leave nothing behind either.
    let before = sessions(home.path(), &proj).len();
    eval_script(home.path(), &proj, INSPECT, &["--no-session"], 0);
    assert_eq!(sessions(home.path(), &proj).len(), before);
    // And the parent's replay shows the call's result.
    let parent = names.iter().find(|n| !n.contains("agent")).unwrap();
    let (out, err) = smith_in(home.path(), &proj, &["replay", parent, "--instant"], 0);
    let replayed = format!("{out}{err}");
    assert!(
        replayed.contains("[agent] ok: CHILD-ANSWER: a.txt says hello"),
        "{replayed}"
    );
}

#[test]
fn a_custom_agent_child_runs_with_its_prompt_tools_and_model() {
    let (home, proj) = setup();
    let script = r#"[
 [{"tool_call": {"id": "p1", "name": "agent", "arguments": {"description": "review", "prompt": "review the diff", "agent": "reviewer", "mode": "work"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "no bugs"}, {"stop": {"reason": "end"}}],
 [{"tool_call": {"id": "p2", "name": "agent", "arguments": {"description": "review again", "prompt": "again", "agent": "reveiwer", "mode": "work"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#;
    let (requests, out, err) = eval_script(home.path(), &proj, script, &[], 0);
    assert_eq!(requests.len(), 4, "{out}\n{err}");
    // The tool's description lists the custom agents.
    let offered = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "agent")
        .unwrap()
        .to_string();
    assert!(
        offered.contains("- reviewer: Reviews a diff for bugs"),
        "{offered}"
    );
    let child = &requests[1];
    assert!(system(child).contains("REVIEWER-PROMPT: look for bugs."));
    assert!(system(child).contains("# Agent: reviewer"));
    assert_eq!(tool_names(child), ["grep", "read"]);
    assert_eq!(child["model"], "mock-review");
    // The parent keeps its own model.
    assert_eq!(requests[2]["model"], requests[0]["model"]);
    assert!(last_message(&requests[2]).contains("no bugs"));
    // An unknown agent is refused with the agents there are.
    let refused = last_message(&requests[3]);
    assert!(
        refused.contains("no agent is named `reveiwer`"),
        "{refused}"
    );
    assert!(refused.contains("Did you mean `reviewer`?"), "{refused}");
}

#[test]
fn subagents_nest_two_levels_deep() {
    let (home, proj) = setup();
    let call = |id: &str| {
        format!(
            r#"[{{"tool_call": {{"id": "{id}", "name": "agent", "arguments": {{"description": "level {id}", "prompt": "go deeper", "mode": "work"}}}}}}, {{"stop": {{"reason": "tool_use"}}}}]"#
        )
    };
    let script = format!(
        r#"[{}, {}, {}, [{{"text": "grandchild done"}}, {{"stop": {{"reason": "end"}}}}], [{{"text": "child done"}}, {{"stop": {{"reason": "end"}}}}], [{{"text": "done"}}, {{"stop": {{"reason": "end"}}}}]]"#,
        call("a"),
        call("b"),
        call("c")
    );
    let (requests, out, err) = eval_script(home.path(), &proj, &script, &[], 0);
    assert_eq!(requests.len(), 6, "{out}\n{err}");
    assert!(system(&requests[1]).contains("level 1"));
    assert!(system(&requests[2]).contains("level 2"));
    // The grandchild's own call is refused: what, why, what next.
    let refused = last_message(&requests[3]);
    assert!(refused.contains("\"call_id\":\"c\""), "{refused}");
    assert!(
        refused.contains(
            "subagents nest at most 2 levels deep and this agent already runs at level 2"
        ),
        "{refused}"
    );
    assert!(refused.contains("Do this part yourself"), "{refused}");
    assert!(last_message(&requests[4]).contains("grandchild done"));
    assert!(last_message(&requests[5]).contains("child done"));
}

#[test]
fn one_prompt_starts_at_most_eight_subagents() {
    let (home, proj) = setup();
    let calls: Vec<String> = (1..=9)
        .map(|i| {
            format!(
                r#"{{"tool_call": {{"id": "p{i}", "name": "agent", "arguments": {{"description": "task {i}", "prompt": "task {i}", "mode": "inspect"}}}}}}"#
            )
        })
        .collect();
    let answers: Vec<String> = (1..=8)
        .map(|i| format!(r#"[{{"text": "answer {i}"}}, {{"stop": {{"reason": "end"}}}}]"#))
        .collect();
    let script = format!(
        r#"[[{}, {{"stop": {{"reason": "tool_use"}}}}], {}, [{{"text": "done"}}, {{"stop": {{"reason": "end"}}}}]]"#,
        calls.join(", "),
        answers.join(", ")
    );
    let (requests, out, err) = eval_script(home.path(), &proj, &script, &[], 0);
    assert_eq!(requests.len(), 10, "{out}\n{err}");
    let last = &requests[9];
    let results: Vec<&Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 9);
    for (i, result) in results.iter().take(8).enumerate() {
        assert_eq!(result["content"], format!("answer {}", i + 1));
    }
    let refused = results[8]["content"].as_str().unwrap();
    assert!(
        refused.contains("this prompt has started 8 subagents already"),
        "{refused}"
    );
    assert!(
        refused.contains("Do the rest of the work yourself"),
        "{refused}"
    );
}

#[test]
fn plan_mode_blocks_a_subagents_write() {
    let (home, proj) = setup();
    let script = r#"[
 [{"tool_call": {"id": "p1", "name": "agent", "arguments": {"description": "change it", "prompt": "write b.txt", "mode": "work"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "c1", "name": "write", "arguments": {"path": "b.txt", "content": "x"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "could not write"}, {"stop": {"reason": "end"}}],
 [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#;
    let (requests, out, err) = eval_script(home.path(), &proj, script, &["--plan"], 0);
    assert_eq!(requests.len(), 4, "{out}\n{err}");
    // The work child has the write tool, but plan mode decides its call.
    assert!(tool_names(&requests[1]).contains(&"write".to_owned()));
    let blocked = last_message(&requests[2]);
    assert!(blocked.contains("smith/plan blocked it"), "{blocked}");
    assert!(blocked.contains("plan mode is on"), "{blocked}");
    assert!(!proj.join("b.txt").exists());
    assert!(last_message(&requests[3]).contains("could not write"));
}

#[test]
fn sigint_reaches_a_subagent_mid_request() {
    use std::os::unix::process::CommandExt as _;
    let (home, proj) = setup();
    let script = write_script(
        home.path(),
        r#"[
 [{"tool_call": {"id": "p1", "name": "agent", "arguments": {"description": "slow", "prompt": "take your time", "mode": "inspect"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "CHILD-STARTED "}, {"delay_ms": 20000}, {"text": "never"}, {"stop": {"reason": "end"}}],
 [{"text": "parent never"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let record = home.path().join("requests.jsonl");
    let mut command = Command::new(env!("CARGO_BIN_EXE_smith"));
    command
        .env("SMITH_HOME", home.path().join("smith"))
        .env("HOME", home.path())
        .env_remove("SMITH_AGENT")
        .env("NO_COLOR", "1")
        .current_dir(&proj)
        .args([
            "eval",
            "--mock-script",
            &script,
            "--mock-record",
            &record.display().to_string(),
            "go",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: only resets signal dispositions between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let child = command.spawn().unwrap();
    // Wait until the subagent's request is under way.
    let start = std::time::Instant::now();
    while requests(&record).len() < 2 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the subagent never sent its request"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let sent = std::time::Instant::now();
    // SAFETY: signals our own child process.
    assert_eq!(
        unsafe { libc::kill(i32::try_from(child.id()).unwrap(), libc::SIGINT) },
        0
    );
    let output = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    let err = String::from_utf8_lossy(&output.stderr);
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        took < std::time::Duration::from_secs(5),
        "the run took {took:?} to end after SIGINT:\n{out}\n{err}"
    );
    assert_ne!(output.status.code(), Some(0), "{out}\n{err}");
    // The parent never got to its next request; the child's run ended
    // aborted in its own session.
    assert_eq!(requests(&record).len(), 2);
    let names = sessions(home.path(), &proj);
    let child_session = names
        .iter()
        .find(|n| n.contains("agent-slow"))
        .unwrap_or_else(|| panic!("{names:?}"));
    let (out, err) = smith_in(home.path(), &proj, &["replay", child_session, "--json"], 0);
    assert!(
        out.contains("\"stop\":\"aborted\"") || err.contains("\"stop\":\"aborted\""),
        "{out}\n{err}"
    );
}
