//! smith/permissions through the host: approval modes, rule kinds, deny
//! beating `full`, answers kept for the session, symlinks judged by their
//! target, and `/approval`.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use smith_config::permissions::PermissionRule;
use smith_engine::approval::{Approval, ApprovalCell};
use smith_engine::journal::{EffectJournal, MemoryJournal};
use smith_plugins::effects::{
    Answer, AnswerSource, Asker, EffectError, Effects, Grants, PermissionAccess, QuestionKind,
};
use smith_plugins::extension::{
    Action, Decision, HandlerResult, IntentKind, LifecycleEvent, ToolCallEvent,
};
use smith_plugins::{ExtensionComponent, Limits, WasmExtension};

/// The questions asked so far: (prompt, options).
type Asked = Arc<Mutex<Vec<(String, Vec<String>)>>>;

struct Policy {
    plugin: WasmExtension,
    approval: ApprovalCell,
    asked: Asked,
    project: tempfile::TempDir,
}

fn rule(kind: &str, tool: &str, path: Option<&str>, command: Option<&str>) -> PermissionRule {
    PermissionRule {
        kind: kind.into(),
        tool: tool.into(),
        path: path.map(str::to_owned),
        command: command.map(str::to_owned),
        origin: "test.kdl:1".into(),
    }
}

/// smith/permissions in `mode` with `rules`, answering its questions with
/// `answers` in turn (`timeout:TEXT`: the default after nobody answered;
/// none left: nobody can answer).
fn policy(mode: Approval, rules: Vec<PermissionRule>, answers: &[&str]) -> Policy {
    policy_with(mode, rules, answers, |_, _| {})
}

/// [`policy`], with `configure` completing its access (given the project
/// folder) before the plugin loads.
fn policy_with(
    mode: Approval,
    rules: Vec<PermissionRule>,
    answers: &[&str],
    configure: impl FnOnce(&mut PermissionAccess, &std::path::Path),
) -> Policy {
    let project = tempfile::tempdir().unwrap();
    let approval = ApprovalCell::new(mode);
    let mut access = PermissionAccess::new(approval.clone(), project.path().to_path_buf());
    access.rules = rules;
    configure(&mut access, project.path());
    *access.tools.write().unwrap() = HashMap::from([
        ("read".to_owned(), true),
        ("ls".to_owned(), true),
        ("write".to_owned(), false),
        ("edit".to_owned(), false),
        ("bash".to_owned(), false),
        ("deploy".to_owned(), false),
    ]);
    let asked: Asked = Arc::default();
    let seen = Arc::clone(&asked);
    let answers: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(
        answers.iter().rev().map(|a| (*a).to_owned()).collect(),
    ));
    let asker: Asker = Arc::new(move |_plugin, question, _stop| {
        let options = match &question.kind {
            QuestionKind::Select(options) => options.clone(),
            _ => Vec::new(),
        };
        seen.lock()
            .unwrap()
            .push((question.prompt.clone(), options));
        match answers.lock().unwrap().pop() {
            // `timeout:DEFAULT`: nobody answered in time.
            Some(text) if text.starts_with("timeout:") => Ok(Answer {
                text: text["timeout:".len()..].to_owned(),
                source: AnswerSource::Timeout,
            }),
            Some(text) => Ok(Answer {
                text,
                source: AnswerSource::User,
            }),
            None => Err(EffectError::Failed("nobody answers here".into())),
        }
    });
    let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
    let effects = Effects::new(
        "smith/permissions",
        Grants {
            ui: true,
            permissions: true,
            ..Grants::default()
        },
        journal,
        Arc::new(AtomicU64::new(0)),
        1,
    )
    .with_asker(asker)
    .with_permissions(access);
    let plugin = ExtensionComponent::load(
        "smith/permissions",
        smith_plugins::builtin::PERMISSIONS,
        None,
        Limits::default(),
    )
    .unwrap()
    .instantiate_with(Some(effects))
    .unwrap();
    Policy {
        plugin,
        approval,
        asked,
        project,
    }
}

impl Policy {
    fn decide(&mut self, tool: &str, arguments: serde_json::Value) -> Decision {
        self.decide_text(tool, &arguments.to_string())
    }

