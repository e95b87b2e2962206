//! Deterministic workloads for the benchmarks (`benches/turn.rs`) and the
//! performance gates behind `smith bench`.
//!
//! [`scripted_turn`] prepares one scripted tool-using turn that can be run
//! again and again with identical work: a prompt is delivered, a fixed
//! response (a text block and one `read` call) is streamed through the
//! provider contract and validated, the call is validated against the
//! built-in tools, its intent and completion are recorded in an in-memory
//! journal, the `read` runs against a fixture file in the given directory,
//! the result is recorded and announced, and the run stops at its one-turn
//! limit. The loop runs on the calling thread (the same code the worker
//! thread runs), so the caller's CPU clock and allocation scope see all of
//! the runtime's work and nothing else. Between turns the conversation, the
//! journal and the effect numbering are reset with their capacity kept, so
//! every turn after the first does exactly the same work.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, sync_channel};
use std::sync::{Arc, Mutex};

use crate::agent::run::Runner;
use crate::agent::{AgentConfig, Queue, Services, Shared, Work, default_policies};
use crate::journal::MemoryJournal;
use crate::protocol::{Event, StopCause, ToolStatus};
use crate::provider::scripted::MOCK_MODEL;
use crate::provider::{
    Exchange, HostTransport, LocalChunk, ModelInfo, Provider, ProviderError, ProviderInfo, Request,
    StopReason, StreamEvent, Usage,
};
use crate::tools::{CancelToken, ToolContext, ToolSet};

/// A benchmark workload could not be set up or did not do its work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchError {
    /// What happened, why, and what to do next.
    pub message: String,
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BenchError {}

fn bench_error(message: String) -> BenchError {
    BenchError { message }
}

/// The fixture file the scripted turn reads.
pub const FIXTURE_FILE: &str = "notes.txt";

/// The events one scripted turn emits: agent start, the user message (start,
/// end), turn start, the assistant message (start, one delta, end), the tool
/// call, execution start and end, turn end, agent end.
pub const EVENTS_PER_TURN: usize = 12;

/// A provider that answers every request with the same response: a text
/// block and one `read` call of [`FIXTURE_FILE`].
struct RepeatingProvider {
    chunks: Vec<LocalChunk>,
}

