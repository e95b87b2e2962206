//! Questions that wait: where a plugin's `ask` goes in each frontend.
//!
//! A plugin's `ask` blocks its call until an answer arrives (see
//! `smith_plugins::effects::Asker`). Two kinds of frontend answer it:
//!
//! - one with a user ([`Broker`]): every question gets a fresh id (`q-1`,
//!   `q-2`, …), is handed to the frontend's [`Presenter`] (a `ui_question`
//!   notification in `smith rpc`, an overlay in the fullscreen interface)
//!   and waits for [`Broker::answer`]. A question is answered at most once;
//!   an answer the question does not accept (not `yes`/`no` for a
//!   confirmation, not one of the options of a selection) is refused and
//!   the question keeps waiting. When its timeout passes it takes its
//!   default (source `timeout`); when the plugin's call is cancelled it
//!   ends with an error saying so. Either way the presenter hears that the
//!   question is gone ([`Presenter::withdraw`]).
//! - one without ([`Policy`], `smith eval`): configured answers for known
//!   prompts, the defaults under `--yes`, and otherwise a refusal that says
//!   what was asked, by which plugin, and how to allow it.
//!
//! Both become an [`Asking`], which [`crate::RuntimeOptions`] hands to the
//! extension plugins it loads.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

pub use smith_plugins::effects::{
    Answer, AnswerSource, Asker, EffectError, Question, QuestionKind,
};

/// How often a waiting question checks whether its call was cancelled.
const POLL: Duration = Duration::from_millis(10);

/// How many settled question ids the broker remembers, to refuse a late
/// second answer clearly rather than as an unknown id.
const REMEMBERED: usize = 256;

/// Where a runtime's extension plugins send their questions: the asker set
/// on every plugin's effects.
#[derive(Clone)]
pub struct Asking(pub Asker);

impl std::fmt::Debug for Asking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Asking(..)")
    }
}

/// A question waiting for its answer, as a frontend shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// The broker's id for it (`q-N`), which the answer names.
    pub id: String,
    /// The plugin that asked.
    pub plugin: String,
    /// The question.
    pub question: Question,
    /// The question's timeout in milliseconds (bounded; it then takes its
    /// default).
    pub timeout_ms: u64,
}

impl Waiting {
    /// The options of a selection (empty for the other kinds).
    pub fn options(&self) -> &[String] {
        match &self.question.kind {
            QuestionKind::Select(options) => options,
            QuestionKind::Confirm | QuestionKind::Input => &[],
        }
    }
}

/// How a question stopped waiting without a user's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Withdrawn {
    /// Its timeout passed; it took its default.
    Timeout,
    /// The plugin's call was cancelled.
    Cancelled,
}

/// Shows questions to the user: the frontend's side of a [`Broker`].
/// Both calls come from the thread of the plugin that asked and must not
/// block on the user (the answer comes back through [`Broker::answer`]).
pub trait Presenter: Send + Sync {
    /// Shows a question that now waits.
    fn present(&self, waiting: &Waiting);
    /// The question `id` no longer waits (answered questions are not
    /// withdrawn: the frontend answered them itself).
    fn withdraw(&self, id: &str, why: Withdrawn) {
        let _ = (id, why);
    }
}

