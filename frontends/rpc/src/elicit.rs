//! The plugins' questions that wait, in `smith mcp`: a client that declared
//! the `elicitation` capability at `initialize` is asked with an
//! `elicitation/create` request (MCP 2025-06-18: a `message` and a
//! `requestedSchema` with one property, `answer`: a string enum of `yes`
//! and `no` for a confirmation, of the options for a selection, a string
//! for input; the default as its `default`). Its response maps to the
//! answer:
//!
//! - `accept` with `content.answer`: the answer (source `user`); an answer
//!   the question does not accept fails the question;
//! - `decline` or `cancel`: the user dismissed the question, so it takes
//!   its default (source `user`), as Esc does in the fullscreen interface;
//! - an error response fails the question, saying what the client said.
//!
//! Without the capability (and for stateless requests, which have no
//! handshake to declare it in) the server's [`Policy`] answers: refused
//! with a diagnostic unless `smith mcp --yes` or `--answer` allow it.
//! A question whose timeout passes takes its default (source `timeout`);
//! one whose call is cancelled fails saying so.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use smith_host::questions::{
    Answer, AnswerSource, Asking, EffectError, Policy, Question, QuestionKind,
};

use crate::jsonrpc::Output;

/// How often a waiting question checks whether its call was cancelled.
const POLL: Duration = Duration::from_millis(10);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The elicitation requests in flight and whether the client takes them.
pub(crate) struct Elicit {
    out: Output,
    /// The client declared `elicitation` at `initialize`.
    supported: AtomicBool,
    next: AtomicU64,
    pending: Mutex<HashMap<String, Sender<Value>>>,
}

impl Elicit {
    pub(crate) fn new(out: Output) -> Self {
        Elicit {
            out,
            supported: AtomicBool::new(false),
            next: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// Notes whether the client's `initialize` capabilities include
    /// `elicitation`.
    pub(crate) fn initialized(&self, params: &Value) {
        let declared = params
            .get("capabilities")
            .and_then(|c| c.get("elicitation"))
            .is_some_and(Value::is_object);
        self.supported.store(declared, Ordering::SeqCst);
    }

    /// Takes `record` when it is the client's response to one of the
    /// elicitation requests in flight.
    pub(crate) fn take_response(&self, record: &[u8]) -> bool {
        if lock(&self.pending).is_empty() {
            return false;
        }
        let Ok(Value::Object(record)) = serde_json::from_slice::<Value>(record) else {
            return false;
        };
        if record.contains_key("method") {
            return false;
        }
        let Some(id) = record.get("id").and_then(Value::as_str) else {
            return false;
        };
        match lock(&self.pending).remove(id) {
            Some(waiter) => {
                // A waiter that gave up (timeout, cancel) drops the answer.
                let _ = waiter.send(Value::Object(record));
                true
            }
            None => false,
        }
    }

    /// The asker of a server: elicitation when the client takes it, else
    /// `policy`.
    pub(crate) fn asking(self: &Arc<Self>, policy: Policy) -> Asking {
        let elicit = Arc::clone(self);
        let Asking(by_policy) = policy.asking();
        Asking(Arc::new(move |plugin, question, stop| {
            if elicit.supported.load(Ordering::SeqCst) {
                elicit.ask(plugin, question, stop)
            } else {
                by_policy(plugin, question, stop)
            }
        }))
    }

    fn ask(
        &self,
        plugin: &str,
        question: &Question,
        stop: &dyn Fn() -> bool,
    ) -> Result<Answer, EffectError> {
        let id = format!(
            "smith-elicit-{}",
            self.next.fetch_add(1, Ordering::SeqCst) + 1
        );
        let (tx, rx) = channel();
        lock(&self.pending).insert(id.clone(), tx);
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "elicitation/create",
            "params": {
                "message": format!("[{plugin}] {}", question.prompt),
                "requestedSchema": schema(question),
            },
        });
        if let Err(err) = self.out.write(&request) {
            lock(&self.pending).remove(&id);
            return Err(EffectError::Failed(format!(
                "the question {:?} of plugin {plugin} could not be sent to the MCP client: {err}; nothing was answered",
                question.prompt
            )));
        }
        let response = wait(&rx, question.timeout(), stop);
        lock(&self.pending).remove(&id);
        match response {
            Waited::Response(response) => answer(plugin, question, &response),
            Waited::Timeout => Ok(Answer {
                text: question.default.clone(),
                source: AnswerSource::Timeout,
            }),
            Waited::Cancelled => Err(EffectError::Failed(format!(
                "the question {:?} of plugin {plugin} was cancelled while the MCP client was asked: the plugin's call was stopped; nothing was answered",
                question.prompt
            ))),
        }
    }
}

enum Waited {
    Response(Value),
    Timeout,
    Cancelled,
}

fn wait(rx: &Receiver<Value>, timeout: Duration, stop: &dyn Fn() -> bool) -> Waited {
    let deadline = Instant::now() + timeout;
    loop {
        if stop() {
            return Waited::Cancelled;
        }
        let now = Instant::now();
        if now >= deadline {
            return Waited::Timeout;
        }
        match rx.recv_timeout(POLL.min(deadline - now)) {
            Ok(response) => return Waited::Response(response),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Waited::Timeout,
        }
    }
}

