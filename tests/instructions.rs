//! smith/instructions end to end through the built binary with the
//! scripted provider: the request the model receives carries the global
//! AGENTS.md, then the trusted project's from the repository root down to
//! the working folder; an untrusted project's files are not sent and one
//! notice names them; the budget's cuts are reported with names and
//! sizes; editing a file between two turns changes the next request;
//! disabling the plugin removes the fragments.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::run;
use serde_json::Value;

/// Runs `smith ARGS` with `home` as its home, in `cwd`; asserts the exit
/// status and returns standard output and error.
fn smith_in(home: &Path, cwd: &Path, args: &[&str]) -> (String, String) {
    smith_env(home, cwd, args, &[])
}

/// [`smith_in`] with extra environment variables.
fn smith_env(home: &Path, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_smith"))
        .envs(env.iter().copied())
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("NO_COLOR", "1")
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "smith {args:?}:\n{out}\n{err}");
    (out, err)
}

/// A home with a global AGENTS.md and a project `proj` (a repository:
/// it holds `.git`) with an AGENTS.md at its root and one in `proj/sub`;
/// the root also has a CLAUDE.md, which is not read (AGENTS.md comes
/// first in that folder). Returns the home and `proj/sub`.
fn setup() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::create_dir_all(proj.join(".smith")).unwrap();
    std::fs::create_dir_all(proj.join("sub")).unwrap();
    std::fs::write(home.path().join("AGENTS.md"), "GLOBAL-RULE: be kind.\n").unwrap();
    std::fs::write(proj.join("AGENTS.md"), "ROOT-RULE: use tabs.\n").unwrap();
    std::fs::write(proj.join("CLAUDE.md"), "CLAUDE-RULE: never read.\n").unwrap();
    std::fs::write(proj.join("sub/AGENTS.md"), "SUB-RULE: use spaces.\n").unwrap();
    let sub = proj.join("sub").canonicalize().unwrap();
    (home, sub)
}

fn script(home: &Path, json: &str) -> String {
    let path = home.join("script.json");
    std::fs::write(&path, json).unwrap();
    path.display().to_string()
}

const ANSWER: &str = r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#;

