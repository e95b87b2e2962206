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
    EffectCompletion, EffectIntent, EffectJournal, MessageMeta, Outcome, RunInfo, RunRecord,
    RunSummary, SessionEvent, SessionSink, canonical_cbor,
};
use smith_engine::protocol::{Event, StopCause, ToolStatus};
use smith_engine::provider::{ContentBlock, Message, StopReason, ToolCall, ToolSpec, Usage};
use smith_engine::replay::{Pace, Recording, ReplayError, Scope, stream, stream_file};
use smith_engine::tools::Mutation;
use smith_store::compress::Compressor;
use smith_store::format::{self, EntryHead, KIND_ENTRY};
use smith_store::search::{Query, search_session};
use smith_store::{EntryKind, Limits, Session, SessionFile, Store};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const SYLLABLES: [&str; 40] = [
    "par", "se", "tok", "en", "buf", "fer", "read", "er", "line", "col", "off", "set", "span",
    "lex", "node", "tree", "walk", "emit", "code", "gen", "file", "path", "err", "or", "map",
    "key", "val", "ue", "idx", "len", "str", "ing", "vec", "tor", "res", "ult", "opt", "ion",
    "ctx", "cfg",
];

fn ident(rng: &mut Rng) -> String {
    let parts = 1 + rng.below(3);
    let mut s = String::new();
    for i in 0..parts {
        if i > 0 && rng.below(2) == 0 {
            s.push('_');
        }
        s.push_str(rng.pick(&SYLLABLES));
    }
    s
}

/// Source-like text of about `len` bytes: what `read`, `bash` and `grep`
/// return in a coding session (identifiers, numbers, paths, indentation).
fn code(rng: &mut Rng, len: usize) -> String {
    let mut out = String::with_capacity(len + 120);
    let mut line_no = 1 + rng.below(400);
    while out.len() < len {
        let indent = "    ".repeat(rng.below(4) as usize);
        let line = match rng.below(9) {
            0 => format!(
                "{indent}let {} = {}(&{});",
                ident(rng),
                ident(rng),
                ident(rng)
            ),
            1 => format!(
                "{indent}if {}.{}() > {} {{",
                ident(rng),
                ident(rng),
                rng.below(10_000)
            ),
            2 => format!("{indent}}}"),
            3 => format!(
                "{indent}// {} the {} before {} ({})",
                ident(rng),
                ident(rng),
                ident(rng),
                rng.below(100)
            ),
            4 => format!(
                "src/{}/{}.rs:{}:{}: {}",
                ident(rng),
                ident(rng),
                line_no,
                rng.below(80),
                ident(rng)
            ),
            5 => format!(
                "{indent}fn {}(&self, {}: &{}) -> Result<{}, Error> {{",
                ident(rng),
                ident(rng),
                ident(rng),
                ident(rng)
            ),
            6 => format!(
                "{indent}self.{}.insert({:#x}, \"{}\");",
                ident(rng),
                rng.next() & 0xff_ffff,
                ident(rng)
            ),
            7 => format!(
                "test {}::{} ... ok ({} ms)",
                ident(rng),
                ident(rng),
                rng.below(900)
            ),
            _ => format!(
                "{indent}return {}.{}({}, {});",
                ident(rng),
                ident(rng),
                rng.below(64),
                ident(rng)
            ),
        };
        out.push_str(&line);
        out.push('\n');
        line_no += 1;
    }
    out
}

/// Prose of about `len` bytes: prompts and answers.
fn prose(rng: &mut Rng, len: usize) -> String {
    const WORDS: [&str; 32] = [
        "the", "parser", "fails", "when", "a", "line", "ends", "without", "newline", "so", "I",
        "will", "read", "check", "fix", "test", "offset", "token", "and", "then", "run", "it",
        "again", "error", "case", "this", "function", "returns", "file", "now", "passes", "all",
    ];
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(rng.pick(&WORDS));
    }
    out
}

/// One step of the conversation, in recording order.
#[derive(Clone, Debug)]
enum Step {
    RunStart(RunInfo),
    Message(Message, MessageMeta),
    Intent(EffectIntent),
    Completion(EffectCompletion),
    RunEnd(RunSummary),
}