/// An answer the broker refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// No question with this id was asked here.
    Unknown(String),
    /// The question was answered, timed out or was cancelled already.
    Settled(String),
    /// The answer is not one the question accepts; it keeps waiting.
    NotAccepted(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Unknown(m) | Refused::Settled(m) | Refused::NotAccepted(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Refused {}

#[derive(Default)]
struct State {
    next: u64,
    /// Waiting questions and, once given, their answer.
    waiting: HashMap<String, (Question, Option<String>)>,
    /// How recently settled questions ended, oldest first.
    settled: VecDeque<(String, &'static str)>,
}

struct Inner {
    state: Mutex<State>,
    answered: Condvar,
    presenter: Mutex<Option<Arc<dyn Presenter>>>,
}

/// The pending questions of a frontend with a user: ids, answers, timeouts
/// and cancellation (see the module overview). Cheap to clone; clones share
/// the questions.
#[derive(Clone)]
pub struct Broker {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("waiting", &lock(&self.inner.state).waiting.len())
            .finish()
    }
}

impl Default for Broker {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a question accepts, in words.
fn accepted(question: &Question) -> String {
    match &question.kind {
        QuestionKind::Confirm => "`yes` or `no`".to_owned(),
        QuestionKind::Select(options) => format!("one of {options:?}"),
        QuestionKind::Input => "any text".to_owned(),
    }
}

impl Broker {
    /// A broker without a presenter (questions wait unseen until one is
    /// set, or until they time out).
    pub fn new() -> Self {
        Broker {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                answered: Condvar::new(),
                presenter: Mutex::new(None),
            }),
        }
    }

    /// Shows questions through `presenter` from now on.
    pub fn set_presenter(&self, presenter: Arc<dyn Presenter>) {
        *lock(&self.inner.presenter) = Some(presenter);
    }

    /// The asker that sends plugins' questions here, for
    /// [`crate::RuntimeOptions::questions`].
    pub fn asking(&self) -> Asking {
        let broker = self.clone();
        Asking(Arc::new(move |plugin, question, stop| {
            broker.ask(plugin, question, stop)
        }))
    }

    /// Whether `id` is (or was recently) one of this broker's questions.
    pub fn knows(&self, id: &str) -> bool {
        let state = lock(&self.inner.state);
        state.waiting.contains_key(id) || state.settled.iter().any(|(s, _)| s == id)
    }

    /// How many questions wait.
    pub fn waiting(&self) -> usize {
        lock(&self.inner.state).waiting.len()
    }

    /// Answers question `id` with `text` (source `user`).
    ///
    /// # Errors
    ///
    /// When no such question was asked, it no longer waits (answered,
    /// timed out, cancelled), or it does not accept `text` (then it keeps
    /// waiting).
    pub fn answer(&self, id: &str, text: &str) -> Result<(), Refused> {
        let mut state = lock(&self.inner.state);
        if let Some((_, how)) = state.settled.iter().find(|(s, _)| s == id) {
            return Err(Refused::Settled(format!(
                "question {id} was {how} already and takes no other answer; answer only questions that still wait"
            )));
        }
        let Some((question, answer)) = state.waiting.get_mut(id) else {
            return Err(Refused::Unknown(format!(
                "no question {id} was asked here; answer with the id of a question that waits"
            )));
        };
        if answer.is_some() {
            return Err(Refused::Settled(format!(
                "question {id} was answered already and takes no other answer; answer only questions that still wait"
            )));
        }
        if !question.accepts(text) {
            return Err(Refused::NotAccepted(format!(
                "question {id} ({:?}) does not accept the answer {text:?}: it wants {}; it still waits, answer it again",
                question.prompt,
                accepted(question)
            )));
        }
        *answer = Some(text.to_owned());
        drop(state);
        self.inner.answered.notify_all();
        Ok(())
    }

    /// Asks `question` for `plugin` and waits: the user's answer, the
    /// default on timeout, or an error when `stop` turns true.
    ///
    /// # Errors
    ///
    /// [`EffectError::Failed`] when the plugin's call is cancelled while
    /// the question waits.
    pub fn ask(
        &self,
        plugin: &str,
        question: &Question,
        stop: &dyn Fn() -> bool,
    ) -> Result<Answer, EffectError> {
        let timeout = question.timeout();
        let deadline = Instant::now() + timeout;
        let id = {
            let mut state = lock(&self.inner.state);
            state.next += 1;
            let id = format!("q-{}", state.next);
            state.waiting.insert(id.clone(), (question.clone(), None));
            id
        };
        let presenter = lock(&self.inner.presenter).clone();
        if let Some(presenter) = &presenter {
            presenter.present(&Waiting {
                id: id.clone(),
                plugin: plugin.to_owned(),
                question: question.clone(),
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            });
        }
        let mut state = lock(&self.inner.state);
        let ended = loop {
            if let Some((_, Some(text))) = state.waiting.get(&id) {
                break Ok(Answer {
                    text: text.clone(),
                    source: AnswerSource::User,
                });
            }
            if stop() {
                break Err(Withdrawn::Cancelled);
            }
            let now = Instant::now();
            if now >= deadline {
                break Err(Withdrawn::Timeout);
            }
            state = self
                .inner
                .answered
                .wait_timeout(state, POLL.min(deadline - now))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        state.waiting.remove(&id);
        let how = match ended {
            Ok(_) => "answered",
            Err(Withdrawn::Timeout) => "timed out",
            Err(Withdrawn::Cancelled) => "cancelled",
        };
        if state.settled.len() >= REMEMBERED {
            state.settled.pop_front();
        }
        state.settled.push_back((id.clone(), how));
        drop(state);
        match ended {
            Ok(answer) => Ok(answer),
            Err(why) => {
                if let Some(presenter) = &presenter {
                    presenter.withdraw(&id, why);
                }
                match why {
                    Withdrawn::Timeout => Ok(Answer {
                        text: question.default.clone(),
                        source: AnswerSource::Timeout,
                    }),
                    Withdrawn::Cancelled => Err(EffectError::Failed(format!(
                        "question {id} of plugin {plugin} ({:?}) was cancelled while it waited: the plugin's call was stopped; nothing was answered",
                        question.prompt
                    ))),
                }
            }
        }
    }
}

/// `prompt` on one line: its lines, trimmed at the end, joined by single
/// spaces (how `--answer` may name a prompt of several lines).
pub fn one_line(prompt: &str) -> String {
    let mut out = String::with_capacity(prompt.len());
    for line in prompt.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(line);
    }
    out
}

/// How a frontend without a user answers questions (`smith eval`): a
/// configured answer for a prompt, else the default under `yes`, else a
/// refusal. Answers it gives have the source `policy`.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// The command that applies the policy, named in refusals (`smith
    /// eval`).
    pub surface: String,
    /// Take every question's default (`--yes`).
    pub yes: bool,
    /// Configured answers: (prompt, answer), matched against the whole
    /// prompt or, for a prompt of several lines (a command, a diff), the
    /// same lines joined by single spaces ([`one_line`]).
    pub answers: Vec<(String, String)>,
}

