//! Builds the guest workspace (plugins/guest-workspace: the SDK, the built-in
//! plugins, the example and the hostile test guests) for wasm32-wasip2 with a
//! nested cargo, in its own target directory (<target>/plugin-guests), and tells the
//! crate where the components are. Nothing here needs more than rustup and
//! cargo: the wasm32-wasip2 target links components directly.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Guests built together share one cargo invocation; the SDK's world
/// features must not unify across worlds, so each world builds separately.
const GROUPS: &[&[&str]] = &[
    &[
        "smith-plugin-mock",
        "smith-plugin-hostile",
        "smith-plugin-anthropic",
        "smith-plugin-openai",
        "smith-plugin-google",
        "smith-plugin-openai-compatible",
    ],
    &[
        "smith-plugin-product",
        "smith-plugin-instructions",
        "smith-plugin-skills",
        "smith-plugin-mcp",
        "smith-plugin-mentions",
        "smith-plugin-todo",
        "smith-plugin-hooks",
        "smith-plugin-kit",
        "smith-plugin-hello",
        "smith-plugin-plan",
        "smith-plugin-agents",
        "smith-plugin-web",
    ],
    &[
        "smith-plugin-permissions",
        "smith-plugin-probe",
        "smith-plugin-stuck",
        "smith-plugin-lifecycle",
    ],
    &[
        "smith-plugin-searxng",
        "smith-plugin-brave",
        "smith-plugin-searcher",
    ],
];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    for watched in [
        "wit",
        "sdk",
        "builtin",
        "examples",
        "tests/guests",
        "guest-workspace/Cargo.toml",
        "guest-workspace/Cargo.lock",
        // The built-in plugins compile the provider contract, the adapters
        // and what they use.
        "../engine/contract/src",
        "../engine/contract/Cargo.toml",
        "../providers/src",
        "../providers/Cargo.toml",
        "../diagnostics/src",
        "../diagnostics/Cargo.toml",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            manifest_dir.join(watched).display()
        );
    }
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out: share one guest
    // target directory per outer target directory (<target>/plugin-guests)
    // so check, test, clippy and bench builds reuse the same guest builds.
    let target_dir = out_dir.ancestors().nth(4).map_or_else(
        || out_dir.join("guest-target"),
        |target| target.join("plugin-guests"),
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    for group in GROUPS {
        let mut command = Command::new(&cargo);
        command
            .current_dir(manifest_dir.join("guest-workspace"))
            .args([
                "build",
                "--release",
                "--locked",
                "--target",
                "wasm32-wasip2",
            ])
            .arg("--target-dir")
            .arg(&target_dir);
        for package in *group {
            command.args(["-p", package]);
        }
        scrub_environment(&mut command);
        let status = command.status();
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => fail(&format!(
                "building the plugin guests {group:?} for wasm32-wasip2 failed ({status}); the compiler output is above. If it says the target wasm32-wasip2 is not installed, run scripts/setup (or `rustup target add wasm32-wasip2`)."
            )),
            Err(err) => fail(&format!(
                "could not run cargo ({}) to build the plugin guests: {err}; check that cargo is on PATH",
                Path::new(&cargo).display()
            )),
        }
    }
    let release = target_dir.join("wasm32-wasip2").join("release");
    println!("cargo:rustc-env=SMITH_PLUGIN_GUESTS={}", release.display());
}

/// Removes the outer build's settings that would leak into the guest build:
/// flags and wrappers meant for the host target, the outer target directory
/// and target triple, and cargo's per-package variables.
fn scrub_environment(command: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let keep = matches!(
            key,
            "CARGO_HOME" | "CARGO_NET_OFFLINE" | "CARGO_HTTP_TIMEOUT" | "CARGO_MAKEFLAGS"
        ) || key.starts_with("CARGO_REGISTRIES_");
        let drop = (key.starts_with("CARGO_") && !keep)
            || matches!(
                key,
                "RUSTFLAGS"
                    | "RUSTDOCFLAGS"
                    | "RUSTC_WRAPPER"
                    | "RUSTC_WORKSPACE_WRAPPER"
                    | "RUSTC"
                    | "TARGET"
                    | "HOST"
                    | "OUT_DIR"
            );
        if drop {
            command.env_remove(key);
        }
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}
