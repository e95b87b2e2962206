//! Store operations: names, refs, listing, branches, fork, clone, prune,
//! the fast path to the selected leaf, and dump/import.

use smith_store::{
    EntryKind, ErrorKind, ExternalEntry, Limits, NewEntry, PruneOptions, Session, SessionFile,
    SessionId, dump, format,
};

use crate::{entry, sample_session, temp_store, text};

#[test]
fn names_are_unique_and_refs_are_names_or_ids_never_paths() {
    let (_d, store) = temp_store();
    let a = store.create(Some("alpha")).expect("create");
    let b = store.create(None).expect("create");
    assert_eq!(store.resolve("alpha").expect("by name"), a.id());
    assert_eq!(store.resolve(&b.id().to_hex()).expect("by id"), b.id());
    assert_eq!(
        store.resolve(&b.id().to_hex()[..12]).expect("by prefix"),
        b.id()
    );
    assert_eq!(
        store.create(Some("alpha")).expect_err("taken").kind(),
        ErrorKind::AlreadyExists
    );
    assert_eq!(
        store
            .rename(&b.id().to_hex(), "alpha")
            .expect_err("taken")
            .kind(),
        ErrorKind::AlreadyExists
    );
    store.rename("alpha", "beta").expect("rename");
    assert_eq!(
        store.resolve("alpha").expect_err("old name gone").kind(),
        ErrorKind::NotFound
    );
    assert_eq!(store.resolve("beta").expect("new name"), a.id());
    store
        .rename(&b.id().to_hex(), "alpha")
        .expect("freed name is reusable");
    for bad in ["../x", "a/b", ".hidden", "/tmp/x"] {
        assert_eq!(
            store.resolve(bad).expect_err("path-like").kind(),
            ErrorKind::Invalid,
            "{bad}"
        );
    }
    for bad in [
        "",
        "-x",
        "a b",
        &"x".repeat(65),
        &SessionId([1; 16]).to_hex(),
    ] {
        assert_eq!(
            store.rename("beta", bad).expect_err("bad name").kind(),
            ErrorKind::Invalid,
            "{bad:?}"
        );
    }
}

#[test]
fn list_reads_metadata_and_latest_continues_newest() {
    let (_d, store) = temp_store();
    let mut a = store.create(Some("first")).expect("create");
    let b = store.create(Some("second")).expect("create");
    let c = text("x");
    std::thread::sleep(std::time::Duration::from_millis(20));
    store
        .append(&mut a, &[entry(EntryKind::UserMessage, &c, 1)])
        .expect("append");
    let list = store.list().expect("list");
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].id, a.id(), "most recently modified first");
    assert_eq!(list[0].name.as_deref(), Some("first"));
    assert_eq!(list[1].name.as_deref(), Some("second"));
    assert_eq!(list[1].bytes, smith_store::format::HEADER_LEN as u64);
    assert_eq!(store.latest().expect("latest").map(|i| i.id), Some(a.id()));
    let _ = b;
}

#[test]
fn delete_and_prune() {
    let (_d, store) = temp_store();
    let s = sample_session(&store);
    let empty = store.create(Some("empty")).expect("create");
    store.delete("sample").expect("delete");
    assert!(!store.path_of(s.id()).exists());
    assert_eq!(
        store.resolve("sample").expect_err("gone").kind(),
        ErrorKind::NotFound
    );
    let rep = store
        .prune(PruneOptions {
            empty: true,
            ..PruneOptions::default()
        })
        .expect("prune");
    assert_eq!(rep.sessions, vec![empty.id()]);
    assert!(store.list().expect("list").is_empty());
}

