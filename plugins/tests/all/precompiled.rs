//! The built-in plugins load from the artifacts the build precompiled: the
//! ones a start loads before its first frame where they lie in the binary,
//! on every start, never cached; the others decompressed into a fresh
//! cache directory once. A fresh cache directory compiles none of them; an
//! artifact this engine refuses falls back to compiling and the cache.

use sha2::Digest;
use smith_engine::provider::Provider;
use smith_plugins::builtin::{BUILTINS, MOCK, PRECOMPILED, mock_provider};
use smith_plugins::{
    Embedded, Limits, Precompiled, PrecompiledBlob, ProviderComponent, Runtime, Stored,
    compile_count_on_this_thread, embedded_read_count_on_this_thread, flush_cache_writes,
    precompiled_load_count_on_this_thread,
};

fn sha256(bytes: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(bytes).into()
}

/// A table entry for `component` holding `artifact` compressed, as the
/// build compresses the ones it does not lay out in place (here alone in
/// its blob, with no prefix).
fn entry(component: &Embedded, artifact: &[u8]) -> Precompiled {
    let zstd = Vec::leak(zstd::bulk::compress(artifact, 3).unwrap());
    let ends: &'static [usize] = Vec::leak(vec![zstd.len()]);
    Precompiled {
        component_sha256: component.sha256(),
        blob: Box::leak(Box::new(PrecompiledBlob::new(&[], zstd, ends))),
        stored: Stored::Frame { index: 0 },
        artifact_len: artifact.len(),
    }
}

/// `bytes` copied to page-aligned memory that lives as long as the process
/// and is never written again, as the build embeds its in-place artifacts.
fn page_aligned(bytes: &[u8]) -> &'static [u8] {
    let layout =
        std::alloc::Layout::from_size_align(bytes.len().max(1).next_multiple_of(4096), 4096)
            .unwrap();
    // SAFETY: a non-zero size; the memory is initialized below before it
    // is read, and leaked.
    unsafe {
        let memory = std::alloc::alloc_zeroed(layout);
        assert!(!memory.is_null());
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), memory, bytes.len());
        std::slice::from_raw_parts(memory, bytes.len())
    }
}

