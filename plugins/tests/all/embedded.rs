//! The components the build embeds: compressed in the binary, their sha256
//! computed by the build. Loading a built-in hashes nothing and
//! decompresses nothing; its bytes are decompressed only when something
//! needs them (compiling it when its artifact is refused), and they are
//! the very bytes of the component the guest build wrote.

use sha2::Digest;
use smith_plugins::builtin::{BUILTINS, EXAMPLE_HELLO, MOCK, TEST_LIFECYCLE};
use smith_plugins::{
    ComponentFrame, Embedded, ErrorKind, ExtensionComponent, Limits, Phase, ProviderComponent,
    Runtime, SearchComponent, Wasm, compile_count_on_this_thread,
    component_hash_count_on_this_thread, embedded_read_count_on_this_thread, flush_cache_writes,
};

/// Every component the build embeds: the built-ins, the SDK example and
/// test/lifecycle.
fn every_embedded() -> Vec<&'static Embedded> {
    BUILTINS
        .iter()
        .map(|b| b.component)
        .chain([EXAMPLE_HELLO, TEST_LIFECYCLE])
        .collect()
}

#[test]
fn each_build_time_digest_is_the_sha256_of_the_decompressed_bytes() {
    let embedded = every_embedded();
    assert_eq!(embedded.len(), BUILTINS.len() + 2);
    for component in &embedded {
        let bytes = component.bytes().unwrap();
        let digest: [u8; 32] = sha2::Sha256::digest(bytes).into();
        assert_eq!(component.sha256(), digest, "{}", component.stem());
        assert_eq!(bytes.len(), component.len(), "{}", component.stem());
        assert!(!component.is_empty());
        // The very component the guest build wrote, byte for byte.
        let file = std::path::Path::new(smith_plugins::GUEST_DIR)
            .join(format!("{}.wasm", component.stem()));
        assert!(
            std::fs::read(&file).unwrap() == bytes,
            "{} differs from {}",
            component.stem(),
            file.display()
        );
        // The same digest whichever way it is asked for.
        assert_eq!(Wasm::Bytes(bytes).sha256(), Wasm::from(*component).sha256());
        assert_eq!(Wasm::from(*component).len(), bytes.len());
    }
    // Every component is a different file, under its own digest.
    let mut digests: Vec<[u8; 32]> = embedded.iter().map(|c| c.sha256()).collect();
    digests.sort_unstable();
    digests.dedup();
    assert_eq!(digests.len(), embedded.len());
    // One frame holds them all, decompressed once for the process
    // whatever the number of components asked for.
    assert!(
        embedded
            .iter()
            .all(|c| std::ptr::eq(c.frame(), MOCK.frame()))
    );
    assert_eq!(MOCK.frame().unpack_count(), 1);
    let again = MOCK.bytes().unwrap();
    assert_eq!(again.as_ptr(), MOCK.bytes().unwrap().as_ptr());
    assert_eq!(MOCK.frame().unpack_count(), 1);
}

#[test]
fn loading_every_builtin_hashes_and_decompresses_nothing() {
    let cache = tempfile::tempdir().unwrap();
    let runtime = Runtime::global().unwrap();
    let hashes = component_hash_count_on_this_thread();
    let reads = embedded_read_count_on_this_thread();
    let compiles = compile_count_on_this_thread();
    // A first start on a fresh cache directory, then a later one.
    for _ in 0..2 {
        for builtin in BUILTINS {
            runtime
                .load_component(builtin.name, builtin.component, Some(cache.path()))
                .unwrap();
            assert!(runtime.loads_precompiled(builtin.component));
            runtime.cache_file_of(cache.path(), builtin.component);
            match builtin.world {
                "extension" => {
                    ExtensionComponent::load(
                        builtin.name,
                        builtin.component,
                        Some(cache.path()),
                        Limits::default(),
                    )
                    .unwrap();
                    assert!(runtime.loads_in_place(builtin.component));
                }
                "provider" => {
                    ProviderComponent::load(
                        builtin.name,
                        builtin.component,
                        Some(cache.path()),
                        Limits::default(),
                    )
                    .unwrap();
                }
                world => {
                    assert_eq!(world, "search-provider");
                    SearchComponent::load(
                        builtin.name,
                        builtin.component,
                        Some(cache.path()),
                        Limits::default(),
                    )
                    .unwrap();
                }
            }
        }
        assert!(flush_cache_writes(std::time::Duration::from_secs(60)));
    }
    assert_eq!(component_hash_count_on_this_thread() - hashes, 0);
    assert_eq!(embedded_read_count_on_this_thread() - reads, 0);
    assert_eq!(compile_count_on_this_thread() - compiles, 0);
    // Bytes are hashed each time their digest is needed.
    let bytes = MOCK.bytes().unwrap().to_vec();
    let cache_file = runtime.cache_file_of(cache.path(), &bytes);
    assert_eq!(cache_file, runtime.cache_file_of(cache.path(), MOCK));
    assert!(runtime.loads_in_place(&bytes));
    assert_eq!(component_hash_count_on_this_thread() - hashes, 2);
}

