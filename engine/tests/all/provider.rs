//! The provider contract from the outside: a provider with its own wire
//! format (split across chunk boundaries, terminal event only from
//! `finish`) drives the unchanged agent loop; transports observe
//! cancellation at chunk boundaries; HTTP without an engine fails typed.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use smith_engine::agent::{self, AgentConfig, Services, default_policies};
use smith_engine::journal::MemoryJournal;
use smith_engine::protocol::{Command, Event, StopCause};
use smith_engine::provider::transport::{BodyOutcome, StreamEnd, drive};
use smith_engine::provider::{
    ContentBlock, Exchange, HostTransport, HttpExchange, LocalChunk, Message, ModelInfo, Provider,
    ProviderErrorKind, ProviderInfo, Request, StopReason, StreamEvent, Transport,
};
use smith_engine::tools::{CancelToken, ToolContext, ToolSet};

/// A toy vendor: the body is lines `t <text>` / `c <id> <name> <json>` /
/// `s <reason>`; lines may be split across chunks, and the stop line is
/// only acted on in `finish` (as a buffering decoder would).
struct LineVendor {
    buffer: Vec<u8>,
    stop: Option<StopReason>,
    replies: Vec<String>,
    next: usize,
}

impl LineVendor {
    fn new(replies: &[&str]) -> Self {
        Self {
            buffer: Vec::new(),
            stop: None,
            replies: replies.iter().map(|s| (*s).to_owned()).collect(),
            next: 0,
        }
    }

    fn line(&mut self, line: &str) -> Vec<StreamEvent> {
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        match tag {
            "t" => vec![StreamEvent::TextDelta {
                text: rest.to_owned(),
            }],
            "c" => {
                let mut parts = rest.splitn(3, ' ');
                let (id, name, json) = (
                    parts.next().unwrap_or_default(),
                    parts.next().unwrap_or_default(),
                    parts.next().unwrap_or_default(),
                );
                vec![
                    StreamEvent::ToolCallStart {
                        id: id.into(),
                        name: name.into(),
                    },
                    StreamEvent::ToolCallDelta {
                        id: id.into(),
                        arguments: json.into(),
                    },
                    StreamEvent::ToolCallEnd { id: id.into() },
                ]
            }
            "s" => {
                self.stop = Some(if rest == "tool_use" {
                    StopReason::ToolUse
                } else {
                    StopReason::End
                });
                Vec::new()
            }
            _ => vec![StreamEvent::Error(
                smith_engine::provider::ProviderError::malformed(format!("unknown line {line:?}")),
            )],
        }
    }
}

impl Provider for LineVendor {
    fn describe(&self) -> ProviderInfo {
        ProviderInfo {
            id: "lines".into(),
            models: vec![ModelInfo {
                id: "l-1".into(),
                context_window: None,
                max_output_tokens: None,
                pricing: None,
            }],
        }
    }

    fn encode(
        &mut self,
        _request: &Request,
    ) -> Result<Exchange, smith_engine::provider::ProviderError> {
        let body = self.replies[self.next].clone().into_bytes();
        self.next += 1;
        self.stop = None;
        // Split the body into 5-byte chunks: lines straddle chunks.
        Ok(Exchange::Local {
            chunks: body
                .chunks(5)
                .map(|c| LocalChunk {
                    delay_ms: 0,
                    bytes: c.to_vec(),
                })
                .collect(),
        })
    }

    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        self.buffer.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            out.extend(self.line(&text));
        }
        out
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        self.stop
            .take()
            .map(|reason| StreamEvent::Stop { reason })
            .into_iter()
            .collect()
    }
}

#[test]
fn a_provider_with_its_own_wire_format_drives_the_unchanged_loop() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "content\n").unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let provider = LineVendor::new(&[
        "t reading\nc k1 read {\"path\":\"f.txt\"}\ns tool_use\n",
        "t it says content\ns end\n",
    ]);
    let handle = agent::spawn(
        AgentConfig::new("l-1"),
        Services {
            provider: Box::new(provider),
            transport: Arc::new(HostTransport),
            tools: ToolSet::builtin(),
            tool_context: ToolContext::new(dir.path()).unwrap(),
            journal: journal.clone(),
            sink: journal.clone(),
            policies: default_policies(),
        },
    )
    .unwrap();
    handle
        .send(Command::Prompt {
            text: "what is in f.txt?".into(),
        })
        .unwrap();
    let mut stop = None;
    while let Ok(event) = handle.recv_timeout(Duration::from_secs(20)) {
        match event {
            Event::AgentEnd { stop: s, text, .. } => {
                assert_eq!(text, "it says content");
                stop = Some(s);
            }
            Event::Settled => break,
            _ => {}
        }
    }
    assert_eq!(stop, Some(StopCause::Done));
    let messages = journal.messages();
    assert!(
        matches!(&messages[2], Message::ToolResult { call_id, is_error: false, content, .. } if call_id == "k1" && content.contains("content"))
    );
    handle.shutdown();
}