/// A table entry for `component` holding `artifact` uncompressed and
/// page-aligned, used in place.
fn in_place_entry(component: &Embedded, artifact: &[u8]) -> Precompiled {
    Precompiled {
        component_sha256: component.sha256(),
        blob: Box::leak(Box::new(PrecompiledBlob::new(
            page_aligned(artifact),
            &[],
            &[],
        ))),
        stored: Stored::InPlace { offset: 0 },
        artifact_len: artifact.len(),
    }
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

/// The mock provider from `component` works: it describes itself.
fn assert_mock_works(component: &wasmtime::component::Component) {
    let provider = ProviderComponent::from_component("smith/mock", component, Limits::default())
        .unwrap()
        .instantiate(&[])
        .unwrap();
    assert_eq!(provider.describe().id, "mock");
}

#[test]
fn every_builtin_is_embedded_precompiled() {
    let digests: Vec<[u8; 32]> = BUILTINS.iter().map(|b| b.component.sha256()).collect();
    for (builtin, digest) in BUILTINS.iter().zip(&digests) {
        assert_eq!(
            PRECOMPILED
                .iter()
                .filter(|p| p.component_sha256 == *digest)
                .count(),
            1,
            "{} has no precompiled artifact (plugins/build.rs, PRECOMPILED)",
            builtin.name
        );
    }
    assert_eq!(
        PRECOMPILED.len(),
        BUILTINS.len(),
        "plugins/build.rs precompiles a component that is no built-in"
    );
    let runtime = Runtime::global().unwrap();
    for builtin in BUILTINS {
        assert!(
            runtime.loads_precompiled(builtin.component),
            "{}'s artifact does not load on this machine",
            builtin.name
        );
    }
}

#[test]
fn a_fresh_cache_directory_compiles_no_builtin() {
    let cache = tempfile::tempdir().unwrap();
    let runtime = Runtime::global().unwrap();
    let compiles = compile_count_on_this_thread();
    let loads = precompiled_load_count_on_this_thread();
    for builtin in BUILTINS {
        runtime
            .load_component(builtin.name, builtin.component, Some(cache.path()))
            .unwrap();
    }
    assert_eq!(compile_count_on_this_thread() - compiles, 0);
    assert_eq!(
        precompiled_load_count_on_this_thread() - loads,
        BUILTINS.len() as u64
    );
    let embedded = |builtin: &smith_plugins::builtin::Builtin| {
        PRECOMPILED
            .iter()
            .find(|p| p.component_sha256 == builtin.component.sha256())
            .unwrap()
    };
    // The ones a start loads before its first frame are used where they
    // lie: nothing of theirs is written. Each of the others is
    // decompressed into the cache once, byte for byte, by the writer
    // thread: loading did not wait for it.
    let in_place = BUILTINS
        .iter()
        .filter(|b| embedded(b).is_in_place())
        .count();
    assert_eq!(in_place, 12, "the interface's extensions and smith/mock");
    assert!(flush_cache_writes(std::time::Duration::from_secs(60)));
    let mut expected: Vec<std::path::PathBuf> = BUILTINS
        .iter()
        .filter(|b| !embedded(b).is_in_place())
        .map(|b| runtime.cache_file_of(cache.path(), b.component))
        .collect();
    expected.sort();
    let mut found = files_under(cache.path());
    found.sort();
    assert_eq!(found, expected);
    for builtin in BUILTINS.iter().filter(|b| !embedded(b).is_in_place()) {
        assert_eq!(
            std::fs::read(runtime.cache_file_of(cache.path(), builtin.component)).unwrap(),
            embedded(builtin).artifact().unwrap().to_vec(),
            "{}",
            builtin.name
        );
    }
    // Later starts load the in-place ones where they lie again, and the
    // others from their cache files: no decompression, no compilation.
    let loads = precompiled_load_count_on_this_thread();
    for builtin in BUILTINS {
        runtime
            .load_component(builtin.name, builtin.component, Some(cache.path()))
            .unwrap();
    }
    let provider = mock_provider(None, Some(cache.path()), Limits::default()).unwrap();
    assert_eq!(provider.describe().id, "mock");
    assert_eq!(
        precompiled_load_count_on_this_thread() - loads,
        in_place as u64 + 1,
        "every in-place built-in and smith/mock once more"
    );
    assert_eq!(compile_count_on_this_thread() - compiles, 0);
    let mut again = files_under(cache.path());
    again.sort();
    assert_eq!(again, expected);
}

#[test]
fn in_place_builtins_run_where_they_lie_in_the_binary() {
    let runtime = Runtime::global().unwrap();
    let mock = PRECOMPILED
        .iter()
        .find(|p| p.component_sha256 == MOCK.sha256())
        .unwrap();
    assert!(mock.is_in_place());
    let artifact = mock.artifact().unwrap();
    assert!(artifact.as_ptr().addr().is_multiple_of(4096));
    let first = runtime.load_component("smith/mock", MOCK, None).unwrap();
    let second = runtime.load_component("smith/mock", MOCK, None).unwrap();
    // Its code is the artifact's own bytes, not a copy (on x86_64, where
    // the runtime's engine makes code executable where it lies).
    let inside = |component: &wasmtime::component::Component| {
        let code = component.image_range();
        let bytes = artifact.as_ptr_range();
        bytes.start <= code.start && code.end <= bytes.end
    };
    if cfg!(target_arch = "x86_64") {
        assert!(inside(&first) && inside(&second));
    }
    // Deserialized once per process (wasmtime registers code by its
    // address): a second load is the same component, and dropping one
    // leaves the other's code where it was, executable.
    assert_mock_works(&first);
    drop(first);
    assert_mock_works(&second);
    let provider = mock_provider(None, None, Limits::default()).unwrap();
    assert_eq!(provider.describe().id, "mock");
    // Before the cache is looked at: a file in the cache under its name
    // (here one that is no artifact) is never read.
    let cache = tempfile::tempdir().unwrap();
    let file = runtime.cache_file_of(cache.path(), MOCK);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, b"not an artifact").unwrap();
    let compiles = compile_count_on_this_thread();
    let loads = precompiled_load_count_on_this_thread();
    let component = runtime
        .load_component("smith/mock", MOCK, Some(cache.path()))
        .unwrap();
    assert_mock_works(&component);
    assert_eq!(compile_count_on_this_thread() - compiles, 0);
    assert_eq!(precompiled_load_count_on_this_thread() - loads, 1);
    assert_eq!(std::fs::read(&file).unwrap(), b"not an artifact");
}

#[test]
fn an_in_place_artifact_off_a_page_boundary_is_loaded_from_a_copy() {
    let runtime = Runtime::global().unwrap();
    let mock = PRECOMPILED
        .iter()
        .find(|p| p.component_sha256 == MOCK.sha256())
        .unwrap();
    let artifact = mock.artifact().unwrap();
    // The real artifact 8 bytes past a page boundary: wasmtime cannot use
    // it where it lies, so it is copied, still without compiling.
    let mut shifted = vec![0u8; 8];
    shifted.extend_from_slice(artifact);
    let blob = Box::leak(Box::new(PrecompiledBlob::new(
        page_aligned(&shifted),
        &[],
        &[],
    )));
    let table = [Precompiled {
        component_sha256: MOCK.sha256(),
        blob,
        stored: Stored::InPlace { offset: 8 },
        artifact_len: artifact.len(),
    }];
    let compiles = compile_count_on_this_thread();
    let loads = precompiled_load_count_on_this_thread();
    // SAFETY: the build's own artifact, copied unmodified into memory that
    // lives for the process and is never written again.
    let component =
        unsafe { runtime.load_component_with("smith/mock", MOCK, None, &table) }.unwrap();
    assert_eq!(compile_count_on_this_thread() - compiles, 0);
    assert_eq!(precompiled_load_count_on_this_thread() - loads, 1);
    assert_mock_works(&component);
    let code = component.image_range();
    let bytes = table[0].artifact().unwrap().as_ptr_range();
    assert!(code.end <= bytes.start || bytes.end <= code.start, "a copy");
}

