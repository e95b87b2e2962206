//! The session destination: the session that records a runtime's effects
//! and conversation before anything runs.
//!
//! Effects never run without a durable destination: every runtime records
//! into a session of a [`Store`] through a [`StoreJournal`] — a new named
//! session, an existing one resumed with its history, model and effect
//! numbering, or a session in a temporary store (`smith eval
//! --no-session`) that is removed when the [`Destination`] is dropped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use smith_engine::journal::JournalError;
use smith_engine::journal::store::{StoreJournal, recorded_model, resume_from_leaf, resume_within};
use smith_engine::provider::Message;
use smith_store::{Store, StoreError};

/// Which session records the runtime's effects and conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new session with this name (or unnamed).
    New(Option<String>),
    /// A new session named after this text (the first prompt): its first
    /// words ([`smith_store::name_from_text`]), numbered `-2`, `-3`… when
    /// taken; named `PREFIX-<time>` as before when the text has no usable
    /// words. The first string is the text, the second the prefix.
    Titled(String, String),
    /// An existing session by name, id or unique id prefix.
    Open(String),
    /// A new unnamed session in a temporary store of its own, removed when
    /// the destination is dropped unless it is kept.
    Temporary,
}

/// A session opened for recording.
#[derive(Debug)]
pub struct Destination {
    /// The journal over the session.
    pub journal: Arc<StoreJournal>,
    /// The session's name, or its id when unnamed.
    pub name: String,
    /// The resumed conversation (empty for a new session).
    pub history: Vec<Message>,
    /// How many older messages a bounded resume left undecoded before
    /// `history`, and their bytes (see [`open_within`]).
    pub history_omitted: Option<(usize, u64)>,
    /// The last effect number used (new effects continue after it).
    pub last_effect_seq: u64,
    /// The recorded model, when resuming.
    pub model: Option<String>,
    /// Effects with an intent but no completion (never retried).
    pub unknown_effects: Vec<String>,
    /// Whether an existing session was resumed.
    pub resumed: bool,
    /// When the resumed conversation starts at a compaction: its summary.
    pub compaction_summary: Option<String>,
    /// The temporary store of [`SessionChoice::Temporary`].
    pub temp: Option<tempfile::TempDir>,
    /// When the resumed session's selected branch had lost its beginning
    /// to damage: the warning that says what was skipped and where the
    /// conversation continues from (see [`open`]).
    pub damage: Option<smith_diag::Diagnostic>,
}

/// A session destination could not be opened.
#[derive(Debug)]
pub enum SessionError {
    /// The store at `root` could not be opened.
    Store {
        /// The store's root.
        root: PathBuf,
        /// Why.
        source: StoreError,
    },
    /// A new session could not be created.
    Create {
        /// Its name, if it has one.
        name: Option<String>,
        /// The store's root.
        root: PathBuf,
        /// Why.
        source: StoreError,
    },
    /// The session named by `reference` could not be opened.
    Load {
        /// The name, id or id prefix given.
        reference: String,
        /// Why.
        source: StoreError,
    },
    /// The session could not be resumed.
    Resume {
        /// The name, id or id prefix given.
        reference: String,
        /// Why.
        source: JournalError,
    },
    /// The session's selected branch lost its beginning to damage and no
    /// entry before the damage has a whole history to continue from.
    Broken {
        /// The name, id or id prefix given.
        reference: String,
        /// What was lost and what to do.
        diagnostic: smith_diag::Diagnostic,
    },
    /// No temporary store could be created.
    Temporary(std::io::Error),
    /// Another smith serves the session (or its claim could not be taken).
    Busy {
        /// The name, id or id prefix given (the new session's name, or its
        /// id, for a session just created).
        reference: String,
        /// Why.
        source: StoreError,
    },
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::Store { root, source } => write!(
                f,
                "could not open the session store at {}: {source}",
                root.display()
            ),
            SessionError::Create { name, root, source } => write!(
                f,
                "could not create session {} in {}: {source}",
                name.as_deref().unwrap_or("(unnamed)"),
                root.display()
            ),
            SessionError::Load { reference, source } => write!(
                f,
                "could not open session {reference:?}: {source}; list the sessions with `smith session list`"
            ),
            SessionError::Resume { reference, source } => {
                write!(f, "could not resume session {reference:?}: {source}")
            }
            SessionError::Broken { diagnostic, .. } => f.write_str(&diagnostic.render_plain()),
            SessionError::Temporary(source) => write!(
                f,
                "could not create a temporary session store: {source}; check that the temporary directory is writable"
            ),
            SessionError::Busy { reference, source } => {
                write!(f, "could not open session {reference:?}: {source}")
            }
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionError::Store { source, .. }
            | SessionError::Create { source, .. }
            | SessionError::Load { source, .. }
            | SessionError::Busy { source, .. } => Some(source),
            SessionError::Resume { source, .. } => Some(source),
            SessionError::Broken { diagnostic, .. } => Some(diagnostic),
            SessionError::Temporary(source) => Some(source),
        }
    }
}

