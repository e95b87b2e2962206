//! smith/plan end to end through the built binary with the scripted
//! provider: under `--plan` the model is told it is in plan mode (the
//! recorded request's system prompt), read-only tools run and every call
//! that could change something is blocked with a reason that says what to
//! do (nothing is written, no command runs); `exit_plan_mode` puts the
//! plan to the user as a waiting question — approved, plan mode ends and
//! the next write runs; kept planning (or unanswerable), it stays on; the
//! mode is kept in the session, so a continued session is still planning;
//! `smith plugin list` shows the built-in; disabling it removes its tool
//! and behavior and nothing else.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{Client, recorded_requests, smith_in};
use serde_json::{Value, json};

/// The fragment's first sentence, as the model reads it.
const FRAGMENT: &str = "Plan mode is on: the user wants a plan before anything changes.";

/// The plan the scripted model proposes.
const PLAN: &str = "1. Write out.txt with the greeting.\n2. Read it back.";

/// The question `exit_plan_mode` asks about [`PLAN`].
fn question() -> String {
    format!(
        "The agent's plan:\n\n{PLAN}\n\nApprove it? Plan mode ends and the agent carries the plan out, as the approval mode allows. Keep planning to have it revise the plan."
    )
}

/// A home (`smith` inside it is smith's home) and a project folder in it
/// with a file to read.
fn setup() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("smith")).unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::write(proj.join("notes.txt"), "the notes\n").unwrap();
    let proj = proj.canonicalize().unwrap();
    (home, proj)
}

/// `smith eval --mock-script S --mock-record R ARGS... PROMPT` in `proj`
/// playing `responses`; the exit code, the recorded requests and standard
/// error.
fn eval(
    home: &Path,
    proj: &Path,
    responses: &Value,
    args: &[&str],
    prompt: &str,
) -> (i32, Vec<Value>, String) {
    let script = home.join("script.json");
    std::fs::write(&script, responses.to_string()).unwrap();
    let record = home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let script = script.display().to_string();
    let record_arg = record.display().to_string();
    let mut all = vec![
        "eval",
        "--mock-script",
        &script,
        "--mock-record",
        &record_arg,
    ];
    all.extend_from_slice(args);
    all.push(prompt);
    let (code, _, err) = smith_in(home, proj, &all);
    (code, recorded_requests(&record), err)
}

fn calls(calls: &[(&str, &str, Value)]) -> Value {
    let mut items: Vec<Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({"tool_call": {"id": id, "name": name, "arguments": arguments}})
        })
        .collect();
    items.push(json!({"stop": {"reason": "tool_use"}}));
    Value::Array(items)
}

fn answer(text: &str) -> Value {
    json!([{"text": text}, {"stop": {"reason": "end"}}])
}

