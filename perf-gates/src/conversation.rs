//! A realistic tool-using coding conversation, generated deterministically
//! from a seed, recorded by smith's journal into a session store and
//! written as pi's session JSONL: the same conversation both ways, for the
//! tests that compare session sizes (`tests/session_size.rs`) and the
//! benchmark that compares `smith session search` with grep over pi's
//! files (`examples/search_corpus.rs`, docs/benchmarks.md).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use smith_engine::journal::store::StoreJournal;
use smith_engine::journal::{
    EffectCompletion, EffectIntent, EffectJournal, MessageMeta, Outcome, RunInfo, RunRecord,
    RunSummary, SessionEvent, SessionSink, canonical_cbor,
};
use smith_engine::protocol::{StopCause, ToolStatus};
use smith_engine::provider::{ContentBlock, Message, StopReason, ToolCall, ToolSpec, Usage};
use smith_engine::tools::Mutation;
use smith_store::Store;

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
pub enum Step {
    /// A run starts.
    RunStart(RunInfo),
    /// A message and its metadata.
    Message(Message, MessageMeta),
    /// A tool call's effect is about to run.
    Intent(EffectIntent),
    /// A tool call's effect ended.
    Completion(EffectCompletion),
    /// A run ends.
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

/// The working folder of the conversation.
pub const CWD: &str = "/home/ada/src/lexer";
/// The provider the conversation talks to.
pub const PROVIDER: &str = "openai-compatible";
/// The model the conversation talks to.
pub const MODEL: &str = "qwen3-coder-30b";

/// A realistic tool-using conversation: `runs` runs, each a prompt and
/// `calls` tool calls (one or two per assistant message) whose outputs are
/// 400 B to 12 KB, then an answer. The tool list changes once (a tool is
/// added before the third run); the system prompt stays. One call per
/// conversation is invalid (it never runs, so it has no effect), one fails.
pub fn conversation(seed: u64, runs: usize, calls: usize) -> Vec<Step> {
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
                        input: canonical_cbor(&call.arguments)
                            .expect("JSON arguments encode as canonical CBOR"),
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
                        .expect("a JSON output encodes as canonical CBOR"),
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
///
/// # Errors
/// When the store cannot be opened or written (the message names what
/// failed).
pub fn record(root: &Path, name: &str, steps: &[Step]) -> Result<PathBuf, String> {
    let store = Store::open(root).map_err(|e| {
        format!(
            "recording the conversation {name:?} into the session store {} failed at opening the store: {e}",
            root.display()
        )
    })?;
    record_in(&store, name, steps)
}

/// [`record`] into `store` as it is set up (its compression, say).
///
/// # Errors
/// As [`record`].
pub fn record_in(store: &Store, name: &str, steps: &[Step]) -> Result<PathBuf, String> {
    let failed = |what: &str, err: &dyn std::fmt::Display| {
        format!(
            "recording the conversation {name:?} into the session store {} failed at {what}: {err}",
            store.root().display()
        )
    };
    let session = store
        .create(Some(name))
        .map_err(|e| failed("creating the session", &e))?;
    let journal = StoreJournal::new(store.clone(), session);
    journal
        .record(&SessionEvent::ModelChange {
            provider: PROVIDER.to_owned(),
            model: MODEL.to_owned(),
        })
        .map_err(|e| failed("the model change", &e))?;
    for step in steps {
        match step {
            Step::RunStart(info) => journal
                .record_run(&RunRecord::RunStart(info.clone()))
                .map_err(|e| failed("a run start", &e))?,
            Step::RunEnd(end) => journal
                .record_run(&RunRecord::RunEnd(end.clone()))
                .map_err(|e| failed("a run end", &e))?,
            Step::Message(message, meta) => journal
                .record(&SessionEvent::Message {
                    message: message.clone(),
                    meta: meta.clone(),
                })
                .map_err(|e| failed("a message", &e))?,
            Step::Intent(intent) => journal
                .record_intent(intent)
                .map_err(|e| failed("an effect intent", &e))?,
            Step::Completion(done) => journal
                .record_completion(done)
                .map_err(|e| failed("an effect completion", &e))?,
        }
    }
    Ok(store.path_of(journal.session_id()))
}

/// pi's session id and entry ids: a UUID, and 8 hex digits per entry.
fn pi_id(rng: &mut Rng) -> String {
    format!("{:08x}", rng.next() as u32)
}

/// An ISO 8601 time in UTC with milliseconds (JavaScript's
/// `Date.toISOString`), for milliseconds since the epoch.
fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let rem = secs % 86_400;
    let (year, month, day) = smith_diag::log::civil_from_days(secs / 86_400);
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
pub fn pi_jsonl(steps: &[Step]) -> Vec<u8> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::new();
    let mut at = 1_764_862_584_000u64;
    let line = |value: Value, out: &mut Vec<u8>| {
        serde_json::to_writer(&mut *out, &value).expect("a JSON value writes into memory");
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
                        other => serde_json::to_value(other).expect("a content block is JSON"),
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
                            smith_codec::json::from_cbor(&done.output, &mut text)
                                .expect("the output was written as canonical CBOR above");
                            serde_json::from_str::<Value>(&text)
                                .expect("CBOR read as JSON is JSON")
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
