//! smith/hooks end to end through the built binary, the scripted provider
//! calling the tools: a PreToolUse hook blocking a bash call with exit
//! status 2 (the model reads the reason, the command never ran, no
//! PostToolUse for it) or with a JSON deny; `updatedInput` rewriting a
//! call's arguments (the tool ran with the new ones, Claude Code's
//! `file_path` mapped to smith's `path`); PostToolUse feedback reaching the
//! next request only, and its `tool_response` carrying the tool's output;
//! a hook's `ask` blocked where nobody answers and run when answered;
//! UserPromptSubmit adding context and blocking a prompt; a Stop hook
//! keeping the agent going once (in eval and over rpc), and none after a
//! run stopped at its turn limit; an untrusted project's hooks not run,
//! with one notice, and listed by `smith hooks list`; a hooks file that is
//! not JSON named; a hanging hook killed at its timeout with a clear notice
//! while a slow one (past a plugin call's default deadline) finishes; an
//! abort killing a running hook, with no Stop hook after it; real
//! Claude Code hook scripts run unchanged; every run recorded in the
//! session's effect journal.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{Client, recorded_requests, smith_in};
use serde_json::{Value, json};

/// A home (smith's in `home/smith`) and a project `home/proj` with `.git`
/// and `.smith`.
fn setup() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("smith")).unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::create_dir_all(proj.join(".smith")).unwrap();
    let proj = proj.canonicalize().unwrap();
    (home, proj)
}

fn trust(home: &Path, proj: &Path) {
    let (code, _, err) = smith_in(home, proj, &["trust", &proj.display().to_string()]);
    assert_eq!(code, 0, "{err}");
}

/// Writes `hooks` (the `hooks` object of Claude Code's settings) to the
/// project file `file`.
fn hooks_file(proj: &Path, file: &str, hooks: &Value) {
    let path = proj.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, json!({ "hooks": hooks }).to_string()).unwrap();
}

/// One hook group: `matcher` (none for events without one) and commands
/// with optional timeouts.
fn group(matcher: Option<&str>, commands: &[(&str, Option<u64>)]) -> Value {
    let hooks: Vec<Value> = commands
        .iter()
        .map(|(command, timeout)| {
            let mut hook = json!({"type": "command", "command": command});
            if let Some(timeout) = timeout {
                hook["timeout"] = json!(timeout);
            }
            hook
        })
        .collect();
    let mut group = json!({ "hooks": hooks });
    if let Some(matcher) = matcher {
        group["matcher"] = json!(matcher);
    }
    group
}

fn bash_call(id: &str, command: &str) -> Value {
    json!({"tool_call": {"id": id, "name": "bash", "arguments": {"command": command}}})
}

fn tool_use(calls: Vec<Value>) -> Value {
    let mut events = calls;
    events.push(json!({"stop": {"reason": "tool_use"}}));
    Value::Array(events)
}

fn answer(text: &str) -> Value {
    json!([{"text": text}, {"stop": {"reason": "end"}}])
}

/// `smith eval` in `proj` with `responses` as the script, recording the
/// requests, in session `name`; the exit code, requests, standard output
/// and standard error.
fn eval(
    home: &Path,
    proj: &Path,
    name: &str,
    responses: &Value,
    prompt: &str,
) -> (i32, Vec<Value>, String, String) {
    let script = home.join("script.json");
    std::fs::write(&script, responses.to_string()).unwrap();
    let record = home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let (code, out, err) = smith_in(
        home,
        proj,
        &[
            "eval",
            "--name",
            name,
            "--mock-script",
            &script.display().to_string(),
            "--mock-record",
            &record.display().to_string(),
            prompt,
        ],
    );
    (code, recorded_requests(&record), out, err)
}

