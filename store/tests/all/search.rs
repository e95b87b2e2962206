//! The store-wide search: hits in the listing's order on any number of
//! threads, an exact stop, and the search index (no false negatives,
//! incremental, rebuilt whenever it does not describe its file, optional).

use std::path::{Path, PathBuf};

use smith_store::search::{Query, SearchOptions, StoreSearched, search_sessions_with};
use smith_store::search_index::{self, Fit, Index};
use smith_store::{EntryKind, Session, Store};

use super::entry;

/// `{"text": s}`.
fn message(s: &str) -> Vec<u8> {
    let mut v = Vec::new();
    smith_codec::Encoder::new(&mut v).map(1).str("text").str(s);
    v
}

/// An effect completion whose output's content is `s`.
fn completion(s: &str) -> Vec<u8> {
    let mut v = Vec::new();
    smith_codec::Encoder::new(&mut v)
        .map(1)
        .str("output")
        .map(1)
        .str("content")
        .str(s);
    v
}

/// A tool result referring to effect `fx`'s output.
fn result_ref(fx: u64) -> Vec<u8> {
    let mut v = Vec::new();
    smith_codec::Encoder::new(&mut v)
        .map(1)
        .str("content_ref")
        .str(&format!("fx-{fx}"));
    v
}

/// Appends a user message, an effect completion with `output` and the
/// tool result that refers to it, then an assistant message.
fn exchange(store: &Store, s: &mut Session, fx: u64, user: &str, output: &str, answer: &str) {
    let (u, c, r, a) = (
        message(user),
        completion(output),
        result_ref(fx),
        message(answer),
    );
    let mut effect = entry(EntryKind::EffectCompletion, &c, 1);
    effect.pairing = fx;
    store
        .append(
            s,
            &[
                entry(EntryKind::UserMessage, &u, 1),
                effect,
                entry(EntryKind::ToolResult, &r, 1),
                entry(EntryKind::AssistantMessage, &a, 1),
            ],
        )
        .expect("append");
}

/// Deterministic pseudo-random words.
struct Words(u64);

impl Words {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn text(&mut self, words: usize) -> String {
        const W: [&str; 12] = [
            "alpha", "Beta", "gamma", "delta", "EPSILON", "zeta", "eta", "theta", "iota", "kappa",
            "lambda", "mu",
        ];
        let mut s = String::new();
        for _ in 0..words {
            s.push_str(W[(self.next() % W.len() as u64) as usize]);
            s.push(' ');
            if self.next().is_multiple_of(7) {
                s.push_str(&format!("n{} ", self.next() % 1000));
            }
        }
        s
    }
}

/// A store of `sessions` sessions, each of `exchanges` exchanges with
/// tool outputs of about `words` words.
fn corpus(sessions: usize, exchanges: u64, words: usize) -> (tempfile::TempDir, Store) {
    let (dir, store) = super::temp_store();
    let mut w = Words(0x5ea7_c400 + sessions as u64);
    for _ in 0..sessions {
        let mut s = store.create(None).expect("create");
        for fx in 1..=exchanges {
            let (u, o, a) = (w.text(20), w.text(words), w.text(30));
            exchange(&store, &mut s, fx, &u, &o, &a);
        }
    }
    (dir, store)
}

/// Every hit of `text` as (session, entry, snippet), and the totals.
fn hits(
    store: &Store,
    text: &str,
    options: &SearchOptions,
) -> (Vec<(String, u64, String)>, StoreSearched) {
    let sessions = store.list().expect("list");
    let query = Query::new(text).expect("query");
    let mut out = Vec::new();
    let searched = search_sessions_with(store, &sessions, &query, options, |info, hit| {
        out.push((info.id.to_hex(), hit.entry, hit.snippet));
        true
    })
    .expect("search");
    (out, searched)
}

fn plain(threads: usize) -> SearchOptions {
    SearchOptions {
        index_dir: None,
        threads,
        unit_bytes: 16 * 1024,
    }
}

fn indexed(dir: &Path, threads: usize) -> SearchOptions {
    SearchOptions {
        index_dir: Some(dir.to_path_buf()),
        threads,
        unit_bytes: 16 * 1024,
    }
}

