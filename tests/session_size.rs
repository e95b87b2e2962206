//! What a session costs on disk: the same realistic tool-using conversation
//! recorded by smith's journal and written as pi's session JSONL.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use smith_engine::journal::store::{
    StoreJournal, check_entries, entry_json, resume, resume_within, timeline,
};
use smith_engine::journal::{
    EffectCompletion, EffectIntent, EffectJournal, MessageMeta, Outcome, RunRecord, SessionEvent,
    SessionSink, canonical_cbor,
};
use smith_engine::protocol::{Event, ToolStatus};
use smith_engine::provider::{ContentBlock, Message, StopReason, ToolCall};
use smith_engine::replay::{Pace, Recording, ReplayError, Scope, stream, stream_file};
use smith_engine::tools::Mutation;
use smith_store::compress::Compressor;
use smith_store::format::{self, EntryHead, KIND_ENTRY};
use smith_store::search::{Query, search_session};
use smith_store::{EntryKind, Limits, Session, SessionFile, Store};
// The conversation and its pi JSONL are shared with the search benchmark.
use smith_perf::conversation::{Step, conversation, pi_jsonl};

/// Records `steps` into a new session `name` of the store at `root`.
fn record(root: &Path, name: &str, steps: &[Step]) -> PathBuf {
    smith_perf::conversation::record(root, name, steps).unwrap()
}

fn load(path: &Path) -> Session {
    SessionFile::open(path)
        .unwrap()
        .load(&Limits::default())
        .unwrap()
}

/// The conversation of `tests/data/session-v1-full-results.smith`, which
/// the journal wrote before tool results referred to their effect's
/// output and run starts to earlier definitions: every tool output twice,
/// the system prompt and tool list in every run start.
const V1_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/session-v1-full-results.smith"
);

fn v1_steps() -> Vec<Step> {
    conversation(0x5e55_10f1, 3, 4)
}

