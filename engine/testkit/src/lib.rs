//! Test fixtures for the agent runtime: a native scripted provider.
//!
//! [`ScriptedProvider`] plays a mock script (`docs/mock-provider.md`) one
//! response per request, through exactly the [`Provider`] contract a plugin
//! implements: `encode` answers with a local exchange whose chunks carry the
//! response's events (with their delays), `decode` turns each chunk back into
//! normalized events. With no script it runs a built-in demo that lists the
//! working directory, reads a file from it and answers.
//!
//! It is a fixture, not part of smith: the product's scripted provider is
//! the smith/mock plugin. Crates use this one in their tests to drive the
//! runtime without the plugin host, and `plugins/tests` holds the plugin to
//! it, response for response. Nothing outside `[dev-dependencies]` depends
//! on this crate.
#![deny(missing_docs)]

use smith_engine::agent::compact::{INSTRUCTIONS_MARKER, is_summary_request};
use smith_engine::provider::scripted::{
    MOCK_MODEL, ScriptEvent, ScriptFile, ScriptThinking, ScriptToolCall,
};
use smith_engine::provider::{
    Exchange, LocalChunk, Message, ModelInfo, Provider, ProviderError, ProviderErrorKind,
    ProviderInfo, Request, StopReason, StreamEvent, Usage,
};

enum Mode {
    Script(ScriptFile),
    Demo,
}

/// The scripted provider.
pub struct ScriptedProvider {
    mode: Mode,
    next: usize,
    next_summary: usize,
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("next", &self.next)
            .field("demo", &matches!(self.mode, Mode::Demo))
            .finish()
    }
}

impl ScriptedProvider {
    /// A provider playing `script` (a list of responses, or a whole
    /// [`ScriptFile`]).
    pub fn new(script: impl Into<ScriptFile>) -> Self {
        Self {
            mode: Mode::Script(script.into()),
            next: 0,
            next_summary: 0,
        }
    }

    /// The built-in demo: list the working directory, read a file, answer.
    pub fn demo() -> Self {
        Self {
            mode: Mode::Demo,
            next: 0,
            next_summary: 0,
        }
    }

    /// How many ordinary requests have been answered.
    pub fn requests_seen(&self) -> usize {
        self.next
    }

    /// How many summary requests have been answered.
    pub fn summaries_seen(&self) -> usize {
        self.next_summary
    }

    fn scripted_response(&self, index: usize) -> Result<Vec<ScriptEvent>, ProviderError> {
        match &self.mode {
            Mode::Script(script) => script.responses.get(index).cloned().ok_or_else(|| {
                ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!(
                        "the mock script has {} response(s) but the agent sent request {}; add a response to the script (each request consumes one)",
                        script.responses.len(),
                        index + 1
                    ),
                )
            }),
            Mode::Demo => Ok(Vec::new()),
        }
    }
}

/// Turns script events into local chunks: one chunk per event, carrying the
/// events it expands to as a JSON list; a `delay_ms` delays the next chunk.
fn to_chunks(response: usize, events: &[ScriptEvent]) -> Result<Vec<LocalChunk>, ProviderError> {
    let mut chunks = Vec::with_capacity(events.len());
    let mut delay = 0;
    let mut call_index = 0usize;
    for event in events {
        let expanded: Vec<StreamEvent> = match event {
            ScriptEvent::DelayMs(ms) => {
                delay += ms;
                continue;
            }
            ScriptEvent::Text(text) => vec![StreamEvent::TextDelta { text: text.clone() }],
            ScriptEvent::Thinking(ScriptThinking::Text(text)) => vec![StreamEvent::ThinkingDelta {
                text: text.clone(),
                signature: None,
            }],
            ScriptEvent::Thinking(ScriptThinking::Signed { text, signature }) => {
                vec![StreamEvent::ThinkingDelta {
                    text: text.clone(),
                    signature: Some(signature.clone()),
                }]
            }
            ScriptEvent::ToolCall(call) => {
                call_index += 1;
                let id = call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{}_{}", response + 1, call_index));
                let arguments = if call.arguments.is_null() {
                    "{}".to_owned()
                } else {
                    call.arguments.to_string()
                };
                vec![
                    StreamEvent::ToolCallStart {
                        id: id.clone(),
                        name: call.name.clone(),
                    },
                    StreamEvent::ToolCallDelta {
                        id: id.clone(),
                        arguments,
                    },
                    StreamEvent::ToolCallEnd { id },
                ]
            }
            ScriptEvent::Usage(usage) => vec![StreamEvent::Usage(*usage)],
            ScriptEvent::Stop { reason } => vec![StreamEvent::Stop { reason: *reason }],
            ScriptEvent::Error {
                kind,
                message,
                retry_after_ms,
            } => vec![StreamEvent::Error(ProviderError {
                kind: *kind,
                message: message.clone(),
                retry_after_ms: *retry_after_ms,
            })],
            ScriptEvent::Event(event) => vec![event.clone()],
        };
        let bytes = serde_json::to_vec(&expanded).map_err(|err| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!(
                    "the mock provider could not encode response {}: {err}",
                    response + 1
                ),
            )
        })?;
        chunks.push(LocalChunk {
            delay_ms: std::mem::take(&mut delay),
            bytes,
        });
    }
    if delay > 0 {
        // A trailing delay still takes time: an empty chunk after it.
        chunks.push(LocalChunk {
            delay_ms: delay,
            bytes: b"[]".to_vec(),
        });
    }
    Ok(chunks)
}