/// A transport that cancels the token after delivering the first chunk.
struct CancelAfterFirst(CancelToken);

impl Transport for CancelAfterFirst {
    fn perform(
        &self,
        exchange: Exchange,
        cancel: &CancelToken,
        on_chunk: &mut dyn FnMut(&[u8]) -> bool,
    ) -> BodyOutcome {
        let Exchange::Local { chunks } = exchange else {
            panic!("local exchange expected");
        };
        for (i, chunk) in chunks.iter().enumerate() {
            if cancel.is_cancelled() {
                return BodyOutcome::Cancelled;
            }
            on_chunk(&chunk.bytes);
            if i == 0 {
                self.0.cancel();
            }
        }
        BodyOutcome::Complete
    }
}

#[test]
fn no_chunk_after_cancellation_is_delivered() {
    let mut provider = LineVendor::new(&["t one\nt two\ns end\n"]);
    let cancel = CancelToken::new();
    let transport = CancelAfterFirst(cancel.clone());
    let request = Request {
        model: "l-1".into(),
        system: None,
        messages: Vec::new(),
        tools: Vec::new(),
        max_output_tokens: None,
    };
    let mut seen = Vec::new();
    let end = drive(&mut provider, &transport, &request, &cancel, &mut |e| {
        seen.push(e.clone())
    });
    let StreamEnd::Aborted(turn) = end else {
        panic!("aborted expected, got {end:?}");
    };
    // The first 5-byte chunk "t one" holds no complete line yet.
    assert!(seen.is_empty(), "{seen:?}");
    assert_eq!(turn.stop, StopReason::Abort);
    assert!(turn.content.is_empty());
}

#[test]
fn a_stream_cut_off_before_its_terminal_event_keeps_what_arrived_as_failed() {
    // No stop line: finish() has nothing to add.
    let mut provider = LineVendor::new(&["t partial\n"]);
    let request = Request {
        model: "l-1".into(),
        system: None,
        messages: Vec::new(),
        tools: Vec::new(),
        max_output_tokens: None,
    };
    let end = drive(
        &mut provider,
        &HostTransport,
        &request,
        &CancelToken::new(),
        &mut |_| {},
    );
    // The text streamed (the user saw it): it is kept, marked as failed.
    let StreamEnd::Turn(turn) = end else {
        panic!("a failed turn expected, got {end:?}");
    };
    assert_eq!(turn.stop, StopReason::Error);
    assert_eq!(
        turn.content,
        [ContentBlock::Text {
            text: "partial".into()
        }]
    );
    assert_eq!(
        turn.error.map(|e| e.kind),
        Some(ProviderErrorKind::MalformedStream)
    );
}

#[test]
fn http_exchanges_without_an_http_engine_fail_typed() {
    let outcome = HostTransport.perform(
        Exchange::Http(HttpExchange {
            method: "POST".into(),
            url: "https://api.example.invalid/v1".into(),
            headers: Vec::new(),
            body: Vec::new(),
        }),
        &CancelToken::new(),
        &mut |_| true,
    );
    let BodyOutcome::Failed(error) = outcome else {
        panic!("failure expected");
    };
    assert_eq!(error.kind, ProviderErrorKind::Transport);
    assert!(error.message.contains("--provider mock"));
}

#[test]
fn thinking_signatures_round_trip_into_the_message() {
    let mut provider = smith_testkit::ScriptedProvider::new(
        smith_engine::provider::scripted::parse_script(
            r#"[[{"thinking": {"text": "hm", "signature": "00ff"}}, {"text": "a"}, {"stop": {"reason": "end"}}]]"#,
            "t",
        )
        .unwrap(),
    );
    let request = Request {
        model: "mock-1".into(),
        system: None,
        messages: Vec::new(),
        tools: Vec::new(),
        max_output_tokens: None,
    };
    let StreamEnd::Turn(turn) = drive(
        &mut provider,
        &HostTransport,
        &request,
        &CancelToken::new(),
        &mut |_| {},
    ) else {
        panic!("turn expected");
    };
    assert_eq!(
        turn.content[0],
        ContentBlock::Thinking {
            text: "hm".into(),
            signature: Some(smith_engine::provider::OpaqueBytes(vec![0, 0xff])),
        }
    );
}
