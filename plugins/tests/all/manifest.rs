//! Manifests and installation: validation before any code runs, owned
//! roots, reserved names, newer API generations.

use std::path::Path;

use smith_plugins::manifest::{Manifest, install, plugin_dir, uninstall};

use crate::guest;

const GOOD: &str = r#"
name "example/hello"
version "0.1.0"
description "Greets people"
api 1
world "extension"
component "plugin.wasm"
memory-limit-mib 32
capabilities {
    fs-read "data"
}
"#;

fn plugin_folder(manifest: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plugin.kdl"), manifest).unwrap();
    std::fs::write(
        dir.path().join("plugin.wasm"),
        guest("smith_plugin_hello.wasm"),
    )
    .unwrap();
    dir
}

#[test]
fn a_valid_manifest_parses() {
    let m = Manifest::parse(GOOD, "plugin.kdl").unwrap();
    assert_eq!(
        (m.name.as_str(), m.api, m.world.as_str(), m.memory_limit_mib),
        ("example/hello", 1, "extension", 32)
    );
    assert_eq!(
        m.capabilities,
        vec![("fs-read".to_owned(), "data".to_owned())]
    );
    assert_eq!(m.unsupported(), None);
}

#[test]
fn a_search_provider_manifest_parses() {
    let text = GOOD
        .replace("world \"extension\"", "world \"search-provider\"")
        .replace("fs-read \"data\"", "net \"api.example.com\"");
    let m = Manifest::parse(&text, "plugin.kdl").unwrap();
    assert_eq!(m.world, "search-provider");
    assert_eq!(
        m.capabilities,
        vec![("net".to_owned(), "api.example.com".to_owned())]
    );
}

#[test]
fn invalid_manifests_name_the_field() {
    let cases = [
        (GOOD.replace("example/hello", "Hello"), "name \"Hello\""),
        (GOOD.replace("api 1", "api 0"), "api 0"),
        (GOOD.replace("\"extension\"", "\"gui\""), "world \"gui\""),
        (
            GOOD.replace("\"plugin.wasm\"", "\"../x.wasm\""),
            "leaves the plugin folder",
        ),
        (
            GOOD.replace("fs-read \"data\"", "fs-read \"/etc\""),
            "leaves the plugin's roots",
        ),
        (
            GOOD.replace("fs-read", "root-shell"),
            "unknown capability `root-shell`",
        ),
        // `web` (any host, public addresses only) is smith/web's alone.
        (
            GOOD.replace("fs-read \"data\"", "web \"\""),
            "unknown capability `web`",
        ),
        // `web-search` (asking the search providers) is smith/web's alone.
        (
            GOOD.replace("fs-read \"data\"", "web-search"),
            "unknown capability `web-search`",
        ),
        (
            GOOD.replace("version \"0.1.0\"", ""),
            "`version` is missing",
        ),
        (format!("{GOOD}\nexec \"sh\""), "unknown field `exec`"),
    ];
    for (text, expected) in cases {
        let err = Manifest::parse(&text, "x/plugin.kdl").unwrap_err();
        assert!(
            err.message.contains(expected),
            "expected {expected:?} in {err}"
        );
        assert!(err.message.starts_with("x/plugin.kdl"), "{err}");
    }
}

#[test]
fn a_deeply_nested_manifest_is_refused_before_parsing() {
    // 100,000 levels overflow the parser's stack; the limit refuses the
    // file at the first line past it.
    let levels = 100_000;
    let text = format!("{GOOD}{}{}", "a {\n".repeat(levels), "}\n".repeat(levels));
    let err = Manifest::parse(&text, "x/plugin.kdl").unwrap_err();
    let limit = smith_config::nesting::MAX_DEPTH;
    let line = GOOD.lines().count() + limit + 1;
    assert!(err.message.starts_with("x/plugin.kdl"), "{err}");
    assert!(
        err.message
            .contains(&format!("deeper than {limit} levels at line {line}")),
        "{err}"
    );
}

#[test]
fn a_newer_api_generation_is_reported_with_both_numbers() {
    let m = Manifest::parse(&GOOD.replace("api 1", "api 3"), "p").unwrap();
    let why = m.unsupported().unwrap();
    assert!(
        why.contains("generation 3") && why.contains("up to 1"),
        "{why}"
    );
}

#[test]
fn install_validates_in_staging_and_uninstall_keeps_data() {
    let root = tempfile::tempdir().unwrap();
    let source = plugin_folder(GOOD);
    let manifest = install(source.path(), root.path()).unwrap();
    let dir = plugin_dir(root.path(), &manifest.name);
    assert!(dir.join("plugin.kdl").is_file() && dir.join("plugin.wasm").is_file());
    assert!(
        !root
            .path()
            .join(".staging")
            .read_dir()
            .unwrap()
            .any(|_| true),
        "staging is cleaned"
    );
    let again = install(source.path(), root.path()).unwrap_err();
    assert!(again.message.contains("already installed"), "{again}");
    let data = smith_plugins::manifest::data_dir(root.path(), "example/hello");
    std::fs::create_dir_all(&data).unwrap();
    uninstall(root.path(), "example/hello", false).unwrap();
    assert!(!dir.exists() && data.exists());
    install(source.path(), root.path()).unwrap();
    uninstall(root.path(), "example/hello", true).unwrap();
    assert!(!data.exists());
}

#[test]
fn install_refuses_symlinks_reserved_names_and_precompiled_code() {
    let root = tempfile::tempdir().unwrap();
    let source = plugin_folder(GOOD);
    std::os::unix::fs::symlink("/etc/passwd", source.path().join("leak")).unwrap();
    let err = install(source.path(), root.path()).unwrap_err();
    assert!(err.message.contains("symlink"), "{err}");
    assert!(!plugin_dir(root.path(), "example/hello").exists());

    let reserved = plugin_folder(&GOOD.replace("example/hello", "smith/hello"));
    let err = install(reserved.path(), root.path()).unwrap_err();
    assert!(err.message.contains("reserved"), "{err}");

    let precompiled = plugin_folder(GOOD);
    let engine = smith_plugins::Runtime::global().unwrap().engine();
    let compiled = engine
        .precompile_component(&guest("smith_plugin_hello.wasm"))
        .unwrap();
    std::fs::write(precompiled.path().join("plugin.wasm"), compiled).unwrap();
    let err = install(precompiled.path(), root.path()).unwrap_err();
    assert!(err.message.contains("precompiled"), "{err}");
    assert!(!Path::new(&plugin_dir(root.path(), "example/hello")).exists());
}