    /// The decision on a call whose arguments are `arguments` as given,
    /// JSON or not.
    fn decide_text(&mut self, tool: &str, arguments: &str) -> Decision {
        let event = LifecycleEvent::ToolCall(ToolCallEvent {
            id: "call-1".into(),
            name: tool.into(),
            arguments: arguments.into(),
        });
        match self.plugin.handle(&event).unwrap() {
            HandlerResult::Decision(decision) => decision,
            other => panic!("smith/permissions did not decide {tool} {arguments}: {other:?}"),
        }
    }

    fn write(&mut self, path: &str) -> Decision {
        self.decide(
            "write",
            serde_json::json!({"path": path, "content": "new\n"}),
        )
    }

    fn bash(&mut self, command: &str) -> Decision {
        self.decide("bash", serde_json::json!({"command": command}))
    }

    fn asked(&self) -> Vec<(String, Vec<String>)> {
        self.asked.lock().unwrap().clone()
    }
}

fn blocked(decision: &Decision) -> &str {
    match decision {
        Decision::Block(reason) => reason,
        other => panic!("expected a block, got {other:?}"),
    }
}

#[test]
fn each_mode_decides_what_no_rule_covers() {
    let outside = tempfile::tempdir().unwrap();
    let away = outside.path().join("x.txt");
    let away = away.to_str().unwrap();

    let mut p = policy(Approval::ReadOnly, Vec::new(), &[]);
    let reason = blocked(&p.write("a.txt")).to_owned();
    assert!(reason.contains("read-only mode") && reason.contains("`--approval workspace`"));
    assert!(blocked(&p.bash("ls")).contains("read-only mode"));
    assert_eq!(
        p.decide("read", serde_json::json!({"path": "a.txt"})),
        Decision::Allow
    );

    let mut p = policy(Approval::Workspace, Vec::new(), &[]);
    assert_eq!(p.write("src/a.txt"), Decision::Allow);
    assert_eq!(p.bash("cargo test"), Decision::Allow);
    let reason = blocked(&p.write(away)).to_owned();
    assert!(
        reason.contains("outside") && reason.contains("allow \"write\" path="),
        "{reason}"
    );
    let reason = blocked(&p.decide("deploy", serde_json::json!({}))).to_owned();
    assert!(reason.contains("allow \"deploy\""), "{reason}");
    assert!(p.asked().is_empty(), "workspace mode never asks");

    let mut p = policy(Approval::Full, Vec::new(), &[]);
    assert_eq!(p.write(away), Decision::Allow);
    assert_eq!(p.decide("deploy", serde_json::json!({})), Decision::Allow);

    let mut p = policy(Approval::Ask, Vec::new(), &["yes", "no"]);
    assert_eq!(p.bash("git push"), Decision::Allow);
    assert!(blocked(&p.write("notes.md")).contains("the user declined it"));
    let asked = p.asked();
    assert_eq!(asked[0].0, "Allow bash to run this command?\n$ git push");
    assert_eq!(
        asked[0].1,
        ["yes", "no", "no, with a note", "always in this session"],
        "an untrusted project is not offered"
    );
    assert_eq!(
        asked[1].0,
        "Allow write to notes.md?\n--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1,1 @@\n+new\n"
    );
}

#[test]
fn the_write_prompt_diffs_against_the_current_file_and_a_note_reaches_the_model() {
    let mut p = policy(
        Approval::Ask,
        Vec::new(),
        &["no, with a note", "use edit instead"],
    );
    std::fs::write(p.project.path().join("a.txt"), "old\n").unwrap();
    let reason = blocked(&p.write("a.txt")).to_owned();
    assert_eq!(reason, "the user declined it and says: use edit instead");
    let asked = p.asked();
    assert_eq!(
        asked[0].0,
        "Allow write to a.txt?\n--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n-old\n+new\n"
    );
    assert!(asked[1].0.starts_with("Your note for the agent"));
    // Nobody to ask: refused, saying how to allow it.
    let reason = blocked(&p.bash("ls")).to_owned();
    assert!(
        reason.contains("nobody could give it") && reason.contains("--approval"),
        "{reason}"
    );
}