/// The tools offered: the built-ins' shape (name, a description of a few
/// hundred bytes, a JSON schema).
fn tools(rng: &mut Rng, extra: bool) -> Vec<ToolSpec> {
    let mut names = vec!["read", "bash", "edit", "write", "grep", "find", "ls"];
    if extra {
        names.push("web_fetch");
    }
    names
        .into_iter()
        .map(|name| ToolSpec {
            name: name.to_owned(),
            description: prose(rng, 380),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": prose(rng, 60)},
                    "command": {"type": "string", "description": prose(rng, 50)},
                    "limit": {"type": "integer", "description": prose(rng, 40)},
                },
                "required": ["path"],
            }),
        })
        .collect()
}

const CWD: &str = "/home/ada/src/lexer";
const PROVIDER: &str = "openai-compatible";
const MODEL: &str = "qwen3-coder-30b";

/// A realistic tool-using conversation: `runs` runs, each a prompt and
/// `calls` tool calls (one or two per assistant message) whose outputs are
/// 400 B to 12 KB, then an answer. The tool list changes once (a tool is
/// added before the third run); the system prompt stays. One call per
/// conversation is invalid (it never runs, so it has no effect), one fails.
fn conversation(seed: u64, runs: usize, calls: usize) -> Vec<Step> {
    let mut rng = Rng(seed);
    let system = format!(
        "You are smith, a coding agent working in {CWD}.\n{}",
        prose(&mut rng, 2_600)
    );
    let base_tools = tools(&mut rng, false);
    let more_tools = tools(&mut rng, true);
    let mut steps = Vec::new();
    let mut effect = 0u64;
    let mut call_no = 0u64;
    let usage = |rng: &mut Rng| Usage {
        input: Some(8_000 + rng.below(40_000)),
        output: Some(100 + rng.below(900)),
        cache_read: Some(rng.below(30_000)),
        cache_write: Some(0),
    };
    for run in 0..runs {
        steps.push(Step::RunStart(RunInfo {
            provider: PROVIDER.to_owned(),
            model: MODEL.to_owned(),
            system: Some(system.clone()),
            tools: if run >= 2 {
                more_tools.clone()
            } else {
                base_tools.clone()
            },
            cwd: CWD.to_owned(),
        }));
        let n = 80 + rng.below(400) as usize;
        let prompt = prose(&mut rng, n);
        steps.push(Step::Message(
            Message::User {
                text: prompt,
                media: Vec::new(),
            },
            MessageMeta::default(),
        ));
        let mut left = calls;
        while left > 0 {
            let batch = if left >= 2 && rng.below(3) == 0 { 2 } else { 1 };
            left -= batch;
            let mut tool_calls = Vec::new();
            for _ in 0..batch {
                call_no += 1;
                let name = ["read", "bash", "grep", "edit", "read", "bash"][rng.below(6) as usize]
                    .to_owned();
                let arguments = match name.as_str() {
                    "bash" => {
                        json!({"command": format!("cargo test -p {} --quiet", ident(&mut rng))})
                    }
                    "grep" => json!({"pattern": ident(&mut rng), "path": "src"}),
                    "edit" => json!({
                        "path": format!("src/{}.rs", ident(&mut rng)),
                        "old": code(&mut rng, 120),
                        "new": code(&mut rng, 140),
                    }),
                    _ => json!({"path": format!("src/{}/{}.rs", ident(&mut rng), ident(&mut rng))}),
                };
                tool_calls.push(ToolCall {
                    id: format!("call_{call_no:04}_{:08x}", rng.next() as u32),
                    name,
                    arguments,
                });
            }
            let n = 60 + rng.below(300) as usize;
            let mut content = vec![ContentBlock::Text {
                text: prose(&mut rng, n),
            }];
            content.extend(tool_calls.iter().cloned().map(ContentBlock::ToolCall));
            steps.push(Step::Message(
                Message::Assistant {
                    content,
                    stop: StopReason::ToolUse,
                },
                MessageMeta {
                    usage: Some(usage(&mut rng)),
                    ..MessageMeta::default()
                },
            ));
            let mut answers = Vec::new();
            for call in &tool_calls {
                if call_no == 3 && answers.is_empty() && run == 0 {
                    // An invalid call: rejected before any effect.
                    let details = json!({"error": {"kind": "invalid_arguments"}});
                    answers.push((
                        call.clone(),
                        None,
                        "read call rejected: `path` must be a string".to_owned(),
                        true,
                        details,
                    ));
                    continue;
                }
                effect += 1;
                let len = 400 + rng.below(11_600) as usize;
                let text = code(&mut rng, len);
                let failed = effect == 5;
                let details = json!({
                    "path": call.arguments.get("path").cloned().unwrap_or(Value::Null),
                    "lines": text.lines().count(),
                    "truncated": false,
                });
                answers.push((call.clone(), Some(effect), text, failed, details));
            }
            for (call, fx, _, _, _) in &answers {
                if let Some(fx) = fx {
                    steps.push(Step::Intent(EffectIntent {
                        effect_id: format!("fx-{fx}"),
                        parent: call.id.clone(),
                        tool: call.name.clone(),
                        plugin_generation: smith_engine::journal::BUILTIN_GENERATION,
                        input: canonical_cbor(&call.arguments).unwrap(),
                    }));
                }
            }
            for (call, fx, text, failed, details) in &answers {
                if let Some(fx) = fx {
                    steps.push(Step::Completion(EffectCompletion {
                        effect_id: format!("fx-{fx}"),
                        outcome: if *failed { Outcome::Error } else { Outcome::Ok },
                        mutation: if call.name == "edit" {
                            Mutation::Applied
                        } else {
                            Mutation::NotApplied
                        },
                        output: canonical_cbor(&json!({
                            "content": text,
                            "details": details,
                            "is_error": failed,
                        }))
                        .unwrap(),
                    }));
                }
            }
            for (call, fx, text, failed, details) in answers {
                let status = match (fx, failed) {
                    (None, _) => ToolStatus::Invalid,
                    (Some(_), true) => ToolStatus::Error,
                    (Some(_), false) => ToolStatus::Ok,
                };
                steps.push(Step::Message(
                    Message::ToolResult {
                        call_id: call.id,
                        name: call.name,
                        content: text,
                        is_error: failed,
                        media: Vec::new(),
                    },
                    MessageMeta {
                        status: Some(status),
                        effect_id: fx.map(|n| format!("fx-{n}")),
                        details: fx.is_none().then_some(details),
                        ..MessageMeta::default()
                    },
                ));
            }
        }
        let n = 200 + rng.below(600) as usize;
        let answer = prose(&mut rng, n);
        let final_usage = usage(&mut rng);
        steps.push(Step::Message(
            Message::Assistant {
                content: vec![ContentBlock::Text {
                    text: answer.clone(),
                }],
                stop: StopReason::End,
            },
            MessageMeta {
                usage: Some(final_usage),
                ..MessageMeta::default()
            },
        ));
        steps.push(Step::RunEnd(RunSummary {
            stop: StopCause::Done,
            usage: final_usage,
            cost: Some(0.0042),
            text: answer,
        }));
    }
    steps
}