#[test]
fn hits_come_in_the_listing_s_order_on_any_number_of_threads() {
    let (dir, store) = corpus(9, 60, 300);
    let cache = dir.path().join("cache");
    for text in ["kappa lambda", "n7", "Beta gamma", "ta"] {
        let (one, base) = hits(&store, text, &plain(1));
        assert!(!one.is_empty(), "{text}");
        // Sessions newest first, entries in append order.
        let order: Vec<String> = store
            .list()
            .unwrap()
            .into_iter()
            .map(|i| i.id.to_hex())
            .collect();
        let keys: Vec<(usize, u64)> = one
            .iter()
            .map(|(s, e, _)| (order.iter().position(|o| o == s).unwrap(), *e))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        for threads in [2, 3, 8] {
            let (many, searched) = hits(&store, text, &plain(threads));
            assert_eq!(many, one, "{text} on {threads} threads");
            assert_eq!(searched, base, "{text} on {threads} threads");
            // With the index: built by the first search, used by the second.
            for round in 0..2 {
                let (with, _) = hits(&store, text, &indexed(&cache, threads));
                assert_eq!(
                    with, one,
                    "{text}, indexed, round {round}, {threads} threads"
                );
            }
        }
    }
}

#[test]
fn a_stop_hands_over_exactly_the_hits_before_it() {
    let (dir, store) = corpus(5, 40, 300);
    let cache = dir.path().join("cache");
    let (all, _) = hits(&store, "theta", &plain(1));
    assert!(all.len() > 100, "{}", all.len());
    let sessions = store.list().unwrap();
    let query = Query::new("theta").unwrap();
    for options in [plain(1), plain(2), plain(4), indexed(&cache, 2)] {
        for limit in [1, 2, 7, 50, all.len() - 1] {
            let mut got = Vec::new();
            let searched =
                search_sessions_with(&store, &sessions, &query, &options, |info, hit| {
                    got.push((info.id.to_hex(), hit.entry, hit.snippet));
                    got.len() < limit
                })
                .unwrap();
            assert_eq!(got, all[..limit], "limit {limit}, {options:?}");
            assert_eq!(searched.within.hits, limit as u64);
        }
    }
}

#[test]
fn a_panic_in_the_caller_s_hit_handler_ends_the_search() {
    let (_dir, store) = corpus(6, 40, 300);
    let sessions = store.list().unwrap();
    let query = Query::new("theta").unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        search_sessions_with(&store, &sessions, &query, &plain(2), |_, _| {
            panic!("the handler failed")
        })
    }));
    assert!(caught.is_err(), "the panic reaches the caller");
}

#[test]
fn the_index_rules_out_what_it_lacks_and_never_what_it_holds() {
    let (dir, store) = corpus(4, 50, 400);
    let cache = dir.path().join("cache");
    // The first search builds every session's index as it scans.
    let (found, first) = hits(&store, "no such words", &indexed(&cache, 2));
    assert!(found.is_empty());
    assert_eq!(first.ruled_out, 0);
    assert_eq!(first.indexed, first.within.entries);
    assert!(first.within.entries > 0);
    assert_eq!(first.note, None);
    for info in store.list().unwrap() {
        let index = search_index::read(&cache, info.id).expect("index written");
        let session = store.load(&info.id.to_hex()).unwrap();
        assert_eq!(index.covered.records, session.records().len() as u64);
        assert!(index.groups.len() > 1, "{}", index.groups.len());
    }
    // Then: nothing is scanned for text none holds.
    let (found, second) = hits(&store, "no such words", &indexed(&cache, 2));
    assert!(found.is_empty());
    assert_eq!(second.within.entries, 0);
    assert_eq!(second.ruled_out, first.within.entries);
    assert_eq!(second.indexed, 0);
    // A word in one tool output (referred to by its result): that group
    // only, and found.
    let mut s = store.load(&store.list().unwrap()[2].id.to_hex()).unwrap();
    exchange(
        &store,
        &mut s,
        51,
        "late",
        "the output holds Quokka-17 once",
        "ok",
    );
    let (found, third) = hits(&store, "quokka-17", &indexed(&cache, 2));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].2.contains("Quokka-17"), "{found:?}");
    assert!(third.ruled_out > 0 && third.within.entries < first.within.entries / 4);
    // Only the appended entries (and the small group they joined) were
    // indexed.
    assert!(
        third.indexed > 0 && third.indexed < first.indexed / 4,
        "{} of {}",
        third.indexed,
        first.indexed
    );
    let (again, fourth) = hits(&store, "quokka-17", &indexed(&cache, 2));
    assert_eq!(again, found);
    assert_eq!(fourth.indexed, 0);
    assert!(fourth.within.entries <= third.within.entries);
    // Case: the filter is folded, the query is not.
    assert_eq!(hits(&store, "Quokka-17", &indexed(&cache, 2)).0, found);
    assert!(hits(&store, "QUOKKA-17", &indexed(&cache, 2)).0.is_empty());
    // Queries under three bytes scan everything.
    let (short, shorts) = hits(&store, "mu", &indexed(&cache, 2));
    assert_eq!(short, hits(&store, "mu", &plain(1)).0);
    assert_eq!(shorts.ruled_out, 0);
}