#[test]
fn deny_rules_win_in_full_mode_and_for_read_only_tools() {
    let rules = vec![
        rule("deny", "*", Some(".env"), None),
        rule("deny", "bash", None, Some("rm -rf *")),
    ];
    let mut p = policy(Approval::Full, rules, &[]);
    let reason = blocked(&p.write(".env")).to_owned();
    assert!(
        reason.contains("`deny \"*\" path=\".env\"` (test.kdl:1)"),
        "{reason}"
    );
    assert!(matches!(
        p.decide("read", serde_json::json!({"path": "config/.env"})),
        Decision::Block(_)
    ));
    assert!(blocked(&p.bash("cargo build && rm -rf target")).contains("rm -rf *"));
    assert_eq!(p.bash("cargo build"), Decision::Allow);
}

#[test]
fn allow_and_ask_rules() {
    let rules = vec![
        rule("allow", "bash", None, Some("git status")),
        rule("allow", "bash", None, Some("cargo *")),
        rule("ask", "write", Some("src/**"), None),
    ];
    let mut p = policy(Approval::Ask, rules.clone(), &[]);
    assert_eq!(p.bash("cargo test && git status"), Decision::Allow);
    assert!(p.asked().is_empty(), "allowed calls are not asked");
    let mut p = policy(Approval::Workspace, rules, &[]);
    let reason = blocked(&p.write("src/lib.rs")).to_owned();
    assert!(
        reason.contains("nobody is asked") && reason.contains("/approval ask"),
        "{reason}"
    );
    assert_eq!(p.write("README.md"), Decision::Allow);
}

#[test]
fn always_in_this_session_keeps_the_exact_call() {
    let mut p = policy(Approval::Ask, Vec::new(), &["always in this session"]);
    assert_eq!(p.bash("make && make test"), Decision::Allow);
    assert_eq!(p.bash("make && make test"), Decision::Allow);
    assert_eq!(p.bash("make"), Decision::Allow, "each command was kept");
    assert_eq!(p.asked().len(), 1, "the second call was not asked");
    assert!(matches!(p.bash("make install"), Decision::Block(_)));
    assert_eq!(p.asked().len(), 2);
}