/// A session's selected branch as what it records, without where its
/// payloads live in memory (a loaded session addresses them in the file's
/// mapping, the writing session in its own buffer): every record field but
/// `payload_offset`, and the stored payload bytes themselves.
#[allow(clippy::type_complexity)]
fn same_history(s: &Session) -> Vec<(u64, u64, u64, u64, u64, u32, u32, u16, u16, Vec<u8>)> {
    s.branch()
        .iter()
        .map(|r| {
            (
                r.id,
                r.parent,
                r.timestamp_ms,
                r.pairing,
                r.frame_offset,
                r.payload_len,
                r.kind,
                r.head_len,
                r.flags,
                s.content(r).expect("content").into_owned(),
            )
        })
        .collect()
}

#[test]
fn branch_navigation_preserves_selected_history_and_compaction_boundary() {
    let (_d, store) = temp_store();
    let s = sample_session(&store);
    // Selected branch: user, assistant, leaf switch, user, compaction, assistant.
    let kinds: Vec<_> = s.branch().iter().map(|r| r.entry_kind()).collect();
    assert_eq!(
        kinds,
        [
            EntryKind::UserMessage,
            EntryKind::AssistantMessage,
            EntryKind::LeafSwitch,
            EntryKind::UserMessage,
            EntryKind::Compaction,
            EntryKind::AssistantMessage
        ]
    );
    let boundary = s.compaction_boundary();
    assert_eq!(s.branch()[boundary].id, s.branch()[0].id);
    assert_eq!(s.leaves().len(), 2, "two branches");
    // Resuming (loading again) keeps the same branch and boundary.
    let again = store.load("sample").expect("load");
    assert_eq!(same_history(&again), same_history(&s));
    assert_eq!(again.compaction_boundary(), boundary);
    // Forking keeps the selected history (not the abandoned branch) and boundary,
    // and records the origin.
    let f = store.fork(&again, Some("forked")).expect("fork");
    let reloaded = store.load("forked").expect("load fork");
    assert_eq!(
        reloaded.origin().map(|o| (o.session, o.leaf)),
        Some((s.id(), s.leaf().map_or(0, |l| l.id)))
    );
    let ids = |x: &Session| {
        x.branch()
            .iter()
            .map(|r| (r.id, r.parent, r.kind, r.timestamp_ms, r.pairing))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&reloaded), ids(&s));
    assert_eq!(ids(&f), ids(&s));
    assert_eq!(reloaded.compaction_boundary(), boundary);
    for (x, y) in reloaded.branch().iter().zip(s.branch()) {
        assert_eq!(
            &*reloaded.content(x).expect("content"),
            &*s.content(y).expect("content")
        );
    }
    // Cloning keeps everything, including the abandoned branch.
    let c = store.clone_session("sample", None).expect("clone");
    assert_eq!(c.records().len(), s.records().len());
    assert_eq!(ids(&c), ids(&s));
    // Navigating back to the abandoned branch selects it.
    let mut nav = store.load("sample").expect("load");
    let tool_result = nav
        .records()
        .iter()
        .find(|r| r.entry_kind() == EntryKind::ToolResult)
        .map(|r| r.id)
        .expect("tool result");
    store
        .select_leaf(&mut nav, tool_result, None)
        .expect("select");
    assert!(nav.branch().iter().any(|r| r.id == tool_result));
    assert_eq!(
        nav.leaf().map(|l| l.entry_kind()),
        Some(EntryKind::LeafSwitch)
    );
}

#[test]
fn external_entries_initialize_without_changing_order_or_ids() {
    let c = text("external");
    let ext = [
        ExternalEntry {
            id: 900,
            parent: 0,
            timestamp_ms: 1,
            kind: EntryKind::UserMessage,
            pairing: 0,
            content: &c,
        },
        ExternalEntry {
            id: 17,
            parent: 900,
            timestamp_ms: 2,
            kind: EntryKind::ToolCall,
            pairing: 5,
            content: &c,
        },
        ExternalEntry {
            id: 4000,
            parent: 17,
            timestamp_ms: 3,
            kind: EntryKind::ToolResult,
            pairing: 5,
            content: &c,
        },
    ];
    let s = Session::from_external(SessionId([2; 16]), 0, &ext).expect("external");
    assert_eq!(
        s.records().iter().map(|r| r.id).collect::<Vec<_>>(),
        [900, 17, 4000]
    );
    assert_eq!(s.branch().len(), 3);
    let dup = [ext[0], ext[0]];
    assert_eq!(
        Session::from_external(SessionId([2; 16]), 0, &dup)
            .expect_err("duplicate")
            .kind(),
        ErrorKind::Invalid
    );
}

