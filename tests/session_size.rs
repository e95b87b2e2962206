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

/// `bytes` as `smith session dump` writes them.
fn dump_text(bytes: &[u8]) -> String {
    let mut out = Vec::new();
    let report = smith_store::dump::dump(bytes, &Limits::default(), "t", &mut out).unwrap();
    assert_eq!(report.corrupt_skipped, 0);
    String::from_utf8(out).unwrap()
}

/// The dump without what differs between two recordings of one
/// conversation: the header (session id, creation time) and each entry's
/// timestamp.
fn dump_entries(bytes: &[u8]) -> Vec<Value> {
    dump_text(bytes)
        .lines()
        .skip(1)
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("timestamp_ms").unwrap();
            v
        })
        .collect()
}

/// Each record's entry fields and decoded content, in file order.
fn entries_of(session: &Session) -> Vec<(u64, u64, u32, u64, Vec<u8>)> {
    session
        .records()
        .iter()
        .map(|r| {
            (
                r.id,
                r.parent,
                r.kind,
                r.pairing,
                session.content(r).unwrap().into_owned(),
            )
        })
        .collect()
}

/// Content lengths of the records stored compressed, and of those that
/// are not.
fn compressed_lengths(session: &Session) -> (Vec<usize>, Vec<usize>) {
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for r in session.records() {
        let len = session.content_len(r);
        if r.is_compressed() { &mut yes } else { &mut no }.push(len);
    }
    (yes, no)
}

#[test]
fn the_big_conversation_written_small_is_under_half_of_pi_s_jsonl_and_reads_the_same() {
    use smith_store::compress::{Compression, SMALL_THRESHOLD, THRESHOLD};
    let steps = big();
    let pi = pi_jsonl(&steps).len() as u64;
    let fast_dir = tempfile::tempdir().unwrap();
    let fast_path = record(fast_dir.path(), "big", &steps);
    let small_dir = tempfile::tempdir().unwrap();
    let mut small_store = Store::open(small_dir.path()).unwrap();
    small_store.set_compression(Compression::Small);
    let small_path = smith_perf::conversation::record_in(&small_store, "big", &steps).unwrap();
    let (fast_bytes, small_bytes) = (
        std::fs::read(&fast_path).unwrap(),
        std::fs::read(&small_path).unwrap(),
    );
    let (fast, small) = (load(&fast_path), load(&small_path));
    let (fast_len, small_len) = (fast_bytes.len() as u64, small_bytes.len() as u64);
    let (yes, no) = compressed_lengths(&small);
    println!(
        "small: {small_len} bytes ({:.4} of pi's {pi}), fast: {fast_len} ({:.4}); {} of {} entries compressed",
        small_len as f64 / pi as f64,
        fast_len as f64 / pi as f64,
        yes.len(),
        small.records().len()
    );
    // Measured 0.4698 of pi's (964,960 bytes against 2,053,985).
    assert!(
        100 * small_len <= 48 * pi,
        "small {small_len} bytes, pi {pi}"
    );
    assert!(
        small_len < fast_len,
        "small {small_len} bytes, fast {fast_len}"
    );
    // Content from the small threshold is compressed (when that is smaller:
    // every entry of this conversation from 256 bytes is), below it none.
    assert!(yes.iter().all(|&n| n >= SMALL_THRESHOLD), "{yes:?}");
    assert!(no.iter().all(|&n| n < SMALL_THRESHOLD), "{no:?}");
    assert!(
        yes.iter().filter(|&&n| n < THRESHOLD).count() > 300,
        "{yes:?}"
    );

    // It reads the same: entry for entry, decoded content byte for byte,
    // the same dump (timestamps aside: two recordings), resumed, replayed
    // and searched the same.
    assert_eq!(entries_of(&small), entries_of(&fast));
    assert_eq!(dump_entries(&small_bytes), dump_entries(&fast_bytes));
    assert_eq!(
        resume(&small).unwrap().history,
        resume(&fast).unwrap().history
    );
    let played = |s: &Session| {
        let mut out = Vec::new();
        stream(s, Pace::Instant, |e| {
            out.push(e.clone());
            Ok::<(), ReplayError>(())
        })
        .unwrap();
        out
    };
    assert_eq!(played(&small), played(&fast));
    for query in ["fn ", "assert_eq", "lexer"] {
        assert_eq!(hits(&small, query), hits(&fast, query), "{query}");
    }

    // Packing the fast file writes exactly what the small writer wrote
    // (same size; the dump equal to the fast file's, header included).
    let packed = fast_dir.path().join("packed");
    let store = Store::open(fast_dir.path()).unwrap();
    let p = store.pack("big", Compression::Small).unwrap();
    assert_eq!((p.before, p.after), (fast_len, small_len));
    assert_eq!(p.entries, fast.records().len() as u64);
    assert_eq!(p.compressed, yes.len() as u64);
    let packed_bytes = std::fs::read(&fast_path).unwrap();
    std::fs::write(&packed, &packed_bytes).unwrap();
    assert_eq!(packed_bytes.len() as u64, small_len);
    assert_eq!(dump_text(&packed_bytes), dump_text(&fast_bytes));
    assert_eq!(entries_of(&load(&packed)), entries_of(&fast));
    // Packing again changes nothing.
    let again = store.pack("big", Compression::Small).unwrap();
    assert_eq!((again.before, again.after), (small_len, small_len));
    assert_eq!(std::fs::read(&fast_path).unwrap(), packed_bytes);
}