/// The record's content as stored (nothing resolved).
fn stored(session: &Session, record: &smith_store::Record) -> Value {
    let mut text = String::new();
    smith_codec::json::from_cbor(&session.content(record).unwrap(), &mut text).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn events(recording: &Recording) -> Vec<(Scope, Event)> {
    recording
        .steps
        .iter()
        .map(|s| (s.scope, s.event.clone()))
        .collect()
}

fn hits(session: &Session, query: &str) -> Vec<(u64, EntryKind, String, (usize, usize))> {
    let query = Query::new(query).unwrap();
    let mut out = Vec::new();
    search_session(session, &query, &mut Vec::new(), |hit| {
        out.push((hit.entry, hit.kind, hit.snippet, hit.matched));
        true
    })
    .unwrap();
    out
}

#[test]
fn a_session_written_in_full_reads_the_same_as_one_that_refers_to_each_value_once() {
    let dir = tempfile::tempdir().unwrap();
    let steps = v1_steps();
    let new_path = record(dir.path(), "v2", &steps);
    let (old, new) = (load(Path::new(V1_FIXTURE)), load(&new_path));
    let old_len = std::fs::metadata(V1_FIXTURE).unwrap().len();
    let new_len = std::fs::metadata(&new_path).unwrap().len();
    assert!(
        new_len * 10 < old_len * 7,
        "{new_len} bytes against {old_len} written in full"
    );

    // Entry for entry, the same kinds; what the new one stores refers to
    // the outputs and definitions the old one repeats.
    assert_eq!(old.records().len(), new.records().len());
    let results = |s: &Session| {
        s.records()
            .iter()
            .filter(|r| r.entry_kind() == EntryKind::ToolResult)
            .filter(|r| smith_store::refs::content_ref(&s.content(r).unwrap()).is_some())
            .count()
    };
    let with_effect = steps
        .iter()
        .filter(|s| matches!(s, Step::Message(Message::ToolResult { .. }, meta) if meta.effect_id.is_some()))
        .count();
    assert_eq!(with_effect, 11);
    assert_eq!((results(&old), results(&new)), (0, with_effect));
    let starts: Vec<Value> = new
        .records()
        .iter()
        .filter(|r| r.entry_kind() == EntryKind::Metadata)
        .map(|r| stored(&new, r))
        .filter(|v| v["type"] == "run_start")
        .collect();
    assert_eq!(starts.len(), 3);
    fn keys(v: &Value) -> Vec<&str> {
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }
    assert_eq!(
        keys(&starts[0]),
        ["cwd", "model", "provider", "system", "tools", "type"]
    );
    // Run 2 keeps both definitions of run 1; run 3 has a new tool list.
    assert_eq!(
        keys(&starts[1]),
        ["cwd", "model", "provider", "type", "unchanged"]
    );
    assert_eq!(keys(&starts[1]["unchanged"]), ["system", "tools"]);
    assert_eq!(
        keys(&starts[2]),
        ["cwd", "model", "provider", "tools", "type", "unchanged"]
    );
    let holder = new
        .records()
        .iter()
        .find(|r| stored(&new, r)["type"] == "run_start")
        .unwrap()
        .id;
    assert_eq!(starts[2]["unchanged"]["system"]["entry"], holder);
    assert_eq!(starts[1]["unchanged"]["tools"]["entry"], holder);

    // Every entry reads as the one written in full (`entry_json`, which
    // exports and statistics read).
    for (o, n) in old.records().iter().zip(new.records()) {
        assert_eq!(o.entry_kind(), n.entry_kind());
        assert_eq!(
            entry_json(&old, o).unwrap(),
            entry_json(&new, n).unwrap(),
            "entry {}",
            n.id
        );
    }
    // Resume, whole and within a budget; the timeline.
    assert_eq!(resume(&old).unwrap(), resume(&new).unwrap());
    let messages = steps
        .iter()
        .filter(|s| matches!(s, Step::Message(..)))
        .count();
    assert_eq!(resume(&new).unwrap().history.len(), messages);
    for budget in [2_000, 20_000, 60_000] {
        let (o, n) = (
            resume_within(&old, Some(budget)).unwrap(),
            resume_within(&new, Some(budget)).unwrap(),
        );
        assert_eq!((&o.history, &o.meta), (&n.history, &n.meta), "{budget}");
        // The same messages are left out; a referring result counts the
        // completion it refers to (the output and a little more).
        assert_eq!(o.omitted.map(|o| o.0), n.omitted.map(|n| n.0), "{budget}");
        if let (Some(o), Some(n)) = (o.omitted, n.omitted) {
            assert!(n.1.abs_diff(o.1) * 20 < o.1, "{n:?} against {o:?}");
        }
    }
    assert_eq!(timeline(&old).unwrap(), timeline(&new).unwrap());
    assert_eq!(check_entries(&new), Ok(()));

    // Replay, from a loaded session and streamed from the file.
    let (old_play, new_play) = (
        Recording::from_session(&old).unwrap(),
        Recording::from_session(&new).unwrap(),
    );
    assert_eq!(events(&old_play), events(&new_play));
    assert_eq!(old_play.effects, new_play.effects);
    assert_eq!(old_play.runs, new_play.runs);
    assert_eq!(new_play.runs.len(), 3);
    assert!(new_play.runs.iter().all(|r| {
        r.as_ref()
            .is_some_and(|r| r.system.is_some() && !r.tools.is_empty())
    }));
    let mut streamed = Vec::new();
    let linear = stream_file(
        &SessionFile::open(&new_path).unwrap(),
        &Limits::default(),
        Pace::Instant,
        |event| {
            streamed.push(event.clone());
            Ok::<(), ReplayError>(())
        },
    )
    .unwrap();
    assert!(linear);
    let mut played = Vec::new();
    stream(&old, Pace::Instant, |event| {
        played.push(event.clone());
        Ok::<(), ReplayError>(())
    })
    .unwrap();
    assert_eq!(streamed, played);

    // Search finds text of an output in the result, as before.
    let Some(Step::Completion(done)) = steps.iter().find(|s| matches!(s, Step::Completion(_)))
    else {
        panic!("no completion");
    };
    let output = smith_store::refs::output_text(&done.output)
        .unwrap()
        .to_owned();
    let needle: String = output
        .lines()
        .nth(2)
        .unwrap()
        .trim()
        .chars()
        .take(24)
        .collect();
    let found = hits(&new, &needle);
    assert!(!found.is_empty(), "{needle:?}");
    assert!(found.iter().all(|h| h.1 == EntryKind::ToolResult));
    assert_eq!(hits(&old, &needle), found);

    // The interface's transcript shows each result's text.
    let (old_rows, new_rows) = (
        smith_tui::session::SessionEntries::new(old.clone()),
        smith_tui::session::SessionEntries::new(new.clone()),
    );
    let bump = bumpalo::Bump::new();
    let mut shown = 0;
    for (i, r) in new.records().iter().enumerate() {
        if r.entry_kind() != EntryKind::ToolResult {
            continue;
        }
        let i = u32::try_from(i).unwrap();
        use smith_tui::session::EntryText;
        assert_eq!(old_rows.text_in(i, 0, &bump), new_rows.text_in(i, 0, &bump));
        let parts = |rows: &smith_tui::session::SessionEntries| {
            let mut out = Vec::new();
            rows.parts(i, &bump, |p| out.push(format!("{p:?}")))
                .unwrap();
            out
        };
        assert_eq!(parts(&old_rows), parts(&new_rows));
        shown += 1;
    }
    assert_eq!(shown, 12);

    // A fork keeps the branch, and with it what its entries refer to.
    let fork = new.fork(smith_store::SessionId([7; 16]), 0);
    assert_eq!(resume(&fork).unwrap(), resume(&new).unwrap());
    assert_eq!(
        events(&Recording::from_session(&fork).unwrap()),
        events(&new_play)
    );

    // The dump shows what is stored: the references.
    let mut dumped = Vec::new();
    let bytes = std::fs::read(&new_path).unwrap();
    smith_store::dump::dump(&bytes, &Limits::default(), "v2", &mut dumped).unwrap();
    let dumped = String::from_utf8(dumped).unwrap();
    assert_eq!(dumped.matches("\"content_ref\":\"fx-").count(), with_effect);
    assert_eq!(dumped.matches("\"unchanged\":").count(), 2);
}

#[test]
fn a_reopened_journal_keeps_definitions_once_and_a_changed_result_is_written_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let steps = conversation(0x0dd_ba11, 1, 2);
    let path = record(dir.path(), "again", &steps);
    // A new journal on the session (a resume in a new process).
    let store = Store::open(dir.path()).unwrap();
    let journal = StoreJournal::new(store.clone(), store.load("again").unwrap());
    let Some(Step::RunStart(info)) = steps.first() else {
        panic!("no run start");
    };
    journal
        .record_run(&RunRecord::RunStart(info.clone()))
        .unwrap();
    // A result whose text is not its effect's output (a hook changed it).
    let call = "call_changed";
    journal
        .record_intent(&EffectIntent {
            effect_id: "fx-90".into(),
            parent: call.into(),
            tool: "bash".into(),
            plugin_generation: 0,
            input: canonical_cbor(&json!({"command": "ls"})).unwrap(),
        })
        .unwrap();
    journal
        .record_completion(&EffectCompletion {
            effect_id: "fx-90".into(),
            outcome: Outcome::Ok,
            mutation: Mutation::NotApplied,
            output: canonical_cbor(&json!({"content": "a\nb\n", "details": {}, "is_error": false}))
                .unwrap(),
        })
        .unwrap();
    let meta = MessageMeta {
        status: Some(ToolStatus::Ok),
        effect_id: Some("fx-90".into()),
        ..MessageMeta::default()
    };
    journal
        .record(&SessionEvent::Message {
            message: Message::ToolResult {
                call_id: call.into(),
                name: "bash".into(),
                content: "a\nb\n[edited by a hook]".into(),
                is_error: false,
                media: Vec::new(),
            },
            meta,
        })
        .unwrap();
    drop(journal);
    let session = load(&path);
    let records = session.records();
    let start = &records[records.len() - 4];
    let value = stored(&session, start);
    assert_eq!(value["type"], "run_start");
    assert_eq!(value.get("tools"), None);
    assert_eq!(value.get("system"), None);
    let first = records
        .iter()
        .find(|r| stored(&session, r)["type"] == "run_start")
        .unwrap();
    assert_eq!(value["unchanged"]["tools"]["entry"], first.id);
    let resolved = entry_json(&session, start).unwrap();
    assert_eq!(
        resolved["tools"],
        serde_json::to_value(&info.tools).unwrap()
    );
    assert_eq!(resolved["system"], json!(info.system));
    let result = records.last().unwrap();
    assert_eq!(result.entry_kind(), EntryKind::ToolResult);
    assert_eq!(
        stored(&session, result)["content"],
        "a\nb\n[edited by a hook]"
    );
    assert_eq!(
        resume(&session).unwrap().history.last(),
        Some(&Message::ToolResult {
            call_id: call.into(),
            name: "bash".into(),
            content: "a\nb\n[edited by a hook]".into(),
            is_error: false,
            media: Vec::new(),
        })
    );
}

