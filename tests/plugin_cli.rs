//! `smith plugin ...` and `smith help ...` end to end through the built
//! binary against a temporary `SMITH_HOME`.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

fn smith(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .current_dir(home)
        .args(args)
        .output()
        .unwrap()
}

fn run(home: &Path, args: &[&str], code: i32) -> (String, String) {
    let o = smith(home, args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(code),
        "smith {args:?}:\nstdout: {out}\nstderr: {err}"
    );
    (out, err)
}

/// A plugin folder with `manifest` and the SDK example's component as its
/// wasm.
fn plugin_folder(parent: &Path, dir: &str, manifest: &str) -> String {
    let folder = parent.join(dir);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("plugin.kdl"), manifest).unwrap();
    // The SDK's example extension: a user plugin's component, which smith
    // compiles into its cache (a built-in's bytes would load from the
    // artifact precompiled into smith).
    std::fs::write(
        folder.join("plugin.wasm"),
        smith_plugins::builtin::EXAMPLE_HELLO.bytes().unwrap(),
    )
    .unwrap();
    folder.display().to_string()
}

const GREETER: &str = r#"name "example/greeter"
version "0.1.0"
description "Greets people"
api 1
world "extension"
capabilities {
    fs-read "notes"
    ui
}
"#;

fn line_of<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find(|l| l.starts_with(name))
}

#[test]
fn install_list_info_disable_enable_reload_uninstall() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let src = tempfile::tempdir().unwrap();

    let (out, _) = run(home, &["plugin", "list"], 0);
    for builtin in [
        "smith/mock",
        "smith/anthropic",
        "smith/openai",
        "smith/google",
        "smith/openai-compatible",
        "smith/product",
    ] {
        let line = line_of(&out, builtin).unwrap_or_else(|| panic!("{builtin} missing:\n{out}"));
        assert!(
            line.contains("built-in") && line.contains("enabled"),
            "{line}"
        );
    }
    assert!(line_of(&out, "example/greeter").is_none());

    let folder = plugin_folder(src.path(), "greeter", GREETER);
    let (out, _) = run(home, &["plugin", "install", &folder], 0);
    assert!(
        out.starts_with("installed example/greeter 0.1.0 into "),
        "{out}"
    );
    assert!(
        home.join("data/plugins/example/greeter/plugin.kdl")
            .is_file()
    );

    let (out, _) = run(home, &["plugin", "list"], 0);
    let line = line_of(&out, "example/greeter").unwrap();
    assert!(
        line.contains("user") && line.contains("enabled") && line.contains("Greets people"),
        "{line}"
    );

    let (out, _) = run(home, &["plugin", "info", "example/greeter"], 0);
    assert!(out.contains("capabilities: fs-read \"notes\", ui"), "{out}");
    assert!(out.contains("state: enabled"), "{out}");
    let (out, _) = run(home, &["plugin", "info", "smith/product"], 0);
    assert!(
        out.contains("root: built-in") && out.contains("capabilities: ui"),
        "{out}"
    );

    run(home, &["plugin", "disable", "example/greeter"], 0);
    let (out, _) = run(home, &["plugin", "list"], 0);
    assert!(
        line_of(&out, "example/greeter")
            .unwrap()
            .contains("disabled (smith plugin enable"),
        "{out}"
    );
    run(home, &["plugin", "enable", "example/greeter"], 0);
    let (out, _) = run(home, &["plugin", "list"], 0);
    assert!(
        line_of(&out, "example/greeter")
            .unwrap()
            .contains(" enabled "),
        "{out}"
    );

    // The first reload compiles into smith's cache; the second loads it.
    let (out, _) = run(home, &["plugin", "reload", "example/greeter"], 0);
    assert!(
        out.starts_with("reloaded example/greeter in ") && out.contains("(compiled and cached)"),
        "{out}"
    );
    let (out, _) = run(home, &["plugin", "reload", "example/greeter"], 0);
    assert!(out.contains("(from the cache)"), "{out}");

    let (_, err) = run(home, &["plugin", "install", &folder], 1);
    assert!(err.contains("already installed"), "{err}");

    let (out, _) = run(home, &["plugin", "uninstall", "example/greeter"], 0);
    assert!(out.contains("its data folder is kept"), "{out}");
    let (out, _) = run(home, &["plugin", "list"], 0);
    assert!(line_of(&out, "example/greeter").is_none(), "{out}");
    let (_, err) = run(home, &["plugin", "info", "example/greeter"], 1);
    assert!(err.contains("no plugin named \"example/greeter\""), "{err}");
}