#[test]
fn a_session_written_small_then_appended_fast_mixes_both_and_reads_the_same() {
    use smith_store::NewEntry;
    use smith_store::compress::{Compression, SMALL_THRESHOLD, THRESHOLD};
    let dir = tempfile::tempdir().unwrap();
    let fast_path = record(dir.path(), "big", &big());
    let fast_bytes = std::fs::read(&fast_path).unwrap();
    let fast = load(&fast_path);
    let records = fast.records();
    let half = records.len() / 2;
    let contents: Vec<Vec<u8>> = records
        .iter()
        .map(|r| fast.content(r).unwrap().into_owned())
        .collect();
    let entries: Vec<NewEntry<'_>> = records
        .iter()
        .zip(&contents)
        .map(|(r, c)| NewEntry {
            kind: r.entry_kind(),
            parent: Some(r.parent),
            timestamp_ms: Some(r.timestamp_ms),
            pairing: r.pairing,
            content: c,
        })
        .collect();
    // The first half written small, the rest appended by a store left at
    // the default, in another batch: one file, both kinds of frames.
    let mixed_dir = tempfile::tempdir().unwrap();
    let mut small_store = Store::open(mixed_dir.path()).unwrap();
    small_store.set_compression(Compression::Small);
    let mut s = small_store.create(Some("mixed")).unwrap();
    small_store.append(&mut s, &entries[..half]).unwrap();
    let fast_store = Store::open(mixed_dir.path()).unwrap();
    assert_eq!(fast_store.compression(), Compression::Fast);
    let mut s = fast_store
        .open_file("mixed")
        .unwrap()
        .load(&Limits::default())
        .unwrap();
    fast_store.append(&mut s, &entries[half..]).unwrap();
    let mixed_path = fast_store.path_of(s.id());
    let mixed_bytes = std::fs::read(&mixed_path).unwrap();
    let mixed = load(&mixed_path);
    let small_only = |s: &Session, range: std::ops::Range<usize>| {
        s.records()[range]
            .iter()
            .filter(|r| r.is_compressed() && s.content_len(r) < THRESHOLD)
            .count()
    };
    assert!(small_only(&mixed, 0..half) > 100);
    assert_eq!(small_only(&mixed, half..records.len()), 0);
    assert!(
        mixed.records()[0..half]
            .iter()
            .all(|r| r.is_compressed() == (mixed.content_len(r) >= SMALL_THRESHOLD))
    );
    // Same entries, same ids and timestamps: the dump is the fast file's
    // but for the header's session id and creation time.
    assert_eq!(entries_of(&mixed), entries_of(&fast));
    let body = |t: String| t.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(dump_text(&mixed_bytes)), body(dump_text(&fast_bytes)));
    assert_eq!(
        resume(&mixed).unwrap().history,
        resume(&fast).unwrap().history
    );
    // Reading a mixed file does not depend on the setting of the reader's
    // process or store: resumed again through a small store.
    let mut reread = small_store
        .open_file("mixed")
        .unwrap()
        .load(&Limits::default())
        .unwrap();
    assert_eq!(entries_of(&reread), entries_of(&fast));
    // And a small store appending to it after the fast one adds small
    // frames again.
    let i = (0..records.len())
        .rev()
        .find(|&i| (SMALL_THRESHOLD..THRESHOLD).contains(&contents[i].len()))
        .unwrap();
    let tail = [NewEntry::new(records[i].entry_kind(), &contents[i])];
    let before = reread.records().len();
    small_store.append(&mut reread, &tail).unwrap();
    let last = load(&mixed_path);
    assert_eq!(last.records().len(), before + 1);
    let r = last.records()[before];
    assert!(r.is_compressed(), "{} bytes", contents[i].len());
    assert_eq!(&*last.content(&r).unwrap(), &contents[i][..]);
}