impl Provider for ScriptedProvider {
    fn describe(&self) -> ProviderInfo {
        ProviderInfo {
            id: "mock".to_owned(),
            models: vec![ModelInfo {
                id: MOCK_MODEL.to_owned(),
                context_window: Some(200_000),
                max_output_tokens: Some(8_192),
                pricing: None,
            }],
        }
    }

    fn encode(&mut self, request: &Request) -> Result<Exchange, ProviderError> {
        if is_summary_request(request) {
            let index = self.next_summary;
            let scripted = match &self.mode {
                Mode::Script(ScriptFile {
                    summaries: Some(summaries),
                    ..
                }) => Some(summaries.get(index).cloned().ok_or_else(|| {
                    ProviderError::new(
                        ProviderErrorKind::InvalidRequest,
                        format!(
                            "the mock script has {} summary response(s) but the agent sent summary request {}; add one to the script's \"summaries\" (each compaction consumes one)",
                            summaries.len(),
                            index + 1
                        ),
                    )
                })?),
                _ => None,
            };
            let events = scripted.unwrap_or_else(|| generated_summary(request));
            self.next_summary += 1;
            return Ok(Exchange::Local {
                chunks: to_chunks(index, &events)?,
            });
        }
        let index = self.next;
        let events = match self.mode {
            Mode::Demo => demo_response(request),
            Mode::Script(_) => self.scripted_response(index)?,
        };
        self.next += 1;
        Ok(Exchange::Local {
            chunks: to_chunks(index, &events)?,
        })
    }

    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        match serde_json::from_slice::<Vec<StreamEvent>>(chunk) {
            Ok(events) => events,
            Err(err) => vec![StreamEvent::Error(ProviderError::malformed(format!(
                "the mock provider received a body chunk that is not a JSON list of stream events: {err}"
            )))],
        }
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        Vec::new()
    }
}

// ---------------------------------------------------------------------------
// The built-in demo.

/// The deterministic answer to a summary request when the script has no
/// `summaries`: the user requests of the summarized messages, in order, and
/// the custom instructions.
fn generated_summary(request: &Request) -> Vec<ScriptEvent> {
    let text = request
        .messages
        .iter()
        .map(Message::text)
        .collect::<Vec<_>>()
        .join("\n");
    let (conversation, instructions) = match text.split_once(INSTRUCTIONS_MARKER) {
        Some((conversation, instructions)) => (conversation, Some(instructions.trim())),
        None => (text.as_str(), None),
    };
    let asks: Vec<String> = conversation
        .lines()
        .filter_map(|line| line.strip_prefix("[user]: "))
        .map(|ask| format!("{:?}", ask.chars().take(80).collect::<String>()))
        .collect();
    let messages = conversation
        .lines()
        .filter(|line| {
            [
                "[user]: ",
                "[assistant]: ",
                "[tool result] ",
                "[tool error] ",
            ]
            .iter()
            .any(|p| line.starts_with(p))
        })
        .count();
    let mut summary = format!(
        "Mock summary of {messages} message(s). The user asked: {}.",
        if asks.is_empty() {
            "nothing".to_owned()
        } else {
            asks.join(", ")
        }
    );
    if let Some(instructions) = instructions {
        summary.push_str(&format!(" Focus: {instructions}"));
    }
    let mut events = words(&summary);
    events.push(demo_usage(request, &summary));
    events.push(ScriptEvent::Stop {
        reason: StopReason::End,
    });
    events
}

fn words(text: &str) -> Vec<ScriptEvent> {
    text.split_inclusive(' ')
        .map(|word| ScriptEvent::Text(word.to_owned()))
        .collect()
}