#[test]
fn an_artifact_of_another_engine_configuration_is_compiled_instead() {
    // The same component compiled by an engine without epoch interruption:
    // a real artifact, which this runtime's engine refuses.
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    let other = wasmtime::Engine::new(&config).unwrap();
    let artifact = other.precompile_component(MOCK.bytes().unwrap()).unwrap();
    for table in [[entry(MOCK, &artifact)], [in_place_entry(MOCK, &artifact)]] {
        refused_artifact_is_compiled_into_the_cache(&table, &artifact);
    }
}

fn refused_artifact_is_compiled_into_the_cache(table: &[Precompiled], artifact: &[u8]) {
    let runtime = Runtime::global().unwrap();
    assert!(
        // SAFETY: the artifact is `precompile_component`'s output, unmodified.
        unsafe { wasmtime::component::Component::deserialize(runtime.engine(), artifact) }.is_err(),
        "the runtime's engine must refuse another configuration's artifact"
    );
    let cache = tempfile::tempdir().unwrap();
    let compiles = compile_count_on_this_thread();
    let loads = precompiled_load_count_on_this_thread();
    let reads = embedded_read_count_on_this_thread();
    // SAFETY: the table's one artifact is `precompile_component`'s output.
    let component =
        unsafe { runtime.load_component_with("smith/mock", MOCK, Some(cache.path()), table) }
            .unwrap();
    assert_eq!(compile_count_on_this_thread() - compiles, 1);
    assert_eq!(precompiled_load_count_on_this_thread() - loads, 0);
    // Compiling is what needs the component's bytes, decompressed.
    assert_eq!(embedded_read_count_on_this_thread() - reads, 1);
    assert_mock_works(&component);
    // Compiled into the cache like a user plugin, and read from it next.
    assert_eq!(
        files_under(cache.path()),
        vec![runtime.cache_file_of(cache.path(), MOCK)]
    );
    // SAFETY: as above.
    let again =
        unsafe { runtime.load_component_with("smith/mock", MOCK, Some(cache.path()), table) }
            .unwrap();
    assert_eq!(compile_count_on_this_thread() - compiles, 1);
    assert_eq!(embedded_read_count_on_this_thread() - reads, 1);
    assert_mock_works(&again);
}

#[test]
fn bytes_that_are_no_artifact_are_compiled_instead() {
    let runtime = Runtime::global().unwrap();
    let not_zstd = Precompiled {
        component_sha256: MOCK.sha256(),
        blob: Box::leak(Box::new(PrecompiledBlob::new(&[], &[0u8; 64], &[64]))),
        stored: Stored::Frame { index: 0 },
        artifact_len: 4096,
    };
    let no_such_frame = Precompiled {
        stored: Stored::Frame { index: 1 },
        ..entry(MOCK, &[0u8; 4096])
    };
    let mut past_the_end = in_place_entry(MOCK, &[0u8; 4096]);
    past_the_end.stored = Stored::InPlace { offset: 4000 };
    let tables = [
        entry(MOCK, &[0u8; 4096]),
        entry(MOCK, b"\x7fELF"),
        entry(MOCK, b""),
        in_place_entry(MOCK, &[0u8; 4096]),
        in_place_entry(MOCK, b"\x7fELF"),
        in_place_entry(MOCK, b""),
        not_zstd,
        no_such_frame,
        past_the_end,
    ];
    for table in tables {
        let table = [table];
        let compiles = compile_count_on_this_thread();
        // SAFETY: the bytes are no artifact (or no zstd frame): wasmtime
        // rejects them when it parses the header, before anything runs.
        let component =
            unsafe { runtime.load_component_with("smith/mock", MOCK, None, &table) }.unwrap();
        assert_eq!(compile_count_on_this_thread() - compiles, 1);
        assert_mock_works(&component);
    }
}