/// `smith args` with `SMITH_HOME=home`, working in `home`, with no other
/// `SMITH_*` variable than `vars`.
fn smith(home: &Path, vars: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_smith"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SMITH_") || k.ends_with("_API_KEY") {
            cmd.env_remove(k);
        }
    }
    cmd.env("SMITH_HOME", home)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .current_dir(home)
        .envs(vars.iter().copied())
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn smith_ok(home: &Path, vars: &[(&str, &str)], args: &[&str]) -> String {
    let o = smith(home, vars, args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "smith {args:?}:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The file of `session` in the store in `home`'s data directory.
fn file_in(home: &Path, session: &Session) -> PathBuf {
    Store::open(home.join("data").join("sessions"))
        .unwrap()
        .path_of(session.id())
}

/// Session `name` of the store in `home`'s data directory, loaded.
fn session_in(home: &Path, name: &str) -> Session {
    Store::open(home.join("data").join("sessions"))
        .unwrap()
        .open_file(name)
        .unwrap()
        .load(&Limits::default())
        .unwrap()
}

/// The content lengths of `session`'s entries stored compressed below the
/// `fast` threshold: only `small` writes those.
fn small_frames(session: &Session) -> Vec<usize> {
    let (yes, _) = compressed_lengths(session);
    yes.into_iter()
        .filter(|&n| n < smith_store::compress::THRESHOLD)
        .collect()
}

#[test]
fn session_compression_from_the_configuration_reaches_every_writer() {
    use smith_store::compress::SMALL_THRESHOLD;
    // A prompt of 1,000 bytes: its user message is compressed by `small`
    // and stored as it is by `fast`.
    let prompt = "look at the lexer again ".repeat(42);
    let user_len = |s: &Session| {
        let r = s
            .records()
            .iter()
            .find(|r| r.entry_kind() == EntryKind::UserMessage)
            .copied()
            .unwrap();
        (r.is_compressed(), s.content_len(&r))
    };
    let eval = |home: &Path, vars: &[(&str, &str)], name: &str| {
        smith_ok(
            home,
            vars,
            &["eval", "--provider", "mock", "--name", name, &prompt],
        );
        session_in(home, name)
    };

    // By default (no setting) nothing under 6 KiB is compressed.
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let plain = eval(home, &[], "plain");
    assert_eq!(small_frames(&plain), Vec::<usize>::new());
    let (compressed, len) = user_len(&plain);
    assert!(
        !compressed && (SMALL_THRESHOLD..2000).contains(&len),
        "{len}"
    );

    // `session.compression "small"` in config.kdl: the journal of `smith
    // eval` writes small frames.
    std::fs::write(
        home.join("config.kdl"),
        "session {\n    compression \"small\"\n}\n",
    )
    .unwrap();
    let small = eval(home, &[], "small");
    assert_eq!(user_len(&small), (true, len));
    let (yes, no) = compressed_lengths(&small);
    assert!(yes.iter().all(|&n| n >= SMALL_THRESHOLD), "{yes:?}");
    assert!(no.iter().all(|&n| n < SMALL_THRESHOLD), "{no:?}");
    std::fs::remove_file(home.join("config.kdl")).unwrap();

    // From the environment: a fork and an import of the default-written
    // session are written small; both read as the original.
    let small_env = [("SMITH_SESSION_COMPRESSION", "small")];
    smith_ok(
        home,
        &small_env,
        &["session", "fork", "plain", "--name", "forked"],
    );
    let forked = session_in(home, "forked");
    assert_eq!(user_len(&forked), (true, len));
    assert_eq!(entries_of(&forked), entries_of(&plain));
    let dumped = home.join("plain.jsonl");
    smith_ok(
        home,
        &[],
        &[
            "session",
            "dump",
            "plain",
            "--out",
            dumped.to_str().unwrap(),
        ],
    );
    // Into stores of their own: the import keeps the dumped session's id.
    let import = |vars: &[(&str, &str)]| {
        let other = tempfile::tempdir().unwrap();
        smith_ok(
            other.path(),
            vars,
            &[
                "session",
                "import",
                dumped.to_str().unwrap(),
                "--name",
                "imported",
            ],
        );
        let s = session_in(other.path(), "imported");
        (std::fs::read(file_in(other.path(), &s)).unwrap(), s)
    };
    let (small_bytes, imported) = import(&small_env);
    assert_eq!(user_len(&imported), (true, len));
    assert_eq!(entries_of(&imported), entries_of(&plain));
    assert_eq!(
        imported
            .records()
            .iter()
            .filter(|r| r.is_compressed())
            .count(),
        forked
            .records()
            .iter()
            .filter(|r| r.is_compressed())
            .count()
    );
    // Imported under the default, the dump gives the file back byte for
    // byte; under `small` the same entries in smaller frames.
    let plain_bytes = std::fs::read(file_in(home, &plain)).unwrap();
    assert_eq!(import(&[]).0, plain_bytes);
    assert!(small_bytes.len() < plain_bytes.len());

    // A session written small and continued with the default holds both
    // kinds of frames and reads whole.
    smith_ok(
        home,
        &[],
        &["eval", "--provider", "mock", "--session", "small", &prompt],
    );
    let mixed = session_in(home, "small");
    let users: Vec<bool> = mixed
        .records()
        .iter()
        .filter(|r| r.entry_kind() == EntryKind::UserMessage)
        .map(|r| r.is_compressed())
        .collect();
    assert_eq!(users, [true, false]);
    let dump = smith_ok(home, &[], &["session", "dump", "small"]);
    assert_eq!(
        dump.lines()
            .filter(|l| l.contains(r#""kind":"user_message""#) && l.contains(&prompt))
            .count(),
        2,
        "{dump}"
    );
}

#[test]
fn an_unknown_session_compression_is_refused_naming_the_key_value_file_and_choices() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let config = home.join("config.kdl");
    std::fs::write(&config, "session {\n    compression \"tiny\"\n}\n").unwrap();
    let o = smith(home, &[], &["eval", "--provider", "mock", "hello"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8(o.stderr).unwrap();
    for part in [
        "error[config.invalid-value]: invalid value for `session.compression`",
        &format!("at: {}:2:17", config.display()),
        "value: \"tiny\"",
        "why: `session.compression` takes one of `fast`, `small`",
        "next: set `session.compression` to one of `fast`, `small`",
    ] {
        assert!(err.contains(part), "{part:?} in {err}");
    }
    assert!(
        !home.join("data").join("sessions").exists() || {
            std::fs::read_dir(home.join("data").join("sessions"))
                .unwrap()
                .filter_map(Result::ok)
                .all(|e| !e.file_name().to_string_lossy().ends_with(".smith"))
        }
    );
    std::fs::remove_file(&config).unwrap();
    let o = smith(
        home,
        &[("SMITH_SESSION_COMPRESSION", "Small")],
        &["session", "list"],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8(o.stderr).unwrap();
    for part in [
        "invalid value for `session.compression` from environment variable SMITH_SESSION_COMPRESSION",
        "value: Small",
        "takes one of `fast`, `small`",
    ] {
        assert!(err.contains(part), "{part:?} in {err}");
    }
}

/// `smith session pack` rewrites a session with `small` and reports the
/// sizes; it is refused while another smith serves the session.
#[test]
fn session_pack_shrinks_a_session_and_is_refused_while_it_is_open_for_writing() {
    use std::io::{BufRead, Write};
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let prompt = "look at the lexer again ".repeat(42);
    smith_ok(
        home,
        &[],
        &["eval", "--provider", "mock", "--name", "busy", &prompt],
    );
    let path = file_in(home, &session_in(home, "busy"));

    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("SMITH_SESSION_COMPRESSION")
        .current_dir(home)
        .args(["rpc", "--provider", "mock", "--session", "busy"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(server.stdout.take().unwrap()).lines();
    writeln!(
        stdin,
        r#"{{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {{}}}}"#
    )
    .unwrap();
    let answer = lines.next().unwrap().unwrap();
    assert!(answer.contains(r#""id":1"#), "{answer}");
    let pid = server.id();
    let served = std::fs::read(&path).unwrap();
    let o = smith(home, &[], &["session", "pack", "busy"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains(&format!(
            "session busy is in use by another smith (process {pid}, running on it for"
        )),
        "{err}"
    );
    assert!(
        err.contains("packing replaces the file that smith appends to, so it is refused while the session is open for writing\n"),
        "{err}"
    );
    assert!(
        err.contains("next: end the other smith first, then run `smith session pack busy` again"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), served, "left as it was");
    drop(stdin);
    assert!(server.wait().unwrap().success());
    let before = session_in(home, "busy");
    let before_len = std::fs::metadata(&path).unwrap().len();

    let out = smith_ok(home, &[], &["session", "pack", "busy"]);
    let after = session_in(home, "busy");
    let after_len = std::fs::metadata(file_in(home, &after)).unwrap().len();
    assert!(after_len < before_len, "{after_len} against {before_len}");
    let compressed = after.records().iter().filter(|r| r.is_compressed()).count();
    assert_eq!(
        out.trim(),
        format!(
            "packed busy: {before_len} bytes before, {after_len} after ({:.3} of before); {compressed} of {} entries stored compressed",
            after_len as f64 / before_len as f64,
            after.records().len()
        )
    );
    // Written as `small` writes: the prompt and the answer quoting it are
    // now compressed, and so is everything from 256 bytes.
    assert_eq!(small_frames(&before), Vec::<usize>::new());
    assert_eq!(small_frames(&after).len(), 2, "{:?}", small_frames(&after));
    let (yes, no) = compressed_lengths(&after);
    assert!(yes.iter().all(|&n| n >= 256), "{yes:?}");
    assert!(no.iter().all(|&n| n < 256), "{no:?}");
    assert_eq!(entries_of(&after), entries_of(&before));
    // Another smith may open it again, and appends to it as configured.
    smith_ok(
        home,
        &[],
        &[
            "eval",
            "--provider",
            "mock",
            "--session",
            "busy",
            "and again",
        ],
    );
    let last = session_in(home, "busy");
    assert!(last.records().len() > after.records().len());
    assert_eq!(
        entries_of(&last)[..after.records().len()],
        entries_of(&after)[..]
    );
}
