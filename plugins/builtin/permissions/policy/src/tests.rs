use super::*;

fn inside(relative: &str) -> ResolvedPath {
    ResolvedPath {
        absolute: format!("/work/project/{relative}"),
        relative: Some(relative.to_owned()),
    }
}

fn outside(absolute: &str) -> ResolvedPath {
    ResolvedPath {
        absolute: absolute.to_owned(),
        relative: None,
    }
}

fn bash(command: &str) -> Call<'_> {
    Call {
        tool: "bash",
        read_only: false,
        command: Some(command),
        path: None,
    }
}

fn file<'a>(tool: &'a str, path: &'a ResolvedPath) -> Call<'a> {
    Call {
        tool,
        read_only: tool == "read",
        command: None,
        path: Some(path),
    }
}

fn example_rules() -> Vec<Rule> {
    rules_from_json(
        r#"[
            {"kind": "allow", "tool": "bash", "command": "git status", "origin": "user"},
            {"kind": "allow", "tool": "bash", "command": "cargo *", "origin": "user"},
            {"kind": "ask", "tool": "write", "path": "src/**", "origin": "user"},
            {"kind": "deny", "tool": "*", "path": ".env", "origin": "user"},
            {"kind": "deny", "tool": "bash", "command": "rm -rf *", "origin": "user"}
        ]"#,
    )
    .unwrap()
}

#[test]
fn commands_split_at_every_separator_and_keep_quotes() {
    assert_eq!(
        split_commands(
            "git add . && git commit -m 'a; b && c' || echo \"x | y\"; ls | wc -l & sleep 1"
        ),
        [
            "git add .",
            "git commit -m 'a; b && c'",
            "echo \"x | y\"",
            "ls",
            "wc -l",
            "sleep 1"
        ]
    );
    assert_eq!(split_commands("a\nb |& c"), ["a", "b", "c"]);
    assert_eq!(split_commands("(cd x; rm y) && z"), ["cd x", "rm y", "z"]);
    assert_eq!(
        split_commands("echo $(rm -rf /) `id`"),
        ["rm -rf /", "id", "echo $(rm -rf /) `id`"]
    );
    assert_eq!(
        split_commands("echo \"$(whoami) here\""),
        ["whoami", "echo \"$(whoami) here\""]
    );
    assert_eq!(
        split_commands("diff <(ls a) >(cat)"),
        ["ls a", "cat", "diff <(ls a) >(cat)"]
    );
    assert_eq!(
        split_commands("cargo test 2>&1 &> out.txt # then; rm -rf /"),
        ["cargo test 2>&1 &> out.txt"]
    );
    assert_eq!(split_commands("echo a\\;b"), ["echo a\\;b"]);
    assert_eq!(
        split_commands("echo 'unterminated ; x"),
        ["echo 'unterminated ; x"]
    );
    assert!(split_commands("  ;; \n ").is_empty());
}

#[test]
fn globs_match_paths_and_commands() {
    let path = |p: &str| Glob::new(p, GlobKind::Path);
    assert!(path("src/**").matches("src/a/b.rs"));
    assert!(path("src/**/*.rs").matches("src/b.rs"));
    assert!(path("src/**/*.rs").matches("src/a/b/c.rs"));
    assert!(!path("src/*.rs").matches("src/a/b.rs"));
    assert!(path("src/?.rs").matches("src/a.rs"));
    assert!(!path("src/?.rs").matches("src/ab.rs"));
    assert!(path("a\\*b").matches("a*b"));
    assert!(!path("a\\*b").matches("axb"));
    let command = |p: &str| Glob::new(p, GlobKind::Command);
    assert!(command("cargo *").matches("cargo test -p x/y"));
    assert!(!command("cargo *").matches("cargo"));
    assert!(!command("git status").matches("git status --short"));
    assert!(command(&glob::escape("echo *")).matches("echo *"));
    assert!(!command(&glob::escape("echo *")).matches("echo hi"));
}