impl Policy {
    /// Parses a configured answer `PROMPT=ANSWER` (split at the last `=`,
    /// so a prompt may contain `=`).
    ///
    /// # Errors
    ///
    /// When there is no `=` or the prompt is empty.
    pub fn parse_answer(given: &str) -> Result<(String, String), String> {
        match given.rsplit_once('=') {
            Some((prompt, answer)) if !prompt.is_empty() => {
                Ok((prompt.to_owned(), answer.to_owned()))
            }
            _ => Err(format!(
                "the answer {given:?} is not PROMPT=ANSWER; write the question's whole prompt, `=`, then the answer (e.g. 'Run read on confirm-me?=yes')"
            )),
        }
    }

    /// This policy's answer to `question` from `plugin`.
    ///
    /// # Errors
    ///
    /// [`EffectError::Failed`] when the policy has no answer (or its
    /// configured answer is not one the question accepts); the message says
    /// what was asked, by which plugin, and how to allow it.
    pub fn answer(&self, plugin: &str, question: &Question) -> Result<Answer, EffectError> {
        let shown = describe(question);
        let joined = one_line(&question.prompt);
        if let Some((_, text)) = self
            .answers
            .iter()
            .find(|(p, _)| *p == question.prompt || *p == joined)
        {
            if question.accepts(text) {
                return Ok(Answer {
                    text: text.clone(),
                    source: AnswerSource::Policy,
                });
            }
            return Err(EffectError::Failed(format!(
                "plugin {plugin} asked {shown} and the configured answer {text:?} is not one it accepts ({}); nothing was answered. Configure an accepted answer with --answer '{joined}=ANSWER'",
                accepted(question),
            )));
        }
        if self.yes && question.accepts(&question.default) {
            return Ok(Answer {
                text: question.default.clone(),
                source: AnswerSource::Policy,
            });
        }
        let how = if self.yes {
            "it has no default to take under --yes, so configure its answer".to_owned()
        } else {
            "pass --yes to take every question's default, or configure its answer".to_owned()
        };
        Err(EffectError::Failed(format!(
            "plugin {plugin} asked {shown} and {} has no one to answer it; nothing was answered. To allow it, {how} with --answer '{joined}=ANSWER'",
            self.surface
        )))
    }