/// Records `steps` through the journal `smith` runs with into a new session
/// named `name` of the store at `root`; the session file's path.
fn record(root: &Path, name: &str, steps: &[Step]) -> PathBuf {
    let store = Store::open(root).unwrap();
    let session = store.create(Some(name)).unwrap();
    let journal = StoreJournal::new(store.clone(), session);
    journal
        .record(&SessionEvent::ModelChange {
            provider: PROVIDER.to_owned(),
            model: MODEL.to_owned(),
        })
        .unwrap();
    for step in steps {
        match step {
            Step::RunStart(info) => journal
                .record_run(&RunRecord::RunStart(info.clone()))
                .unwrap(),
            Step::RunEnd(end) => journal.record_run(&RunRecord::RunEnd(end.clone())).unwrap(),
            Step::Message(message, meta) => journal
                .record(&SessionEvent::Message {
                    message: message.clone(),
                    meta: meta.clone(),
                })
                .unwrap(),
            Step::Intent(intent) => journal.record_intent(intent).unwrap(),
            Step::Completion(done) => journal.record_completion(done).unwrap(),
        }
    }
    store.path_of(journal.session_id())
}

/// pi's session id and entry ids: a UUID, and 8 hex digits per entry.
fn pi_id(rng: &mut Rng) -> String {
    format!("{:08x}", rng.next() as u32)
}

