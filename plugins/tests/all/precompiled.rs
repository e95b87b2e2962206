//! The built-in plugins load from the artifacts the build precompiled: a
//! fresh cache directory compiles none of them and gets those artifacts,
//! decompressed; an artifact this engine refuses falls back to compiling
//! and the cache.

use sha2::Digest;
use smith_engine::provider::Provider;
use smith_plugins::builtin::{BUILTINS, MOCK, PRECOMPILED, mock_provider};
use smith_plugins::{
    Limits, Precompiled, PrecompiledBlob, ProviderComponent, Runtime, compile_count_on_this_thread,
    flush_cache_writes, precompiled_load_count_on_this_thread,
};

fn sha256(bytes: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(bytes).into()
}

/// A table entry for `component` holding `artifact`, compressed as the
/// build compresses it (here alone in its blob).
fn entry(component: &[u8], artifact: &[u8]) -> Precompiled {
    let zstd = Vec::leak(zstd::bulk::compress(artifact, 3).unwrap());
    Precompiled {
        component_sha256: sha256(component),
        blob: Box::leak(Box::new(PrecompiledBlob::new(zstd, artifact.len()))),
        offset: 0,
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
    let digests: Vec<[u8; 32]> = BUILTINS.iter().map(|b| sha256(b.component)).collect();
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
    // Each artifact is decompressed into the cache once, byte for byte, by
    // the writer thread: loading did not wait for it.
    assert!(flush_cache_writes(std::time::Duration::from_secs(60)));
    let mut expected: Vec<std::path::PathBuf> = BUILTINS
        .iter()
        .map(|b| runtime.cache_file_of(cache.path(), b.component))
        .collect();
    expected.sort();
    let mut found = files_under(cache.path());
    found.sort();
    assert_eq!(found, expected);
    for builtin in BUILTINS {
        let embedded = PRECOMPILED
            .iter()
            .find(|p| p.component_sha256 == sha256(builtin.component))
            .unwrap();
        assert_eq!(
            std::fs::read(runtime.cache_file_of(cache.path(), builtin.component)).unwrap(),
            embedded.artifact().unwrap().to_vec(),
            "{}",
            builtin.name
        );
    }
    // Later starts load those files: no decompression, no compilation.
    let loads = precompiled_load_count_on_this_thread();
    for builtin in BUILTINS {
        runtime
            .load_component(builtin.name, builtin.component, Some(cache.path()))
            .unwrap();
    }
    let provider = mock_provider(None, Some(cache.path()), Limits::default()).unwrap();
    assert_eq!(provider.describe().id, "mock");
    assert_eq!(precompiled_load_count_on_this_thread() - loads, 0);
    assert_eq!(compile_count_on_this_thread() - compiles, 0);
}

#[test]
fn an_artifact_of_another_engine_configuration_is_compiled_instead() {
    // The same component compiled by an engine without epoch interruption:
    // a real artifact, which this runtime's engine refuses.
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    let other = wasmtime::Engine::new(&config).unwrap();
    let artifact = other.precompile_component(MOCK).unwrap();
    let table = [entry(MOCK, &artifact)];
    let runtime = Runtime::global().unwrap();
    assert!(
        // SAFETY: the artifact is `precompile_component`'s output, unmodified.
        unsafe { wasmtime::component::Component::deserialize(runtime.engine(), &artifact) }
            .is_err(),
        "the runtime's engine must refuse another configuration's artifact"
    );
    let cache = tempfile::tempdir().unwrap();
    let compiles = compile_count_on_this_thread();
    let loads = precompiled_load_count_on_this_thread();
    // SAFETY: the table's one artifact is `precompile_component`'s output.
    let component =
        unsafe { runtime.load_component_with("smith/mock", MOCK, Some(cache.path()), &table) }
            .unwrap();
    assert_eq!(compile_count_on_this_thread() - compiles, 1);
    assert_eq!(precompiled_load_count_on_this_thread() - loads, 0);
    assert_mock_works(&component);
    // Compiled into the cache like a user plugin, and read from it next.
    assert_eq!(
        files_under(cache.path()),
        vec![runtime.cache_file_of(cache.path(), MOCK)]
    );
    // SAFETY: as above.
    let again =
        unsafe { runtime.load_component_with("smith/mock", MOCK, Some(cache.path()), &table) }
            .unwrap();
    assert_eq!(compile_count_on_this_thread() - compiles, 1);
    assert_mock_works(&again);
}

#[test]
fn bytes_that_are_no_artifact_are_compiled_instead() {
    let runtime = Runtime::global().unwrap();
    let not_zstd = Precompiled {
        component_sha256: sha256(MOCK),
        blob: Box::leak(Box::new(PrecompiledBlob::new(&[0u8; 64], 4096))),
        offset: 0,
        artifact_len: 4096,
    };
    let mut past_the_end = entry(MOCK, &[0u8; 4096]);
    past_the_end.offset = 4000;
    let tables = [
        entry(MOCK, &[0u8; 4096]),
        entry(MOCK, b"\x7fELF"),
        entry(MOCK, b""),
        not_zstd,
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
        .find(|p| p.component_sha256 == sha256(MOCK))
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

/// Two artifacts as the build lays them out: the second compressed with
/// the first as its prefix, and where each frame ends.
fn two_frames(first: &[u8], second: &[u8]) -> (Vec<u8>, [(usize, usize); 2]) {
    let prefix: &'static [u8] = Vec::leak(first.to_vec());
    let mut compressor = zstd::bulk::Compressor::new(19).unwrap();
    let mut blob = compressor.compress(first).unwrap();
    let first_end = blob.len();
    compressor.context_mut().ref_prefix(prefix).unwrap();
    blob.extend(compressor.compress(second).unwrap());
    let ends = [
        (first_end, first.len()),
        (blob.len(), first.len() + second.len()),
    ];
    (blob, ends)
}

fn artifacts_of(blob: &'static PrecompiledBlob, lens: &[usize]) -> Vec<Option<&'static [u8]>> {
    let mut offset = 0;
    lens.iter()
        .map(|&len| {
            let p = Precompiled {
                component_sha256: [0; 32],
                blob,
                offset,
                artifact_len: len,
            };
            offset += len;
            p.artifact()
        })
        .collect()
}

#[test]
fn each_frame_decompresses_after_its_prefix_into_its_place() {
    // Incompressible alone, but the second mostly repeats the first.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let first: Vec<u8> = (0..300_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let mut second = first[1000..200_000].to_vec();
    second.extend_from_slice(b"and something of its own");
    let (bytes, ends) = two_frames(&first, &second);
    // The prefix is what makes the second frame small.
    let alone = zstd::bulk::compress(&second, 19).unwrap().len();
    let with_prefix = ends[1].0 - ends[0].0;
    assert!(
        with_prefix * 20 < alone,
        "{with_prefix} bytes against {alone}"
    );
    let total = first.len() + second.len();
    let ends: &'static [(usize, usize)] = Box::leak(Box::new(ends));
    for ahead in [0, 1, 2] {
        let blob = Box::leak(Box::new(PrecompiledBlob::with_frames(
            Vec::leak(bytes.clone()),
            ends,
            total,
            ahead,
        )));
        let got = artifacts_of(blob, &[first.len(), second.len()]);
        assert_eq!(
            got,
            vec![Some(&first[..]), Some(&second[..])],
            "ahead {ahead}"
        );
    }
    // Asked for in the other order: the second waits for its prefix.
    let blob = Box::leak(Box::new(PrecompiledBlob::with_frames(
        Vec::leak(bytes.clone()),
        ends,
        total,
        0,
    )));
    let p = |offset, len| Precompiled {
        component_sha256: [0; 32],
        blob,
        offset,
        artifact_len: len,
    };
    assert_eq!(p(first.len(), second.len()).artifact(), Some(&second[..]));
    assert_eq!(p(0, first.len()).artifact(), Some(&first[..]));
    // From many threads at once, each gets its artifact.
    let blob: &'static PrecompiledBlob = Box::leak(Box::new(PrecompiledBlob::with_frames(
        Vec::leak(bytes.clone()),
        ends,
        total,
        1,
    )));
    let (a, b) = (first.len(), second.len());
    let threads: Vec<_> = (0..8)
        .map(|i| std::thread::spawn(move || artifacts_of(blob, &[a, b])[i % 2].map(<[u8]>::len)))
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        assert_eq!(t.join().unwrap(), Some([a, b][i % 2]));
    }
    // A second frame cut short: the first artifact is still there, the
    // second is not (and is compiled instead by `load_component`).
    let cut = Vec::leak(bytes[..bytes.len() - 10].to_vec());
    let short: &'static [(usize, usize)] = Box::leak(Box::new([ends[0], (cut.len(), ends[1].1)]));
    let blob = Box::leak(Box::new(PrecompiledBlob::with_frames(cut, short, total, 2)));
    assert_eq!(
        artifacts_of(blob, &[first.len(), second.len()]),
        vec![Some(&first[..]), None]
    );
    // A frame that says it is larger than its place.
    let wrong: &'static [(usize, usize)] =
        Box::leak(Box::new([(ends[0].0, first.len() - 1), ends[1]]));
    let blob = Box::leak(Box::new(PrecompiledBlob::with_frames(
        Vec::leak(bytes),
        wrong,
        total,
        2,
    )));
    assert_eq!(artifacts_of(blob, &[first.len() - 1]), vec![None]);
}