/// The tool results a request carries, as (content, is_error).
fn tool_results(request: &Value) -> Vec<(String, bool)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool_result")
        .map(|m| {
            (
                m["content"].as_str().unwrap_or_default().to_owned(),
                m["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

/// The texts of a request's user messages.
fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn system(request: &Value) -> String {
    request["system"].as_str().unwrap_or_default().to_owned()
}

/// smith/hooks' notices on standard error.
fn notices(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.starts_with("[smith/hooks]"))
        .collect()
}

/// The hook runs recorded in session `name`: the intents of
/// `plugin.project-run-process` effects smith/hooks made.
fn hook_runs(home: &Path, proj: &Path, name: &str) -> Vec<Value> {
    let (code, out, err) = smith_in(home, proj, &["session", "dump", name]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| {
            e["kind"] == "effect_intent"
                && e["content"]["tool"] == "plugin.project-run-process"
                && e["content"]["input"]["plugin"] == "smith/hooks"
        })
        .map(|e| e["content"].clone())
        .collect()
}

#[test]
fn a_pre_tool_use_hook_exiting_2_blocks_the_call_and_the_model_reads_why() {
    let (home, proj) = setup();
    hooks_file(
        &proj,
        ".smith/hooks.json",
        &json!({
            "pre_tool_use": [group(Some("Bash"), &[(
                "cat > \"$CLAUDE_PROJECT_DIR/pre-input.json\"; echo 'no touching in this repository, says the hook' >&2; exit 2",
                None,
            )])],
            // A call that did not run has no PostToolUse.
            "post_tool_use": [group(Some("Bash"), &[("touch post-marker", None)])],
        }),
    );
    trust(home.path(), &proj);
    let responses = json!([
        tool_use(vec![bash_call("c1", "touch ran-marker")]),
        answer("understood"),
    ]);
    let (code, requests, out, err) = eval(home.path(), &proj, "blocked", &responses, "touch it");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim_end(), "understood");
    assert!(!proj.join("ran-marker").exists(), "the blocked command ran");
    assert!(!proj.join("post-marker").exists());
    assert_eq!(requests.len(), 2, "{requests:?}");
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0]
            .0
            .contains("no touching in this repository, says the hook"),
        "{results:?}"
    );
    assert!(results[0].1, "a blocked call is an error for the model");
    // The hook got the event as Claude Code sends it.
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(proj.join("pre-input.json")).unwrap())
            .unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"], json!({"command": "touch ran-marker"}));
    assert_eq!(input["tool_use_id"], "c1");
    assert_eq!(input["cwd"], proj.display().to_string());
    assert_eq!(input["session_id"].as_str().unwrap().len(), 32, "{input}");
    // The run is recorded in the session's journal.
    let runs = hook_runs(home.path(), &proj, "blocked");
    assert_eq!(runs.len(), 1, "{runs:?}");
    let args = runs[0]["input"]["args"].as_array().unwrap();
    assert_eq!(runs[0]["input"]["program"], "env");
    assert!(
        args.iter()
            .any(|a| a.as_str().unwrap().contains("pre-input.json")),
        "{runs:?}"
    );
    assert_eq!(runs[0]["input"]["timeout_ms"], 60_000);
}

#[test]
fn a_json_deny_blocks_and_updated_input_rewrites_the_arguments() {
    let (home, proj) = setup();
    hooks_file(
        &proj,
        ".claude/settings.json",
        &json!({"PreToolUse": [
            group(Some("bash"), &[(
                r#"jq -e '.tool_input.command | test("forbidden")' >/dev/null && echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "forbidden commands are not run here"}}'; exit 0"#,
                None,
            )]),
            group(Some("Bash"), &[(
                r#"jq -c 'if (.tool_input.command | test("original")) then {hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow", updatedInput: (.tool_input + {command: "echo rewritten > rewritten.txt"})}} else {} end'"#,
                None,
            )]),
            group(Some("Edit|Write"), &[(
                r#"jq -c '{hookSpecificOutput: {hookEventName: "PreToolUse", updatedInput: (.tool_input + {file_path: "b.txt"})}}'"#,
                None,
            )]),
        ],
        "PostToolUse": [
            group(Some("Write"), &[(
                r#"echo '{"decision": "block", "reason": "b.txt needs a licence header"}'"#,
                None,
            )]),
        ]}),
    );
    trust(home.path(), &proj);
    let responses = json!([
        tool_use(vec![
            bash_call("c1", "touch forbidden-marker"),
            bash_call("c2", "echo original > original.txt"),
            json!({"tool_call": {"id": "c3", "name": "write", "arguments": {"path": "a.txt", "content": "written\n"}}}),
        ]),
        tool_use(vec![bash_call("c4", "true")]),
        answer("done"),
    ]);
    let (code, requests, _, err) = eval(home.path(), &proj, "json", &responses, "go");
    assert_eq!(code, 0, "{err}");
    assert!(!proj.join("forbidden-marker").exists());
    assert!(!proj.join("original.txt").exists());
    assert_eq!(
        std::fs::read_to_string(proj.join("rewritten.txt")).unwrap(),
        "rewritten\n"
    );
    assert!(!proj.join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(proj.join("b.txt")).unwrap(),
        "written\n"
    );
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].0.contains("forbidden commands are not run here") && results[0].1,
        "{results:?}"
    );
    assert!(!results[1].1, "{results:?}");
    assert!(!results[2].1, "{results:?}");
    // The PostToolUse hook's feedback reaches the model with the next
    // request, and only that one.
    let feedback = "A PostToolUse hook reported on the write call c3: b.txt needs a licence header";
    assert!(
        system(&requests[1]).contains(feedback),
        "{}",
        system(&requests[1])
    );
    assert!(!system(&requests[0]).contains(feedback));
    assert!(!system(&requests[2]).contains(feedback));
    // Each call asked the hooks whose matcher fits it: the deny and
    // rewrite hooks for the three bash calls, the rewrite hook before the
    // write and the feedback hook after it.
    assert_eq!(hook_runs(home.path(), &proj, "json").len(), 8);
}