/// An ISO 8601 time in UTC with milliseconds (JavaScript's
/// `Date.toISOString`), for milliseconds since the epoch.
fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The conversation as pi's coding agent writes its session (version 3 of
/// its format, `packages/coding-agent/src/core/session-manager.ts` in
/// badlogic/pi-mono): a `session` header line, then one JSON object per
/// entry (`{type, id, parentId, timestamp, ...}`), each `message` entry
/// holding the message as `packages/ai/src/types.ts` defines it — user
/// content as text blocks, assistant content blocks with `toolCall`s and
/// `api`, `provider`, `model`, `usage` (with its cost breakdown),
/// `stopReason` and `timestamp`, and `toolResult` messages with the
/// output's text block, `details` and `isError`. pi keeps no run records,
/// effect records, system prompt or tool list.
fn pi_jsonl(steps: &[Step]) -> Vec<u8> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::new();
    let mut at = 1_764_862_584_000u64;
    let line = |value: Value, out: &mut Vec<u8>| {
        serde_json::to_writer(&mut *out, &value).unwrap();
        out.push(b'\n');
    };
    let uuid = format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        rng.next() as u32,
        rng.next() as u16,
        rng.next() as u16 & 0xfff,
        rng.next() as u16 & 0xfff,
        rng.next() & 0xffff_ffff_ffff
    );
    line(
        json!({"type": "session", "version": 3, "id": uuid, "timestamp": iso(at), "cwd": CWD}),
        &mut out,
    );
    let mut parent: Option<String> = None;
    let mut entry = |rng: &mut Rng, at: u64, kind: &str, fields: Value, out: &mut Vec<u8>| {
        let id = pi_id(rng);
        let mut value = json!({"type": kind, "id": id, "parentId": parent, "timestamp": iso(at)});
        if let (Value::Object(map), Value::Object(more)) = (&mut value, fields) {
            map.extend(more);
        }
        line(value, out);
        parent = Some(id);
    };
    entry(
        &mut rng,
        at,
        "model_change",
        json!({"provider": PROVIDER, "modelId": MODEL}),
        &mut out,
    );
    entry(
        &mut rng,
        at,
        "thinking_level_change",
        json!({"thinkingLevel": "off"}),
        &mut out,
    );
    for step in steps {
        at += 1_000 + rng.below(20_000);
        let Step::Message(message, meta) = step else {
            continue;
        };
        let message = match message {
            Message::User { text, .. } => json!({
                "role": "user",
                "content": [{"type": "text", "text": text}],
                "timestamp": at,
            }),
            Message::Assistant { content, stop } => {
                let blocks: Vec<Value> = content
                    .iter()
                    .map(|block| match block {
                        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
                        ContentBlock::ToolCall(call) => json!({
                            "type": "toolCall",
                            "id": call.id,
                            "name": call.name,
                            "arguments": call.arguments,
                        }),
                        other => serde_json::to_value(other).unwrap(),
                    })
                    .collect();
                let usage = meta.usage.unwrap_or_default();
                let (input, output) = (usage.input.unwrap_or(0), usage.output.unwrap_or(0));
                let (read, write) = (
                    usage.cache_read.unwrap_or(0),
                    usage.cache_write.unwrap_or(0),
                );
                json!({
                    "role": "assistant",
                    "content": blocks,
                    "api": "openai-completions",
                    "provider": PROVIDER,
                    "model": MODEL,
                    "usage": {
                        "input": input,
                        "output": output,
                        "cacheRead": read,
                        "cacheWrite": write,
                        "totalTokens": input + output + read + write,
                        "cost": {
                            "input": input as f64 * 1.5e-7,
                            "output": output as f64 * 6e-7,
                            "cacheRead": read as f64 * 1.5e-8,
                            "cacheWrite": 0,
                            "total": input as f64 * 1.5e-7 + output as f64 * 6e-7 + read as f64 * 1.5e-8,
                        },
                    },
                    "stopReason": if *stop == StopReason::ToolUse { "toolUse" } else { "stop" },
                    "timestamp": at,
                })
            }
            Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
                ..
            } => {
                let details = steps
                    .iter()
                    .find_map(|s| match s {
                        Step::Completion(done)
                            if Some(&done.effect_id) == meta.effect_id.as_ref() =>
                        {
                            let mut text = String::new();
                            smith_codec::json::from_cbor(&done.output, &mut text).unwrap();
                            serde_json::from_str::<Value>(&text)
                                .unwrap()
                                .get("details")
                                .cloned()
                        }
                        _ => None,
                    })
                    .or_else(|| meta.details.clone());
                json!({
                    "role": "toolResult",
                    "toolCallId": call_id,
                    "toolName": name,
                    "content": [{"type": "text", "text": content}],
                    "details": details,
                    "isError": is_error,
                    "timestamp": at,
                })
            }
        };
        entry(
            &mut rng,
            at,
            "message",
            json!({ "message": message }),
            &mut out,
        );
    }
    out
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