impl SessionError {
    /// This error as the command line reports it: the typed cause with
    /// what the command was doing in front; `given` follows the reference
    /// of a session that could not be opened (e.g. ` given with
    /// --session`).
    pub fn into_cli(self, given: &str) -> anyhow::Error {
        match self {
            SessionError::Store { source, .. } | SessionError::Create { name: None, source, .. } => {
                source.into()
            }
            SessionError::Create {
                name: Some(name),
                root,
                source,
            } => {
                anyhow::Error::new(source).context(format!(
                    "could not create session {name:?} in {}",
                    root.display()
                ))
            }
            SessionError::Load { reference, source } => anyhow::Error::new(source).context(
                format!(
                    "could not open session {reference:?}{given}; run `smith session list` to see the sessions"
                ),
            ),
            SessionError::Resume { source, .. } => source.into(),
            SessionError::Broken { diagnostic, .. } => diagnostic.into(),
            SessionError::Temporary(source) => anyhow::Error::new(source).context(
                "could not create a temporary session store for --no-session; check that the temporary directory is writable",
            ),
            SessionError::Busy { source, .. } => source.into(),
        }
    }
}

/// Opens (or creates) the session that will record effects, in the store
/// at `root` (unused for [`SessionChoice::Temporary`]); a resumed session's
/// whole history after its newest compaction is decoded.
///
/// # Errors
///
/// When the store cannot be opened, or the session created, found or
/// resumed.
pub fn open(root: &Path, choice: &SessionChoice) -> Result<Destination, SessionError> {
    open_within(root, choice, &|_| None)
}

