//! Builds the guest workspace (plugins/guest-workspace: the SDK, the built-in
//! plugins, the example and the hostile test guests) for wasm32-wasip2 with a
//! nested cargo, in its own target directory (<target>/plugin-guests), and tells the
//! crate where the components are. Nothing here needs more than rustup and
//! cargo: the wasm32-wasip2 target links components directly.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

#[path = "src/engine_config.rs"]
mod engine_config;

/// The built-in plugins (`builtin::BUILTINS`, by file stem), compiled here
/// ahead of time with the runtime's engine configuration and embedded
/// precompiled. A test (`every_builtin_is_embedded_precompiled`) keeps
/// this list and `BUILTINS` the same.
///
/// In the order a start loads them: the first [`IN_PLACE`] are what the
/// interface loads before its first frame (its extensions, in `BUILTINS`
/// order, then the offline provider), embedded uncompressed and used
/// where they lie on every start; the providers and search providers
/// loaded later or never come last, compressed (docs/plugins.md,
/// "Precompiled built-ins").
const PRECOMPILED: &[&str] = &[
    "smith_plugin_product",
    "smith_plugin_plan",
    "smith_plugin_permissions",
    "smith_plugin_instructions",
    "smith_plugin_skills",
    "smith_plugin_agents",
    "smith_plugin_mcp",
    "smith_plugin_mentions",
    "smith_plugin_todo",
    "smith_plugin_hooks",
    "smith_plugin_web",
    "smith_plugin_mock",
    "smith_plugin_anthropic",
    "smith_plugin_openai",
    "smith_plugin_google",
    "smith_plugin_openai_compatible",
    "smith_plugin_searxng",
    "smith_plugin_brave",
];

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
        // The engine configuration the built-ins are precompiled with.
        "src/engine_config.rs",
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
    embed(&release, &out_dir);
}

/// How many of [`PRECOMPILED`], from the first, are embedded uncompressed
/// and used in place: what the interface loads before its first frame (its
/// extensions and the offline provider smith/mock). Every start, first or
/// later, loads these straight from the binary's memory, so a first start
/// does what a later one does (docs/plugins.md, "Precompiled built-ins").
const IN_PLACE: usize = 12;

/// The alignment of each in-place artifact in the binary: a page, so that
/// wasmtime can use it where it lies (its code made executable there;
/// wasmtime also asserts that an artifact's memory starts on a page). 4 KiB
/// is the page of x86_64, the one
/// architecture whose runtime uses the artifacts in place (elsewhere they
/// are copied, and any alignment serves).
const PAGE: usize = 4096;

/// The zstd level of the compressed artifacts (the vendors' providers and
/// the search providers, loaded later or never) and of the embedded
/// components: with the in-place artifacts as their prefix the artifacts
/// shrink about 8 times and the components about 8 times, which keeps the
/// release within its size budget (docs/release.md).
const ZSTD_LEVEL: i32 = 19;

/// The zstd window (log2 of its bytes): large enough for every frame to
/// reach back to the start of its prefix, the in-place artifacts (16 MiB
/// for their 7.3 MB and the largest frame's: the embedded components'
/// 4.2 MB; the decoder accepts up to 2^27 by default).
const ZSTD_WINDOW_LOG: u32 = 24;

/// The components embedded beside the built-ins, not precompiled: the SDK
/// walkthrough's example (`builtin::EXAMPLE_HELLO`) and the lifecycle test
/// guest (`builtin::TEST_LIFECYCLE`), which `smith bench` installs and
/// compiles.
const ALSO_EMBEDDED: &[&str] = &["smith_plugin_hello", "smith_plugin_lifecycle"];

/// The guest components the binary embeds ([`PRECOMPILED`], then
/// [`ALSO_EMBEDDED`]), by file stem, with their bytes.
fn read_embedded(guests: &Path) -> Vec<(&'static str, Vec<u8>)> {
    PRECOMPILED
        .iter()
        .chain(ALSO_EMBEDDED)
        .map(|stem| {
            let wasm = guests.join(format!("{stem}.wasm"));
            let bytes = std::fs::read(&wasm).unwrap_or_else(|e| {
                fail(&format!(
                    "could not read the plugin component {} that the guest build just wrote: {e}",
                    wasm.display()
                ))
            });
            (*stem, bytes)
        })
        .collect()
}