fn system(request: &Value) -> String {
    request["system"].as_str().unwrap_or_default().to_owned()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results a request carries, as (content, is_error), in order.
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

/// The values smith/plan kept in session `name`, in order.
fn modes(home: &Path, proj: &Path, name: &str) -> Vec<String> {
    let (code, out, err) = smith_in(home, proj, &["session", "dump", name]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "entry" && e["content"]["type"] == "plugin_state")
        .filter(|e| e["content"]["plugin"] == "smith/plan")
        .map(|e| {
            assert_eq!(e["content"]["key"], "mode", "{e}");
            e["content"]["value"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn write_call(id: &str) -> (&str, &'static str, Value) {
    (
        id,
        "write",
        json!({"path": "out.txt", "content": "hello\n"}),
    )
}

fn exit_call(id: &str) -> (&str, &'static str, Value) {
    (id, "exit_plan_mode", json!({"plan": PLAN}))
}

#[test]
fn plan_mode_blocks_every_change_and_lets_the_model_read() {
    let (home, proj) = setup();
    let (code, out, err) = smith_in(home.path(), &proj, &["plugin", "list"]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("smith/plan"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("built-in") && line.contains("enabled"),
        "{line}"
    );

    let responses = json!([
        calls(&[
            ("c1", "read", json!({"path": "notes.txt"})),
            write_call("c2"),
        ]),
        calls(&[("c3", "bash", json!({"command": "echo ran > ran.txt"}))]),
        answer("Here is my plan."),
    ]);
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &responses,
        &["--plan", "--name", "p"],
        "add a greeting",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(requests.len(), 3, "{err}");
    // The model is told it is in plan mode from the first request, and is
    // offered the tool that leaves it.
    assert!(
        system(&requests[0]).contains(FRAGMENT),
        "{}",
        system(&requests[0])
    );
    assert!(tool_names(&requests[0]).contains(&"exit_plan_mode".to_owned()));
    // The read ran; the write was blocked with what to do instead.
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0], ("the notes".to_owned(), false), "{results:?}");
    let (blocked, is_error) = &results[1];
    assert!(is_error, "{blocked}");
    assert!(
        blocked.contains("smith/plan")
            && blocked.contains("plan mode is on and `write` can change files or run commands, so it did not run. In plan mode you only research: read, list and search with read-only tools, then call exit_plan_mode with your plan. Once the user approves it, plan mode ends and you make the changes"),
        "{blocked}"
    );
    assert!(!proj.join("out.txt").exists());
    // A command is blocked as well: it did not run.
    let (blocked, is_error) = tool_results(&requests[2]).pop().unwrap();
    assert!(
        is_error && blocked.contains("plan mode is on and `bash` can change files"),
        "{blocked}"
    );
    assert!(!proj.join("ran.txt").exists());
    assert!(system(&requests[2]).contains(FRAGMENT));
    // The mode is kept in the session, once.
    assert_eq!(modes(home.path(), &proj, "p"), ["plan"]);
}

#[test]
fn an_approved_plan_ends_plan_mode_and_the_next_write_runs() {
    let (home, proj) = setup();
    let responses = json!([
        calls(&[exit_call("c1")]),
        calls(&[write_call("c2")]),
        answer("Done."),
    ]);
    let answer_arg = format!("{}=approve", question());
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &responses,
        &["--plan", "--name", "ok", "--answer", &answer_arg],
        "add a greeting",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(requests.len(), 3, "{err}");
    assert!(system(&requests[0]).contains(FRAGMENT));
    assert_eq!(
        tool_results(&requests[1]),
        [(
            "The user approved your plan. Plan mode is off: carry the plan out now, step by step. Tools that change files and run commands work again, as the approval mode allows.".to_owned(),
            false
        )]
    );
    // Plan mode is off: the fragment is gone and the write ran.
    assert!(
        !system(&requests[1]).contains(FRAGMENT),
        "{}",
        system(&requests[1])
    );
    let (written, is_error) = tool_results(&requests[2]).pop().unwrap();
    assert!(!is_error, "{written}");
    assert_eq!(
        std::fs::read_to_string(proj.join("out.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(modes(home.path(), &proj, "ok"), ["plan", "normal"]);

    // The session is out of plan mode from then on.
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &json!([answer("still normal")]),
        &["--session", "ok"],
        "anything else?",
    );
    assert_eq!(code, 0, "{err}");
    assert!(!system(&requests[0]).contains(FRAGMENT));
}

#[test]
fn a_plan_kept_in_planning_or_nobody_can_approve_leaves_plan_mode_on() {
    let (home, proj) = setup();
    // `--yes` takes the question's default: keep planning.
    let responses = json!([
        calls(&[exit_call("c1")]),
        calls(&[write_call("c2")]),
        answer("I will wait."),
    ]);
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &responses,
        &["--plan", "--name", "keep", "--yes"],
        "add a greeting",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        tool_results(&requests[1]),
        [(
            "The user did not approve your plan yet, so plan mode stays on. End your turn and wait for the user's feedback; call exit_plan_mode again only with a revised plan.".to_owned(),
            false
        )]
    );
    assert!(system(&requests[1]).contains(FRAGMENT));
    let (blocked, is_error) = tool_results(&requests[2]).pop().unwrap();
    assert!(
        is_error && blocked.contains("plan mode is on and `write`"),
        "{blocked}"
    );
    assert!(!proj.join("out.txt").exists());
    assert_eq!(modes(home.path(), &proj, "keep"), ["plan"]);

    // Without `--yes` or `--answer` nobody can approve: the model is told
    // so, and the refusal on standard error says how to answer.
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &json!([calls(&[exit_call("c1")]), answer("Here is the plan.")]),
        &["--session", "keep"],
        "go on",
    );
    assert_eq!(code, 0, "{err}");
    let (text, is_error) = tool_results(&requests[1]).pop().unwrap();
    assert!(is_error, "{text}");
    assert!(
        text.starts_with("The plan could not be put to the user for approval (")
            && text.ends_with("so plan mode stays on. Give the plan in your answer and end your turn; the user approves it by answering the question or leaves plan mode with /normal."),
        "{text}"
    );
    assert!(
        err.contains("question refused") && err.contains("--answer"),
        "{err}"
    );
    assert_eq!(modes(home.path(), &proj, "keep"), ["plan"]);
}

#[test]
fn plan_mode_survives_resume_and_holds_without_the_flag() {
    let (home, proj) = setup();
    let (code, _, err) = eval(
        home.path(),
        &proj,
        &json!([answer("I will research first.")]),
        &["--plan", "--name", "r"],
        "add a greeting",
    );
    assert_eq!(code, 0, "{err}");
    // Continued without `--plan`: the session is still in plan mode.
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &json!([calls(&[write_call("c1")]), answer("blocked, as expected")]),
        &["--session", "r"],
        "just write it",
    );
    assert_eq!(code, 0, "{err}");
    assert!(system(&requests[0]).contains(FRAGMENT));
    let (blocked, is_error) = tool_results(&requests[1]).pop().unwrap();
    assert!(
        is_error && blocked.contains("plan mode is on and `write`"),
        "{blocked}"
    );
    assert!(!proj.join("out.txt").exists());
    // Starting in plan mode again adds nothing: it is on already.
    let (code, _, err) = eval(
        home.path(),
        &proj,
        &json!([answer("still planning")]),
        &["--session", "r", "--plan"],
        "and now?",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(modes(home.path(), &proj, "r"), ["plan"]);

    // Without `--plan` a new session is not in plan mode.
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &json!([calls(&[write_call("c1")]), answer("written")]),
        &["--name", "n"],
        "write it",
    );
    assert_eq!(code, 0, "{err}");
    assert!(!system(&requests[0]).contains(FRAGMENT));
    let (written, is_error) = tool_results(&requests[1]).pop().unwrap();
    assert!(!is_error, "{written}");
    assert!(proj.join("out.txt").exists());
    assert!(modes(home.path(), &proj, "n").is_empty());
}

#[test]
fn disabling_smith_plan_removes_plan_mode_and_nothing_else() {
    let (home, proj) = setup();
    let responses = json!([answer("hello")]);
    let (code, before, err) = eval(home.path(), &proj, &responses, &[], "hi");
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = smith_in(home.path(), &proj, &["plugin", "disable", "smith/plan"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = smith_in(home.path(), &proj, &["plugin", "list"]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.contains("smith/plan")).unwrap();
    assert!(line.contains("disabled"), "{line}");
    let (code, after, err) = eval(home.path(), &proj, &responses, &[], "hi");
    assert_eq!(code, 0, "{err}");
    // Only the tool is gone: the prompt (no fragment while off) and the
    // messages are as they were.
    let mut tools = tool_names(&before[0]);
    assert!(tools.contains(&"exit_plan_mode".to_owned()));
    tools.retain(|t| t != "exit_plan_mode");
    assert_eq!(tool_names(&after[0]), tools);
    assert_eq!(system(&after[0]), system(&before[0]));
    assert_eq!(after[0]["messages"], before[0]["messages"]);
    assert!(!err.contains("smith/plan"), "{err}");

    // `--plan` then refuses to run: nothing would be blocked.
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &json!([calls(&[write_call("c1")]), answer("written")]),
        &["--plan", "--name", "off"],
        "write it",
    );
    assert_eq!(code, 2, "{err}");
    assert!(requests.is_empty(), "{requests:?}");
    assert!(
        err.contains("--plan was refused and nothing ran")
            && err.contains("plan mode is the built-in plugin smith/plan, which is disabled, so nothing would be blocked")
            && err.contains("enable it with `smith plugin enable smith/plan`, or leave out --plan"),
        "{err}"
    );
    assert!(!proj.join("out.txt").exists());
    // The `plan` option from the configuration warns and runs.
    let (code, _, err) = smith_in(home.path(), &proj, &["config", "set", "plan", "true"]);
    assert_eq!(code, 0, "{err}");
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &json!([calls(&[write_call("c1")]), answer("written")]),
        &["--name", "off"],
        "write it",
    );
    assert_eq!(code, 0, "{err}");
    assert!(!system(&requests[0]).contains(FRAGMENT));
    let (written, is_error) = tool_results(&requests[1]).pop().unwrap();
    assert!(!is_error, "{written}");
    assert!(proj.join("out.txt").exists());
    assert!(
        err.contains("plan mode is asked for (the `plan` option, from ")
            && err.contains("smith plugin enable smith/plan"),
        "{err}"
    );
    assert!(modes(home.path(), &proj, "off").is_empty());
    // `--no-plugins` and `--plan` together refuse to run as well.
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &json!([answer("hi")]),
        &["--plan", "--no-plugins"],
        "hi",
    );
    assert_eq!(code, 2, "{err}");
    assert!(requests.is_empty(), "{requests:?}");
    assert!(
        err.contains("--no-plugins runs without extension plugins, so nothing would be blocked")
            && err.contains("leave out --no-plugins or --plan"),
        "{err}"
    );
}

#[test]
fn in_the_ask_mode_a_change_is_blocked_before_anyone_is_asked_about_it() {
    let (home, proj) = setup();
    // smith/plan decides before smith/permissions, and a block ends the
    // fold: no approval question is asked for a call that will not run
    // (`smith eval` would refuse one and say so on standard error).
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &json!([calls(&[write_call("c1")]), answer("planning")]),
        &["--plan", "--approval", "ask", "--name", "ask"],
        "write it",
    );
    assert_eq!(code, 0, "{err}");
    let (blocked, is_error) = tool_results(&requests[1]).pop().unwrap();
    assert!(
        is_error && blocked.contains("smith/plan blocked it: plan mode is on and `write`"),
        "{blocked}"
    );
    assert!(!err.contains("question refused"), "{err}");
    assert!(!proj.join("out.txt").exists());
    // Out of plan mode the same call asks (and, unanswered, is refused).
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &json!([calls(&[write_call("c1")]), answer("asked")]),
        &["--approval", "ask", "--name", "asked"],
        "write it",
    );
    assert_eq!(code, 0, "{err}");
    let (refused, _) = tool_results(&requests[1]).pop().unwrap();
    assert!(refused.contains("smith/permissions"), "{refused}");
    assert!(err.contains("question refused"), "{err}");
}