/// `tests/data/session-v2-each-value-once.smith`: the conversation of
/// [`v1_steps`] as the journal wrote it before call arguments were stored
/// once (each tool call entry and effect intent holding them) and while
/// the store compressed at zstd level -1.
const V2_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/session-v2-each-value-once.smith"
);

/// How many tool call entries and effect intents of `session` refer to
/// their call's arguments instead of holding them.
fn argument_refs(session: &Session) -> (usize, usize) {
    let refers = |kind: EntryKind| {
        session
            .records()
            .iter()
            .filter(|r| r.entry_kind() == kind)
            .filter(|r| smith_store::refs::arguments_ref(&session.content(r).unwrap()))
            .count()
    };
    (refers(EntryKind::ToolCall), refers(EntryKind::EffectIntent))
}

#[test]
fn a_session_written_before_arguments_were_stored_once_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let steps = v1_steps();
    let new_path = record(dir.path(), "v3", &steps);
    let (old, new) = (load(Path::new(V2_FIXTURE)), load(&new_path));
    let old_len = std::fs::metadata(V2_FIXTURE).unwrap().len();
    let new_len = std::fs::metadata(&new_path).unwrap().len();
    assert!(new_len < old_len, "{new_len} bytes against {old_len}");

    // Every call's arguments are held once, by its assistant message.
    let calls: Vec<&ToolCall> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Message(message, _) => Some(message.tool_calls()),
            _ => None,
        })
        .flatten()
        .collect();
    let intents = steps
        .iter()
        .filter(|s| matches!(s, Step::Intent(_)))
        .count();
    assert_eq!((calls.len(), intents), (12, 11));
    assert_eq!(argument_refs(&old), (0, 0));
    assert_eq!(argument_refs(&new), (calls.len(), intents));
    for r in new.records() {
        let value = stored(&new, r);
        match r.entry_kind() {
            EntryKind::ToolCall => {
                assert_eq!(value.get("arguments"), None);
                assert_eq!(value["arguments_ref"], true);
            }
            EntryKind::EffectIntent => {
                assert_eq!(value.get("input"), None);
                assert_eq!(value["arguments_ref"], true);
            }
            _ => {}
        }
    }

    // Entry for entry, what readers read is what was written in full.
    assert_eq!(old.records().len(), new.records().len());
    for (o, n) in old.records().iter().zip(new.records()) {
        assert_eq!(o.entry_kind(), n.entry_kind());
        assert_eq!(
            entry_json(&old, o).unwrap(),
            entry_json(&new, n).unwrap(),
            "entry {}",
            n.id
        );
    }
    // Each call entry and intent reads as its call's arguments.
    let mut read = new
        .records()
        .iter()
        .filter(|r| r.entry_kind() == EntryKind::ToolCall)
        .map(|r| entry_json(&new, r).unwrap());
    for call in &calls {
        let value = read.next().unwrap();
        assert_eq!(value["id"], json!(call.id));
        assert_eq!(value["arguments"], call.arguments);
    }
    for r in new.records() {
        if r.entry_kind() == EntryKind::EffectIntent {
            let value = entry_json(&new, r).unwrap();
            let call = calls
                .iter()
                .find(|c| value["parent"] == json!(c.id))
                .unwrap();
            assert_eq!(value["input"], call.arguments);
        }
    }
    assert_eq!(resume(&old).unwrap(), resume(&new).unwrap());
    assert_eq!(timeline(&old).unwrap(), timeline(&new).unwrap());
    assert_eq!(check_entries(&new), Ok(()));

    // Replay: loaded (with each effect's input) and streamed.
    let (old_play, new_play) = (
        Recording::from_session(&old).unwrap(),
        Recording::from_session(&new).unwrap(),
    );
    assert_eq!(events(&old_play), events(&new_play));
    assert_eq!(old_play.effects, new_play.effects);
    assert_eq!(new_play.effects.len(), intents);
    for effect in &new_play.effects {
        let call = calls.iter().find(|c| c.id == effect.parent).unwrap();
        assert_eq!(effect.input, call.arguments);
    }
    let mut streamed = Vec::new();
    stream_file(
        &SessionFile::open(&new_path).unwrap(),
        &Limits::default(),
        Pace::Instant,
        |event| {
            streamed.push(event.clone());
            Ok::<(), ReplayError>(())
        },
    )
    .unwrap();
    let mut played = Vec::new();
    stream(&old, Pace::Instant, |event| {
        played.push(event.clone());
        Ok::<(), ReplayError>(())
    })
    .unwrap();
    assert_eq!(streamed, played);

    // A fork keeps what its entries refer to.
    let fork = new.fork(smith_store::SessionId([9; 16]), 0);
    assert_eq!(
        Recording::from_session(&fork).unwrap().effects,
        old_play.effects
    );

    // The dump shows what is stored: the references.
    let mut dumped = Vec::new();
    let bytes = std::fs::read(&new_path).unwrap();
    smith_store::dump::dump(&bytes, &Limits::default(), "v3", &mut dumped).unwrap();
    let dumped = String::from_utf8(dumped).unwrap();
    assert_eq!(
        dumped.matches("\"arguments_ref\":true").count(),
        calls.len() + intents
    );
}