/// The index of `store`'s only session in `cache`.
fn only_index(store: &Store, cache: &Path) -> (Index, PathBuf) {
    let info = store.list().expect("list").remove(0);
    let index = search_index::read(cache, info.id).expect("index");
    (index, search_index::path_in(cache, info.id))
}

#[test]
fn an_index_that_does_not_describe_its_file_is_rebuilt() {
    let (dir, store) = corpus(1, 30, 300);
    let cache = dir.path().join("cache");
    let info = store.list().unwrap().remove(0);
    let file = store.path_of(info.id);
    let probe = "walrus-9";
    let built = |store: &Store| {
        let (found, searched) = hits(store, probe, &indexed(&cache, 2));
        let (index, _) = only_index(store, &cache);
        let session = store.load(&info.id.to_hex()).unwrap();
        assert_eq!(index.covered.records, session.records().len() as u64);
        (found, searched)
    };
    assert!(built(&store).0.is_empty());
    let (index, path) = only_index(&store, &cache);
    let state = search_index::FileState::of(&std::fs::metadata(&file).unwrap());
    assert_eq!(index.fit(info.id, &file, &state), Fit::Current);

    // Corrupt: one flipped byte; the search still answers, from scratch.
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let (found, searched) = built(&store);
    assert!(found.is_empty());
    assert_eq!(searched.indexed, searched.within.entries);
    assert!(searched.indexed > 0);

    // Foreign: another session's index under this one's name.
    let mut other = store.create(None).unwrap();
    exchange(&store, &mut other, 1, "x", "y", "z");
    let (_, _) = hits(&store, probe, &indexed(&cache, 1));
    std::fs::copy(search_index::path_in(&cache, other.id()), &path).unwrap();
    store.delete(&other.id().to_hex()).unwrap();
    let (_, searched) = built(&store);
    assert!(searched.indexed > 0 && searched.ruled_out == 0);

    // Truncated below what the index covers, then grown past it with other
    // entries: the tail check differs, and the new word is found.
    let len = std::fs::metadata(&file).unwrap().len();
    let session = store.load(&info.id.to_hex()).unwrap();
    let cut = session.records()[session.records().len() / 2].frame_offset;
    drop(session);
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(cut).unwrap();
    drop(f);
    let mut s = store.load(&info.id.to_hex()).unwrap();
    while std::fs::metadata(&file).unwrap().len() <= len {
        exchange(
            &store,
            &mut s,
            99,
            "again",
            &format!("{probe} {}", "w ".repeat(500)),
            "k",
        );
    }
    let (found, searched) = built(&store);
    assert!(!found.is_empty());
    assert_eq!(found, hits(&store, probe, &plain(1)).0);
    assert_eq!(searched.indexed, searched.within.entries, "rebuilt whole");

    // Replaced by another file (a rewrite renames a new one in): rebuilt.
    let copy = dir.path().join("copy");
    std::fs::copy(&file, &copy).unwrap();
    std::fs::rename(&copy, &file).unwrap();
    let (index, _) = only_index(&store, &cache);
    let state = search_index::FileState::of(&std::fs::metadata(&file).unwrap());
    assert_eq!(index.fit(info.id, &file, &state), Fit::Rebuild);
    let (again, searched) = built(&store);
    assert_eq!(again, found);
    assert_eq!(searched.indexed, searched.within.entries);
}