#[test]
fn missing_effect_completion_is_discoverable_from_records() {
    let (_d, store) = temp_store();
    let mut s = store.create(None).expect("create");
    let c = text("effect");
    store
        .append(
            &mut s,
            &[
                NewEntry {
                    pairing: 1,
                    ..entry(EntryKind::EffectIntent, &c, 1)
                },
                NewEntry {
                    pairing: 1,
                    ..entry(EntryKind::EffectCompletion, &c, 2)
                },
                NewEntry {
                    pairing: 2,
                    ..entry(EntryKind::EffectIntent, &c, 3)
                },
            ],
        )
        .expect("append");
    let s = store.load(&s.id().to_hex()).expect("load");
    let open: Vec<_> = s.open_intents().iter().map(|r| r.pairing).collect();
    assert_eq!(open, [2]);
}

#[test]
fn open_reaches_selected_leaf_from_the_end() {
    let (_d, store) = temp_store();
    let s = sample_session(&store);
    let f = SessionFile::open(&store.path_of(s.id())).expect("open");
    let bump = bumpalo::Bump::new();
    let recent = f
        .recent(100, &Limits::default(), &bump)
        .expect("recent")
        .expect("intact");
    let want: Vec<u64> = s.branch().iter().rev().map(|r| r.id).collect();
    assert_eq!(recent.iter().map(|v| v.head.id).collect::<Vec<_>>(), want);
    for (v, r) in recent.iter().zip(s.branch().iter().rev()) {
        assert_eq!(v.content, &*s.content(r).expect("content"));
    }
    // Appending non-entry frames after the leaf does not hide it.
    let mut bytes = std::fs::read(store.path_of(s.id())).expect("read");
    smith_store::format::encode_frame(&mut bytes, 200, 0, 1, 0, b"\x00");
    let p = store.root().join("x.smith");
    std::fs::write(&p, &bytes).expect("write");
    let f = SessionFile::open(&p).expect("open");
    let recent = f
        .recent(2, &Limits::default(), &bump)
        .expect("recent")
        .expect("intact");
    assert_eq!(
        recent.iter().map(|v| v.head.id).collect::<Vec<_>>(),
        want[..2]
    );
    // A torn tail makes the fast path decline rather than guess.
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&p, &bytes).expect("write");
    let f = SessionFile::open(&p).expect("open");
    assert!(
        f.recent(2, &Limits::default(), &bump)
            .expect("no error")
            .is_none()
    );
}

#[test]
fn dump_then_import_reproduces_file_bytes() {
    let (_d, store) = temp_store();
    let s = sample_session(&store);
    let fork = store.fork(&s, Some("f")).expect("fork");
    for id in [s.id(), fork.id()] {
        let bytes = std::fs::read(store.path_of(id)).expect("read");
        let mut out = Vec::new();
        dump::dump(&bytes, &Limits::default(), "s", &mut out).expect("dump");
        let text = String::from_utf8(out.clone()).expect("utf8");
        assert!(
            text.lines()
                .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
        );
        assert!(
            text.contains("\"kind\":\"user_message\""),
            "known kinds by name"
        );
        if id == s.id() {
            assert!(text.contains("\"kind\":4242"), "unknown kinds by code");
        }
        assert_eq!(dump::import(&out[..]).expect("import"), bytes);
    }
    // Import into another store publishes the same file.
    let (_d2, other) = temp_store();
    let bytes = std::fs::read(store.path_of(s.id())).expect("read");
    let mut out = Vec::new();
    dump::dump(&bytes, &Limits::default(), "s", &mut out).expect("dump");
    let imported = other
        .publish_bytes(&dump::import(&out[..]).expect("import"), Some("again"))
        .expect("publish");
    assert_eq!(
        std::fs::read(other.path_of(imported.id())).expect("read"),
        bytes
    );
    assert_eq!(
        other
            .publish_bytes(&bytes, None)
            .expect_err("same id")
            .kind(),
        ErrorKind::AlreadyExists
    );
}