#[test]
fn install_refuses_reserved_names_and_lists_newer_generations_disabled() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let src = tempfile::tempdir().unwrap();
    let reserved = plugin_folder(
        src.path(),
        "reserved",
        &GREETER.replace("example/greeter", "smith/evil"),
    );
    let (_, err) = run(home, &["plugin", "install", &reserved], 1);
    assert!(err.contains("smith/"), "{err}");
    assert!(!home.join("data/plugins/smith/evil").exists());

    let newer = plugin_folder(src.path(), "newer", &GREETER.replace("api 1", "api 2"));
    let (out, _) = run(home, &["plugin", "install", &newer], 0);
    assert!(
        out.contains("needs plugin API generation 2 but this smith supports up to 1"),
        "{out}"
    );
    let (out, _) = run(home, &["plugin", "list"], 0);
    let line = line_of(&out, "example/greeter").unwrap();
    assert!(
        line.contains("disabled: needs plugin API generation 2"),
        "{line}"
    );
    let (_, err) = run(home, &["plugin", "reload", "example/greeter"], 1);
    assert!(err.contains("is disabled"), "{err}");

    let (_, err) = run(home, &["plugin", "enable", "Not A Name"], 2);
    assert!(err.contains("is not a plugin name"), "{err}");
}

#[test]
fn help_is_a_command_for_commands_and_the_plugin_contract() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (out, _) = run(home, &["help", "plugins"], 0);
    assert!(out.contains("smith:plugin@1"), "{out}");
    assert!(out.contains("host.read-file"), "{out}");
    let (out, _) = run(home, &["help", "plugins", "host.http-request"], 0);
    assert!(out.contains("net HOST"), "{out}");
    let (_, err) = run(home, &["help", "plugins", "host.no-such-thing"], 2);
    assert!(err.contains("no-such-thing"), "{err}");

    let (out, _) = run(home, &["help", "session", "list"], 0);
    assert!(out.contains("Usage: smith session list"), "{out}");
    let (out, _) = run(home, &["help", "plugin"], 0);
    assert!(
        out.contains("Usage: smith plugin") && out.contains("uninstall"),
        "{out}"
    );
    let (out, _) = run(home, &["help"], 0);
    assert!(
        out.contains("Usage: smith") && out.contains("plugins [ITEM]"),
        "{out}"
    );
    let (_, err) = run(home, &["help", "nope"], 2);
    assert!(err.contains("has no subcommand \"nope\""), "{err}");
    // --help keeps working everywhere.
    let (out, _) = run(home, &["plugin", "--help"], 0);
    assert!(out.contains("reload"), "{out}");
}

#[test]
fn the_mock_provider_is_the_smith_mock_plugin_precompiled_into_smith_and_used_in_place() {
    let home = tempfile::tempdir().unwrap();
    let cache = home.path().join("cache").join("plugins");
    assert!(!cache.exists());
    // The first offline run on a fresh home compiles, decompresses and
    // caches nothing: smith/mock and the interface's extensions come
    // precompiled in the binary and are used where they lie, on this start
    // as on every later one...
    let (out, _) = run(
        home.path(),
        &["eval", "--no-session", "--provider", "mock", "hello"],
        0,
    );
    assert!(out.contains("offline demo"), "{out}");
    assert_eq!(cached_files(&cache), Vec::<std::path::PathBuf>::new());
    // ...and so does `smith plugin reload smith/mock`, every time.
    for _ in 0..2 {
        let (out, _) = run(home.path(), &["plugin", "reload", "smith/mock"], 0);
        assert!(out.contains("(precompiled in smith)"), "{out}");
    }
    assert_eq!(cached_files(&cache), Vec::<std::path::PathBuf>::new());
    // A vendor's provider, loaded later or never, is compressed in the
    // binary: its first load decompresses it into the cache, byte for
    // byte, and later ones load it from there.
    let (out, _) = run(home.path(), &["plugin", "reload", "smith/anthropic"], 0);
    assert!(out.contains("(precompiled in smith)"), "{out}");
    let cached = cached_files(&cache);
    assert_eq!(cached.len(), 1, "{cached:?}");
    let bytes = std::fs::read(&cached[0]).unwrap();
    assert!(
        smith_plugins::builtin::PRECOMPILED
            .iter()
            .filter(|p| !p.is_in_place())
            .any(|p| p.artifact() == Some(bytes.as_slice())),
        "{} is no compressed embedded artifact: it was compiled",
        cached[0].display()
    );
    let (out, _) = run(home.path(), &["plugin", "reload", "smith/anthropic"], 0);
    assert!(out.contains("(from the cache)"), "{out}");
    assert_eq!(cached_files(&cache), cached);
    // A script the plugin refuses is a mock-script error naming the file.
    let script = home.path().join("bad.json");
    std::fs::write(&script, "[[{\"nope\": 1}]]").unwrap();
    let script = script.display().to_string();
    let (_, err) = run(
        home.path(),
        &[
            "eval",
            "--no-session",
            "--provider",
            "mock",
            "--mock-script",
            &script,
            "go",
        ],
        1,
    );
    assert!(err.contains("engine.mock-script"), "{err}");
    assert!(
        err.contains(&format!("mock script {script} is not valid")),
        "{err}"
    );
    assert_eq!(cached_files(&cache), cached);
}

