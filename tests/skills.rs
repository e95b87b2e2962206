//! smith/skills end to end through the built binary with the scripted
//! provider: the catalog (names and descriptions, not bodies) in the
//! recorded request; the `skill` tool loading a body with its folder and
//! files; `/name` and `$name` attaching a skill to the prompt in eval and
//! rpc; shadowing across levels and folders and unreadable frontmatter in
//! `smith skills list`; an untrusted project's skills skipped with a
//! notice; an edit between turns reaching the next request; disabling the
//! plugin removing all of it and nothing else. The skills are real ones
//! (tests/data/skills, Apache-2.0, see its README).

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Client, recorded_requests as requests};
use serde_json::{Value, json};

/// Runs `smith ARGS` with `home` as smith's home and the user's home, in
/// `cwd`; asserts the exit status `code` and returns standard output and
/// error.
fn smith_in(home: &Path, cwd: &Path, args: &[&str], code: i32) -> (String, String) {
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
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "smith {args:?}:\n{out}\n{err}");
    (out, err)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/skills")
        .join(name)
}

/// A skill folder `NAME/SKILL.md` under `root` with a description.
fn skill(root: &Path, name: &str, description: &str, body: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("SKILL.md");
    std::fs::write(
        &path,
        format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"),
    )
    .unwrap();
    path.canonicalize().unwrap()
}

/// A home (smith's in `home/smith`) and a repository `home/proj` with
/// `.smith` and the three real skills in `.claude/skills`; returns the
/// home and the project.
fn setup() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("smith")).unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::create_dir_all(proj.join(".smith")).unwrap();
    for name in ["brand-guidelines", "internal-comms", "webapp-testing"] {
        copy_dir(&data(name), &proj.join(".claude/skills").join(name));
    }
    let proj = proj.canonicalize().unwrap();
    (home, proj)
}

fn trust(home: &Path, proj: &Path) {
    smith_in(home, proj, &["trust", &proj.display().to_string()], 0);
}

fn script(home: &Path, json: &str) -> String {
    let path = home.join("script.json");
    std::fs::write(&path, json).unwrap();
    path.display().to_string()
}

const ANSWER: &str = r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#;

/// `smith eval PROMPT` in `cwd` with `script`, recording requests; the
/// requests and standard error.
fn eval(home: &Path, cwd: &Path, script: &str, prompt: &str) -> (Vec<Value>, String) {
    let record = home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let (_, err) = smith_in(
        home,
        cwd,
        &[
            "eval",
            "--mock-script",
            script,
            "--mock-record",
            &record.display().to_string(),
            prompt,
        ],
        0,
    );
    (requests(&record), err)
}

fn system(request: &Value) -> String {
    request["system"].as_str().unwrap_or_default().to_owned()
}

/// The texts of the user messages of a request.
fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["text"].as_str().map(str::to_owned))
        .collect()
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