/// The system prompts of the recorded requests, in order.
fn systems(record: &Path) -> Vec<String> {
    std::fs::read_to_string(record)
        .unwrap()
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let request = if v.get("request").is_some() {
                v["request"].clone()
            } else {
                v
            };
            request["system"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

/// `smith eval` in `cwd` with `script`, recording requests; the system
/// prompts and standard error.
fn eval(home: &Path, cwd: &Path, script: &str) -> (Vec<String>, String) {
    eval_env(home, cwd, script, &[])
}

/// [`eval`] with extra environment variables.
fn eval_env(home: &Path, cwd: &Path, script: &str, env: &[(&str, &str)]) -> (Vec<String>, String) {
    let record = home.join("requests.jsonl");
    let (_, err) = smith_env(
        home,
        cwd,
        &[
            "eval",
            "--mock-script",
            script,
            "--mock-record",
            &record.display().to_string(),
            "go",
        ],
        env,
    );
    (systems(&record), err)
}

fn trust(home: &Path, dir: &Path) {
    run(home, &["trust", &dir.display().to_string()], 0);
}

#[test]
fn a_trusted_projects_files_reach_the_model_global_first_then_root_to_subfolder() {
    let (home, sub) = setup();
    let proj = sub.parent().unwrap().to_path_buf();
    trust(home.path(), &proj);
    let script = script(home.path(), ANSWER);
    let (systems, err) = eval(home.path(), &sub, &script);
    let system = &systems[0];
    let at = |needle: &str| {
        system
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing from:\n{system}\n{err}"))
    };
    let base = at("You are smith, a coding agent.");
    let global = at("GLOBAL-RULE: be kind.");
    let root = at("ROOT-RULE: use tabs.");
    let nested = at("SUB-RULE: use spaces.");
    assert!(base < global && global < root && root < nested, "{system}");
    assert!(!system.contains("CLAUDE-RULE"), "{system}");
    // Each file under its path as a heading.
    at(&format!(
        "# {}\n\nROOT-RULE",
        proj.join("AGENTS.md").display()
    ));
    at(&format!(
        "# {}\n\nSUB-RULE",
        sub.join("AGENTS.md").display()
    ));
    assert!(!err.contains("smith/instructions"), "{err}");

    // `smith context` lists each file with its path and size.
    let (out, _) = smith_in(home.path(), &sub, &["context", "--json"]);
    let context: Value = serde_json::from_str(&out).unwrap();
    let fragments = context["fragments"].as_array().unwrap();
    let path = sub.join("AGENTS.md").display().to_string();
    let file = fragments
        .iter()
        .find(|f| f["stable_id"] == format!("smith/instructions/{path}"))
        .unwrap_or_else(|| panic!("{out}"));
    let text = format!("# {path}\n\nSUB-RULE: use spaces.");
    assert_eq!(file["bytes"], text.len());
    assert_eq!(file["kind"], "dynamic");
}

#[test]
fn an_untrusted_projects_files_are_not_sent_and_the_notice_names_them() {
    let (home, sub) = setup();
    let proj = sub.parent().unwrap().to_path_buf();
    let script = script(home.path(), ANSWER);
    let (systems, err) = eval(home.path(), &sub, &script);
    let system = &systems[0];
    assert!(system.contains("GLOBAL-RULE: be kind."), "{system}");
    assert!(!system.contains("ROOT-RULE"), "{system}");
    assert!(!system.contains("SUB-RULE"), "{system}");
    let notices: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("[smith/instructions]"))
        .collect();
    assert_eq!(notices.len(), 1, "{err}");
    let notice = notices[0];
    assert!(
        notice.contains(&proj.join("AGENTS.md").display().to_string()),
        "{notice}"
    );
    assert!(
        notice.contains(&sub.join("AGENTS.md").display().to_string()),
        "{notice}"
    );
    let command = format!("smith trust {}", proj.canonicalize().unwrap().display());
    assert!(notice.contains(&command), "{notice}");
    assert!(notice.contains("not trusted"), "{notice}");
}

#[test]
fn over_the_budget_the_farthest_files_are_cut_and_reported() {
    let (home, sub) = setup();
    let proj = sub.parent().unwrap().to_path_buf();
    trust(home.path(), &proj);
    let big = format!("ROOT-RULE: {}\n", "x".repeat(40_000));
    std::fs::write(proj.join("AGENTS.md"), &big).unwrap();
    let script = script(home.path(), ANSWER);
    let (systems, err) = eval(home.path(), &sub, &script);
    let system = &systems[0];
    // The nearest file is whole, the root's is cut, the global one is out.
    assert!(system.contains("SUB-RULE: use spaces."), "{system}");
    assert!(system.contains("ROOT-RULE: xxx"), "{system}");
    assert!(system.contains("[cut: over the instruction budget]"));
    assert!(!system.contains("GLOBAL-RULE"), "{system}");
    let notice = err
        .lines()
        .find(|l| l.contains("exceed the budget"))
        .unwrap_or_else(|| panic!("{err}"));
    let root = proj.join("AGENTS.md").display().to_string();
    let global = home.path().join("AGENTS.md").display().to_string();
    assert!(
        notice.contains(&format!("{root} ({} bytes", big.len())),
        "{notice}"
    );
    assert!(
        notice.contains(&format!("{global} (22 bytes, left out)")),
        "{notice}"
    );
    assert!(notice.contains("32768 bytes"), "{notice}");
    assert!(notice.contains("instructions.max-bytes"), "{notice}");

    // Raised through its variable, the budget holds every file whole.
    let (systems, err) = eval_env(
        home.path(),
        &sub,
        &script,
        &[("SMITH_INSTRUCTIONS_MAX_BYTES", "100000")],
    );
    assert!(
        systems[0].contains("GLOBAL-RULE: be kind."),
        "{}",
        systems[0]
    );
    assert!(!systems[0].contains("[cut:"), "{}", systems[0]);
    assert!(!err.contains("exceed the budget"), "{err}");
}

#[test]
fn editing_a_file_between_two_turns_changes_the_next_request() {
    let (home, sub) = setup();
    let proj = sub.parent().unwrap().to_path_buf();
    trust(home.path(), &proj);
    let script = script(
        home.path(),
        r#"[
  [{"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "AGENTS.md"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "c2", "name": "write", "arguments": {"path": "AGENTS.md", "content": "SUB-RULE: changed, use both.\n"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let (systems, err) = eval(home.path(), &sub, &script);
    // Three requests: before the read, before the write, after it.
    assert_eq!(systems.len(), 3, "{err}");
    assert!(
        systems[0].contains("SUB-RULE: use spaces."),
        "{}",
        systems[0]
    );
    assert_eq!(systems[1], systems[0]);
    assert!(
        systems[2].contains("SUB-RULE: changed, use both."),
        "{}\n{err}",
        systems[2]
    );
    assert!(!systems[2].contains("SUB-RULE: use spaces."));
    assert!(systems[2].contains("ROOT-RULE: use tabs."));
}

#[test]
fn disabling_the_plugin_removes_the_fragments() {
    let (home, sub) = setup();
    let proj = sub.parent().unwrap().to_path_buf();
    trust(home.path(), &proj);
    let (out, _) = run(home.path(), &["plugin", "list"], 0);
    let line = out
        .lines()
        .find(|l| l.contains("smith/instructions"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("built-in") && line.contains("enabled"),
        "{line}"
    );
    run(home.path(), &["plugin", "disable", "smith/instructions"], 0);
    let script = script(home.path(), ANSWER);
    let (systems, err) = eval(home.path(), &sub, &script);
    let system = &systems[0];
    assert!(
        system.contains("You are smith, a coding agent."),
        "{system}"
    );
    for rule in ["GLOBAL-RULE", "ROOT-RULE", "SUB-RULE"] {
        assert!(!system.contains(rule), "{system}");
    }
    assert!(!err.contains("smith/instructions"), "{err}");
}