/// Writes `embedded.rs` into `out_dir`, which plugins/src/builtin.rs
/// includes: the built-ins precompiled ([`precompile`]) and every embedded
/// component ([`read_embedded`]) as a `static` of `crate::Embedded` named
/// after its file stem in capitals (`SMITH_PLUGIN_MOCK`), holding the
/// sha256 of its bytes computed here, so that no start hashes a built-in.
/// The components' bytes lie one after the other in `components.wasm.zst`,
/// one zstd frame compressed with the in-place artifacts as its prefix (the
/// components share the Rust standard library and the SDK with each other,
/// and their data segments lie in the artifacts too): a process
/// decompresses it only when it needs a component's bytes (to compile one
/// whose artifact this machine refuses), whole, once.
fn embed(guests: &Path, out_dir: &Path) {
    let components = read_embedded(guests);
    let (in_place, table) = precompile(&components[..PRECOMPILED.len()], out_dir);
    let mut all = Vec::new();
    let mut statics = String::new();
    for (stem, bytes) in &components {
        let _ = writeln!(
            statics,
            "static {}: crate::Embedded = crate::Embedded::new({stem:?}, {:?}, &COMPONENTS, {}, {});",
            stem.to_uppercase(),
            Sha256::digest(bytes).as_slice(),
            all.len(),
            bytes.len(),
        );
        all.extend_from_slice(bytes);
    }
    let (compressed, _) = compress(&in_place, std::iter::once(all.as_slice()));
    let zst = out_dir.join("components.wasm.zst");
    write_if_changed(&zst, &compressed);
    let code = format!(
        "// Generated by plugins/build.rs: the built-in plugins precompiled for this target, and the embedded components.\n{table}\nstatic COMPONENTS: crate::ComponentFrame = crate::ComponentFrame::new(&IN_PLACE.0, include_bytes!({:?}), {});\n{statics}",
        zst.display().to_string(),
        all.len(),
    );
    write_if_changed(&out_dir.join("embedded.rs"), code.as_bytes());
}