#[test]
fn path_globs_follow_the_project_and_folders() {
    let g = |p: &str| Glob::new(p, GlobKind::Path);
    assert!(g(".env").matches_path(&inside(".env")));
    assert!(g(".env").matches_path(&inside("config/.env")));
    assert!(!g("./.env").matches_path(&inside("config/.env")));
    assert!(g("./.env").matches_path(&inside(".env")));
    assert!(g("secrets").matches_path(&inside("secrets/key.pem")));
    assert!(g("src/gen").matches_path(&inside("src/gen/a.rs")));
    assert!(!g("src/gen").matches_path(&inside("lib/src/gen/a.rs")));
    assert!(!g(".env").matches_path(&outside("/home/u/.env")));
    assert!(g("/home/u/**").matches_path(&outside("/home/u/.env")));
    assert!(g("/etc").matches_path(&outside("/etc/passwd")));
}

#[test]
fn deny_wins_in_every_mode_and_for_read_only_tools() {
    let rules = example_rules();
    let env = inside(".env");
    for mode in [Mode::ReadOnly, Mode::Ask, Mode::Workspace, Mode::Full] {
        for tool in ["read", "write", "edit"] {
            let decision = decide(&rules, &file(tool, &env), mode);
            let Decision::Block(reason) = decision else {
                panic!("{tool} of .env in {mode:?} was not blocked: {decision:?}");
            };
            assert!(
                reason.contains(r#"`deny "*" path=".env"` (user)"#),
                "{reason}"
            );
        }
        let decision = decide(&rules, &bash("cargo build && rm -rf target"), mode);
        assert!(matches!(decision, Decision::Block(r) if r.contains("rm -rf *")));
        // Assignments in front of a command do not hide it from a deny rule.
        let decision = decide(&rules, &bash("X=1 rm -rf /"), mode);
        assert!(matches!(decision, Decision::Block(_)), "{mode:?}");
        let decision = decide(&rules, &bash("echo $(rm -rf ~)"), mode);
        assert!(matches!(decision, Decision::Block(_)), "{mode:?}");
    }
}

#[test]
fn allow_rules_need_every_command_allowed() {
    let rules = example_rules();
    assert_eq!(
        decide(&rules, &bash("git status"), Mode::Ask),
        Decision::Allow
    );
    assert_eq!(
        decide(&rules, &bash("cargo test && git status"), Mode::ReadOnly),
        Decision::Allow
    );
    assert_eq!(
        decide(&rules, &bash("cargo test && git push"), Mode::Ask),
        Decision::Ask
    );
    assert_eq!(
        decide(&rules, &bash("cargo test; echo $(curl x)"), Mode::Ask),
        Decision::Ask
    );
    // An allow rule needs the command as written, assignments included.
    assert_eq!(
        decide(&rules, &bash("X=1 cargo test"), Mode::Ask),
        Decision::Ask
    );
    let tool_wide = rules_from_json(r#"[{"kind": "allow", "tool": "bash"}]"#).unwrap();
    assert_eq!(
        decide(&tool_wide, &bash("anything | at all"), Mode::ReadOnly),
        Decision::Allow
    );
}

#[test]
fn ask_rules_ask_and_refuse_in_workspace() {
    let rules = example_rules();
    let main = inside("src/main.rs");
    assert_eq!(
        decide(&rules, &file("write", &main), Mode::Ask),
        Decision::Ask
    );
    assert_eq!(
        decide(&rules, &file("write", &main), Mode::Full),
        Decision::Allow
    );
    let Decision::Block(reason) = decide(&rules, &file("write", &main), Mode::Workspace) else {
        panic!("an ask rule in workspace mode must refuse");
    };
    assert!(
        reason.contains("nobody is asked") && reason.contains("/approval ask"),
        "{reason}"
    );
    // Without the rule, workspace writes inside the project run.
    assert_eq!(
        decide(&[], &file("write", &main), Mode::Workspace),
        Decision::Allow
    );
}

#[test]
fn modes_decide_what_no_rule_covers() {
    let readme = inside("README.md");
    let away = outside("/tmp/elsewhere.txt");
    let plugin_tool = Call {
        tool: "deploy",
        read_only: false,
        command: None,
        path: None,
    };
    let reader = Call {
        tool: "grep",
        read_only: true,
        command: None,
        path: None,
    };
    for mode in [Mode::ReadOnly, Mode::Ask, Mode::Workspace, Mode::Full] {
        assert_eq!(decide(&[], &reader, mode), Decision::Allow, "{mode:?}");
    }
    let Decision::Block(reason) = decide(&[], &file("write", &readme), Mode::ReadOnly) else {
        panic!("read-only mode must refuse a write");
    };
    assert!(reason.contains("read-only mode") && reason.contains("--approval workspace"));
    assert!(matches!(
        decide(&[], &bash("ls"), Mode::ReadOnly),
        Decision::Block(_)
    ));
    assert_eq!(
        decide(&[], &file("edit", &readme), Mode::Ask),
        Decision::Ask
    );
    assert_eq!(decide(&[], &bash("ls"), Mode::Ask), Decision::Ask);
    assert_eq!(decide(&[], &bash("ls"), Mode::Workspace), Decision::Allow);
    // Stopping a job a sandboxed command started runs as that command did;
    // reading one is read-only everywhere.
    let kill = Call {
        tool: "bash_kill",
        read_only: false,
        command: None,
        path: None,
    };
    assert_eq!(decide(&[], &kill, Mode::Workspace), Decision::Allow);
    assert_eq!(decide(&[], &kill, Mode::Ask), Decision::Ask);
    assert!(matches!(
        decide(&[], &kill, Mode::ReadOnly),
        Decision::Block(_)
    ));
    let read = Call {
        tool: "bash_output",
        read_only: true,
        command: None,
        path: None,
    };
    assert_eq!(decide(&[], &read, Mode::ReadOnly), Decision::Allow);
    let Decision::Block(reason) = decide(&[], &file("write", &away), Mode::Workspace) else {
        panic!("workspace mode must refuse a write outside the project");
    };
    assert!(
        reason.contains(r#"allow "write" path="/tmp/elsewhere.txt""#),
        "{reason}"
    );
    let Decision::Block(reason) = decide(&[], &plugin_tool, Mode::Workspace) else {
        panic!("workspace mode must refuse a mutating plugin tool");
    };
    assert!(reason.contains(r#"allow "deploy""#), "{reason}");
    for call in [file("write", &away), plugin_tool.clone(), bash("rm x")] {
        assert_eq!(decide(&[], &call, Mode::Full), Decision::Allow);
    }
}

#[test]
fn exact_rules_allow_the_same_call_again_and_nothing_else() {
    let call = bash("git add -A && git commit -m 'wip *'");
    let rules = exact_rules(&call, "this session");
    assert_eq!(rules.len(), 2);
    assert_eq!(decide(&rules, &call, Mode::Ask), Decision::Allow);
    assert_eq!(
        decide(&rules, &bash("git commit -m 'other'"), Mode::Ask),
        Decision::Ask
    );
    let notes = inside("notes.md");
    let deeper = inside("docs/notes.md");
    let rules = exact_rules(&file("write", &notes), "this session");
    assert_eq!(rules[0].describe(), r#"allow "write" path="./notes.md""#);
    assert_eq!(
        decide(&rules, &file("write", &notes), Mode::Ask),
        Decision::Allow
    );
    assert_eq!(
        decide(&rules, &file("write", &deeper), Mode::Ask),
        Decision::Ask
    );
    assert_eq!(
        decide(&rules, &file("edit", &notes), Mode::Ask),
        Decision::Ask
    );
}

#[test]
fn malformed_rules_are_refused_with_their_index() {
    let err =
        rules_from_json(r#"[{"kind": "allow", "tool": "bash"}, {"kind": "maybe", "tool": "x"}]"#)
            .unwrap_err();
    assert!(err.contains("rule 1"), "{err}");
    assert!(
        rules_from_json(r#"[{"kind": "deny"}]"#)
            .unwrap_err()
            .contains("no tool")
    );
    assert!(rules_from_json("{}").unwrap_err().contains("array"));
    assert_eq!(Mode::parse("workspace"), Some(Mode::Workspace));
    assert_eq!(Mode::parse("yolo"), None);
}

#[test]
fn diffs_are_unified_and_bounded() {
    let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
    let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
    assert_eq!(
        diff::unified("x.txt", Some(old), new, 50),
        "--- a/x.txt\n+++ b/x.txt\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
    );
    assert_eq!(
        diff::unified("n.txt", None, "one\ntwo\n", 50),
        "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
    );
    let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
    let cut = diff::unified("l.txt", None, &long, 10);
    assert!(
        cut.ends_with("+line 9\n… 90 more diff lines not shown\n"),
        "{cut}"
    );
}