/// [`open`], decoding at most `budget(recorded model)` bytes of a resumed
/// session's newest messages (`None`: all of them; see
/// [`smith_engine::journal::store::resume_within`]). The runtime passes the
/// bytes its model's context window can use, so a resume costs what the
/// window holds and not what the session holds.
///
/// # Errors
///
/// As [`open`].
pub fn open_within(
    root: &Path,
    choice: &SessionChoice,
    budget: &dyn Fn(Option<&str>) -> Option<u64>,
) -> Result<Destination, SessionError> {
    let open_store = |root: &Path| {
        Store::open(root).map_err(|source| SessionError::Store {
            root: root.to_owned(),
            source,
        })
    };
    let fresh = |store: Store,
                 root: &Path,
                 name: Option<&str>,
                 titled: bool,
                 temp: Option<tempfile::TempDir>| {
        let created = if titled {
            name.map_or_else(
                || store.create(None).map(|s| (s, None)),
                |base| store.create_titled(base).map(|(s, n)| (s, Some(n))),
            )
        } else {
            store.create(name).map(|s| (s, name.map(str::to_owned)))
        };
        let (session, name) = created.map_err(|source| SessionError::Create {
            name: name.map(str::to_owned),
            root: root.to_owned(),
            source,
        })?;
        let shown = name.unwrap_or_else(|| session.id().to_hex());
        // A temporary store is this process's alone.
        let journal = if temp.is_some() {
            StoreJournal::new(store, session)
        } else {
            StoreJournal::claimed(store, session).map_err(|source| SessionError::Busy {
                reference: shown.clone(),
                source,
            })?
        };
        Ok(Destination {
            name: shown,
            journal: Arc::new(journal),
            history: Vec::new(),
            history_omitted: None,
            last_effect_seq: 0,
            model: None,
            unknown_effects: Vec::new(),
            resumed: false,
            compaction_summary: None,
            temp,
            damage: None,
        })
    };
    match choice {
        SessionChoice::Temporary => {
            let dir = tempfile::Builder::new()
                .prefix("smith-eval-")
                .tempdir()
                .map_err(SessionError::Temporary)?;
            let store = open_store(dir.path())?;
            let path = dir.path().to_owned();
            fresh(store, &path, None, false, Some(dir))
        }
        SessionChoice::New(name) => fresh(open_store(root)?, root, name.as_deref(), false, None),
        SessionChoice::Titled(text, prefix) => {
            let base = smith_store::name_from_text(text)
                .unwrap_or_else(|| format!("{prefix}-{}", smith_store::now_ms()));
            fresh(open_store(root)?, root, Some(&base), true, None)
        }
        SessionChoice::Open(reference) => {
            let store = open_store(root)?;
            // Claimed before it is read: what a second runtime would read
            // could change under it.
            let id = store
                .resolve(reference)
                .map_err(|source| SessionError::Load {
                    reference: reference.clone(),
                    source,
                })?;
            let claim = store.claim(id).map_err(|source| SessionError::Busy {
                reference: reference.clone(),
                source,
            })?;
            let resume_error = |source| SessionError::Resume {
                reference: reference.clone(),
                source,
            };
            // Opened at its selected leaf: only the entries the resume
            // needs are read, whatever the session's size. A session the
            // walk from the leaf cannot vouch for is loaded whole (and its
            // damage, if any, reported).
            let file = store
                .open_file(&id.to_hex())
                .map_err(|source| SessionError::Load {
                    reference: reference.clone(),
                    source,
                })?;
            let (session, resumed, damage) =
                match resume_from_leaf(&file, store.limits(), budget).map_err(resume_error)? {
                    Some((session, resumed)) => (session, resumed, None),
                    None => {
                        drop(file);
                        let mut session =
                            store
                                .load(&id.to_hex())
                                .map_err(|source| SessionError::Load {
                                    reference: reference.clone(),
                                    source,
                                })?;
                        let damage = continue_past_damage(&store, &mut session, reference)?;
                        let recorded = recorded_model(&session).map_err(resume_error)?;
                        let budget = budget(recorded.as_ref().map(|(_, model)| model.as_str()));
                        let resumed = resume_within(&session, budget).map_err(resume_error)?;
                        (session, resumed, damage)
                    }
                };
            let compaction_summary = resumed
                .compaction
                .as_ref()
                .and(resumed.history.first())
                .and_then(|m| match m {
                    Message::User { text, .. } => Some(text.clone()),
                    _ => None,
                });
            let name = store
                .name_of(session.id())
                .unwrap_or_else(|| session.id().to_hex());
            let journal =
                StoreJournal::claimed(store, session).map_err(|source| SessionError::Busy {
                    reference: reference.clone(),
                    source,
                })?;
            drop(claim);
            Ok(Destination {
                journal: Arc::new(journal),
                name,
                history: resumed.history,
                history_omitted: resumed.omitted,
                last_effect_seq: resumed.last_effect_seq,
                model: resumed.model.map(|(_, m)| m),
                unknown_effects: resumed.unknown_effects,
                resumed: true,
                compaction_summary,
                temp: None,
                damage,
            })
        }
    }
}