#[test]
fn in_the_ask_mode_approving_the_plan_can_let_the_changes_run_without_asking() {
    let (home, proj) = setup();
    let responses = json!([
        calls(&[exit_call("c1")]),
        calls(&[write_call("c2")]),
        answer("Done."),
    ]);
    // Approving with the changes: the approval mode becomes workspace and
    // the write runs without a question.
    let answer_arg = format!(
        "{}=approve, and allow changes in the project without asking",
        question()
    );
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &responses,
        &[
            "--plan",
            "--approval",
            "ask",
            "--name",
            "edits",
            "--answer",
            &answer_arg,
        ],
        "add a greeting",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        tool_results(&requests[1]),
        [(
            "The user approved your plan and lets changes inside the project run without asking (the approval mode is workspace now). Plan mode is off: carry the plan out now, step by step.".to_owned(),
            false
        )]
    );
    let (written, is_error) = tool_results(&requests[2]).pop().unwrap();
    assert!(!is_error, "{written}");
    assert!(!err.contains("question refused"), "{err}");
    assert!(proj.join("out.txt").exists());
    std::fs::remove_file(proj.join("out.txt")).unwrap();

    // Approving the plan alone keeps the ask mode: the write asks (and,
    // with nobody to answer in eval, is refused).
    let answer_arg = format!("{}=approve", question());
    let (code, requests, err) = eval(
        home.path(),
        &proj,
        &responses,
        &[
            "--plan",
            "--approval",
            "ask",
            "--name",
            "asks",
            "--answer",
            &answer_arg,
        ],
        "add a greeting",
    );
    assert_eq!(code, 0, "{err}");
    let (refused, is_error) = tool_results(&requests[2]).pop().unwrap();
    assert!(
        is_error && refused.contains("smith/permissions"),
        "{refused}"
    );
    assert!(err.contains("question refused"), "{err}");
    assert!(!proj.join("out.txt").exists());
}