/// The files under `dir`, sorted (none when there is no `dir`).
fn cached_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if !dir.exists() {
            continue;
        }
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

const HELLO: &str = r#"name "example/hello"
version "0.1.0"
description "Refuses to run rm -rf /"
api 1
world "extension"
component "plugin.wasm"
"#;

#[test]
fn an_installed_extension_takes_part_in_eval_runs() {
    let home = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let folder = src.path().join("hello");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("plugin.kdl"), HELLO).unwrap();
    std::fs::copy(
        Path::new(smith_plugins::builtin::GUESTS_DIR).join("smith_plugin_hello.wasm"),
        folder.join("plugin.wasm"),
    )
    .unwrap();
    run(
        home.path(),
        &["plugin", "install", &folder.display().to_string()],
        0,
    );
    // The call is harmless (an echo) but matches what example/hello
    // refuses, so whether it ran shows as a file. The project here is also
    // smith's home, whose credential store the sandbox denies, so the file
    // goes in a subfolder (the sandbox grants no new entries in the folders
    // on the way to a denied path).
    std::fs::create_dir_all(home.path().join("work")).unwrap();
    let ran = home.path().join("work/ran.txt");
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[[{"tool_call": {"name": "bash", "arguments": {"command": "echo rm -rf /nothing > work/ran.txt"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "finished"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    let script = script.display().to_string();
    let eval = |extra: &[&str]| {
        let mut args = vec!["eval", "--no-session", "--mock-script", &script];
        args.extend_from_slice(extra);
        args.push("clean up");
        run(home.path(), &args, 0)
    };
    let (_, err) = eval(&[]);
    assert!(
        err.contains("[bash] blocked: Blocked: the bash call did not run because the extension example/hello blocked it"),
        "{err}"
    );
    assert!(!ran.exists());
    // Disabled, it is not loaded: the same call runs.
    run(home.path(), &["plugin", "disable", "example/hello"], 0);
    let (_, err) = eval(&[]);
    assert!(err.contains("[bash] ok"), "{err}");
    assert!(ran.exists());
    std::fs::remove_file(&ran).unwrap();
    // Enabled again, --no-plugins leaves it out for one run.
    run(home.path(), &["plugin", "enable", "example/hello"], 0);
    let (_, err) = eval(&["--no-plugins"]);
    assert!(err.contains("[bash] ok"), "{err}");
    assert!(ran.exists());
}

#[test]
fn a_disabled_provider_plugin_is_not_used() {
    let home = tempfile::tempdir().unwrap();
    run(
        home.path(),
        &["plugin", "disable", "smith/openai-compatible"],
        0,
    );
    let (_, err) = run(
        home.path(),
        &[
            "eval",
            "--no-session",
            "--provider",
            "openai-compatible",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "local-model",
            "hi",
        ],
        1,
    );
    assert!(
        err.contains("the provider plugin smith/openai-compatible is disabled")
            && err.contains("smith plugin enable smith/openai-compatible"),
        "{err}"
    );
}

#[test]
fn a_disabled_mock_plugin_is_not_used() {
    let home = tempfile::tempdir().unwrap();
    run(home.path(), &["plugin", "disable", "smith/mock"], 0);
    let (_, err) = run(
        home.path(),
        &["eval", "--no-session", "--provider", "mock", "hi"],
        1,
    );
    assert!(
        err.contains("the provider plugin smith/mock (the scripted provider) is disabled"),
        "{err}"
    );
    run(home.path(), &["plugin", "enable", "smith/mock"], 0);
    run(
        home.path(),
        &["eval", "--no-session", "--provider", "mock", "hi"],
        0,
    );
}