#[test]
fn arguments_that_differ_from_the_call_s_are_written_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let journal = StoreJournal::new(store.clone(), store.create(Some("full")).unwrap());
    let call = |id: &str, path: &str| ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: json!({"path": path}),
    };
    // Two calls of one id: the second's entry holds its own arguments.
    let message = Message::Assistant {
        content: vec![
            ContentBlock::ToolCall(call("c1", "a.rs")),
            ContentBlock::ToolCall(call("c2", "b.rs")),
            ContentBlock::ToolCall(call("c1", "c.rs")),
        ],
        stop: StopReason::ToolUse,
    };
    journal
        .record(&SessionEvent::Message {
            message,
            meta: MessageMeta::default(),
        })
        .unwrap();
    let intent = |n: u64, parent: &str, path: &str| EffectIntent {
        effect_id: format!("fx-{n}"),
        parent: parent.into(),
        tool: "read".into(),
        plugin_generation: 0,
        input: canonical_cbor(&json!({"path": path})).unwrap(),
    };
    // The call's arguments; changed ones (a hook rewrote them); a parent
    // that is no call of the message.
    journal
        .record_intents(&[
            intent(1, "c1", "a.rs"),
            intent(2, "c2", "changed.rs"),
            intent(3, "elsewhere", "a.rs"),
        ])
        .unwrap();
    let path = store.path_of(journal.session_id());
    drop(journal);
    let session = load(&path);
    let records = session.records();
    let by_ref: Vec<(EntryKind, bool)> = records
        .iter()
        .filter(|r| {
            matches!(
                r.entry_kind(),
                EntryKind::ToolCall | EntryKind::EffectIntent
            )
        })
        .map(|r| {
            (
                r.entry_kind(),
                smith_store::refs::arguments_ref(&session.content(r).unwrap()),
            )
        })
        .collect();
    assert_eq!(
        by_ref,
        [
            (EntryKind::ToolCall, true),
            (EntryKind::ToolCall, true),
            (EntryKind::ToolCall, false),
            (EntryKind::EffectIntent, true),
            (EntryKind::EffectIntent, false),
            (EntryKind::EffectIntent, false),
        ]
    );
    let read: Vec<Value> = records
        .iter()
        .filter(|r| {
            matches!(
                r.entry_kind(),
                EntryKind::ToolCall | EntryKind::EffectIntent
            )
        })
        .map(|r| {
            let v = entry_json(&session, r).unwrap();
            v.get("arguments").or(v.get("input")).unwrap()["path"].clone()
        })
        .collect();
    assert_eq!(
        read,
        ["a.rs", "b.rs", "c.rs", "a.rs", "changed.rs", "a.rs"].map(|p| json!(p))
    );
    let effects = Recording::from_session(&session).unwrap().effects;
    let inputs: Vec<&Value> = effects.iter().map(|e| &e.input["path"]).collect();
    assert_eq!(
        inputs,
        [&json!("a.rs"), &json!("changed.rs"), &json!("a.rs")]
    );
}