#[test]
fn an_artifact_is_used_only_for_the_component_it_was_compiled_from() {
    let runtime = Runtime::global().unwrap();
    let mock = PRECOMPILED
        .iter()
        .find(|p| p.component_sha256 == MOCK.sha256())
        .unwrap();
    // The mock's real artifact, filed under another component's digest.
    let table = [Precompiled {
        component_sha256: sha256(b"another component"),
        ..*mock
    }];
    let compiles = compile_count_on_this_thread();
    let loads = precompiled_load_count_on_this_thread();
    // SAFETY: the build's own artifact, embedded by `include_bytes!`.
    let component =
        unsafe { runtime.load_component_with("smith/mock", MOCK, None, &table) }.unwrap();
    assert_eq!(compile_count_on_this_thread() - compiles, 1);
    assert_eq!(precompiled_load_count_on_this_thread() - loads, 0);
    assert_mock_works(&component);
    // With the real table it loads without compiling.
    let component = runtime.load_component("smith/mock", MOCK, None).unwrap();
    assert_eq!(compile_count_on_this_thread() - compiles, 1);
    assert_eq!(precompiled_load_count_on_this_thread() - loads, 1);
    assert_mock_works(&component);
}

#[test]
fn each_frame_decompresses_alone_with_the_in_place_artifacts_as_its_prefix() {
    // Incompressible alone, but the frames mostly repeat the in-place bytes.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let in_place: Vec<u8> = (0..300_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let mut second = in_place[1000..200_000].to_vec();
    second.extend_from_slice(b"and something of its own");
    let third = in_place[50_000..250_000].to_vec();
    let prefix = page_aligned(&in_place);
    let mut compressor = zstd::bulk::Compressor::new(19).unwrap();
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for artifact in [&second, &third] {
        compressor.context_mut().ref_prefix(prefix).unwrap();
        bytes.extend(compressor.compress(artifact).unwrap());
        ends.push(bytes.len());
    }
    // The prefix is what makes the frames small.
    let alone = zstd::bulk::compress(&second, 19).unwrap().len();
    assert!(ends[0] * 20 < alone, "{} bytes against {alone}", ends[0]);
    let ends: &'static [usize] = Vec::leak(ends);
    let lens = [second.len(), third.len()];
    let blob = |bytes: Vec<u8>, ends: &'static [usize]| -> &'static PrecompiledBlob {
        Box::leak(Box::new(PrecompiledBlob::new(
            prefix,
            Vec::leak(bytes),
            ends,
        )))
    };
    let artifact = |blob, index: usize, len| {
        Precompiled {
            component_sha256: [0; 32],
            blob,
            stored: Stored::Frame { index },
            artifact_len: len,
        }
        .artifact()
    };
    let in_place_artifact = |blob, offset, len| {
        Precompiled {
            component_sha256: [0; 32],
            blob,
            stored: Stored::InPlace { offset },
            artifact_len: len,
        }
        .artifact()
    };
    // Either frame alone, in either order, and the in-place bytes as they are.
    let b = blob(bytes.clone(), ends);
    assert_eq!(artifact(b, 1, lens[1]), Some(&third[..]));
    assert_eq!(artifact(b, 0, lens[0]), Some(&second[..]));
    assert_eq!(artifact(b, 1, lens[1]), Some(&third[..]));
    assert_eq!(in_place_artifact(b, 10, 20), Some(&in_place[10..30]));
    assert_eq!(in_place_artifact(b, 299_990, 20), None);
    // From many threads at once, each gets its artifact, decompressed once.
    let b = blob(bytes.clone(), ends);
    let threads: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || artifact(b, i % 2, lens[i % 2]).map(|a| a.as_ptr().addr()))
        })
        .collect();
    let got: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    for (i, ptr) in got.iter().enumerate() {
        assert_eq!(*ptr, got[i % 2], "one decompression per frame");
        assert!(ptr.is_some());
    }
    // A frame cut short: the first artifact is still there, the second is
    // not (and is compiled instead by `load_component`).
    let cut: &'static [usize] = Vec::leak(vec![ends[0], ends[1] - 10]);
    let b = blob(bytes[..bytes.len() - 10].to_vec(), cut);
    assert_eq!(artifact(b, 0, lens[0]), Some(&second[..]));
    assert_eq!(artifact(b, 1, lens[1]), None);
    // A frame that is larger or smaller than its artifact, or none at all.
    let b = blob(bytes.clone(), ends);
    assert_eq!(artifact(b, 0, lens[0] - 1), None);
    let b = blob(bytes.clone(), ends);
    assert_eq!(artifact(b, 0, lens[0] + 1), None);
    assert_eq!(artifact(b, 2, 10), None);
    // Without the prefix it is no frame of its size.
    let b: &'static PrecompiledBlob =
        Box::leak(Box::new(PrecompiledBlob::new(&[], Vec::leak(bytes), ends)));
    assert_eq!(artifact(b, 0, lens[0]), None);
}
