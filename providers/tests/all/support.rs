//! Shared test helpers: the decoders by fixture folder, fixture listing, a
//! checker for the host's stream rules.

use std::collections::HashSet;
use std::path::PathBuf;

use smith_providers::types::{Decoder, StopReason, StreamEvent};
use smith_providers::{anthropic, google, openai, openai_compatible};

/// Every decoder, cloneable so a test can fork one mid-stream.
#[derive(Clone)]
pub enum AnyDecoder {
    Anthropic(anthropic::StreamDecoder),
    Responses(openai::StreamDecoder),
    Chat(openai::ChatStreamDecoder),
    Compatible(openai_compatible::StreamDecoder),
    Google(google::StreamDecoder),
}

impl AnyDecoder {
    /// The decoder for a fixture folder.
    pub fn for_folder(folder: &str) -> Self {
        match folder {
            "anthropic" => Self::Anthropic(anthropic::StreamDecoder::new()),
            "openai-responses" => Self::Responses(openai::StreamDecoder::new()),
            "openai-chat" => Self::Chat(openai::ChatStreamDecoder::new()),
            "openai-compatible" => Self::Compatible(openai_compatible::StreamDecoder::new()),
            "google" => Self::Google(google::StreamDecoder::new()),
            other => panic!("no decoder for fixture folder {other}"),
        }
    }

    fn inner(&mut self) -> &mut dyn Decoder {
        match self {
            Self::Anthropic(d) => d,
            Self::Responses(d) => d,
            Self::Chat(d) => d,
            Self::Compatible(d) => d,
            Self::Google(d) => d,
        }
    }
}

impl Decoder for AnyDecoder {
    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        self.inner().decode(chunk)
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        self.inner().finish()
    }
}

/// One recorded stream.
pub struct Fixture {
    pub folder: &'static str,
    pub name: String,
    pub bytes: Vec<u8>,
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// All recorded streams, in a stable order.
pub fn fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    for folder in ["anthropic", "google", "openai-chat", "openai-responses"] {
        let dir = root().join("fixtures").join(folder);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        for name in names {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            out.push(Fixture {
                folder,
                name,
                bytes,
            });
        }
    }
    assert!(out.len() >= 20, "fixtures missing: found {}", out.len());
    out
}

/// Decodes `parts` in order, then finishes.
pub fn run(decoder: &mut impl Decoder, parts: &[&[u8]]) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    for part in parts {
        events.extend(decoder.decode(part));
    }
    events.extend(decoder.finish());
    events
}

/// Checks the host's stream rules (the engine's validator): exactly one
/// terminal event, last; tool call deltas and ends only for open calls;
/// unique call ids; `stop end|tool_use` with no open call; `stop tool_use`
/// with at least one call.
pub fn check_rules(events: &[StreamEvent]) -> Result<(), String> {
    let terminals = events.iter().filter(|e| e.is_terminal()).count();
    if terminals != 1 {
        return Err(format!("{terminals} terminal events"));
    }
    if !events.last().is_some_and(StreamEvent::is_terminal) {
        return Err("terminal event is not last".into());
    }
    let mut ids = HashSet::new();
    let mut open: Vec<String> = Vec::new();
    for event in events {
        match event {
            StreamEvent::ToolCallStart { id, name } => {
                if id.is_empty() || name.is_empty() || !ids.insert(id.clone()) {
                    return Err(format!("bad tool call start {id:?} {name:?}"));
                }
                open.push(id.clone());
            }
            StreamEvent::ToolCallDelta { id, .. } if !open.contains(id) => {
                return Err(format!("delta for closed call {id}"));
            }
            StreamEvent::ToolCallEnd { id } => {
                let Some(at) = open.iter().position(|o| o == id) else {
                    return Err(format!("end for closed call {id}"));
                };
                open.remove(at);
            }
            StreamEvent::Stop { reason } => match reason {
                StopReason::End | StopReason::ToolUse if !open.is_empty() => {
                    return Err(format!("stop {reason:?} with open calls {open:?}"));
                }
                StopReason::ToolUse if ids.is_empty() => {
                    return Err("stop tool_use without calls".into());
                }
                _ => {}
            },
            _ => {}
        }
    }
    Ok(())
}

/// The events as JSON lines.
pub fn jsonl(events: &[StreamEvent]) -> String {
    let mut out = String::new();
    for event in events {
        out.push_str(&serde_json::to_string(event).unwrap());
        out.push('\n');
    }
    out
}