fn approx_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// The demo's usage: a deterministic approximation (four characters per
/// token), so usage lines have numbers; the mock model has no price, so the
/// cost stays unknown.
fn demo_usage(request: &Request, reply: &str) -> ScriptEvent {
    let input: usize = request
        .messages
        .iter()
        .map(|message| match message {
            Message::Assistant { .. } => serde_json::to_string(message).map_or(0, |s| s.len()),
            other => other.text().len(),
        })
        .sum();
    ScriptEvent::Usage(Usage {
        input: Some(approx_tokens(input)),
        output: Some(approx_tokens(reply.len())),
        cache_read: None,
        cache_write: None,
    })
}

fn tool_call(name: &str, arguments: serde_json::Value) -> ScriptEvent {
    ScriptEvent::ToolCall(ScriptToolCall {
        id: None,
        name: name.to_owned(),
        arguments,
    })
}

/// Picks the file the demo reads from an `ls` listing: a README if there is
/// one, else the first plain entry (directories end with `/`).
fn pick_file(listing: &str) -> Option<String> {
    let entries: Vec<&str> = listing
        .lines()
        .map(str::trim)
        .filter(|line| {
            !line.is_empty()
                && !line.ends_with('/')
                && !line.starts_with('[')
                && !line.starts_with('(')
                && !line.contains(": ")
        })
        .collect();
    entries
        .iter()
        .find(|name| name.to_ascii_lowercase().starts_with("readme"))
        .or_else(|| entries.first())
        .map(|name| (*name).to_owned())
}