#[test]
fn an_embedded_component_is_decompressed_only_to_be_compiled() {
    // The SDK example is embedded but not precompiled: the first load
    // compiles it, from its bytes, into the cache.
    let cache = tempfile::tempdir().unwrap();
    let runtime = Runtime::global().unwrap();
    assert!(!runtime.loads_precompiled(EXAMPLE_HELLO));
    let reads = embedded_read_count_on_this_thread();
    let compiles = compile_count_on_this_thread();
    let component = runtime
        .load_component("example/hello", EXAMPLE_HELLO, Some(cache.path()))
        .unwrap();
    assert_eq!(compile_count_on_this_thread() - compiles, 1);
    assert_eq!(embedded_read_count_on_this_thread() - reads, 1);
    ExtensionComponent::from_component("example/hello", &component, Limits::default())
        .unwrap()
        .instantiate()
        .unwrap();
    // Its cache file is named after the build's digest, and the next load
    // reads it without the bytes.
    assert!(runtime.cache_file_of(cache.path(), EXAMPLE_HELLO).is_file());
    let reads = embedded_read_count_on_this_thread();
    runtime
        .load_component("example/hello", EXAMPLE_HELLO, Some(cache.path()))
        .unwrap();
    assert_eq!(compile_count_on_this_thread() - compiles, 1);
    assert_eq!(embedded_read_count_on_this_thread() - reads, 0);
}

#[test]
fn a_damaged_frame_is_an_error_naming_the_component_and_what_to_do() {
    let frame: &'static ComponentFrame = Box::leak(Box::new(ComponentFrame::new(
        &[],
        Vec::leak(zstd::bulk::compress(b"\0asm and some more", 3).unwrap()),
        18,
    )));
    // Bytes that are there, and some that lie past the frame's end.
    let first: &'static Embedded =
        Box::leak(Box::new(Embedded::new("first", [1; 32], frame, 0, 4)));
    assert_eq!(first.bytes().unwrap(), b"\0asm");
    let past: &'static Embedded =
        Box::leak(Box::new(Embedded::new("past", [2; 32], frame, 10, 20)));
    let err = past.bytes().unwrap_err();
    assert!(err.contains("past.wasm"), "{err}");
    assert!(
        err.contains("bytes 10..30 lie past the end of the 18"),
        "{err}"
    );
    assert!(err.contains("reinstall smith"), "{err}");
    // A frame that is no zstd frame, or not of the size the build recorded.
    for (zstd, len) in [
        (&b"not zstd"[..], 8),
        (Vec::leak(zstd::bulk::compress(b"short", 3).unwrap()), 8),
    ] {
        let frame: &'static ComponentFrame =
            Box::leak(Box::new(ComponentFrame::new(&[], zstd, len)));
        let damaged: &'static Embedded =
            Box::leak(Box::new(Embedded::new("damaged", [3; 32], frame, 0, len)));
        let err = damaged.bytes().unwrap_err();
        assert!(
            err.starts_with(
                "the component damaged.wasm embedded in this smith binary cannot be unpacked: "
            ),
            "{err}"
        );
        assert!(
            err.contains("the binary is damaged: reinstall smith"),
            "{err}"
        );
        // Loading it has no artifact to fall back on: the error names the
        // plugin, the phase and why.
        let runtime = Runtime::global().unwrap();
        let err = runtime
            .load_component("test/damaged", damaged, None)
            .unwrap_err();
        assert_eq!(err.plugin, "test/damaged");
        assert_eq!(err.phase, Phase::Compile);
        assert_eq!(err.kind, ErrorKind::Component);
        assert!(err.message.contains("damaged.wasm"), "{}", err.message);
    }
    let short = {
        let frame: &'static ComponentFrame = Box::leak(Box::new(ComponentFrame::new(
            &[],
            Vec::leak(zstd::bulk::compress(b"short", 3).unwrap()),
            8,
        )));
        Embedded::new("short", [4; 32], frame, 0, 8)
    };
    assert!(
        short
            .bytes()
            .unwrap_err()
            .contains("it holds 5 bytes where the build recorded 8"),
        "{}",
        short.bytes().unwrap_err()
    );
}