/// A resumed session whose selected branch lost its beginning to damage
/// (a corrupt frame skipped at load held an ancestor) is never sent as if
/// it were whole: the conversation continues from the newest entry before
/// the damage whose whole history is present, selected with a leaf-switch
/// entry (the entries after the damage stay in the file, on their branch),
/// and the returned warning says what was skipped. Without such an entry
/// the session is refused.
fn continue_past_damage(
    store: &Store,
    session: &mut smith_store::Session,
    reference: &str,
) -> Result<Option<smith_diag::Diagnostic>, SessionError> {
    let Some(broken) = session.broken_branch() else {
        return Ok(None);
    };
    let report = *session.report();
    let skipped = report.scan.corrupt_skipped;
    let lost = if skipped == 0 {
        format!(
            "entry {} at byte {} names entry {} as its parent, and no frame of the file holds it",
            broken.first, broken.first_offset, broken.missing_parent
        )
    } else {
        format!(
            "{skipped} corrupt frame{} ({} bytes) skipped at load, and one of them held entry {}, the parent of entry {} at byte {}",
            if skipped == 1 { " was" } else { "s were" },
            report.scan.corrupt_bytes,
            broken.missing_parent,
            broken.first,
            broken.first_offset
        )
    };
    let Some(intact) = broken.intact else {
        return Err(SessionError::Broken {
            reference: reference.to_owned(),
            diagnostic: smith_diag::Diagnostic::error(
                "session.broken-history",
                format!(
                    "session {reference:?} cannot be resumed: its conversation lost its beginning to damage, and no entry has a whole history to continue from"
                ),
                format!(
                    "{lost}; sending the {} entries after the damage alone would present a truncated conversation as the whole one",
                    broken.kept
                ),
                format!(
                    "read what is left with `smith session dump {reference}`, and start a new session (drop --session), or import an edited dump with `smith session import`"
                ),
            )
            .with_field("session file")
            .with_value(format!("byte {}", broken.first_offset)),
        });
    };
    let leaf = session.leaf().map_or(0, |l| l.id);
    store
        .select_leaf(session, intact, None)
        .map_err(|source| SessionError::Load {
            reference: reference.to_owned(),
            source,
        })?;
    Ok(Some(
        smith_diag::Diagnostic::warning(
            "session.broken-branch",
            format!(
                "session {reference:?} continues from entry {intact}, the last entry whose whole history is intact ({} entries); the {} entries after the damage (entry {} to {leaf}) are not sent",
                broken.intact_len, broken.kept, broken.first
            ),
            format!(
                "{lost}, so the history of those later entries cannot be proven whole, and sending them alone would present a truncated conversation as the whole one"
            ),
            format!(
                "nothing was deleted: the later entries stay in the session on their branch (`smith session dump {reference}` shows them); `smith session info {reference}` says what loading skipped"
            ),
        )
        .with_field("session file")
        .with_value(format!("byte {}", broken.first_offset)),
    ))
}

/// Says on standard error, for each effect of `destination` whose outcome
/// is unknown, that it will not be retried.
pub fn warn_unknown_effects(destination: &Destination) {
    if let Some(damage) = &destination.damage {
        eprintln!("{}", damage.render_plain());
    }
    for effect in &destination.unknown_effects {
        eprintln!(
            "smith: effect {effect} in session {} has a recorded intent but no completion: its outcome is unknown and it will not be retried",
            destination.name
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_session_is_named_and_reopened_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let new = open(dir.path(), &SessionChoice::New(Some("first".into()))).unwrap();
        assert_eq!(new.name, "first");
        assert!(!new.resumed && new.temp.is_none());
        let id = new.journal.session_id().to_hex();
        drop(new);
        let again = open(dir.path(), &SessionChoice::Open("first".into())).unwrap();
        assert!(again.resumed);
        assert_eq!(again.name, "first");
        assert_eq!(again.journal.session_id().to_hex(), id);
        assert!(again.history.is_empty() && again.unknown_effects.is_empty());
    }

    #[test]
    fn a_temporary_store_is_removed_with_its_destination() {
        let temp = open(Path::new(""), &SessionChoice::Temporary).unwrap();
        let path = temp.temp.as_ref().unwrap().path().to_owned();
        assert!(path.is_dir());
        assert_eq!(temp.name, temp.journal.session_id().to_hex());
        drop(temp);
        assert!(!path.exists());
    }

    #[test]
    fn an_unknown_session_says_how_to_list_them() {
        let dir = tempfile::tempdir().unwrap();
        let err = open(dir.path(), &SessionChoice::Open("nope".into())).unwrap_err();
        let protocol = err.to_string();
        assert!(
            protocol.starts_with("could not open session \"nope\": "),
            "{protocol}"
        );
        assert!(protocol.ends_with("; list the sessions with `smith session list`"));
        let cli = format!("{:#}", err.into_cli(" given with --session"));
        assert!(
            cli.starts_with(
                "could not open session \"nope\" given with --session; run `smith session list` to see the sessions: "
            ),
            "{cli}"
        );
    }
}