/// Compiles every built-in of [`PRECOMPILED`] (`components`, in that
/// order) with the runtime's engine configuration
/// ([`engine_config::engine_config`]) for the target being built, and
/// returns the in-place artifacts and the code of the table of each
/// component's sha256 and where its artifact lies (`TABLE`, which
/// `builtin::PRECOMPILED` is). The first [`IN_PLACE`] artifacts lie
/// uncompressed in `precompiled.cwasm`, each at a multiple of [`PAGE`],
/// embedded page-aligned (`IN_PLACE`); the others are zstd frames, one
/// after the other in `precompiled.cwasm.zst`, each compressed with all of
/// `precompiled.cwasm` as its prefix (the artifacts share the Rust standard
/// library's code), so a frame is decompressed alone, when its plugin is
/// first loaded.
///
/// The wasmtime this runs is the build dependency of the same version as
/// the runtime's (one Cargo.lock), and in a build for the host it is the
/// very same compiled crate (docs/plugins.md, "Precompiled built-ins").
/// When this wasmtime cannot compile for the target (a cross build to
/// another architecture: the build dependency carries only the host's code
/// generator), the table is empty and the runtime compiles the built-ins on
/// first use into the cache, as it does for user plugins.
fn precompile(components: &[(&str, Vec<u8>)], out_dir: &Path) -> (Vec<u8>, String) {
    let target = std::env::var("TARGET").unwrap_or_default();
    let mut compiled = Vec::new();
    match engine_config::engine_config(Some(&target)).and_then(|c| wasmtime::Engine::new(&c)) {
        Ok(engine) => {
            for (stem, bytes) in components {
                let artifact = engine.precompile_component(bytes).unwrap_or_else(|e| {
                    fail(&format!(
                        "precompiling the built-in plugin {stem}.wasm for {target} failed: {e:#}; the component was built above, so this is a wasmtime or engine configuration problem (plugins/src/engine_config.rs)"
                    ))
                });
                compiled.push((Sha256::digest(bytes), artifact));
            }
        }
        Err(err) => println!(
            "cargo:warning=the built-in plugins are not precompiled for {target}: this build's wasmtime cannot compile for it ({err:#}); smith compiles them on first start into its cache instead"
        ),
    }
    let split = IN_PLACE.min(compiled.len());
    let (head, tail) = compiled.split_at(split);
    let mut entries = String::new();
    let mut in_place = Vec::new();
    for (digest, artifact) in head {
        let _ = writeln!(
            entries,
            "    crate::Precompiled {{ component_sha256: {:?}, blob: &BLOB, stored: crate::Stored::InPlace {{ offset: {} }}, artifact_len: {} }},",
            digest.as_slice(),
            in_place.len(),
            artifact.len(),
        );
        in_place.extend_from_slice(artifact);
        in_place.resize(in_place.len().next_multiple_of(PAGE), 0);
    }
    let (compressed, ends) = compress(&in_place, tail.iter().map(|(_, a)| a.as_slice()));
    for (index, (digest, artifact)) in tail.iter().enumerate() {
        let _ = writeln!(
            entries,
            "    crate::Precompiled {{ component_sha256: {:?}, blob: &BLOB, stored: crate::Stored::Frame {{ index: {index} }}, artifact_len: {} }},",
            digest.as_slice(),
            artifact.len(),
        );
    }
    let cwasm = out_dir.join("precompiled.cwasm");
    write_if_changed(&cwasm, &in_place);
    let zst = out_dir.join("precompiled.cwasm.zst");
    write_if_changed(&zst, &compressed);
    let ends: String = ends.iter().map(|end| format!("{end}, ")).collect();
    let table = format!(
        "static IN_PLACE: crate::PageAligned<[u8; {}]> = crate::PageAligned(*include_bytes!({:?}));\nstatic FRAME_ENDS: [usize; {}] = [{ends}];\nstatic BLOB: crate::PrecompiledBlob = crate::PrecompiledBlob::new(&IN_PLACE.0, include_bytes!({:?}), &FRAME_ENDS);\nstatic TABLE: [crate::Precompiled; {}] = [\n{entries}];\n",
        in_place.len(),
        cwasm.display().to_string(),
        tail.len(),
        zst.display().to_string(),
        compiled.len(),
    );
    (in_place, table)
}

/// The `artifacts`, each compressed as one zstd frame with all of `prefix`
/// as its prefix, one after the other; and where each frame ends.
fn compress<'a>(prefix: &[u8], artifacts: impl Iterator<Item = &'a [u8]>) -> (Vec<u8>, Vec<usize>) {
    let failed = |e: std::io::Error| -> ! {
        fail(&format!(
            "compressing the precompiled built-in plugins failed: {e}"
        ))
    };
    let mut compressor = zstd::bulk::Compressor::new(ZSTD_LEVEL).unwrap_or_else(|e| failed(e));
    compressor
        .set_parameter(zstd::zstd_safe::CParameter::WindowLog(ZSTD_WINDOW_LOG))
        .unwrap_or_else(|e| failed(e));
    let mut compressed = Vec::new();
    let mut ends = Vec::new();
    for artifact in artifacts {
        if !prefix.is_empty() {
            // A prefix holds for the next frame only.
            compressor
                .context_mut()
                .ref_prefix(prefix)
                .map_err(|code| {
                    std::io::Error::other(zstd::zstd_safe::get_error_name(code).to_owned())
                })
                .unwrap_or_else(|e| failed(e));
        }
        let frame = compressor.compress(artifact).unwrap_or_else(|e| failed(e));
        compressed.extend_from_slice(&frame);
        ends.push(compressed.len());
    }
    (compressed, ends)
}

/// Writes `bytes` to `path` unless it already holds them, so an unchanged
/// artifact keeps its modification time.
fn write_if_changed(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return;
    }
    std::fs::write(path, bytes).unwrap_or_else(|e| {
        fail(&format!(
            "could not write {} in the build's output directory: {e}",
            path.display()
        ))
    });
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