    /// The asker applying this policy; each refusal is also reported on
    /// standard error (`smith: question refused: …`).
    pub fn asking(self) -> Asking {
        Asking(Arc::new(move |plugin, question, _stop| {
            let answered = self.answer(plugin, question);
            if let Err(err) = &answered {
                eprintln!("smith: question refused: {err}");
                smith_diag::log::note(
                    smith_diag::log::Level::Warn,
                    "plugin.question-refused",
                    &err.to_string(),
                );
            }
            answered
        }))
    }
}

/// A question in words: `"PROMPT" (confirm, default no)`.
fn describe(question: &Question) -> String {
    let kind = match &question.kind {
        QuestionKind::Select(options) => format!("select from {options:?}"),
        other => other.name().to_owned(),
    };
    if question.default.is_empty() {
        format!("{:?} ({kind}, no default)", question.prompt)
    } else {
        format!(
            "{:?} ({kind}, default {})",
            question.prompt, question.default
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    fn confirm(timeout_ms: u32) -> Question {
        Question {
            prompt: "Run read on confirm-me?".into(),
            kind: QuestionKind::Confirm,
            timeout_ms,
            default: "no".into(),
        }
    }

    /// Records what it was shown.
    #[derive(Default)]
    struct Seen {
        shown: Mutex<Vec<Waiting>>,
        withdrawn: Mutex<Vec<(String, Withdrawn)>>,
    }

    impl Presenter for Seen {
        fn present(&self, waiting: &Waiting) {
            lock(&self.shown).push(waiting.clone());
        }
        fn withdraw(&self, id: &str, why: Withdrawn) {
            lock(&self.withdrawn).push((id.to_owned(), why));
        }
    }

    fn never() -> bool {
        false
    }

    /// Asks on another thread; returns its handle once the question waits.
    fn ask_in_background(
        broker: &Broker,
        question: Question,
    ) -> std::thread::JoinHandle<Result<Answer, EffectError>> {
        let asker = broker.clone();
        let handle = std::thread::spawn(move || asker.ask("test/kit", &question, &never));
        while broker.waiting() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        handle
    }

    #[test]
    fn a_question_is_presented_and_answered_once() {
        let broker = Broker::new();
        let seen = Arc::new(Seen::default());
        broker.set_presenter(seen.clone());
        let handle = ask_in_background(&broker, confirm(10_000));
        let shown = lock(&seen.shown)[0].clone();
        assert_eq!(shown.id, "q-1");
        assert_eq!(shown.plugin, "test/kit");
        assert_eq!(shown.question.prompt, "Run read on confirm-me?");
        assert_eq!(shown.timeout_ms, 10_000);
        assert!(shown.options().is_empty());
        broker.answer("q-1", "yes").unwrap();
        let answer = handle.join().unwrap().unwrap();
        assert_eq!(
            answer,
            Answer {
                text: "yes".into(),
                source: AnswerSource::User
            }
        );
        let again = broker.answer("q-1", "no").unwrap_err();
        assert!(matches!(again, Refused::Settled(_)), "{again}");
        assert!(again.to_string().contains("answered already"), "{again}");
        assert!(broker.knows("q-1"));
        assert!(lock(&seen.withdrawn).is_empty());
    }

    #[test]
    fn a_second_answer_before_the_asker_wakes_is_refused() {
        let broker = Broker::new();
        let handle = ask_in_background(&broker, confirm(10_000));
        broker.answer("q-1", "no").unwrap();
        let second = broker.answer("q-1", "yes");
        assert!(matches!(second, Err(Refused::Settled(_))), "{second:?}");
        assert_eq!(handle.join().unwrap().unwrap().text, "no");
    }

    #[test]
    fn an_answer_the_question_does_not_accept_is_refused_and_it_keeps_waiting() {
        let broker = Broker::new();
        let select = Question {
            prompt: "Which color?".into(),
            kind: QuestionKind::Select(vec!["red".into(), "blue".into()]),
            timeout_ms: 10_000,
            default: "blue".into(),
        };
        let handle = ask_in_background(&broker, select);
        let refused = broker.answer("q-1", "green").unwrap_err();
        assert!(matches!(refused, Refused::NotAccepted(_)), "{refused}");
        assert!(refused.to_string().contains("\"red\""), "{refused}");
        assert_eq!(broker.waiting(), 1);
        broker.answer("q-1", "red").unwrap();
        assert_eq!(handle.join().unwrap().unwrap().text, "red");

        let handle = ask_in_background(&broker, confirm(10_000));
        assert!(matches!(
            broker.answer("q-2", "maybe"),
            Err(Refused::NotAccepted(_))
        ));
        broker.answer("q-2", "yes").unwrap();
        assert_eq!(handle.join().unwrap().unwrap().text, "yes");
    }

    #[test]
    fn an_unknown_id_is_refused() {
        let broker = Broker::new();
        let refused = broker.answer("q-7", "yes").unwrap_err();
        assert!(matches!(refused, Refused::Unknown(_)), "{refused}");
        assert!(refused.to_string().contains("no question q-7"), "{refused}");
        assert!(!broker.knows("q-7"));
    }

    #[test]
    fn a_question_times_out_to_its_default() {
        let broker = Broker::new();
        let seen = Arc::new(Seen::default());
        broker.set_presenter(seen.clone());
        let started = Instant::now();
        let answer = broker.ask("test/kit", &confirm(30), &never).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(30));
        assert_eq!(
            answer,
            Answer {
                text: "no".into(),
                source: AnswerSource::Timeout
            }
        );
        assert_eq!(
            *lock(&seen.withdrawn),
            [("q-1".to_owned(), Withdrawn::Timeout)]
        );
        let late = broker.answer("q-1", "yes").unwrap_err();
        assert!(late.to_string().contains("timed out"), "{late}");
    }

    #[test]
    fn a_cancelled_call_stops_waiting() {
        let broker = Broker::new();
        let seen = Arc::new(Seen::default());
        broker.set_presenter(seen.clone());
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cancelled);
        let asker = broker.clone();
        let handle = std::thread::spawn(move || {
            asker.ask("test/kit", &confirm(60_000), &|| {
                flag.load(Ordering::SeqCst)
            })
        });
        while broker.waiting() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let started = Instant::now();
        cancelled.store(true, Ordering::SeqCst);
        let err = handle.join().unwrap().unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(matches!(err, EffectError::Failed(_)), "{err}");
        assert!(err.to_string().contains("cancelled"), "{err}");
        assert!(err.to_string().contains("test/kit"), "{err}");
        assert_eq!(
            *lock(&seen.withdrawn),
            [("q-1".to_owned(), Withdrawn::Cancelled)]
        );
        assert!(matches!(
            broker.answer("q-1", "yes"),
            Err(Refused::Settled(_))
        ));
    }

    #[test]
    fn questions_get_fresh_ids_and_the_asking_handle_reaches_the_broker() {
        let broker = Broker::new();
        let Asking(asker) = broker.asking();
        assert_eq!(asker("p", &confirm(5), &never).unwrap().text, "no");
        assert_eq!(asker("p", &confirm(5), &never).unwrap().text, "no");
        assert!(broker.knows("q-1") && broker.knows("q-2"));
        assert_eq!(broker.waiting(), 0);
    }

    #[test]
    fn the_policy_answers_configured_prompts_defaults_under_yes_and_refuses_otherwise() {
        let refuse = Policy {
            surface: "smith eval".into(),
            ..Policy::default()
        };
        let err = refuse.answer("test/kit", &confirm(0)).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, EffectError::Failed(_)));
        assert!(
            text.contains(
                "plugin test/kit asked \"Run read on confirm-me?\" (confirm, default no)"
            ),
            "{text}"
        );
        assert!(
            text.contains("smith eval has no one to answer it"),
            "{text}"
        );
        assert!(text.contains("--yes"), "{text}");
        assert!(
            text.contains("--answer 'Run read on confirm-me?=ANSWER'"),
            "{text}"
        );

        let yes = Policy {
            yes: true,
            ..refuse.clone()
        };
        assert_eq!(
            yes.answer("test/kit", &confirm(0)).unwrap(),
            Answer {
                text: "no".into(),
                source: AnswerSource::Policy
            }
        );
        let no_default = Question {
            default: String::new(),
            ..confirm(0)
        };
        let err = yes.answer("test/kit", &no_default).unwrap_err().to_string();
        assert!(err.contains("no default to take under --yes"), "{err}");

        let configured = Policy {
            answers: vec![Policy::parse_answer("Run read on confirm-me?=yes").unwrap()],
            ..yes
        };
        assert_eq!(
            configured.answer("test/kit", &confirm(0)).unwrap(),
            Answer {
                text: "yes".into(),
                source: AnswerSource::Policy
            }
        );
        let wrong = Policy {
            answers: vec![("Run read on confirm-me?".into(), "sure".into())],
            ..refuse
        };
        let err = wrong
            .answer("test/kit", &confirm(0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"sure\" is not one it accepts"), "{err}");
    }

    #[test]
    fn configured_answers_split_at_the_last_equals_sign() {
        assert_eq!(
            Policy::parse_answer("a=b?=yes").unwrap(),
            ("a=b?".to_owned(), "yes".to_owned())
        );
        assert!(Policy::parse_answer("no-equals").is_err());
        assert!(Policy::parse_answer("=yes").is_err());
    }

    #[test]
    fn a_prompt_of_several_lines_is_answered_by_its_one_line_form() {
        let question = Question {
            prompt: "Allow bash to run this command?\n$ git push  \n\n".into(),
            kind: QuestionKind::Select(vec!["yes".into(), "no".into()]),
            timeout_ms: 0,
            default: "no".into(),
        };
        assert_eq!(
            one_line(&question.prompt),
            "Allow bash to run this command? $ git push"
        );
        let policy = Policy {
            surface: "smith eval".into(),
            yes: false,
            answers: vec![(
                "Allow bash to run this command? $ git push".into(),
                "yes".into(),
            )],
        };
        assert_eq!(
            policy.answer("smith/permissions", &question).unwrap().text,
            "yes"
        );
        // Another command's question is not answered by it, and the refusal
        // names the one-line form to configure.
        let other = Question {
            prompt: "Allow bash to run this command?\n$ rm -rf build".into(),
            ..question
        };
        let refused = policy.answer("smith/permissions", &other).unwrap_err();
        let EffectError::Failed(message) = refused else {
            panic!("{refused:?}")
        };
        assert!(
            message.contains("--answer 'Allow bash to run this command? $ rm -rf build=ANSWER'"),
            "{message}"
        );
    }
}
