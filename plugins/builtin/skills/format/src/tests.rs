// Test code: unwraps as #[test] bodies do.
#![allow(clippy::unwrap_used)]

use super::*;

fn real(name: &str) -> String {
    let path = format!(
        "{}/../../../../tests/data/skills/{name}/SKILL.md",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_real_skills_read_with_their_names_descriptions_and_bodies() {
    for (name, starts, body_head) in [
        (
            "brand-guidelines",
            "Applies Anthropic's official brand colors",
            "# Anthropic Brand Styling",
        ),
        (
            "internal-comms",
            "A set of resources to help me write",
            "## When to use this skill",
        ),
        (
            "webapp-testing",
            "Toolkit for interacting with and testing local web applications",
            "# Web Application Testing",
        ),
    ] {
        let text = real(name);
        let declared = check(&text, name).unwrap();
        assert_eq!(declared.name, name);
        assert!(
            declared.description.starts_with(starts),
            "{}",
            declared.description
        );
        assert!(declared.allowed_tools.is_empty());
        assert!(
            text[declared.body_start..]
                .trim_start()
                .starts_with(body_head)
        );
        // `license` is read too, as a string.
        let (fields, _) = parse(&text).unwrap();
        assert_eq!(
            fields.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["name", "description", "license"]
        );
        assert_eq!(
            fields[2].1,
            Value::Text("Complete terms in LICENSE.txt".to_owned())
        );
    }
}

#[test]
fn a_real_skill_with_a_wrong_folder_or_a_broken_name_is_refused_with_the_reason() {
    let text = real("webapp-testing");
    let err = check(&text, "web-testing").unwrap_err();
    assert!(
        err.contains("differs from its folder's name `web-testing`"),
        "{err}"
    );
    let broken = text.replacen("name: webapp-testing", "name: Webapp_Testing", 1);
    let err = check(&broken, "Webapp_Testing").unwrap_err();
    assert!(err.contains("has the character 'W'"), "{err}");
    let long = "a".repeat(65);
    let err = check(&text.replacen("webapp-testing", &long, 1), &long).unwrap_err();
    assert!(err.contains("65 characters, more than the 64"), "{err}");
}

#[test]
fn name_rules() {
    for good in ["pdf", "a", "pdf-2", "my-skill-3", &"x".repeat(64)] {
        assert_eq!(name_problem(good), None, "{good}");
    }
    for bad in [
        "",
        "-pdf",
        "pdf-",
        "my--skill",
        "Pdf",
        "pdf_x",
        "pdf x",
        "ünï",
        &"x".repeat(65),
    ] {
        assert!(name_problem(bad).is_some(), "{bad}");
    }
}

#[test]
fn block_scalars_quotes_and_lists() {
    let text = "---\nname: demo\ndescription: >-\n  Folded over\n  two lines.\n\n  New paragraph.\nallowed-tools:\n  - Read\n  - \"Bash(git log:*)\"\n# a comment\nmetadata:\n  version: 1.0\n  author: someone\nliteral: |\n  keep\n    this\n\nsingle: 'it''s'\ndouble: \"tab\\there \\u00e9\"\nplain: words go\n  on here # comment\nflow: [Read, 'Grep', \"Glob\"]\n---\nBody.\n";
    let (fields, start) = parse(text).unwrap();
    let get = |k: &str| fields.iter().find(|(key, _)| key == k).unwrap().1.clone();
    assert_eq!(
        get("description"),
        Value::Text("Folded over two lines.\nNew paragraph.".to_owned())
    );
    assert_eq!(
        get("allowed-tools"),
        Value::List(vec!["Read".into(), "Bash(git log:*)".into()])
    );
    assert_eq!(get("metadata"), Value::Map);
    assert_eq!(get("literal"), Value::Text("keep\n  this\n".to_owned()));
    assert_eq!(get("single"), Value::Text("it's".to_owned()));
    assert_eq!(get("double"), Value::Text("tab\there é".to_owned()));
    assert_eq!(get("plain"), Value::Text("words go on here".to_owned()));
    assert_eq!(
        get("flow"),
        Value::List(vec!["Read".into(), "Grep".into(), "Glob".into()])
    );
    assert_eq!(&text[start..], "Body.\n");
    let declared = check(text, "demo").unwrap();
    assert_eq!(declared.allowed_tools, ["Read", "Bash(git log:*)"]);
}

#[test]
fn allowed_tools_as_one_string() {
    let with = |tools: &str| {
        check(
            &format!("---\nname: a\ndescription: d\nallowed-tools: {tools}\n---\n"),
            "a",
        )
        .unwrap()
        .allowed_tools
    };
    assert_eq!(
        with("Read, Grep, Bash(git status)"),
        ["Read", "Grep", "Bash(git status)"]
    );
    assert_eq!(with("Bash(git log:*) Read"), ["Bash(git log:*)", "Read"]);
}

#[test]
fn broken_frontmatter_is_refused_naming_the_line() {
    let cases: &[(&str, &str)] = &[
        ("name: a\n", "does not start with a `---` line"),
        ("---\nname: a\ndescription: d\n", "never closed"),
        (
            "---\nname: a\nname: b\ndescription: d\n---\n",
            "`name` is given twice (line 3)",
        ),
        (
            "---\nname: a\ndescription: \"open\n---\n",
            "never closed; close it",
        ),
        (
            "---\nname: a\ndescription: d\njust words\n---\n",
            "line 4 (`just words`) is not `key: value`",
        ),
        ("---\nname: &x a\ndescription: d\n---\n", "an anchor"),
        (
            "---\nname: a\ndescription: [x, y\n---\n",
            "does not close on the same line",
        ),
        ("---\nname: a\n---\n", "no `description`"),
        ("---\ndescription: d\n---\n", "no `name`; add `name: a`"),
        (
            "---\nname: a\ndescription: \"\"\n---\n",
            "`description` is empty",
        ),
        (
            "---\nname: a\ndescription: [x]\n---\n",
            "`description` is not a single string",
        ),
        (
            "---\nname: a\ndescription: \"bad \\q\"\n---\n",
            "the escape `\\q`",
        ),
        ("---\n\tname: a\n---\n", "line 2 is indented"),
    ];
    for (text, expected) in cases {
        let err = check(text, "a").unwrap_err();
        assert!(err.contains(expected), "{text:?}: {err}");
    }
    let long = format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(1025));
    assert!(check(&long, "a").unwrap_err().contains("1025 characters"));
}

#[test]
fn the_first_of_a_name_wins_and_the_others_name_it() {
    let found = |name: &str, path: &str| Found {
        name: name.to_owned(),
        path: path.to_owned(),
    };
    let list = [
        found("pdf", "/p/.smith/skills/pdf/SKILL.md"),
        found("docx", "/p/.claude/skills/docx/SKILL.md"),
        found("pdf", "/p/.claude/skills/pdf/SKILL.md"),
        found("pdf", "/home/.claude/skills/pdf/SKILL.md"),
    ];
    assert_eq!(resolve(&list), [None, None, Some(0), Some(0)]);
}

#[test]
fn invocations() {
    assert_eq!(
        invocation("/pdf fill the form"),
        Some(('/', "pdf", "fill the form"))
    );
    assert_eq!(invocation("  $pdf"), Some(('$', "pdf", "")));
    assert_eq!(invocation("/tmp/x is broken"), None);
    assert_eq!(invocation("$HOME is set"), None);
    assert_eq!(invocation("fix /pdf"), None);
    assert_eq!(invocation("$5 please"), Some(('$', "5", "please")));
    assert_eq!(
        invocation("/feature-dev:code-review now"),
        Some(('/', "feature-dev:code-review", "now"))
    );
    assert_eq!(invocation("/a:b:c"), None);
    assert_eq!(invocation("$:pdf"), None);
    assert_eq!(invocation("$pdf:"), None);
}

#[test]
fn marketplace_plugin_names_take_the_plugin_before_a_colon() {
    let root = "/c/marketplace-plugins/example-plugin@claude-plugins-official/skills";
    assert_eq!(plugin_of(root), Some("example-plugin"));
    assert_eq!(
        qualified(Level::Plugin, root, "example-skill"),
        "example-plugin:example-skill"
    );
    assert_eq!(qualified(Level::Global, root, "pdf"), "pdf");
    let text = "---\nname: writing-hookify-rules\ndescription: d\n---\nbody\n";
    assert!(check(text, "writing-rules").is_err());
    assert_eq!(
        check_plugin_skill(text, "writing-rules").unwrap().name,
        "writing-rules"
    );
    assert_eq!(plugin_of("/c/skills"), None);
    assert_eq!(plugin_of("/c/Bad@m/skills"), None);
}

#[test]
fn the_catalog_is_bounded_and_names_what_it_left_out() {
    let skills = [("a", "first\n  skill"), ("b", "second"), ("c", "third")];
    let (full, left) = catalog(&skills, "skill", 10_000);
    assert!(
        full.contains("- a: first skill\n- b: second\n- c: third"),
        "{full}"
    );
    assert!(left.is_empty());
    let lead = catalog(&[], "skill", 10_000).0.len();
    let (cut, left) = catalog(&skills, "skill", lead + 2 + 17);
    assert!(
        cut.contains("- a: first skill") && !cut.contains("- b: second"),
        "{cut}"
    );
    assert_eq!(left, ["b", "c"]);
    assert!(cut.contains("2 more skills are not listed here for space: b, c"));
}

#[test]
fn a_loaded_skill_names_its_folder_files_and_cut() {
    let text = loaded(
        "pdf",
        "/s/pdf",
        &["Read".to_owned()],
        "Do it.\nThen more.",
        &["scripts/fill.py".to_owned()],
        6,
    );
    assert!(
        text.starts_with("<skill name=\"pdf\" folder=\"/s/pdf\">\n"),
        "{text}"
    );
    assert!(text.contains("(allowed-tools): Read."));
    assert!(text.contains("\nDo it.\n\n[cut: the instructions are 17 bytes, more than the 6 sent"));
    assert!(text.contains("- /s/pdf/scripts/fill.py\n</skill>"));
}

#[test]
fn arguments_split_as_a_shell_splits_words() {
    assert_eq!(
        split_arguments(r#"fix "the lexer" 'it''s' a\ b "q\"x" -"#),
        ["fix", "the lexer", "its", "a b", "q\"x", "-"]
    );
    assert!(split_arguments("   ").is_empty());
    // An unclosed quote: blanks alone, quotes kept.
    assert_eq!(split_arguments("say \"hi there"), ["say", "\"hi", "there"]);
}

#[test]
fn arguments_fill_the_placeholders_of_claude_code_skills() {
    // The example skill of Claude Code's official plugins.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../../tests/data/skills/example-command/SKILL.md"
    ))
    .unwrap();
    let out = substitute_arguments(&text, "my-argument two").unwrap();
    assert!(
        out.contains("The user invoked this with: my-argument two\n"),
        "{out}"
    );
    assert!(!out.contains("$ARGUMENTS"), "{out}");
    let body = "Review $0 against $ARGUMENTS[1]; all: $ARGUMENTS. Costs $5, $1x and $ stay.";
    assert_eq!(
        substitute_arguments(body, r#"src/lib.rs "main branch""#).unwrap(),
        r#"Review src/lib.rs against main branch; all: src/lib.rs "main branch". Costs $5, $1x and $ stay."#
    );
    // A word the arguments lack keeps its placeholder.
    assert_eq!(
        substitute_arguments("$0 and $1 and $ARGUMENTS[2]", "one").unwrap(),
        "one and $1 and $ARGUMENTS[2]"
    );
    // No placeholder replaced: None, so the caller appends the request.
    assert_eq!(substitute_arguments("Just do it. Costs $5.", "x"), None);
    assert_eq!(substitute_arguments("No dollars.", "x"), None);
    // Empty arguments still fill $ARGUMENTS (with nothing).
    assert_eq!(
        substitute_arguments("Args: [$ARGUMENTS]", "").unwrap(),
        "Args: []"
    );
}

fn real_agent(name: &str) -> String {
    let path = format!(
        "{}/../../../../tests/data/agents/{name}.md",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn claude_code_agent_files_read_unchanged() {
    let text = real_agent("code-explorer");
    let agent = agent::check_agent(&text, "code-explorer").unwrap();
    assert_eq!(agent.name, "code-explorer");
    assert!(
        agent
            .description
            .starts_with("Deeply analyzes existing codebase")
    );
    assert_eq!(
        agent.tools.as_deref().unwrap(),
        [
            "Glob",
            "Grep",
            "LS",
            "Read",
            "NotebookRead",
            "WebFetch",
            "TodoWrite",
            "WebSearch",
            "KillShell",
            "BashOutput"
        ]
    );
    assert_eq!(agent.model.as_deref(), Some("sonnet"));
    assert_eq!(agent.provider, None);
    assert!(
        text[agent.body_start..]
            .trim_start()
            .starts_with("You are an expert code analyst")
    );

    let text = real_agent("conversation-analyzer");
    let agent = agent::check_agent(&text, "conversation-analyzer").unwrap();
    assert_eq!(agent.tools.as_deref().unwrap(), ["Read", "Grep"]);
    // `inherit` is the caller's model.
    assert_eq!(agent.model, None);
}

#[test]
fn agent_files_without_a_name_take_the_file_name_and_list_no_tools_as_every_tool() {
    let agent = agent::check_agent(
        "---\ndescription: reviews diffs\nprovider: openai\nmodel: gpt-5\n---\nReview.\n",
        "reviewer",
    )
    .unwrap();
    assert_eq!(agent.name, "reviewer");
    assert_eq!(agent.tools, None);
    assert_eq!(agent.model.as_deref(), Some("gpt-5"));
    assert_eq!(agent.provider.as_deref(), Some("openai"));
}

#[test]
fn broken_agent_files_say_what_to_fix() {
    for (text, says) in [
        ("You are a reviewer.\n", "does not start with a `---` line"),
        ("---\nname: r\n---\nbody\n", "no `description`"),
        (
            "---\nname: Bad_Name\ndescription: x\n---\n",
            "the character 'B'",
        ),
        (
            "---\ndescription: x\ntools:\n  read: yes\n---\n",
            "`tools` is a mapping",
        ),
        ("---\ndescription: x\n", "never closed"),
    ] {
        let err = agent::check_agent(text, "r").unwrap_err();
        assert!(err.contains(says), "{text:?}: {err}");
    }
}

#[test]
fn claude_code_tool_names_map_to_smiths() {
    for (entry, tool) in [
        ("Read", "read"),
        ("Glob", "find"),
        ("LS", "ls"),
        ("Bash(git log:*)", "bash"),
        ("MultiEdit", "edit"),
        ("TodoWrite", "todo_write"),
        ("Task", "agent"),
        ("read", "read"),
        ("mcp__github__search", "mcp__github__search"),
        ("WebFetch", "WebFetch"),
    ] {
        assert_eq!(agent::tool_name(entry), tool, "{entry}");
    }
}

#[test]
fn near_names_suggest_close_agents() {
    let known = ["code-explorer", "code-reviewer", "planner"];
    assert_eq!(
        agent::near_names("code-reveiwer", &known),
        ["code-reviewer"]
    );
    assert_eq!(agent::near_names("plan", &known), ["planner"]);
    assert!(agent::near_names("zzz", &known).is_empty());
}