#[test]
fn the_model_sees_the_catalog_and_the_tool_loads_a_skill_with_its_folder_and_files() {
    let (home, proj) = setup();
    trust(home.path(), &proj);
    let script = script(
        home.path(),
        r#"[
  [{"tool_call": {"id": "c1", "name": "skill", "arguments": {"name": "webapp-testing"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let (requests, err) = eval(home.path(), &proj, &script, "test the app");
    assert_eq!(requests.len(), 2, "{err}");
    let first = system(&requests[0]);
    // Names and descriptions, in order, and no body.
    let brand = first
        .find("- brand-guidelines: Applies Anthropic's official brand colors")
        .unwrap_or_else(|| panic!("{first}\n{err}"));
    let comms = first.find("- internal-comms: A set of resources").unwrap();
    let web = first
        .find("- webapp-testing: Toolkit for interacting with and testing local web applications")
        .unwrap();
    assert!(brand < comms && comms < web, "{first}");
    assert!(first.contains("call the `skill` tool"), "{first}");
    assert!(!first.contains("# Web Application Testing"), "{first}");
    assert!(tool_names(&requests[0]).contains(&"skill".to_owned()));
    // The second request carries the tool's result: the body, the folder
    // and the folder's other files.
    let second = requests[1].to_string();
    let folder = proj.join(".claude/skills/webapp-testing");
    for needle in [
        "# Web Application Testing".to_owned(),
        format!(
            "<skill name=\\\"webapp-testing\\\" folder=\\\"{}\\\">",
            folder.display()
        ),
        format!("- {}/scripts/with_server.py", folder.display()),
        format!("- {}/examples/console_logging.py", folder.display()),
        format!("- {}/LICENSE.txt", folder.display()),
    ] {
        assert!(second.contains(&needle), "{needle} missing from {second}");
    }
    assert!(!err.contains("[smith/skills]"), "{err}");

    // An unknown name is an error naming the skills there are.
    let script = self::script(
        home.path(),
        r#"[
  [{"tool_call": {"id": "c1", "name": "skill", "arguments": {"name": "pdf"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let (requests, _) = eval(home.path(), &proj, &script, "fill the form");
    let second = requests[1].to_string();
    assert!(
        second.contains("no skill is named `pdf`; the skills are: brand-guidelines, internal-comms, webapp-testing"),
        "{second}"
    );
}

#[test]
fn slash_and_dollar_names_attach_the_skill_to_the_prompt() {
    let (home, proj) = setup();
    trust(home.path(), &proj);
    let script = script(home.path(), ANSWER);
    for (prompt, sigil) in [
        ("/internal-comms write the weekly newsletter", '/'),
        ("$internal-comms write the weekly newsletter", '$'),
    ] {
        let (requests, err) = eval(home.path(), &proj, &script, prompt);
        let texts = user_texts(&requests[0]);
        assert_eq!(texts.len(), 1, "{texts:?}\n{err}");
        let text = &texts[0];
        let folder = proj.join(".claude/skills/internal-comms");
        assert!(
            text.starts_with(&format!(
                "<skill name=\"internal-comms\" folder=\"{}\">",
                folder.display()
            )),
            "{text}"
        );
        assert!(text.contains("## When to use this skill"), "{text}");
        assert!(text.contains(&format!(
            "- {}/examples/company-newsletter.md",
            folder.display()
        )));
        assert!(
            text.ends_with(&format!(
                "The user invoked the skill internal-comms (`{sigil}internal-comms`) with this request:\n\nwrite the weekly newsletter"
            )),
            "{text}"
        );
        // The frontmatter is not repeated.
        assert!(!text.contains("license: Complete terms"), "{text}");
    }
    // Without words, the skill is to be followed as it is.
    let (requests, _) = eval(home.path(), &proj, &script, "/brand-guidelines");
    assert!(
        user_texts(&requests[0])[0]
            .ends_with("(`/brand-guidelines`) without further words: follow its instructions.")
    );
    // A `/word` that names no skill goes on as before: as written.
    let (requests, err) = eval(home.path(), &proj, &script, "/tmp is full, clean it");
    assert_eq!(
        user_texts(&requests[0]),
        ["/tmp is full, clean it"],
        "{err}"
    );
    let (requests, _) = eval(home.path(), &proj, &script, "$HOME/bin is missing");
    assert_eq!(user_texts(&requests[0]), ["$HOME/bin is missing"]);
}

#[test]
fn invocation_words_fill_the_skills_placeholders_for_the_user_and_the_model() {
    let (home, proj) = setup();
    // Claude Code's example skill, whose body says "The user invoked this
    // with: $ARGUMENTS", and one of positional words.
    copy_dir(
        &data("example-command"),
        &proj.join(".claude/skills/example-command"),
    );
    skill(
        &proj.join(".smith/skills"),
        "review",
        "Reviews a file against a branch.",
        "Review $0 against the branch $1 ($ARGUMENTS[1]); leave $2 and $5 alone.",
    );
    trust(home.path(), &proj);
    let script = script(home.path(), ANSWER);
    let (requests, err) = eval(
        home.path(),
        &proj,
        &script,
        "/example-command my-argument 'two words'",
    );
    let text = &user_texts(&requests[0])[0];
    assert!(
        text.contains("The user invoked this with: my-argument 'two words'\n"),
        "{text}\n{err}"
    );
    assert!(!text.contains("$ARGUMENTS"), "{text}");
    assert!(
        text.ends_with(
            "The user invoked the skill example-command (`/example-command my-argument 'two words'`); its instructions above hold the words given."
        ),
        "{text}"
    );
    let (requests, _) = eval(
        home.path(),
        &proj,
        &script,
        "$review src/lib.rs \"main line\"",
    );
    let text = &user_texts(&requests[0])[0];
    assert!(
        text.contains(
            "Review src/lib.rs against the branch main line (main line); leave $2 and $5 alone."
        ),
        "{text}"
    );
    // The model passes the words through the tool's `arguments`.
    let script = self::script(
        home.path(),
        r#"[
  [{"tool_call": {"id": "c1", "name": "skill", "arguments": {"name": "review", "arguments": "a.rs dev"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let (requests, err) = eval(home.path(), &proj, &script, "review a.rs");
    let second = requests[1].to_string();
    assert!(
        second.contains("Review a.rs against the branch dev (dev); leave $2 and $5 alone."),
        "{second}\n{err}"
    );
}

#[test]
fn rpc_prompts_invoke_skills_too() {
    let home = tempfile::tempdir().unwrap();
    // Smith's home is the working folder here: a global skill.
    skill(
        &home.path().join("skills"),
        "release-notes",
        "Writes release notes from the changelog.",
        "RELEASE-BODY: group the changes by kind.",
    );
    let script = script(home.path(), ANSWER);
    let record = home.path().join("rpc.jsonl");
    let mut client = Client::start(
        home.path(),
        &[
            "--mock-script",
            &script,
            "--mock-record",
            &record.display().to_string(),
        ],
    );
    client.send(1, "prompt", json!({"text": "$release-notes for 2.0"}));
    client.until(|r| r["id"] == 1);
    client.send(2, "wait_settled", json!({}));
    client.until(|r| r["id"] == 2);
    let (_, err) = client.finish();
    let requests = requests(&record);
    let text = &user_texts(&requests[0])[0];
    assert!(
        text.contains("RELEASE-BODY: group the changes by kind."),
        "{text}\n{err}"
    );
    assert!(text.ends_with("with this request:\n\nfor 2.0"), "{text}");
    assert!(
        system(&requests[0]).contains("- release-notes: Writes release notes from the changelog.")
    );
}

#[test]
fn skills_list_shows_sources_shadowing_and_unreadable_files() {
    let (home, proj) = setup();
    let h = home.path();
    let first = skill(
        &proj.join(".smith/skills"),
        "pdf",
        "Project smith PDF.",
        "FIRST",
    );
    let second = skill(
        &proj.join(".claude/skills"),
        "pdf",
        "Project claude PDF.",
        "SECOND",
    );
    let global = skill(
        &h.join("smith/skills"),
        "pdf",
        "Global smith PDF.",
        "GLOBAL",
    );
    let claude = skill(
        &h.join(".claude/skills"),
        "pdf",
        "Global claude PDF.",
        "CLAUDE",
    );
    let agents = skill(
        &h.join(".agents/skills"),
        "notes",
        "Global agents notes.",
        "NOTES",
    );
    // Broken: no closing line; a name against the rules; a name that is
    // not the folder's.
    let broken = proj.join(".agents/skills/broken/SKILL.md");
    std::fs::create_dir_all(broken.parent().unwrap()).unwrap();
    std::fs::write(&broken, "---\nname: broken\ndescription: never closed\n").unwrap();
    let upper = proj.join(".gemini/skills/Upper/SKILL.md");
    std::fs::create_dir_all(upper.parent().unwrap()).unwrap();
    std::fs::write(&upper, "---\nname: Upper\ndescription: d\n---\n").unwrap();
    let renamed = proj.join(".claude/skills/renamed/SKILL.md");
    std::fs::create_dir_all(renamed.parent().unwrap()).unwrap();
    std::fs::write(&renamed, "---\nname: other\ndescription: d\n---\n").unwrap();
    // Trusted once everything is in place: `.smith/skills` is part of the
    // `.smith` folder trust records.
    trust(h, &proj);

    let (out, _) = smith_in(h, &proj, &["skills", "list", "--json"], 0);
    let list: Value = serde_json::from_str(&out).unwrap();
    let skills = list["skills"].as_array().unwrap();
    let entry = |path: &Path| {
        skills
            .iter()
            .find(|s| s["path"] == path.display().to_string())
            .unwrap_or_else(|| panic!("{} missing from {out}", path.display()))
    };
    let winner = entry(&first);
    assert_eq!(winner["name"], "pdf");
    assert_eq!(winner["level"], "project");
    assert_eq!(winner["shadowed_by"], Value::Null);
    assert_eq!(winner["description"], "Project smith PDF.");
    assert_eq!(
        winner["folder"],
        proj.join(".smith/skills").display().to_string()
    );
    for loser in [&second, &global, &claude] {
        assert_eq!(
            entry(loser)["shadowed_by"],
            first.display().to_string(),
            "{out}"
        );
    }
    assert_eq!(entry(&global)["level"], "global");
    assert_eq!(entry(&agents)["shadowed_by"], Value::Null);
    let unreadable = list["unreadable"].as_array().unwrap();
    let reason = |path: &Path| {
        unreadable
            .iter()
            .find(|u| u["path"] == path.canonicalize().unwrap().display().to_string())
            .unwrap_or_else(|| panic!("{} missing from {out}", path.display()))["reason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(
        reason(&broken).contains("never closed; add a `---` line"),
        "{out}"
    );
    assert!(
        reason(&upper).contains("the name `Upper` has the character 'U'"),
        "{out}"
    );
    assert!(
        reason(&renamed).contains("differs from its folder's name `renamed`"),
        "{out}"
    );
    // The folders in precedence order: the project's, then the user's.
    let folders: Vec<&str> = list["folders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let at = |p: PathBuf| {
        let p = p.display().to_string();
        folders
            .iter()
            .position(|f| *f == p)
            .unwrap_or_else(|| panic!("{p} in {folders:?}"))
    };
    assert!(at(proj.join(".smith/skills")) < at(proj.join(".claude/skills")));
    assert!(at(proj.join(".claude/skills")) < at(proj.join(".agents/skills")));
    assert!(at(proj.join(".gemini/skills")) < at(h.canonicalize().unwrap().join("smith/skills")));
    assert!(
        at(h.canonicalize().unwrap().join("smith/skills"))
            < at(h.canonicalize().unwrap().join(".claude/skills"))
    );

    // The text form says the same.
    let (text, _) = smith_in(h, &proj, &["skills", "list"], 0);
    assert!(
        text.contains(&format!(
            "pdf  project  {}\n    Project smith PDF.",
            first.display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "pdf  global  {}\n    shadowed by {}",
            claude.display(),
            first.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("Not loaded (the frontmatter could not be read):"),
        "{text}"
    );
    assert!(text.contains("    invoke: /pdf or $pdf"), "{text}");

    // The model sees the winner only; each problem is a notice naming its
    // file; invoking a broken skill is refused with the reason.
    let script = script(h, ANSWER);
    let (requests, err) = eval(h, &proj, &script, "go");
    let system = system(&requests[0]);
    assert!(system.contains("- pdf: Project smith PDF."), "{system}");
    assert!(!system.contains("claude PDF"), "{system}");
    assert!(system.contains("- notes: Global agents notes."), "{system}");
    assert!(!system.contains("broken"), "{system}");
    let notice = |needle: &str| {
        err.lines()
            .find(|l| l.starts_with("[smith/skills]") && l.contains(needle))
            .unwrap_or_else(|| panic!("no notice with {needle}:\n{err}"))
            .to_owned()
    };
    notice(&format!(
        "the skill file {} was not loaded",
        broken.canonicalize().unwrap().display()
    ));
    let shadow = notice(&format!(
        "the skill pdf in {} is not used",
        second.display()
    ));
    assert!(
        shadow.contains(&format!(
            "{} has the same name and comes first",
            first.display()
        )),
        "{shadow}"
    );
    let (_, err) = smith_in(
        h,
        &proj,
        &["eval", "--mock-script", &script, "/broken now"],
        1,
    );
    assert!(err.contains("smith/skills blocked this input"), "{err}");
    assert!(err.contains("never closed"), "{err}");
}

#[test]
fn an_untrusted_projects_skills_are_skipped_with_a_notice() {
    let (home, proj) = setup();
    skill(
        &home.path().join("smith/skills"),
        "mine",
        "My own skill.",
        "MINE",
    );
    let script = script(home.path(), ANSWER);
    let (requests, err) = eval(home.path(), &proj, &script, "go");
    let system = system(&requests[0]);
    assert!(system.contains("- mine: My own skill."), "{system}");
    assert!(!system.contains("webapp-testing"), "{system}");
    let notices: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("[smith/skills]"))
        .collect();
    assert_eq!(notices.len(), 1, "{err}");
    let notice = notices[0];
    assert!(notice.contains("not trusted"), "{notice}");
    assert!(
        notice.contains(
            &proj
                .join(".claude/skills/webapp-testing/SKILL.md")
                .display()
                .to_string()
        ),
        "{notice}"
    );
    assert!(
        notice.contains(&format!("run `smith trust {}`", proj.display())),
        "{notice}"
    );
    // Invoking one says why it is not there.
    let (_, err) = smith_in(
        home.path(),
        &proj,
        &["eval", "--mock-script", &script, "$webapp-testing"],
        1,
    );
    assert!(
        err.contains("belongs to a project that is not trusted"),
        "{err}"
    );
    // Trusted, they are read.
    trust(home.path(), &proj);
    let (requests, _) = eval(home.path(), &proj, &script, "go");
    assert!(system_of(&requests).contains("- webapp-testing: Toolkit"));
}

fn system_of(requests: &[Value]) -> String {
    system(&requests[0])
}

#[test]
fn an_edit_between_two_turns_reaches_the_next_request() {
    let (home, proj) = setup();
    trust(home.path(), &proj);
    let script = script(
        home.path(),
        r#"[
  [{"tool_call": {"id": "c1", "name": "write", "arguments": {"path": ".smith/skills/fresh/SKILL.md", "content": "---\nname: fresh\ndescription: Added during the run.\n---\nFRESH\n"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let (requests, err) = eval(home.path(), &proj, &script, "add a skill");
    assert_eq!(requests.len(), 2, "{err}");
    assert!(!system(&requests[0]).contains("- fresh:"));
    assert!(
        system(&requests[1]).contains("- fresh: Added during the run."),
        "{}\n{err}",
        system(&requests[1])
    );
}

#[test]
fn disabling_the_plugin_removes_skills_and_nothing_else() {
    let (home, proj) = setup();
    trust(home.path(), &proj);
    std::fs::write(proj.join("AGENTS.md"), "ROOT-RULE: use tabs.\n").unwrap();
    let (out, _) = smith_in(home.path(), &proj, &["plugin", "list"], 0);
    let line = out
        .lines()
        .find(|l| l.contains("smith/skills"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("built-in") && line.contains("enabled"),
        "{line}"
    );
    let script = script(home.path(), ANSWER);
    let (before, _) = eval(home.path(), &proj, &script, "/brand-guidelines go");
    smith_in(
        home.path(),
        &proj,
        &["plugin", "disable", "smith/skills"],
        0,
    );
    let (after, err) = eval(home.path(), &proj, &script, "/brand-guidelines go");
    let system = system(&after[0]);
    assert!(!system.contains("# Skills"), "{system}");
    assert!(!tool_names(&after[0]).contains(&"skill".to_owned()));
    assert_eq!(user_texts(&after[0]), ["/brand-guidelines go"]);
    assert!(!err.contains("smith/skills"), "{err}");
    // Everything else is as it was: the same prompt without the catalog,
    // the same tools without `skill`.
    assert!(system.contains("ROOT-RULE: use tabs."), "{system}");
    let catalog_start = self::system(&before[0]).find("# Skills").unwrap();
    assert_eq!(system, self::system(&before[0])[..catalog_start].trim_end());
    let mut tools = tool_names(&before[0]);
    tools.retain(|t| t != "skill");
    assert_eq!(tool_names(&after[0]), tools);
    let (_, err) = smith_in(home.path(), &proj, &["skills", "list"], 1);
    assert!(err.contains("smith/skills is not loaded"), "{err}");
    assert!(err.contains("smith plugin enable smith/skills"), "{err}");
}