/// A larger session of the same kind: 12 runs of 24 tool calls each.
fn big() -> Vec<Step> {
    conversation(0xb16_5e55, 12, 24)
}

/// The size of the big conversation's session file as this build wrote it
/// before each value was stored once (every tool output in its result too,
/// definitions in every run start): measured with that build.
const BEFORE_BYTES: u64 = 2_651_688;

#[test]
fn a_session_file_is_at_most_pi_s_jsonl_for_the_same_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let steps = big();
    let path = record(dir.path(), "big", &steps);
    let smith = std::fs::metadata(&path).unwrap().len();
    let pi = pi_jsonl(&steps).len() as u64;
    let session = load(&path);
    // What the store compressed: the entries of at least its threshold.
    let compressed = session
        .records()
        .iter()
        .filter(|r| r.is_compressed())
        .count();
    let eligible = session
        .records()
        .iter()
        .filter(|r| session.content_len(r) >= smith_store::compress::THRESHOLD)
        .count();
    println!(
        "smith {smith} bytes (before: {BEFORE_BYTES}), pi {pi} bytes; {compressed} of {} entries compressed, {eligible} eligible",
        session.records().len()
    );
    assert_eq!(compressed, eligible);
    // The same file with every payload stored as it is.
    let uncompressed = smith
        + session
            .records()
            .iter()
            .filter(|r| r.is_compressed())
            .map(|r| session.content_len(r) as u64 - u64::from(r.payload_len))
            .sum::<u64>();
    println!(
        "uncompressed {uncompressed} bytes ({:.3} of pi's)",
        uncompressed as f64 / pi as f64
    );
    print!("{}", breakdown(&session, smith));
    assert!(compressed > 0);
    assert!(smith <= pi, "smith {smith} bytes, pi {pi}");
    // Each call's arguments are stored once too: even with every payload
    // stored as it is, the file is at most pi's JSONL, and as written at
    // most 0.71 of it (half of pi's is not reached, see
    // docs/session-format.md §4.1).
    assert!(
        uncompressed <= pi,
        "uncompressed {uncompressed} bytes, pi {pi}"
    );
    assert!(100 * smith <= 71 * pi, "smith {smith} bytes, pi {pi}");
    // Each output is stored once: before, the file was larger than pi's.
    assert!(BEFORE_BYTES > pi);
    assert!(
        10 * smith < 6 * BEFORE_BYTES,
        "smith {smith} bytes, before {BEFORE_BYTES}"
    );
    // And it reads the conversation back whole.
    let resumed = resume(&session).unwrap();
    let messages: Vec<&Message> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Message(m, _) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(resumed.history.iter().collect::<Vec<_>>(), messages);
}