/// The `requestedSchema` of `question`: one required string property
/// `answer`.
pub(crate) fn schema(question: &Question) -> Value {
    let mut answer = match &question.kind {
        QuestionKind::Confirm => json!({"type": "string", "enum": ["yes", "no"]}),
        QuestionKind::Select(options) => json!({"type": "string", "enum": options}),
        QuestionKind::Input => json!({"type": "string"}),
    };
    answer["title"] = json!(question.prompt);
    if !question.default.is_empty() {
        answer["default"] = json!(question.default);
    }
    json!({
        "type": "object",
        "properties": {"answer": answer},
        "required": ["answer"],
    })
}

/// The answer an elicitation `response` gives `question`.
pub(crate) fn answer(
    plugin: &str,
    question: &Question,
    response: &Value,
) -> Result<Answer, EffectError> {
    if let Some(error) = response.get("error") {
        return Err(EffectError::Failed(format!(
            "the MCP client refused to ask the question {:?} of plugin {plugin}: {}; nothing was answered",
            question.prompt,
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message")
        )));
    }
    let result = response.get("result").unwrap_or(&Value::Null);
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let text = result
                .get("content")
                .and_then(|c| c.get("answer"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            if question.accepts(text) {
                Ok(Answer {
                    text: text.to_owned(),
                    source: AnswerSource::User,
                })
            } else {
                Err(EffectError::Failed(format!(
                    "the MCP client answered the question {:?} of plugin {plugin} with {text:?}, which it does not accept; nothing was answered (the client should follow the requested schema)",
                    question.prompt
                )))
            }
        }
        Some("decline" | "cancel") => Ok(Answer {
            text: question.default.clone(),
            source: AnswerSource::User,
        }),
        other => Err(EffectError::Failed(format!(
            "the MCP client's response to the question {:?} of plugin {plugin} has the action {other:?}, not accept, decline or cancel; nothing was answered",
            question.prompt
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confirm() -> Question {
        Question {
            prompt: "Run read on confirm-me?".into(),
            kind: QuestionKind::Confirm,
            timeout_ms: 0,
            default: "no".into(),
        }
    }

    #[test]
    fn schemas_ask_for_one_answer_of_the_right_shape() {
        assert_eq!(
            schema(&confirm()),
            json!({"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"], "title": "Run read on confirm-me?", "default": "no"}}, "required": ["answer"]})
        );
        let select = Question {
            prompt: "Which color?".into(),
            kind: QuestionKind::Select(vec!["red".into(), "blue".into()]),
            timeout_ms: 0,
            default: String::new(),
        };
        assert_eq!(
            schema(&select)["properties"]["answer"],
            json!({"type": "string", "enum": ["red", "blue"], "title": "Which color?"})
        );
        let input = Question {
            kind: QuestionKind::Input,
            ..select
        };
        assert_eq!(
            schema(&input)["properties"]["answer"],
            json!({"type": "string", "title": "Which color?"})
        );
    }

    #[test]
    fn responses_map_to_answers() {
        let accept = json!({"result": {"action": "accept", "content": {"answer": "yes"}}});
        assert_eq!(
            answer("p", &confirm(), &accept).unwrap(),
            Answer {
                text: "yes".into(),
                source: AnswerSource::User
            }
        );
        for action in ["decline", "cancel"] {
            let dismissed = json!({"result": {"action": action}});
            assert_eq!(
                answer("p", &confirm(), &dismissed).unwrap(),
                Answer {
                    text: "no".into(),
                    source: AnswerSource::User
                }
            );
        }
        let wrong = json!({"result": {"action": "accept", "content": {"answer": "maybe"}}});
        let err = answer("p", &confirm(), &wrong).unwrap_err().to_string();
        assert!(err.contains("\"maybe\", which it does not accept"), "{err}");
        let error = json!({"error": {"code": -1, "message": "no UI"}});
        let err = answer("p", &confirm(), &error).unwrap_err().to_string();
        assert!(
            err.contains("refused to ask") && err.contains("no UI"),
            "{err}"
        );
    }

    #[test]
    fn a_response_reaches_its_waiter_and_others_pass_by() {
        let elicit = Elicit::new(Output::new(std::io::sink()));
        assert!(!elicit.take_response(br#"{"jsonrpc":"2.0","id":"smith-elicit-1","result":{}}"#));
        let (tx, rx) = channel();
        lock(&elicit.pending).insert("smith-elicit-1".into(), tx);
        assert!(!elicit.take_response(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#));
        assert!(!elicit.take_response(br#"{"jsonrpc":"2.0","id":"other","result":{}}"#));
        assert!(elicit.take_response(
            br#"{"jsonrpc":"2.0","id":"smith-elicit-1","result":{"action":"cancel"}}"#
        ));
        assert_eq!(rx.recv().unwrap()["result"]["action"], "cancel");
        assert!(lock(&elicit.pending).is_empty());
    }

    #[test]
    fn the_capability_comes_from_initialize() {
        let elicit = Elicit::new(Output::new(std::io::sink()));
        elicit.initialized(&json!({"capabilities": {"elicitation": {}}}));
        assert!(elicit.supported.load(Ordering::SeqCst));
        elicit.initialized(&json!({"capabilities": {}}));
        assert!(!elicit.supported.load(Ordering::SeqCst));
    }
}