#[test]
fn append_rejects_non_canonical_content_and_unknown_parents() {
    let (_d, store) = temp_store();
    let mut s = store.create(None).expect("create");
    let wide = [0x18, 0x05]; // 5 in a two-byte head: not canonical
    assert_eq!(
        store
            .append(&mut s, &[entry(EntryKind::UserMessage, &wide, 1)])
            .expect_err("non-canonical")
            .kind(),
        ErrorKind::Invalid
    );
    let c = text("x");
    let e = NewEntry {
        parent: Some(12345),
        ..entry(EntryKind::UserMessage, &c, 1)
    };
    assert_eq!(
        store
            .append(&mut s, &[e])
            .expect_err("unknown parent")
            .kind(),
        ErrorKind::Invalid
    );
    assert!(
        s.records().is_empty(),
        "failed appends leave no trace in memory"
    );
    let len = std::fs::metadata(store.path_of(s.id()))
        .expect("meta")
        .len();
    assert_eq!(len, smith_store::format::HEADER_LEN as u64, "nor on disk");
}

/// A session reads what it appended from its own file, as a load of that
/// file would: on unix every record (offsets included) equals the loaded
/// one and nothing is held in private memory; a fork, whose arena maps its
/// origin's file, copies what it appends into its own buffer instead.
#[test]
fn appended_entries_are_read_from_the_file_they_were_written_to() {
    let (_d, store) = temp_store();
    let s = sample_session(&store);
    let loaded = store.load("sample").expect("load");
    let file_len = std::fs::metadata(store.path_of(s.id()))
        .expect("meta")
        .len();
    let (mapped, owned) = s.payload_regions();
    #[cfg(unix)]
    {
        assert_eq!((mapped.len() as u64, owned.len()), (file_len, 0));
        assert_eq!(s.records(), loaded.records());
    }
    #[cfg(not(unix))]
    assert_eq!((mapped.len(), owned.is_empty()), (0, false));
    assert!(s.records().iter().any(|r| r.is_compressed()));
    assert_eq!(s.records().len(), loaded.records().len());
    for (a, b) in s.records().iter().zip(loaded.records()) {
        assert_eq!(
            s.content(a).expect("written"),
            loaded.content(b).expect("loaded"),
            "entry {}",
            a.id
        );
    }
    let mut f = store.fork(&s, Some("forked")).expect("fork");
    let more = text("only in the fork");
    store
        .append(&mut f, &[entry(EntryKind::UserMessage, &more, 12)])
        .expect("append to fork");
    let leaf = *f.leaf().expect("leaf");
    assert!(leaf.payload_offset as usize >= f.payload_regions().0.len());
    assert_eq!(f.content(&leaf).expect("content").as_ref(), &more[..]);
    assert_eq!(
        same_history(&store.load("forked").expect("load fork")),
        same_history(&f)
    );
}

