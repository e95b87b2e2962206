//! `smith context` and the plugin-declared options of `smith config show`,
//! end to end through the built binary: smith/product's base fragment
//! alone, then with the test/kit guest installed (its static fragment
//! `kit.rules`, its per-turn fragment `kit.turns`, its tools and its option
//! `kit.greeting`; see plugins/tests/guests/kit).

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{install_guest, run};
use serde_json::Value;

fn json(home: &Path, args: &[&str]) -> Value {
    let (out, _) = run(home, args, 0);
    serde_json::from_str(&out).unwrap()
}

/// Installs test/kit (world `extension`, granted `ui`) into `home`.
fn install_kit(home: &Path) {
    install_guest(home, "test/kit", "smith_plugin_kit.wasm", "    ui\n");
}

fn fragment<'a>(context: &'a Value, stable_id: &str) -> Option<&'a Value> {
    context["fragments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["stable_id"] == stable_id)
}

#[test]
fn the_product_base_fragment_and_the_built_in_tools() {
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().canonicalize().unwrap();
    let context = json(home.path(), &["context", "--json"]);
    let base = fragment(&context, "smith/product/base").unwrap();
    let text = format!(
        "You are smith, a coding agent. Work in {} using the tools you are given.",
        cwd.display()
    );
    assert_eq!(base["bytes"], text.len());
    assert_eq!(base["tokens"], text.len().div_ceil(3));
    assert_eq!(base["kind"], "static");
    assert_eq!(base["order"], 0);
    assert_eq!(context["prompt"]["bytes"], text.len());
    let tools = context["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "read" && t["source"] == "built-in")
    );
    assert!(tools.iter().all(|t| t["bytes"].as_u64().unwrap() > 0));
    let tool_bytes: u64 = tools.iter().map(|t| t["bytes"].as_u64().unwrap()).sum();
    assert_eq!(context["tools_total"]["bytes"], tool_bytes);
    assert_eq!(context["total"]["bytes"], tool_bytes + text.len() as u64);

    let (out, _) = run(home.path(), &["context"], 0);
    let line = out
        .lines()
        .find(|l| l.contains("smith/product/base"))
        .unwrap();
    assert!(line.contains(&format!("{} bytes", text.len())), "{line}");
    assert!(line.contains("static"), "{line}");
    assert!(out.contains("Tool definitions"), "{out}");
    assert!(out.contains("read (built-in)"), "{out}");
}

#[test]
fn an_installed_plugin_adds_its_fragments_and_tools() {
    let home = tempfile::tempdir().unwrap();
    install_kit(home.path());
    let context = json(home.path(), &["context", "--json"]);
    let rules = fragment(&context, "test/kit/kit.rules").unwrap();
    let text = "Kit rules: answer in one line.";
    assert_eq!(rules["bytes"], text.len());
    assert_eq!(rules["kind"], "static");
    assert_eq!(rules["order"], 50);
    let turns = fragment(&context, "test/kit/kit.turns").unwrap();
    assert_eq!(turns["kind"], "dynamic");
    let ids: Vec<&str> = context["fragments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["stable_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "smith/product/base",
            "test/kit/kit.rules",
            "test/kit/kit.turns"
        ]
    );
    let tools = context["tools"].as_array().unwrap();
    let kit_read = tools.iter().find(|t| t["name"] == "kit_read").unwrap();
    assert_eq!(kit_read["source"], "test/kit");
    assert!(kit_read["bytes"].as_u64().unwrap() > "kit_read".len() as u64);

    let (out, _) = run(home.path(), &["context"], 0);
    assert!(out.contains("test/kit/kit.rules"), "{out}");
    assert!(out.contains("kit_read (test/kit)"), "{out}");
}

#[test]
fn a_plugin_option_shows_with_the_plugin_named() {
    let home = tempfile::tempdir().unwrap();
    let (before, _) = run(home.path(), &["config", "show", "--sources"], 0);
    assert!(!before.contains("kit.greeting"));
    install_kit(home.path());
    let (out, _) = run(home.path(), &["config", "show", "--sources"], 0);
    let line = out.lines().find(|l| l.starts_with("kit.greeting")).unwrap();
    assert!(
        line.contains("\"hello\"") && line.contains("(plugin test/kit)"),
        "{line}"
    );
    assert!(
        out.contains("* plugin     \"hello\"  (plugin test/kit)"),
        "{out}"
    );
    let (one, _) = run(home.path(), &["config", "show", "kit.greeting"], 0);
    assert_eq!(one.lines().count(), 1, "{one}");
    let shown = json(home.path(), &["config", "show", "--json", "--sources"]);
    // Built-in plugins declare options too (smith/permissions'
    // permissions.prompt-lines); kit's is the one with its key.
    let option = shown["plugin_options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["key"] == "kit.greeting")
        .unwrap();
    assert_eq!(option["plugin"], "test/kit");
    assert_eq!(option["source"]["plugin"], "test/kit");
}