impl RepeatingProvider {
    fn new() -> Result<Self, BenchError> {
        let pieces = [
            vec![StreamEvent::TextDelta {
                text: "Reading the notes.".to_owned(),
            }],
            vec![
                StreamEvent::ToolCallStart {
                    id: "call_1".to_owned(),
                    name: "read".to_owned(),
                },
                StreamEvent::ToolCallDelta {
                    id: "call_1".to_owned(),
                    arguments: format!(r#"{{"path":"{FIXTURE_FILE}"}}"#),
                },
                StreamEvent::ToolCallEnd {
                    id: "call_1".to_owned(),
                },
            ],
            vec![StreamEvent::Usage(Usage {
                input: Some(120),
                output: Some(24),
                cache_read: None,
                cache_write: None,
            })],
            vec![StreamEvent::Stop {
                reason: StopReason::ToolUse,
            }],
        ];
        let chunks = pieces
            .iter()
            .map(|events| {
                serde_json::to_vec(events)
                    .map(|bytes| LocalChunk { delay_ms: 0, bytes })
                    .map_err(|err| {
                        bench_error(format!(
                            "the benchmark response could not be encoded: {err}"
                        ))
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { chunks })
    }
}

impl Provider for RepeatingProvider {
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

    fn encode(&mut self, _request: &Request) -> Result<Exchange, ProviderError> {
        Ok(Exchange::Local {
            chunks: self.chunks.clone(),
        })
    }

    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        serde_json::from_slice(chunk).unwrap_or_else(|err| {
            vec![StreamEvent::Error(ProviderError::malformed(format!(
                "the benchmark provider's own chunk did not decode: {err}"
            )))]
        })
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        Vec::new()
    }
}

/// A prepared, repeatable scripted tool-using turn (see the module docs).
pub struct ScriptedTurn {
    runner: Runner,
    events: Receiver<Event>,
    // Kept so the runner's work channel stays open; the loop never uses it
    // here because nothing is queued.
    _work: Receiver<Work>,
    journal: Arc<MemoryJournal>,
    cancel: CancelToken,
    prompt: String,
}

impl std::fmt::Debug for ScriptedTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedTurn")
            .field("prompt", &self.prompt)
            .finish_non_exhaustive()
    }
}

/// Prepares the scripted turn in `dir` (an existing, writable directory,
/// typically a fresh temporary one): writes [`FIXTURE_FILE`] there (40 lines,
/// about 2 KiB) and builds the runtime around an in-memory journal.
///
/// # Errors
///
/// When the fixture cannot be written or `dir` cannot be the tools' working
/// directory.
pub fn scripted_turn(dir: &Path) -> Result<ScriptedTurn, BenchError> {
    let mut text = String::new();
    for line in 1..=40 {
        text.push_str(&format!(
            "{line:02}: a line of notes the agent reads in every benchmark turn.\n"
        ));
    }
    let fixture = dir.join(FIXTURE_FILE);
    std::fs::write(&fixture, text).map_err(|err| {
        bench_error(format!(
            "could not write the benchmark fixture {}: {err}; pass a writable directory",
            fixture.display()
        ))
    })?;
    let tool_context = ToolContext::new(dir)
        .map_err(|err| {
            bench_error(format!(
                "{} cannot be the benchmark's working directory: {err}",
                dir.display()
            ))
        })?
        .with_output_dir(dir.join(".smith-output"));
    let journal = Arc::new(MemoryJournal::new());
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.max_turns = Some(1);
    config.system = Some("You are smith, a coding agent.".to_owned());
    let services = Services {
        provider: Box::new(RepeatingProvider::new()?),
        transport: Arc::new(HostTransport),
        tools: ToolSet::builtin(),
        tool_context,
        journal: journal.clone(),
        sink: journal.clone(),
        policies: default_policies(),
    };
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue::new(services.policies.clone())),
        cancel: Mutex::new(CancelToken::new()),
        interrupters: Vec::new(),
        busy: AtomicBool::new(false),
        provider_id: "mock".to_owned(),
        model: Mutex::new(config.model.clone()),
        messages: Mutex::new(Vec::with_capacity(8)),
    });
    let (event_tx, events) = sync_channel::<Event>(64);
    let (work_tx, work) = sync_channel::<Work>(1);
    let runner = Runner::new(
        config,
        services,
        Vec::with_capacity(8),
        shared,
        event_tx,
        work_tx,
        None,
    );
    Ok(ScriptedTurn {
        runner,
        events,
        _work: work,
        journal,
        cancel: CancelToken::new(),
        prompt: "Summarize the notes.".to_owned(),
    })
}

impl ScriptedTurn {
    /// Runs the turn once and checks that it did its work (the `read`
    /// succeeded, the run stopped at its turn limit, every expected event
    /// was emitted); returns the number of events.
    ///
    /// # Errors
    ///
    /// When the turn did something else; the message says what.
    pub fn turn(&mut self) -> Result<usize, BenchError> {
        self.runner.reset_conversation();
        self.journal.clear();
        let stop = self.runner.run(Some(self.prompt.clone()), &self.cancel);
        let mut count = 0;
        let mut read_ok = false;
        while let Ok(event) = self.events.try_recv() {
            count += 1;
            if let Event::ToolExecutionEnd { status, .. } = &event {
                read_ok = *status == ToolStatus::Ok;
            }
        }
        if stop != Some(StopCause::TurnLimit) || !read_ok || count != EVENTS_PER_TURN {
            return Err(bench_error(format!(
                "the scripted turn did not do its work: stop {stop:?}, read succeeded: {read_ok}, {count} events (expected {EVENTS_PER_TURN}); the runtime changed — update bench_support"
            )));
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripted_turn_repeats_the_same_work() {
        let dir = tempfile::tempdir().unwrap();
        let mut turn = scripted_turn(dir.path()).unwrap();
        for _ in 0..3 {
            assert_eq!(turn.turn().unwrap(), EVENTS_PER_TURN);
        }
        // The journal holds exactly one turn's records after each turn.
        assert_eq!(
            turn.journal.records().len(),
            5,
            "user, assistant, intent, completion, result"
        );
        assert_eq!(turn.journal.run_records().len(), 2, "run start and end");
    }
}