/// A loaded session addresses its payloads in the file's mapping (no copy),
/// and what it appends to that file too: the file is mapped again at its
/// new length. Once the file was replaced (a repair publishes a new one),
/// the old mapping is never extended over the new file: appends go to the
/// session's own buffer. Everything reads back exactly, and a fork of it
/// appends without disturbing the original.
#[test]
fn loaded_session_reads_payloads_in_place_and_appends_beside_them() {
    let (_d, store) = temp_store();
    let written = sample_session(&store);
    let expected = same_history(&written);
    let file_len = std::fs::metadata(store.path_of(written.id()))
        .expect("meta")
        .len();
    let mut s = store.load("sample").expect("load");
    let (mapped, owned) = s.payload_regions();
    #[cfg(unix)]
    assert_eq!((mapped.len() as u64, owned.len()), (file_len, 0));
    #[cfg(not(unix))]
    assert_eq!(mapped.len(), 0);
    assert_eq!(same_history(&s), expected);
    // Every record's stored payload is the frame's payload in the file.
    #[cfg(unix)]
    for r in s.records() {
        let start = r.frame_offset as usize + format::FRAME_PREFIX + r.head_len as usize;
        assert_eq!(r.payload_offset as usize, start, "entry {}", r.id);
    }
    let extra = text("appended after loading");
    store
        .append(&mut s, &[entry(EntryKind::UserMessage, &extra, 9)])
        .expect("append");
    let leaf = *s.leaf().expect("leaf");
    let grown = std::fs::metadata(store.path_of(s.id()))
        .expect("meta")
        .len();
    assert!(grown > file_len);
    let (mapped, owned) = s.payload_regions();
    #[cfg(unix)]
    {
        assert_eq!((mapped.len() as u64, owned.len()), (grown, 0));
        let start = leaf.frame_offset as usize + format::FRAME_PREFIX + leaf.head_len as usize;
        assert_eq!(leaf.payload_offset as usize, start);
    }
    #[cfg(not(unix))]
    assert!(leaf.payload_offset as usize >= mapped.len() && !owned.is_empty());
    assert_eq!(s.content(&leaf).expect("content").as_ref(), &extra[..]);
    assert_eq!(same_history(&s)[..expected.len()], expected[..]);
    // A repair publishes a new file over the old one; the loaded session
    // keeps reading the bytes it loaded, and appends beside its mapping.
    store.repair("sample", false).expect("repair");
    assert_eq!(same_history(&s)[..expected.len()], expected[..]);
    let after = text("appended after the file was replaced");
    store
        .append(&mut s, &[entry(EntryKind::UserMessage, &after, 11)])
        .expect("append after repair");
    let last = *s.leaf().expect("leaf");
    let (mapped, owned) = s.payload_regions();
    #[cfg(unix)]
    assert_eq!(mapped.len() as u64, grown, "the old file's mapping is kept");
    assert!(last.payload_offset as usize >= mapped.len());
    assert_eq!(
        owned.len(),
        last.head_len as usize + last.payload_len as usize
    );
    assert_eq!(s.content(&last).expect("content").as_ref(), &after[..]);
    assert_eq!(s.content(&leaf).expect("content").as_ref(), &extra[..]);
    // A fork shares the arena; appending to the fork leaves the original.
    let mut f = store.fork(&s, Some("forked")).expect("fork");
    let more = text("only in the fork");
    store
        .append(&mut f, &[entry(EntryKind::AssistantMessage, &more, 10)])
        .expect("append to fork");
    assert_eq!(
        f.content(f.leaf().expect("leaf"))
            .expect("content")
            .as_ref(),
        &more[..]
    );
    assert_eq!(s.leaf().map(|r| r.id), Some(last.id));
    assert_eq!(s.content(&last).expect("content").as_ref(), &after[..]);
    assert_eq!(s.content(&leaf).expect("content").as_ref(), &extra[..]);
    let reloaded = store.load("sample").expect("reload");
    assert_eq!(same_history(&reloaded), same_history(&s));
}