#[test]
fn the_indexes_of_deleted_sessions_are_pruned() {
    let (dir, store) = corpus(3, 5, 50);
    let cache = dir.path().join("cache");
    hits(&store, "eta", &indexed(&cache, 2));
    let listed: Vec<_> = store.list().unwrap().iter().map(|i| i.id).collect();
    store.delete(&listed[1].to_hex()).unwrap();
    std::fs::write(cache.join("unrelated.txt"), b"kept").unwrap();
    let left: Vec<_> = store.list().unwrap().iter().map(|i| i.id).collect();
    assert_eq!(search_index::prune(&cache, &left), 1);
    assert!(!search_index::path_in(&cache, listed[1]).exists());
    for id in left {
        assert!(search_index::path_in(&cache, id).exists());
    }
    assert!(cache.join("unrelated.txt").exists());
    assert_eq!(search_index::prune(&dir.path().join("missing"), &[]), 0);
}

#[test]
fn an_unwritable_or_missing_cache_dir_leaves_the_search_whole() {
    let (dir, store) = corpus(2, 10, 100);
    let expected = hits(&store, "lambda", &plain(1)).0;
    // A directory under a regular file can be neither made nor written,
    // whoever runs the test.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let cache = blocker.join("search");
    let (found, searched) = hits(&store, "lambda", &indexed(&cache, 2));
    assert_eq!(found, expected);
    let note = searched.note.expect("a note");
    assert!(
        note.contains(&cache.display().to_string()) && note.contains("writable"),
        "{note}"
    );
    assert!(!note.contains('\n'));
    // A directory where an index goes: it cannot be written (renamed over),
    // and the search says so once and stays whole.
    let cache = dir.path().join("cache");
    for info in store.list().unwrap() {
        std::fs::create_dir_all(search_index::path_in(&cache, info.id)).unwrap();
    }
    let (found, searched) = hits(&store, "lambda", &indexed(&cache, 2));
    assert_eq!(found, expected);
    let note = searched.note.expect("a note");
    assert!(
        note.contains("could not be written") && note.contains(".trigrams"),
        "{note}"
    );
    // Missing: made on first use.
    let fresh = dir.path().join("a").join("b");
    let (found, searched) = hits(&store, "lambda", &indexed(&fresh, 2));
    assert_eq!(found, expected);
    assert_eq!(searched.note, None);
    assert!(fresh.is_dir());
}

#[test]
fn concurrent_searches_never_read_a_torn_index() {
    let (dir, store) = corpus(3, 30, 300);
    let cache = dir.path().join("cache");
    let expected = hits(&store, "iota kappa", &plain(1)).0;
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                for _ in 0..5 {
                    for info in store.list().unwrap() {
                        let _ = std::fs::remove_file(search_index::path_in(&cache, info.id));
                    }
                    let (found, searched) = hits(&store, "iota kappa", &indexed(&cache, 2));
                    assert_eq!(found, expected);
                    assert_eq!(searched.note, None);
                }
            });
        }
    });
    for info in store.list().unwrap() {
        assert!(search_index::read(&cache, info.id).is_some());
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Random texts (a small alphabet, so queries hit), random queries:
    /// the indexed search finds exactly what a plain scan finds, whether
    /// the index is being built or already built.
    #[test]
    fn the_index_never_hides_a_hit(
        texts in proptest::collection::vec("[abcAB é.-]{0,300}", 1..40),
        queries in proptest::collection::vec("[abcAB é.-]{1,6}", 1..8),
        appended in proptest::collection::vec("[abcAB é.-]{0,300}", 0..10),
    ) {
        let (dir, store) = super::temp_store();
        let cache = dir.path().join("cache");
        let mut s = store.create(None).unwrap();
        let mut fx = 0;
        let mut add = |s: &mut Session, texts: &[String]| {
            for pair in texts.chunks(2) {
                fx += 1;
                let output = pair.get(1).map_or("", String::as_str);
                exchange(&store, s, fx, &pair[0], output, &pair[0]);
            }
        };
        add(&mut s, &texts);
        let opts = SearchOptions { index_dir: Some(cache.clone()), threads: 2, unit_bytes: 512 };
        for round in 0..3 {
            if round == 2 {
                add(&mut s, &appended);
            }
            for q in &queries {
                let (want, _) = hits(&store, q, &plain(1));
                let (got, _) = hits(&store, q, &opts);
                proptest::prop_assert_eq!(got, want, "query {:?}, round {}", q, round);
            }
        }
    }
}