/// Where a session file's bytes go: per entry kind (metadata by its
/// `type`), the entries, their content as stored (compressed where it is)
/// and decoded, and the rest of the file (header, frame fields, entry
/// heads).
fn breakdown(session: &Session, file: u64) -> String {
    let mut rows: std::collections::BTreeMap<String, (u64, u64, u64)> =
        std::collections::BTreeMap::new();
    for r in session.records() {
        let mut name = format!("{:?}", r.entry_kind());
        if r.entry_kind() == EntryKind::Metadata {
            name = format!("Metadata {}", stored(session, r)["type"].as_str().unwrap());
        }
        let row = rows.entry(name).or_default();
        row.0 += 1;
        row.1 += u64::from(r.payload_len);
        row.2 += session.content_len(r) as u64;
    }
    let mut out = format!(
        "{:<24} {:>7} {:>10} {:>10} {:>7}\n",
        "kind", "entries", "stored", "decoded", "share"
    );
    let mut content = 0;
    for (name, (n, stored, decoded)) in &rows {
        content += stored;
        out.push_str(&format!(
            "{name:<24} {n:>7} {stored:>10} {decoded:>10} {:>6.1}%\n",
            100.0 * *stored as f64 / file as f64
        ));
    }
    out.push_str(&format!(
        "{:<24} {:>7} {:>10} {:>10} {:>6.1}%\n",
        "framing and heads",
        session.records().len(),
        file - content,
        "",
        100.0 * (file - content) as f64 / file as f64
    ));
    out
}