/// Reads records until the response to `id`, and returns it.
fn response(c: &mut Client, id: u64) -> Value {
    c.until(|r| r.get("method").is_none() && r["id"] == id)
}

#[test]
fn an_rpc_client_turns_plan_mode_on_and_off_with_the_command_method() {
    let (home, proj) = setup();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        json!([
            calls(&[write_call("c1")]),
            answer("blocked"),
            calls(&[write_call("c2")]),
            answer("written"),
        ])
        .to_string(),
    )
    .unwrap();
    let record = home.path().join("requests.jsonl");
    let (script, record_arg, cwd) = (
        script.display().to_string(),
        record.display().to_string(),
        proj.display().to_string(),
    );
    let mut c = Client::start(
        home.path(),
        &[
            "--mock-script",
            &script,
            "--mock-record",
            &record_arg,
            "--cwd",
            &cwd,
        ],
    );
    c.send(1, "initialize", json!({}));
    let init = response(&mut c, 1);
    assert!(
        init["result"]["capabilities"]["methods"]
            .as_array()
            .unwrap()
            .contains(&json!("command")),
        "{init}"
    );
    c.send(2, "command", json!({"name": "plan"}));
    assert_eq!(
        response(&mut c, 2)["result"],
        json!({"ran": true, "plugin": "smith/plan"})
    );
    c.send(3, "prompt", json!({"text": "write it"}));
    response(&mut c, 3);
    c.send(4, "wait_settled", json!({}));
    response(&mut c, 4);
    assert!(!proj.join("out.txt").exists());
    // The slash is optional.
    c.send(5, "command", json!({"name": "/normal"}));
    assert_eq!(response(&mut c, 5)["result"]["ran"], true);
    c.send(6, "prompt", json!({"text": "write it now"}));
    response(&mut c, 6);
    c.send(7, "wait_settled", json!({}));
    response(&mut c, 7);
    assert_eq!(
        std::fs::read_to_string(proj.join("out.txt")).unwrap(),
        "hello\n"
    );
    // A command no plugin provides is an error that says so.
    c.send(8, "command", json!({"name": "nope"}));
    let refused = response(&mut c, 8);
    assert!(
        refused["error"]
            .to_string()
            .contains("no loaded extension plugin provides the command /nope"),
        "{refused}"
    );
    let (_, err) = c.finish();
    // The commands' notices reach standard error.
    assert!(
        err.contains("[smith/plan] plan mode on: the agent researches and proposes a plan")
            && err.contains("[smith/plan] plan mode off"),
        "{err}"
    );
    let requests = recorded_requests(&record);
    assert_eq!(requests.len(), 4, "{err}");
    assert!(system(&requests[0]).contains(FRAGMENT));
    let (blocked, is_error) = tool_results(&requests[1]).pop().unwrap();
    assert!(
        is_error && blocked.contains("plan mode is on and `write`"),
        "{blocked}"
    );
    assert!(!system(&requests[2]).contains(FRAGMENT));
    let (written, is_error) = tool_results(&requests[3]).pop().unwrap();
    assert!(!is_error, "{written}");
}