#[test]
fn the_path_and_command_are_read_as_a_whole_json_parse_reads_them() {
    let outside = tempfile::tempdir().unwrap();
    let away = outside.path().join("x.txt");
    let away = away.to_str().unwrap();
    let mut p = policy(Approval::Workspace, Vec::new(), &[]);
    let raw = |p: &mut Policy, tool: &str, arguments: &str| p.decide_text(tool, arguments);
    // An escaped path is the path it spells.
    assert_eq!(
        raw(&mut p, "write", r#"{"path":"src\/a.txt"}"#),
        Decision::Allow
    );
    let escaped_away = serde_json::json!({ "path": away })
        .to_string()
        .replace('/', "\\/");
    let reason = blocked(&raw(&mut p, "write", &escaped_away)).to_owned();
    assert!(reason.contains("outside"), "{reason}");
    // A key given twice: the last one counts.
    let twice = format!(r#"{{"path":"src/a.txt","path":{away:?}}}"#);
    assert!(blocked(&raw(&mut p, "write", &twice)).contains("outside"));
    let twice = format!(r#"{{"path":{away:?},"path":"src/a.txt"}}"#);
    assert_eq!(raw(&mut p, "write", &twice), Decision::Allow);
    // No object, or a path that is no string: the call names no path, and
    // a write without one runs only when a rule allows it.
    for arguments in [r#"["src/a.txt"]"#, r#"{"path":5}"#, "not json", ""] {
        let reason = blocked(&raw(&mut p, "write", arguments)).to_owned();
        assert!(reason.contains("allow \"write\""), "{arguments}: {reason}");
    }
    // The command of a bash call is read the same way.
    let mut p = policy(
        Approval::Workspace,
        vec![rule("deny", "bash", None, Some("rm -rf *"))],
        &[],
    );
    assert!(blocked(&raw(&mut p, "bash", r#"{"command":"rm -rf \/"}"#)).contains("rm -rf"));
    let twice = r#"{"command":"ls","command":"rm -rf /"}"#;
    assert!(blocked(&raw(&mut p, "bash", twice)).contains("rm -rf"));
    assert_eq!(
        raw(&mut p, "bash", r#"{"command":"ls","timeout":5}"#),
        Decision::Allow
    );
}

#[test]
fn a_symlink_is_judged_by_its_target() {
    let outside = tempfile::tempdir().unwrap();
    let mut p = policy(
        Approval::Workspace,
        vec![rule("deny", "*", Some(".env"), None)],
        &[],
    );
    let root = p.project.path().to_path_buf();
    std::fs::write(root.join(".env"), "SECRET=1\n").unwrap();
    std::os::unix::fs::symlink(root.join(".env"), root.join("harmless.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("elsewhere")).unwrap();
    let reason = blocked(&p.write("harmless.txt")).to_owned();
    assert!(reason.contains(".env"), "{reason}");
    let reason = blocked(&p.write("elsewhere/new.txt")).to_owned();
    assert!(reason.contains("outside"), "{reason}");
    let reason = blocked(&p.write("sub/../elsewhere/x")).to_owned();
    assert!(reason.contains("outside"), "{reason}");
    assert_eq!(p.write("sub/new.txt"), Decision::Allow);
}

#[test]
fn the_approval_command_shows_and_sets_the_mode() {
    let mut p = policy(Approval::Workspace, Vec::new(), &[]);
    let actions = p.plugin.run_command("approval", "").unwrap();
    let [Action::Ui(intent)] = &actions[..] else {
        panic!("{actions:?}");
    };
    let IntentKind::Notify(text) = &intent.kind else {
        panic!("{intent:?}");
    };
    assert!(text.starts_with("Approval mode: workspace\n"), "{text}");
    assert!(
        text.contains(" * workspace - ") && text.contains("   full - "),
        "{text}"
    );
    p.plugin.run_command("approval", "read-only").unwrap();
    assert_eq!(p.approval.get(), Approval::ReadOnly);
    assert!(matches!(p.bash("ls"), Decision::Block(_)));
    let err = p.plugin.run_command("approval", "yolo").unwrap_err();
    assert!(
        err.to_string().contains("read-only, ask, workspace, full"),
        "{err}"
    );
    assert_eq!(p.approval.get(), Approval::ReadOnly);
}

#[test]
fn a_plugin_without_the_grant_cannot_read_or_change_the_mode() {
    let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
    let effects = Effects::new(
        "test/other",
        Grants::default(),
        journal,
        Arc::new(AtomicU64::new(0)),
        1,
    )
    .with_permissions(PermissionAccess::new(
        ApprovalCell::new(Approval::Ask),
        std::env::temp_dir(),
    ));
    let err = effects.set_approval_mode("full").unwrap_err();
    assert!(err.to_string().contains("permissions"), "{err}");
    assert!(effects.approval_mode().is_err());
}

#[test]
fn always_in_this_project_saves_the_rule_and_keeps_the_project_trusted() {
    use smith_config::trust::{Project, TrustStatus, TrustStore};
    let data = tempfile::tempdir().unwrap();
    let trust_file = data.path().join("trust.json");
    let mut p = policy_with(
        Approval::Ask,
        Vec::new(),
        &["always in this project"],
        |access, root| {
            std::fs::create_dir_all(root.join(".smith")).unwrap();
            let project = Project::at(root).unwrap();
            TrustStore::open(&trust_file)
                .unwrap()
                .trust(&project)
                .unwrap();
            access.trusted = Some(smith_plugins::effects::TrustedProject {
                project,
                trust_file: trust_file.clone(),
            });
        },
    );
    assert_eq!(p.bash("cargo fmt"), Decision::Allow);
    assert_eq!(
        p.asked()[0].1.last().map(String::as_str),
        Some("always in this project"),
        "a trusted project is offered"
    );
    let root = p.project.path().to_path_buf();
    let saved = smith_config::permissions::read(&root.join(".smith/config.kdl")).unwrap();
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].to_kdl(), r#"allow "bash" command="cargo fmt""#);
    let project = Project::at(&root).unwrap();
    assert_eq!(
        TrustStore::open(&trust_file)
            .unwrap()
            .status(&project)
            .unwrap(),
        TrustStatus::Trusted,
        "the change the user approved keeps the project trusted"
    );
    assert_eq!(p.bash("cargo fmt"), Decision::Allow);
    assert_eq!(p.asked().len(), 1, "kept for the rest of the runtime too");
}

#[test]
fn a_question_nobody_answers_in_time_refuses_the_call_saying_so() {
    let mut p = policy(Approval::Ask, Vec::new(), &["timeout:no"]);
    let reason = blocked(&p.bash("make")).to_owned();
    assert!(
        reason.contains("nobody answered the approval question in time"),
        "{reason}"
    );
}