fn demo_response(request: &Request) -> Vec<ScriptEvent> {
    let prompt = request
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or("");
    let last_result = match request.messages.last() {
        Some(Message::ToolResult {
            name,
            content,
            is_error,
            ..
        }) => Some((name.as_str(), content.as_str(), *is_error)),
        _ => None,
    };
    let (reply, call) = match last_result {
        None => (
            format!(
                "You said {prompt:?}. This is the offline demo: I will list the working directory, read a file and answer. "
            ),
            Some(tool_call("ls", serde_json::json!({"path": "."}))),
        ),
        Some(("ls", listing, false)) => match pick_file(listing) {
            Some(file) => (
                format!(
                    "The directory has {} entries. Reading {file}. ",
                    listing.lines().count()
                ),
                Some(tool_call(
                    "read",
                    serde_json::json!({"path": file, "limit": 20}),
                )),
            ),
            None => (
                "The directory has no plain files to read, so the demo ends here.".to_owned(),
                None,
            ),
        },
        Some(("read", content, false)) => {
            let first = content
                .lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or("(empty)");
            let first: String = first.chars().take(120).collect();
            (
                format!(
                    "Done. The file starts with: {first:?}. That was one tool-using turn with the mock provider; use --mock-script FILE to play your own responses."
                ),
                None,
            )
        }
        Some((name, content, _)) => {
            let first: String = content
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(200)
                .collect();
            (
                format!("The {name} call failed ({first}), so the demo ends here."),
                None,
            )
        }
    };
    let mut events = words(&reply);
    let stop = if call.is_some() {
        StopReason::ToolUse
    } else {
        StopReason::End
    };
    events.extend(call);
    events.push(demo_usage(request, &reply));
    events.push(ScriptEvent::Stop { reason: stop });
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use smith_engine::provider::scripted::parse_script;

    fn play(provider: &mut ScriptedProvider, request: &Request) -> Vec<StreamEvent> {
        let Exchange::Local { chunks } = provider.encode(request).unwrap() else {
            panic!("the scripted provider must answer with a local exchange");
        };
        chunks
            .iter()
            .flat_map(|c| provider.decode(&c.bytes))
            .collect()
    }

    fn request(messages: Vec<Message>) -> Request {
        Request {
            model: MOCK_MODEL.into(),
            system: None,
            messages,
            tools: Vec::new(),
            max_output_tokens: None,
        }
    }

    #[test]
    fn script_events_expand_to_normalized_events() {
        let script = parse_script(
            r#"[[{"text":"hi"},{"delay_ms":5},{"thinking":{"text":"t","signature":"0a"}},
                 {"tool_call":{"name":"ls","arguments":{"path":"."}}},
                 {"tool_call":{"id":"x","name":"read"}},
                 {"usage":{"input":1,"output":null}},{"stop":{"reason":"tool_use"}}],
                [{"error":{"kind":"rate_limit","message":"slow","retry_after_ms":9}}]]"#,
            "test",
        )
        .unwrap();
        let mut provider = ScriptedProvider::new(script);
        let req = request(vec![Message::User { text: "go".into() }]);
        let Exchange::Local { chunks } = provider.encode(&req).unwrap() else {
            panic!("local exchange expected");
        };
        assert_eq!(chunks[1].delay_ms, 5);
        let events: Vec<StreamEvent> = chunks
            .iter()
            .flat_map(|c| provider.decode(&c.bytes))
            .collect();
        assert_eq!(
            events[2],
            StreamEvent::ToolCallStart {
                id: "call_1_1".into(),
                name: "ls".into()
            }
        );
        assert_eq!(
            events[3],
            StreamEvent::ToolCallDelta {
                id: "call_1_1".into(),
                arguments: r#"{"path":"."}"#.into()
            }
        );
        assert_eq!(
            events[6],
            StreamEvent::ToolCallDelta {
                id: "x".into(),
                arguments: "{}".into()
            }
        );
        assert_eq!(
            events.last().unwrap(),
            &StreamEvent::Stop {
                reason: StopReason::ToolUse
            }
        );
        let second = play(&mut provider, &req);
        assert!(matches!(&second[0], StreamEvent::Error(e) if e.retry_after_ms == Some(9)));
        let err = provider.encode(&req).unwrap_err();
        assert!(
            err.message
                .contains("has 2 response(s) but the agent sent request 3")
        );
    }

    fn text_of(events: &[StreamEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn summary_requests_take_the_scripted_summaries_apart_from_responses() {
        use smith_engine::agent::compact::summary_request;
        let script = parse_script(
            r#"{"responses": [[{"text": "answer"}, {"stop": {"reason": "end"}}]],
                "summaries": [[{"text": "the summary"}, {"stop": {"reason": "end"}}]]}"#,
            "test",
        )
        .unwrap();
        let mut provider = ScriptedProvider::new(script);
        let summary = summary_request(
            MOCK_MODEL,
            &[Message::User { text: "a".into() }],
            None,
            None,
        );
        assert_eq!(text_of(&play(&mut provider, &summary)), "the summary");
        let ordinary = request(vec![Message::User { text: "go".into() }]);
        assert_eq!(text_of(&play(&mut provider, &ordinary)), "answer");
        assert_eq!(
            (provider.requests_seen(), provider.summaries_seen()),
            (1, 1)
        );
        let err = provider.encode(&summary).unwrap_err();
        assert!(
            err.message
                .contains("has 1 summary response(s) but the agent sent summary request 2"),
            "{}",
            err.message
        );
    }

    #[test]
    fn without_scripted_summaries_the_summary_is_generated_deterministically() {
        use smith_engine::agent::compact::summary_request;
        let history = vec![
            Message::User {
                text: "fix the parser".into(),
            },
            Message::Assistant {
                content: vec![smith_engine::provider::ContentBlock::Text {
                    text: "done".into(),
                }],
                stop: StopReason::End,
            },
            Message::User {
                text: "and the tests".into(),
            },
        ];
        let summary = summary_request(MOCK_MODEL, &history, Some("keep paths"), None);
        let mut provider = ScriptedProvider::new(Vec::new());
        let first = play(&mut provider, &summary);
        assert_eq!(
            text_of(&first),
            "Mock summary of 3 message(s). The user asked: \"fix the parser\", \"and the tests\". Focus: keep paths"
        );
        assert_eq!(
            first.last().unwrap(),
            &StreamEvent::Stop {
                reason: StopReason::End
            }
        );
        // The same request, the same answer; the demo answers the same way.
        assert_eq!(play(&mut provider, &summary), first);
        assert_eq!(play(&mut ScriptedProvider::demo(), &summary), first);
        assert_eq!(provider.requests_seen(), 0);
    }

    #[test]
    fn demo_lists_reads_and_answers() {
        let mut provider = ScriptedProvider::demo();
        let mut messages = vec![Message::User {
            text: "hello".into(),
        }];
        let first = play(&mut provider, &request(messages.clone()));
        assert!(first.contains(&StreamEvent::ToolCallStart {
            id: "call_1_1".into(),
            name: "ls".into()
        }));
        messages.push(Message::ToolResult {
            call_id: "call_1_1".into(),
            name: "ls".into(),
            content: "src/\nCargo.toml\nREADME.md\n".into(),
            is_error: false,
        });
        let second = play(&mut provider, &request(messages.clone()));
        assert!(second.contains(&StreamEvent::ToolCallDelta {
            id: "call_2_1".into(),
            arguments: r#"{"path":"README.md","limit":20}"#.into()
        }));
        messages.push(Message::ToolResult {
            call_id: "call_2_1".into(),
            name: "read".into(),
            content: "# smith\n".into(),
            is_error: false,
        });
        let third = play(&mut provider, &request(messages));
        assert_eq!(
            third.last().unwrap(),
            &StreamEvent::Stop {
                reason: StopReason::End
            }
        );
        let text: String = third
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(text.contains("\"# smith\""), "{text}");
    }
}
