//! Questions that wait: `ask` hands a question to the embedding's
//! [`Asker`] (the frontend) and blocks the plugin's call until the answer,
//! the question's timeout, or a cancellation.

use std::sync::Arc;

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::{EffectError, Effects};

/// The longest a question waits: 10 minutes.
pub const MAX_QUESTION_TIMEOUT_MS: u32 = 600_000;

/// What kind of answer a question wants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuestionKind {
    /// `yes` or `no`.
    Confirm,
    /// One of the options.
    Select(Vec<String>),
    /// Free text.
    Input,
}

impl QuestionKind {
    /// The kind's name as protocols carry it (`confirm`, `select`, `input`).
    pub fn name(&self) -> &'static str {
        match self {
            QuestionKind::Confirm => "confirm",
            QuestionKind::Select(_) => "select",
            QuestionKind::Input => "input",
        }
    }
}

/// A question a plugin asks and waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// What is asked (plain text).
    pub prompt: String,
    /// The kind of answer wanted.
    pub kind: QuestionKind,
    /// How long to wait in milliseconds (0: the longest,
    /// [`MAX_QUESTION_TIMEOUT_MS`]).
    pub timeout_ms: u32,
    /// The answer on timeout, and under a take-the-defaults policy.
    pub default: String,
}

impl Question {
    /// The wait, bounded by [`MAX_QUESTION_TIMEOUT_MS`].
    pub fn timeout(&self) -> std::time::Duration {
        let ms = match self.timeout_ms {
            0 => MAX_QUESTION_TIMEOUT_MS,
            ms => ms.min(MAX_QUESTION_TIMEOUT_MS),
        };
        std::time::Duration::from_millis(u64::from(ms))
    }

    /// Whether `answer` is one this question accepts (`yes`/`no` for a
    /// confirmation, one of the options for a selection, anything for
    /// input).
    pub fn accepts(&self, answer: &str) -> bool {
        match &self.kind {
            QuestionKind::Confirm => matches!(answer, "yes" | "no"),
            QuestionKind::Select(options) => options.iter().any(|o| o == answer),
            QuestionKind::Input => true,
        }
    }
}

/// Who gave an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerSource {
    /// The user.
    User,
    /// Nobody in time: the question's default.
    Timeout,
    /// The frontend's policy (a configured answer, or the default under
    /// `--yes`).
    Policy,
}

impl AnswerSource {
    /// The source's name as the journal records it.
    pub fn name(self) -> &'static str {
        match self {
            AnswerSource::User => "user",
            AnswerSource::Timeout => "timeout",
            AnswerSource::Policy => "policy",
        }
    }
}

/// An answer and who gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The answer's text.
    pub text: String,
    /// Who gave it.
    pub source: AnswerSource,
}

/// Where a plugin's questions go: the embedding (the frontend) shows the
/// question asked by `plugin` and waits for its answer. `stop` turns true
/// when the plugin's call is cancelled; the asker then gives up with
/// [`EffectError::Failed`]. It applies the question's timeout itself.
pub type Asker =
    Arc<dyn Fn(&str, &Question, &dyn Fn() -> bool) -> Result<Answer, EffectError> + Send + Sync>;

impl Effects {
    /// `ask`: checks the `ui` grant, records the intent, asks through the
    /// embedding's [`Asker`] and waits, records the answer.
    ///
    /// # Errors
    ///
    /// Denied without the `ui` grant; invalid for a selection without
    /// options or a default the question does not accept; failed when no
    /// frontend can answer, or the call was cancelled while waiting.
    pub fn ask(&self, question: &Question, stop: &dyn Fn() -> bool) -> Result<Answer, EffectError> {
        let request = format!("ask {:?}", question.prompt);
        if !self.grants.ui {
            return Err(self.deny("ui", "ui".to_owned(), request));
        }
        if let QuestionKind::Select(options) = &question.kind
            && options.is_empty()
        {
            return Err(EffectError::Invalid(format!(
                "{request}: a selection needs at least one option; nothing was asked"
            )));
        }
        if !question.default.is_empty() && !question.accepts(&question.default) {
            return Err(EffectError::Invalid(format!(
                "{request}: the default answer {:?} is not one the question accepts ({}); nothing was asked",
                question.default,
                match &question.kind {
                    QuestionKind::Confirm => "`yes` or `no`".to_owned(),
                    QuestionKind::Select(options) => format!("one of {options:?}"),
                    QuestionKind::Input => "any text".to_owned(),
                }
            )));
        }
        let effect_id = self.intent(
            "plugin.ask",
            &json!({
                "plugin": self.plugin,
                "prompt": question.prompt,
                "kind": question.kind.name(),
                "options": match &question.kind {
                    QuestionKind::Select(options) => options.clone(),
                    _ => Vec::new(),
                },
                "timeout_ms": question.timeout_ms,
                "default": question.default,
            }),
        )?;
        let result = match &self.asker {
            Some(asker) => asker(&self.plugin, question, stop),
            None => Err(EffectError::Failed(format!(
                "{request}: this host has no frontend that answers questions; nothing was answered"
            ))),
        };
        let (outcome, output) = match &result {
            Ok(answer) => (
                Outcome::Ok,
                json!({"answer": answer.text, "source": answer.source.name()}),
            ),
            Err(err) => (Outcome::Error, json!({"error": err.to_string()})),
        };
        self.complete(effect_id, outcome, Mutation::NotApplied, &output)?;
        result
    }
}