/// The size of `session`'s file were every entry written in full (what
/// readers resolve it to, encoded and compressed with `comp`): the file
/// the journal wrote before values were stored once.
fn written_in_full(session: &Session, comp: &mut Compressor) -> u64 {
    let (mut map, mut frame) = (Vec::new(), Vec::new());
    let mut len = format::HEADER_LEN as u64;
    for r in session.records() {
        let content = canonical_cbor(&entry_json(session, r).unwrap()).unwrap();
        let head = EntryHead {
            id: r.id,
            parent: r.parent,
            timestamp_ms: r.timestamp_ms,
            kind: r.kind,
            pairing: r.pairing,
        };
        map.clear();
        format::encode_entry(&mut map, &head, &content);
        frame.clear();
        comp.frame(&mut frame, KIND_ENTRY, 0, &map);
        len += frame.len() as u64;
    }
    len
}

#[test]
fn the_perf_gates_session_fixture_stores_each_output_once() {
    // The measure is exact: the fixture written in full measures what it
    // is, compressed as the build that wrote it compressed (zstd level -1
    // from 6144 bytes).
    let mut then = Compressor::with_params(-1, 6144).unwrap();
    let v1 = load(Path::new(V1_FIXTURE));
    let v1_len = std::fs::metadata(V1_FIXTURE).unwrap().len();
    assert_eq!(written_in_full(&v1, &mut then), v1_len);
    let dir = tempfile::tempdir().unwrap();
    let v2 = load(&record(dir.path(), "v2", &v1_steps()));
    assert_eq!(written_in_full(&v2, &mut then), v1_len);

    // The `session.*` gates' fixture (`smith_perf::session_gates`): one
    // run recorded through the journal, repeated.
    let path = dir.path().join("fixture.smith");
    let (entries, runs) =
        smith_perf::session_gates::write_fixture(&dir.path().join("scratch"), &path, 4_000_000)
            .unwrap();
    let after = std::fs::metadata(&path).unwrap().len();
    let fixture = load(&path);
    assert_eq!(fixture.records().len() as u64, entries);
    let before = written_in_full(&fixture, &mut Compressor::new().unwrap());
    println!(
        "session fixture: {entries} entries in {runs} runs, {after} bytes ({} a run); written in full {before} bytes ({} a run)",
        after / runs,
        before / runs
    );
    assert!(10 * after < 7 * before, "{after} bytes against {before}");
    // It reads as written in full.
    let streamed = |s: &Session| {
        let mut out = Vec::new();
        stream(s, Pace::Instant, |e| {
            out.push(e.clone());
            Ok::<(), ReplayError>(())
        })
        .unwrap();
        out
    };
    let played = streamed(&fixture);
    assert!(
        played.iter().any(
            |e| matches!(e, Event::ToolExecutionEnd { content, .. } if content.len() >= 12_000)
        )
    );
}