#[test]
fn user_prompt_submit_adds_context_and_blocks_a_prompt() {
    let (home, proj) = setup();
    hooks_file(
        &proj,
        ".smith/hooks.json",
        &json!({"UserPromptSubmit": [group(None, &[
            (
                r#"jq -e '.prompt | test("password")' >/dev/null && echo '{"decision": "block", "reason": "prompts may not carry passwords"}' && exit 0; echo "The build on main is green."; exit 0"#,
                None,
            ),
        ])]}),
    );
    trust(home.path(), &proj);
    let (code, requests, _, err) = eval(
        home.path(),
        &proj,
        "context",
        &json!([answer("ok")]),
        "how is the build?",
    );
    assert_eq!(code, 0, "{err}");
    let texts = user_texts(&requests[0]);
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(texts[0].starts_with("how is the build?"), "{texts:?}");
    assert!(
        texts[0].contains("The build on main is green."),
        "{texts:?}"
    );
    let (code, requests, _, err) = eval(
        home.path(),
        &proj,
        "blocked-prompt",
        &json!([answer("ok")]),
        "my password is hunter2",
    );
    assert_eq!(code, 1, "{err}");
    assert!(requests.is_empty(), "a blocked prompt is not sent");
    assert!(err.contains("prompts may not carry passwords"), "{err}");
}