#[test]
fn import_refuses_what_could_not_be_resumed_and_lines_that_are_not_a_dump() {
    let header =
        r#"{"type":"header","format":1,"id":"0123456789abcdef0123456789abcdef","created_ms":1}"#;
    let entry = |id: u64, parent: u64| {
        format!(
            r#"{{"type":"entry","id":{id},"parent":{parent},"timestamp_ms":1,"kind":"user_message","pairing":0,"content":{{"role":"user","text":"hi"}}}}"#
        )
    };
    let good = format!("{header}\n{}\n{}\n", entry(1, 0), entry(2, 1));
    assert!(dump::import(good.as_bytes()).is_ok());
    let twice = format!(
        "{header}\n{}\n{}\n{}\n",
        entry(1, 0),
        entry(2, 1),
        entry(2, 1)
    );
    let err = dump::import(twice.as_bytes()).expect_err("a duplicate id");
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert!(
        err.to_string()
            .contains("dump line 4: entry id 2 appears a second time (first on line 3)"),
        "{err}"
    );
    let orphan = format!("{header}\n{}\n{}\n", entry(1, 0), entry(3, 7));
    let err = dump::import(orphan.as_bytes()).expect_err("a missing parent");
    assert!(
        err.to_string()
            .contains("dump line 3: entry 3 names parent 7, which no earlier line holds"),
        "{err}"
    );
    // An endless line is refused once the bound is read, never held whole.
    let endless = std::io::BufReader::new(std::io::Read::take(std::io::repeat(b'x'), 1 << 30));
    let err = dump::import_bounded(endless, 4 << 20).expect_err("an endless line");
    assert!(
        err.to_string()
            .contains("dump line 1: the line is longer than 4 MiB"),
        "{err}"
    );
}

#[test]
fn a_linear_history_is_read_front_to_back_and_anything_else_declines() {
    let (_d, store) = temp_store();
    let mut s = store.create(Some("line")).expect("create");
    let big = text(&"compressible tool output line\n".repeat(1000));
    let (a, b) = (text("one"), text("two"));
    store
        .append(
            &mut s,
            &[
                entry(EntryKind::UserMessage, &a, 1),
                entry(EntryKind::AssistantMessage, &b, 2),
                entry(EntryKind::ToolResult, &big, 3),
            ],
        )
        .expect("append");
    let loaded = store.load("line").expect("load");
    assert!(loaded.records()[2].is_compressed(), "read decompressed");
    let want: Vec<(u64, Vec<u8>)> = loaded
        .branch()
        .iter()
        .map(|r| (r.id, loaded.content(r).expect("content").to_vec()))
        .collect();
    let f = store.open_file("line").expect("open");
    let mut seen = Vec::new();
    let linear = f
        .for_each_linear_entry(&Limits::default(), |h, c| {
            seen.push((h.id, c.to_vec()));
            Ok::<(), smith_store::StoreError>(())
        })
        .expect("walk");
    assert!(linear);
    assert_eq!(seen, want);

    // The visitor's error ends the walk and is returned as it was.
    #[derive(Debug)]
    enum Stop {
        Read(String),
        SinkClosed,
    }
    impl From<smith_store::StoreError> for Stop {
        fn from(err: smith_store::StoreError) -> Self {
            Stop::Read(err.to_string())
        }
    }
    let mut calls = 0;
    let err = f
        .for_each_linear_entry(&Limits::default(), |_, _| {
            calls += 1;
            Err::<(), Stop>(Stop::SinkClosed)
        })
        .expect_err("stops");
    match err {
        Stop::SinkClosed => {}
        Stop::Read(read) => panic!("the walk failed to read the file: {read}"),
    }
    assert_eq!(calls, 1);

    // A branch made by a leaf switch: declined before anything is visited.
    let sample = sample_session(&store);
    let f = store.open_file(&sample.id().to_hex()).expect("open");
    let mut visited = 0;
    let linear = f
        .for_each_linear_entry(&Limits::default(), |_, _| {
            visited += 1;
            Ok::<(), smith_store::StoreError>(())
        })
        .expect("checked");
    assert!(!linear && visited == 0);

    // A torn tail: declined too (a load recovers what can be recovered).
    let mut bytes = std::fs::read(store.path_of(loaded.id())).expect("read");
    bytes.truncate(bytes.len() - 3);
    let torn = store.root().join("torn.smith");
    std::fs::write(&torn, &bytes).expect("write");
    let f = SessionFile::open(&torn).expect("open");
    let linear = f
        .for_each_linear_entry(&Limits::default(), |_, _| {
            visited += 1;
            Ok::<(), smith_store::StoreError>(())
        })
        .expect("checked");
    assert!(!linear && visited == 0);
}
