//! Extension plugins' questions as `session/request_permission`.
//!
//! The question smith/permissions asks before a call runs (`Allow bash to
//! run this command?` …, options `yes`, `no`, `no, with a note`, `always
//! in this session`, `always in this project`) goes to the client as a
//! permission request about the call it concerns: the first call of the
//! current batch with that tool name not asked about yet (the runtime
//! announces a batch's calls before it decides any, and decides them in
//! order). The options become ACP permission options; the client's choice
//! is the answer, so a rejection is recorded like any denial (the call's
//! result is `blocked`, naming the plugin and the reason).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use smith_host::questions::{Answer, AnswerSource, EffectError, Question, QuestionKind};

use super::client::{Client, Waited};
use super::{SessionShared, lock};

/// How long a question waits for the runtime's announcement of the call
/// it concerns before it is asked about the question alone.
const CALL_WAIT: Duration = Duration::from_secs(3);

/// The ACP option for one of a question's options, `None` for those an
/// editor cannot offer (a free-text note).
fn option(id: &str) -> Option<Value> {
    let (name, kind) = match id {
        "yes" => ("Allow once", "allow_once"),
        "always in this session" => ("Always allow in this session", "allow_always"),
        "always in this project" => ("Always allow in this project", "allow_always"),
        "no" => ("Reject", "reject_once"),
        "no, with a note" => return None,
        other if other.starts_with("no") => (other, "reject_once"),
        other => (other, "allow_once"),
    };
    Some(json!({"optionId": id, "name": name, "kind": kind}))
}

/// The permission options of `question` (empty for free-text input,
/// which ACP cannot ask for).
pub(crate) fn options(question: &Question) -> Vec<Value> {
    match &question.kind {
        QuestionKind::Confirm => ["yes", "no"].iter().filter_map(|o| option(o)).collect(),
        QuestionKind::Select(options) => options.iter().filter_map(|o| option(o)).collect(),
        QuestionKind::Input => Vec::new(),
    }
}

/// The tool a smith/permissions prompt names (`Allow bash to run …`,
/// `Allow write to …`, `Allow TOOL with these arguments?`).
fn tool_named(prompt: &str) -> Option<&str> {
    prompt
        .strip_prefix("Allow ")?
        .split([' ', '?', '\n'])
        .next()
        .filter(|t| !t.is_empty())
}

/// Claims the call `prompt` asks about and returns the `toolCall` of the
/// request: the call's id and title, or for a question about no
/// announced call, an id of its own and the prompt's first line.
fn claim(session: &SessionShared, id: &str, prompt: &str, stop: &dyn Fn() -> bool) -> Value {
    let tool = tool_named(prompt);
    let deadline = Instant::now() + CALL_WAIT;
    let mut st = lock(&session.st);
    loop {
        let found = st
            .calls
            .iter_mut()
            .find(|c| !c.asked && tool.is_none_or(|t| t == c.call.name));
        if let Some(call) = found {
            call.asked = true;
            return json!({
                "toolCallId": call.call.id,
                "title": super::map::title(&call.call),
                "kind": super::map::kind(&call.call.name),
                "status": "pending",
            });
        }
        let now = Instant::now();
        if now >= deadline || stop() {
            break;
        }
        st = session
            .changed
            .wait_timeout(st, (deadline - now).min(Duration::from_millis(50)))
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
    drop(st);
    json!({
        "toolCallId": format!("question-{id}"),
        "title": prompt.lines().next().unwrap_or_default(),
        "content": [super::map::content(prompt)],
    })
}

/// Asks the client `question` of `plugin` for the session and waits for
/// its choice (at most the question's timeout, then its default).
pub(crate) fn ask(
    client: &Client,
    session: &Arc<SessionShared>,
    plugin: &str,
    question: &Question,
    stop: &dyn Fn() -> bool,
) -> Result<Answer, EffectError> {
    let options = options(question);
    if options.is_empty() {
        // ACP has no free-text question: the question takes its default.
        return Ok(Answer {
            text: question.default.clone(),
            source: AnswerSource::Policy,
        });
    }
    let session_id = session.id();
    let number = client.next_question();
    let tool_call = claim(session, &number.to_string(), &question.prompt, stop);
    let params = json!({"sessionId": session_id, "toolCall": tool_call, "options": options});
    let (id, rx) = client
        .request("session/request_permission", params)
        .map_err(|e| {
            EffectError::Failed(format!(
                "the question {:?} of plugin {plugin} could not be sent to the ACP client: {e}; nothing was answered",
                question.prompt
            ))
        })?;
    match client.wait(&id, &rx, question.timeout(), stop) {
        Waited::Reply(Ok(result)) => {
            let outcome = &result["outcome"];
            match outcome["outcome"].as_str() {
                Some("selected") => {
                    let chosen = outcome["optionId"].as_str().unwrap_or_default();
                    if question.accepts(chosen) {
                        Ok(Answer {
                            text: chosen.to_owned(),
                            source: AnswerSource::User,
                        })
                    } else {
                        Err(EffectError::Failed(format!(
                            "the ACP client chose the option {chosen:?}, which the permission request did not offer; nothing was answered"
                        )))
                    }
                }
                Some("cancelled") => Err(EffectError::Failed(
                    "the ACP client cancelled the permission request (its prompt turn was cancelled); nothing was answered"
                        .to_owned(),
                )),
                _ => Err(EffectError::Failed(format!(
                    "the ACP client answered the permission request with {result}, not an outcome `selected` or `cancelled`; nothing was answered"
                ))),
            }
        }
        Waited::Reply(Err(error)) => Err(EffectError::Failed(format!(
            "the ACP client answered the permission request with an error ({}); nothing was answered",
            error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned)
        ))),
        Waited::Timeout => Ok(Answer {
            text: question.default.clone(),
            source: AnswerSource::Timeout,
        }),
        Waited::Stopped => Err(EffectError::Failed(format!(
            "the permission request {id} of plugin {plugin} was cancelled while it waited: the call that asked was stopped; nothing was answered"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_permission_question_maps_to_acp_options() {
        let question = Question {
            prompt: "Allow bash to run this command?\n$ ls".into(),
            kind: QuestionKind::Select(
                [
                    "yes",
                    "no",
                    "no, with a note",
                    "always in this session",
                    "always in this project",
                ]
                .map(str::to_owned)
                .to_vec(),
            ),
            timeout_ms: 0,
            default: "no".into(),
        };
        let kinds: Vec<(String, String)> = options(&question)
            .iter()
            .map(|o| {
                (
                    o["optionId"].as_str().unwrap_or_default().to_owned(),
                    o["kind"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("yes", "allow_once"),
                ("no", "reject_once"),
                ("always in this session", "allow_always"),
                ("always in this project", "allow_always"),
            ]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .to_vec()
        );
        assert_eq!(tool_named(&question.prompt), Some("bash"));
        assert_eq!(tool_named("Allow write to a.txt?\n…"), Some("write"));
        assert_eq!(tool_named("Pick a colour"), None);
    }
}