#[test]
fn a_stop_hook_keeps_the_agent_going_once() {
    let (home, proj) = setup();
    hooks_file(
        &proj,
        ".smith/hooks.json",
        &json!({"Stop": [group(None, &[(
            r#"input=$(cat); echo "$input" >> "$CLAUDE_PROJECT_DIR/stops.jsonl"; if echo "$input" | jq -e '.stop_hook_active' >/dev/null; then exit 0; fi; echo '{"decision": "block", "reason": "Run the tests before you stop."}'"#,
            None,
        )])]}),
    );
    trust(home.path(), &proj);
    let (code, requests, out, err) = eval(
        home.path(),
        &proj,
        "stop",
        &json!([answer("first answer"), answer("tests pass")]),
        "fix it",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(requests.len(), 2, "{requests:?}");
    let texts = user_texts(&requests[1]);
    assert_eq!(
        texts,
        [
            "fix it".to_owned(),
            "Run the tests before you stop.".to_owned()
        ]
    );
    assert!(out.contains("tests pass"), "{out}");
    let stops: Vec<Value> = std::fs::read_to_string(proj.join("stops.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stops.len(), 2, "{stops:?}");
    assert_eq!(stops[0]["hook_event_name"], "Stop");
    assert_eq!(stops[0]["stop_hook_active"], false);
    assert_eq!(stops[1]["stop_hook_active"], true);
    // A run stopped at its turn limit did not end by itself: no Stop hook.
    let script = home.path().join("limited.json");
    std::fs::write(
        &script,
        json!([tool_use(vec![bash_call("c1", "true")]), answer("never")]).to_string(),
    )
    .unwrap();
    let (code, _, err) = smith_in(
        home.path(),
        &proj,
        &[
            "eval",
            "--max-turns",
            "1",
            "--mock-script",
            &script.display().to_string(),
            "go",
        ],
    );
    assert_eq!(code, 2, "{err}");
    let lines = std::fs::read_to_string(proj.join("stops.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 2, "{lines}");
}

#[test]
fn an_untrusted_projects_hooks_do_not_run_and_say_so_once() {
    let (home, proj) = setup();
    hooks_file(
        &proj,
        ".claude/settings.json",
        &json!({
            "SessionStart": [group(None, &[("touch project-session-marker", None)])],
            "PreToolUse": [group(Some("Bash"), &[("touch project-hook-marker; exit 2", None)])],
            "Notification": [group(None, &[("notify-send hi", None)])],
        }),
    );
    // The user's own hooks run in any project.
    std::fs::write(
        home.path().join("smith/hooks.json"),
        json!({"hooks": {"PostToolUse": [group(Some("Bash"), &[("cat > \"$CLAUDE_PROJECT_DIR/post-input.json\"", None)])]}})
            .to_string(),
    )
    .unwrap();
    let responses = json!([
        tool_use(vec![bash_call(
            "c1",
            "touch tool-marker && echo tool-said-hello"
        )]),
        answer("done"),
    ]);
    let (code, _, _, err) = eval(home.path(), &proj, "untrusted", &responses, "go");
    assert_eq!(code, 0, "{err}");
    assert!(proj.join("tool-marker").exists(), "{err}");
    assert!(!proj.join("project-session-marker").exists());
    assert!(!proj.join("project-hook-marker").exists());
    let post: Value =
        serde_json::from_str(&std::fs::read_to_string(proj.join("post-input.json")).unwrap())
            .unwrap();
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_name"], "Bash");
    assert_eq!(
        post["tool_input"]["command"],
        "touch tool-marker && echo tool-said-hello"
    );
    assert_eq!(post["tool_response"]["success"], true);
    assert_eq!(post["tool_response"]["status"], "ok");
    assert!(
        post["tool_response"]["output"]
            .as_str()
            .unwrap()
            .contains("tool-said-hello"),
        "{post}"
    );
    let notices = notices(&err);
    assert_eq!(notices.len(), 1, "{err}");
    assert!(notices[0].contains("not trusted"), "{err}");
    assert!(
        notices[0].contains(&proj.join(".claude/settings.json").display().to_string()),
        "{err}"
    );
    assert!(
        notices[0].contains(&format!("run `smith trust {}`", proj.display())),
        "{err}"
    );
    // `smith hooks list` (the plugin's `/hooks`) says which run and why.
    let (code, out, err) = smith_in(home.path(), &proj, &["hooks", "list"]);
    assert_eq!(code, 0, "{err}");
    let settings = proj.join(".claude/settings.json").display().to_string();
    let untrusted = format!(
        "not run (the project is not trusted; run `smith trust {}`)",
        proj.display()
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "3 hooks configured:".to_owned(),
            format!(
                "PostToolUse [Bash]: `cat > \"$CLAUDE_PROJECT_DIR/post-input.json\"` (timeout 60 s) from {}: active",
                home.path().join("smith/hooks.json").display()
            ),
            format!(
                "SessionStart: `touch project-session-marker` (timeout 60 s) from {settings}: {untrusted}"
            ),
            format!(
                "PreToolUse [Bash]: `touch project-hook-marker; exit 2` (timeout 60 s) from {settings}: {untrusted}"
            ),
            format!(
                "not run: {settings}: event \"Notification\" is not one smith runs hooks at (it runs SessionStart, UserPromptSubmit, PreToolUse, PostToolUse and Stop, or session_start, user_prompt_submit, pre_tool_use, post_tool_use and stop)"
            ),
        ]
    );
}

#[test]
fn a_hanging_hook_is_killed_at_its_timeout_with_a_notice() {
    let (home, proj) = setup();
    hooks_file(
        &proj,
        ".smith/hooks.json",
        &json!({"PreToolUse": [group(Some("*"), &[
            ("sleep 30", Some(1)),
            // Longer than a plugin call's default deadline (2 s): a hook
            // may take its whole timeout.
            (r#"sleep 3; echo '{"systemMessage": "the slow check passed"}'"#, Some(10)),
        ])]}),
    );
    trust(home.path(), &proj);
    let responses = json!([
        tool_use(vec![bash_call("c1", "touch tool-marker")]),
        answer("done"),
    ]);
    let started = std::time::Instant::now();
    let (code, _, _, err) = eval(home.path(), &proj, "timeout", &responses, "go");
    assert_eq!(code, 0, "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // The hook decided nothing: the call ran.
    assert!(proj.join("tool-marker").exists(), "{err}");
    let notices = notices(&err);
    assert_eq!(notices.len(), 2, "{err}");
    assert_eq!(
        notices[1],
        format!(
            "[smith/hooks] the PreToolUse hook `sleep 3; echo '{{\"systemMessage\": \"the slow check passed\"}}'` ({}): the slow check passed",
            proj.join(".smith/hooks.json").display()
        ),
        "{err}"
    );
    assert!(
        notices[0].contains(&format!(
            "the PreToolUse hook `sleep 30` ({}) ran past its timeout of 1 s and was killed",
            proj.join(".smith/hooks.json").display()
        )),
        "{err}"
    );
    assert!(notices[0].contains("raise its \"timeout\""), "{err}");
    let runs = hook_runs(home.path(), &proj, "timeout");
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["input"]["timeout_ms"], 1000);
    assert_eq!(runs[1]["input"]["timeout_ms"], 10_000);
}

#[test]
fn claude_code_hook_scripts_run_unchanged() {
    let (home, proj) = setup();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/claude-hooks");
    std::fs::create_dir_all(proj.join(".claude/hooks")).unwrap();
    for script in ["validate-bash.sh", "session-start.sh"] {
        std::fs::copy(data.join(script), proj.join(".claude/hooks").join(script)).unwrap();
    }
    std::fs::create_dir_all(proj.join("victim")).unwrap();
    hooks_file(
        &proj,
        ".claude/settings.json",
        &json!({
            "SessionStart": [group(None, &[("bash \"$CLAUDE_PROJECT_DIR/.claude/hooks/session-start.sh\"", None)])],
            "PreToolUse": [group(Some("Bash"), &[("bash \"$CLAUDE_PROJECT_DIR/.claude/hooks/validate-bash.sh\"", Some(10))])],
        }),
    );
    trust(home.path(), &proj);
    let responses = json!([
        tool_use(vec![
            bash_call("c1", "rm -rf victim"),
            bash_call("c2", "echo hello > hello.txt"),
        ]),
        answer("done"),
    ]);
    let (code, requests, _, err) = eval(home.path(), &proj, "claude", &responses, "clean up");
    assert_eq!(code, 0, "{err}");
    assert!(proj.join("victim").is_dir(), "rm -rf ran");
    assert_eq!(
        std::fs::read_to_string(proj.join("hello.txt")).unwrap(),
        "hello\n"
    );
    let results = tool_results(&requests[1]);
    assert!(
        results[0].1 && results[0].0.contains("Dangerous command detected: rm -rf"),
        "{results:?}"
    );
    assert!(!results[1].1, "{results:?}");
    // The SessionStart hook's additionalContext is in the system prompt.
    for request in &requests {
        assert!(
            system(request).contains("You are in 'explanatory' output style mode"),
            "{}",
            system(request)
        );
    }
    assert!(notices(&err).is_empty(), "{err}");
}

#[test]
fn a_hook_asking_first_blocks_where_nobody_answers_and_runs_when_answered() {
    let (home, proj) = setup();
    hooks_file(
        &proj,
        ".smith/hooks.json",
        &json!({"PreToolUse": [group(Some("Bash"), &[(
            r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "it touches the build"}}'"#,
            None,
        )])]}),
    );
    trust(home.path(), &proj);
    let responses = json!([
        tool_use(vec![bash_call("c1", "touch asked-marker")]),
        answer("done"),
    ]);
    // `smith eval` has nobody to ask: the call is blocked, saying why.
    let (code, requests, _, err) = eval(home.path(), &proj, "unasked", &responses, "go");
    assert_eq!(code, 0, "{err}");
    assert!(!proj.join("asked-marker").exists());
    let results = tool_results(&requests[1]);
    assert!(
        results[0].1
            && results[0].0.contains(
                "a hook asked the user first (it touches the build), and no one could answer"
            ),
        "{results:?}"
    );
    // Answered yes, it runs.
    let script = home.path().join("script.json");
    let (code, _, err) = smith_in(
        home.path(),
        &proj,
        &[
            "eval",
            "--answer",
            "A hook asks before this bash call runs: it touches the build\nAllow it?=yes",
            "--mock-script",
            &script.display().to_string(),
            "go",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(proj.join("asked-marker").exists(), "{err}");
}

#[test]
fn a_hooks_file_that_is_not_json_is_named_and_runs_nothing() {
    let (home, proj) = setup();
    std::fs::write(proj.join(".smith/hooks.json"), "{\"hooks\": {\"Stop\": [").unwrap();
    trust(home.path(), &proj);
    let (code, _, _, err) = eval(home.path(), &proj, "broken", &json!([answer("done")]), "go");
    assert_eq!(code, 0, "{err}");
    let notices = notices(&err);
    assert_eq!(notices.len(), 1, "{err}");
    let file = proj.join(".smith/hooks.json").display().to_string();
    assert!(
        notices[0].starts_with(&format!("[smith/hooks] {file} is not valid JSON (")),
        "{err}"
    );
    assert!(
        notices[0].contains("so none of its hooks run; fix it"),
        "{err}"
    );
    let (code, out, err) = smith_in(home.path(), &proj, &["hooks", "list"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("No hooks are configured."), "{out}");
    assert!(
        lines[1].starts_with(&format!("problem: {file} is not valid JSON (")),
        "{out}"
    );
}

#[test]
fn over_rpc_a_users_stop_hook_keeps_the_agent_going_and_it_settles() {
    // The user's hooks (smith's configuration folder is SMITH_HOME here)
    // run without a trusted project.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("hooks.json"),
        json!({"hooks": {"stop": [group(None, &[(
            r#"jq -e '.stop_hook_active' >/dev/null && exit 0; echo 'Check the changelog too.' >&2; exit 2"#,
            None,
        )])]}})
        .to_string(),
    )
    .unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        json!([answer("first"), answer("changelog checked")]).to_string(),
    )
    .unwrap();
    let mut c = Client::start(
        home.path(),
        &["--mock-script", &script.display().to_string()],
    );
    let response =
        |c: &mut Client, id: u64| c.until(|r| r.get("method").is_none() && r["id"] == id);
    c.send(1, "initialize", json!({}));
    response(&mut c, 1);
    c.send(2, "prompt", json!({"text": "update the docs"}));
    response(&mut c, 2);
    c.send(3, "wait_settled", json!({}));
    response(&mut c, 3);
    c.send(4, "messages", json!({}));
    let messages = response(&mut c, 4);
    let texts: Vec<(String, String)> = messages["result"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["text"]
                    .as_str()
                    .or_else(|| m["content"][0]["text"].as_str())
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("user", "update the docs"),
        ("assistant", "first"),
        ("user", "Check the changelog too."),
        ("assistant", "changelog checked"),
    ]
    .iter()
    .map(|(role, text)| ((*role).to_owned(), (*text).to_owned()))
    .collect();
    assert_eq!(texts, expected, "{messages}");
    let (_, err) = c.finish();
    assert!(!err.contains("[smith/hooks]"), "{err}");
}

#[test]
fn an_abort_stops_a_running_hook_and_no_stop_hook_runs() {
    let (home, proj) = setup();
    let marker = |name: &str| proj.join(name);
    std::fs::write(
        home.path().join("smith/hooks.json"),
        json!({"hooks": {
            "PreToolUse": [group(Some("Bash"), &[(
                r#"touch "$CLAUDE_PROJECT_DIR/hook-started"; sleep 30; touch "$CLAUDE_PROJECT_DIR/hook-finished""#,
                None,
            )])],
            "Stop": [group(None, &[(r#"touch "$CLAUDE_PROJECT_DIR/stop-ran""#, None)])],
        }})
        .to_string(),
    )
    .unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        json!([
            tool_use(vec![bash_call("c1", "touch tool-ran")]),
            answer("never"),
        ])
        .to_string(),
    )
    .unwrap();
    let mut c = Client::start_in(
        &home.path().join("smith"),
        &proj,
        &["--mock-script", &script.display().to_string()],
    );
    let response =
        |c: &mut Client, id: u64| c.until(|r| r.get("method").is_none() && r["id"] == id);
    c.send(1, "initialize", json!({}));
    response(&mut c, 1);
    c.send(2, "prompt", json!({"text": "go"}));
    response(&mut c, 2);
    // The hook is running once it has left its mark.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !marker("hook-started").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the hook never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let aborted_at = std::time::Instant::now();
    c.send(3, "abort", json!({}));
    let aborted = response(&mut c, 3);
    assert_eq!(aborted["result"]["aborted"], true, "{aborted}");
    let end = c.until(|r| r["method"] == "agent_end");
    assert_eq!(end["params"]["stop"], "aborted", "{end}");
    assert!(
        aborted_at.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        aborted_at.elapsed()
    );
    c.send(4, "wait_settled", json!({}));
    response(&mut c, 4);
    let (_, err) = c.finish();
    assert!(!marker("hook-finished").exists(), "the hook was not killed");
    assert!(!marker("tool-ran").exists(), "the call ran");
    assert!(
        !marker("stop-ran").exists(),
        "a Stop hook ran after an abort"
    );
    assert!(
        err.contains("was stopped because the run was cancelled; it decided nothing"),
        "{err}"
    );
}
