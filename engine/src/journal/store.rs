//! The store-backed journal: effect and conversation records as session
//! entries.
//!
//! Every record is one [`Store::append`] (one write and a data flush under
//! the session lock) before the call returns, so an intent is on disk before
//! its effect starts. Entries and their content (canonical CBOR, written
//! through the codec's JSON bridge):
//!
//! | record | entry kind | pairing | content |
//! |---|---|---|---|
//! | user / assistant message | `user_message` / `assistant_message` | 0 | the message's JSON projection |
//! | each tool call of an assistant message | `tool_call` | [`call_pairing`] of the call id | `{id, name, arguments_ref: true}`: the arguments are those of the call in the assistant message written just before it (stored once, there); `{id, name, arguments}` when that message does not hold them |
//! | tool result | `tool_result` | [`call_pairing`] of the call id | the message's JSON projection; when its text is exactly the output of the effect whose completion this journal recorded just before, without `content` and with `"content_ref": "fx-N"` (the output is stored once, in the completion) |
//! | model change | `model_change` | 0 | `{provider, model}` |
//! | compaction | `compaction` | the id of the first kept entry (0 when none is kept) | the [`CompactionRecord`]'s JSON projection |
//! | run start / run end / reported error | `metadata` | 0 | the [`RunRecord`]'s JSON projection (`{"type": "run_start", provider, model, system?, tools, cwd}`, `{"type": "run_end", stop, usage, cost, text}`, `{"type": "error", kind, message, …}`); a run start leaves out a `system` or `tools` equal to the previous run start's and names it in `unchanged` (`{"system": {"entry", "digest"}, "tools": …}`) |
//! | intent | `effect_intent` | the effect's number (`fx-N` → N) | `{tool, input, parent, effect_id, plugin_generation}`, `input` the canonical arguments item; when they are exactly the arguments of the call `parent` in the nearest assistant message before it, without `input` and with `"arguments_ref": true` |
//! | completion | `effect_completion` | the effect's number | `{output, outcome, mutation, effect_id}`, `output` the canonical `{content, details, is_error}` item |
//! | a checkpoint around a mutating effect, an undo, redo, restore or rewind | `vcs_operation` | the effect's number (0 for a restore) | the [`VcsRecord`]'s JSON projection (`{op, root, effect_id?, tool?, turn?, effects?, entry?, before, after, target?, changed, forced?, error?}`) |
//! | a plugin's UI intent kept for a later frontend | `plugin_intent` | 0 | the [`PluginIntent`]'s JSON projection (`{plugin, id, kind, text, surface}`) |
//! | what a plugin's caps per run dropped, at the end of the run | `metadata` | 0 | the [`PluginLimits`]' JSON projection (`{"type": "plugin_limits", plugin, dropped: [{kind, limit, dropped}]}`) |
//! | a value a plugin keeps in the session (`set-session-state`) | `metadata` | 0 | the [`PluginState`]'s JSON projection (`{"type": "plugin_state", plugin, key, value}`) |
//! | a registered secret (written by the embedding at runtime start) | `secret_registration` | 0 | the [`Registration`]'s JSON projection (`{name, source, fingerprint, key}`), never the value |
//!
//! Readers resolve every reference ([`entry_json`], [`resolve_result`],
//! [`resolve_run_start`], [`resolve_arguments`]; docs/session-format.md
//! §4.1), so what they read is what an entry written in full holds.
//!
//! [`resume`] reads a session back: the conversation of the selected
//! branch from its compaction boundary (the newest compaction's summary
//! first, then the entries it kept), the effects whose intent has no
//! completion (their state is [`super::EffectState::Unknown`]; completions are
//! matched by record pairing and never decoded) and the last effect number.
//! [`resume_from_leaf`] does the same from a session opened at its selected
//! leaf (the newest part of the branch back to the compaction boundary,
//! read from the end of the file), which the journal then records into
//! without the whole record table.

use std::sync::Mutex;

use smith_codec::Encoder;
use smith_secrets::Registration;
use smith_store::{EntryKind, NewEntry, Session, SessionId, Store, Summary};

use super::{
    EffectCompletion, EffectIntent, EffectJournal, JournalError, MessageMeta, Outcome, RunRecord,
    SessionEvent, SessionSink, canonical_cbor, lock,
};
use crate::agent::compact::{CompactionRecord, PRUNED_RESULT_BYTES, summary_message};
use crate::checkpoint::{Step, VcsRecord};
use crate::provider::Message;
use crate::tools::Mutation;

/// The pairing id of a tool call and its result: FNV-1a (64-bit) of the
/// call id, never 0. Deterministic, so a resumed session needs no map.
pub fn call_pairing(call_id: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in call_id.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash.max(1)
}

/// The number of an effect id `fx-N`.
pub fn effect_number(effect_id: &str) -> Option<u64> {
    effect_id.strip_prefix("fx-")?.parse().ok()
}

/// Effect and conversation records in one session of a [`Store`].
pub struct StoreJournal {
    store: Store,
    session: Mutex<Session>,
    /// The runtime's claim on the session ([`Store::claim`]), held as
    /// long as the journal.
    _claim: Option<std::sync::Arc<smith_store::Claim>>,
    /// What `smith session list` shows about the session, kept in its
    /// summary sidecar ([`Store::write_summary`]).
    summary: Mutex<Summary>,
    /// What lets each value be written once (see [`Written`]).
    written: Mutex<Written>,
}

/// What the journal keeps so that a value is written once
/// (docs/session-format.md §4.1): the output text of each effect whose
/// completion is recorded and whose result is not yet, and the definitions
/// (system prompt, tools) of the run start it wrote last.
#[derive(Debug, Default)]
struct Written {
    /// Effect number to the completion's entry id and its output's
    /// `content` text.
    outputs: std::collections::HashMap<u64, (u64, String)>,
    /// The last run start this journal wrote: its entry id and its
    /// definitions.
    defs: Option<(u64, RunDefs)>,
    /// The last assistant message this journal wrote: its entry id and
    /// its calls (id, canonical CBOR of the arguments), in order.
    calls: Option<(u64, Vec<CallArguments>)>,
}

/// A call's id and the canonical CBOR of its arguments.
type CallArguments = (String, Vec<u8>);

/// A run start's system prompt and tool list, each as the id of the entry
/// that holds it in full and the canonical CBOR of its JSON projection
/// (`None`: no system prompt, or one whose holder is unknown).
#[derive(Clone, Debug, Default, PartialEq)]
struct RunDefs {
    system: Option<(u64, Vec<u8>)>,
    tools: Option<(u64, Vec<u8>)>,
}

impl std::fmt::Debug for StoreJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreJournal")
            .field("root", &self.store.root())
            .field("session", &lock(&self.session).id().to_hex())
            .finish()
    }
}

fn store_error(what: &str, err: smith_store::StoreError) -> JournalError {
    JournalError::new(format!(
        "the {what} could not be written to the session store: {err}"
    ))
}

impl StoreJournal {
    /// Records into `session` (created or loaded from `store`).
    pub fn new(store: Store, session: Session) -> Self {
        let summary = Mutex::new(initial_summary(&store, &session));
        Self {
            store,
            session: Mutex::new(session),
            _claim: None,
            summary,
            written: Mutex::default(),
        }
    }

    /// Records into `session` for a runtime that serves it: the session is
    /// claimed first ([`Store::claim`]), so a second runtime in another
    /// process is refused while this journal lives.
    ///
    /// # Errors
    ///
    /// `Locked` when another process serves the session; `Io` when the
    /// claim cannot be taken.
    pub fn claimed(store: Store, session: Session) -> Result<Self, smith_store::StoreError> {
        let claim = store.claim(session.id())?;
        let summary = Mutex::new(initial_summary(&store, &session));
        Ok(Self {
            store,
            session: Mutex::new(session),
            _claim: Some(claim),
            summary,
            written: Mutex::default(),
        })
    }

    /// Updates the session's summary with `f` and, when `write`, rewrites
    /// its sidecar. A sidecar that cannot be written is not an error of
    /// the run (it is a cache of the entries, written again on resume).
    fn note(&self, write: bool, f: impl FnOnce(&mut Summary)) {
        let mut summary = lock(&self.summary);
        f(&mut summary);
        if write {
            let _ = self.store.write_summary(self.session_id(), &summary);
        }
    }

    /// The session's id.
    pub fn session_id(&self) -> SessionId {
        lock(&self.session).id()
    }

    /// Renames the session after a prompt (`base` from
    /// [`smith_store::name_from_text`]): `base`, or the first free of
    /// `base-2`, `base-3`…; the name it got.
    ///
    /// # Errors
    ///
    /// The store's, naming the session and the name.
    pub fn rename_titled(&self, base: &str) -> Result<String, smith_store::StoreError> {
        let id = self.session_id().to_hex();
        self.store.rename_titled(&id, base)
    }

    /// Runs `f` on the session as recorded so far: the whole session. A
    /// session opened at its selected leaf ([`resume_from_leaf`]) is
    /// loaded fully first, once (see [`StoreJournal::whole`]).
    pub fn with_session<R>(&self, f: impl FnOnce(&Session) -> R) -> R {
        f(&self.whole())
    }

    /// Runs `f` on the session as this journal holds it, without loading
    /// it fully: for a session opened at its selected leaf, the newest
    /// part of its selected branch (everything a resume read, and every
    /// entry recorded since); otherwise the whole session.
    pub fn with_opened<R>(&self, f: impl FnOnce(&Session) -> R) -> R {
        f(&lock(&self.session))
    }

    /// Whether the journal still holds its session as opened at the
    /// selected leaf (nothing has needed the whole session yet).
    pub fn opened_at_leaf(&self) -> bool {
        lock(&self.session).opened_at_leaf()
    }

    /// The session, loaded fully first when it was opened at its selected
    /// leaf: the whole file is read ([`Store::load`]), entries this
    /// journal appended included. When that load fails, the opened part
    /// is kept (whatever reads it sees the newest part of the branch only)
    /// and the failure is reported.
    fn whole(&self) -> std::sync::MutexGuard<'_, Session> {
        let mut session = lock(&self.session);
        if session.opened_at_leaf() {
            let id = session.id().to_hex();
            match self.store.load(&id) {
                Ok(whole) => *session = whole,
                Err(err) => smith_diag::log::report(&smith_diag::Diagnostic::warning(
                    "session.whole-load",
                    format!(
                        "session {id} could not be loaded whole; what reads it sees only the part its resume opened"
                    ),
                    format!("the session store refused the full load: {err}"),
                    format!(
                        "nothing recorded is lost; check the session with `smith session info {id}` and `smith session repair {id}`"
                    ),
                )),
            }
        }
        session
    }

    fn append(&self, what: &str, entries: &[NewEntry<'_>]) -> Result<(), JournalError> {
        self.append_ids(what, entries).map(|_| ())
    }

    /// As `append`, returning the new entries' ids.
    fn append_ids(&self, what: &str, entries: &[NewEntry<'_>]) -> Result<Vec<u64>, JournalError> {
        let mut session = lock(&self.session);
        self.store
            .append(&mut session, entries)
            .map_err(|err| store_error(what, err))
    }
}

/// A UI intent a plugin asked to keep (its policy is `persist`) because the
/// frontend it was sent to could not show it: recorded as a
/// `plugin_intent` entry and shown by the next frontend that opens the
/// session. Replay and resume ignore it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PluginIntent {
    /// The plugin that asked.
    pub plugin: String,
    /// The intent's correlation id (empty when it has none).
    pub id: String,
    /// The intent's kind (`confirm`, `select`, `progress`...).
    pub kind: String,
    /// The intent as one line of plain text (its `text` fallback).
    pub text: String,
    /// The frontend that could not show it (`eval`, `rpc`, `tui`).
    pub surface: String,
}

impl StoreJournal {
    /// Records `intent` durably in the session, under the selected leaf.
    ///
    /// # Errors
    ///
    /// When the entry cannot be written.
    pub fn record_plugin_intent(&self, intent: &PluginIntent) -> Result<(), JournalError> {
        let content = json_content(intent, "plugin intent")?;
        self.append(
            "plugin intent",
            &[NewEntry::new(EntryKind::PluginIntent, &content)],
        )
    }
}

/// What a plugin's caps per run dropped (UI intents, log lines, journal
/// entries over their cap): recorded at the end of the run as a `metadata`
/// entry of type `plugin_limits`, so the session says how much a flooding
/// plugin lost. Replay and resume skip it (it is not a run record).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename = "plugin_limits")]
pub struct PluginLimits {
    /// The plugin.
    pub plugin: String,
    /// Each kind that dropped something.
    pub dropped: Vec<LimitDrops>,
}

/// One kind of a [`PluginLimits`] record.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LimitDrops {
    /// `ui-intents`, `log-lines` or `journal-entries`.
    pub kind: String,
    /// The cap per run.
    pub limit: u64,
    /// How many items over the cap were dropped.
    pub dropped: u64,
}

impl StoreJournal {
    /// Records `limits` durably in the session, under the selected leaf.
    ///
    /// # Errors
    ///
    /// When the entry cannot be written.
    pub fn record_plugin_limits(&self, limits: &PluginLimits) -> Result<(), JournalError> {
        let content = json_content(limits, "plugin limits record")?;
        self.append(
            "plugin limits record",
            &[NewEntry::new(EntryKind::Metadata, &content)],
        )
    }
}

/// A value a plugin keeps in the session under a key of its own
/// (`set-session-state`): recorded as a `metadata` entry of type
/// `plugin_state`; the newest one of a plugin and key on the selected
/// branch is the value in effect ([`plugin_state`]), whatever compaction
/// did since. Replay and resume skip it (it is not a run record).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename = "plugin_state")]
pub struct PluginState {
    /// The plugin that stored it.
    pub plugin: String,
    /// Its key, within the plugin.
    pub key: String,
    /// The value, as the plugin gave it.
    pub value: String,
}

impl StoreJournal {
    /// Records `state` durably in the session, under the selected leaf.
    ///
    /// # Errors
    ///
    /// When the entry cannot be written.
    pub fn record_plugin_state(&self, state: &PluginState) -> Result<(), JournalError> {
        let content = json_content(state, "plugin state")?;
        // The summary names the key before the entry is written: it may
        // name a key the session does not hold, never the reverse.
        let unnamed = !lock(&self.summary).may_hold_state(&state.plugin, &state.key);
        if unnamed {
            self.note(true, |s| s.note_state_key(&state.plugin, &state.key));
        }
        self.append(
            "plugin state",
            &[NewEntry::new(EntryKind::Metadata, &content)],
        )
    }
}

/// The value `plugin` last stored under `key` on the selected branch of
/// `session` (the newest `plugin_state` entry of theirs); none when it
/// stored none. Only `metadata` entries are decoded, newest first, until
/// one matches; an entry this build cannot read is skipped.
pub fn plugin_state(session: &Session, plugin: &str, key: &str) -> Option<String> {
    session
        .branch()
        .iter()
        .rev()
        .filter(|r| r.entry_kind() == EntryKind::Metadata)
        .filter_map(|record| decode_json(session, record).ok())
        .filter(|value| value.get("type").and_then(|t| t.as_str()) == Some("plugin_state"))
        .filter_map(|value| serde_json::from_value::<PluginState>(value).ok())
        .find(|state| state.plugin == plugin && state.key == key)
        .map(|state| state.value)
}

impl StoreJournal {
    /// The value `plugin` last stored under `key` on the selected branch
    /// ([`plugin_state`]): looked for in the part a leaf-opened session
    /// holds first, and in the whole session only when it is not there.
    ///
    /// A key the session's summary rules out ([`Summary::may_hold_state`]:
    /// no entry of it was ever written) is answered without reading the
    /// session; one that it does not rule out and the opened part does not
    /// hold loads the session whole, and the summary learns every key the
    /// session holds, so the next resume rules out the rest.
    pub fn plugin_state(&self, plugin: &str, key: &str) -> Option<String> {
        if let Some(value) = self.with_opened(|s| plugin_state(s, plugin, key)) {
            return Some(value);
        }
        if !self.opened_at_leaf() || !lock(&self.summary).may_hold_state(plugin, key) {
            return None;
        }
        let (value, keys) = self.with_session(|s| (plugin_state(s, plugin, key), state_keys(s)));
        if lock(&self.summary).state_keys.is_none() {
            self.note(true, |summary| summary.state_keys = Some(keys));
        }
        value
    }
}

impl StoreJournal {
    /// Records each of `registrations` the session's selected branch does
    /// not hold yet (the same fingerprint under the same key) as a *secret
    /// registration* entry, under the selected leaf: its content is
    /// [`Registration::to_cbor`] — name, source, fingerprint, key id, never
    /// the value. Returns how many were written.
    ///
    /// # Errors
    ///
    /// When the entries cannot be written.
    pub fn record_secret_registrations<'a>(
        &self,
        registrations: impl IntoIterator<Item = &'a Registration>,
    ) -> Result<usize, JournalError> {
        // Checked against the entries the journal holds without loading the
        // whole session: a registration older than a leaf-opened part is
        // recorded again (one small entry), never a full load per resume.
        let known = self.with_opened(secret_registrations);
        let contents: Vec<Vec<u8>> = registrations
            .into_iter()
            .filter(|r| {
                !known
                    .iter()
                    .any(|k| k.fingerprint == r.fingerprint && k.key == r.key)
            })
            .map(Registration::to_cbor)
            .collect();
        if contents.is_empty() {
            return Ok(0);
        }
        let entries: Vec<NewEntry<'_>> = contents
            .iter()
            .map(|content| NewEntry::new(EntryKind::SecretRegistration, content))
            .collect();
        self.append("secret registration", &entries)?;
        Ok(contents.len())
    }
}

/// Every plugin and key with a `plugin_state` entry anywhere in `session`
/// (every branch), each once: what [`Summary::state_keys`] holds. Only
/// `metadata` entries are decoded; one this build cannot read is skipped.
pub fn state_keys(session: &Session) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for record in session.records() {
        if record.entry_kind() != EntryKind::Metadata {
            continue;
        }
        let Some(state) = decode_json(session, record)
            .ok()
            .filter(|v| field(v, "type") == "plugin_state")
            .and_then(|v| serde_json::from_value::<PluginState>(v).ok())
        else {
            continue;
        };
        if !keys
            .iter()
            .any(|(p, k)| *p == state.plugin && *k == state.key)
        {
            keys.push((state.plugin, state.key));
        }
    }
    keys
}

/// The secret registrations on the selected branch of `session`, oldest
/// first; an entry this build cannot read as one is skipped.
pub fn secret_registrations(session: &Session) -> Vec<Registration> {
    session
        .branch()
        .iter()
        .filter(|r| r.entry_kind() == EntryKind::SecretRegistration)
        .filter_map(|record| Registration::from_cbor(&session.content(record).ok()?).ok())
        .collect()
}

/// The plugin intents kept on the selected branch of `session`, oldest
/// first.
///
/// # Errors
///
/// When an entry's content cannot be decoded; the error names the entry.
pub fn plugin_intents(session: &Session) -> Result<Vec<PluginIntent>, JournalError> {
    entries_of(session, EntryKind::PluginIntent, "a plugin intent")
}

/// Every entry of `kind` on the selected branch of `session`, oldest
/// first, decoded as `T`; `what` names the kind in errors ("a plugin
/// intent").
fn entries_of<T: serde::de::DeserializeOwned>(
    session: &Session,
    kind: EntryKind,
    what: &str,
) -> Result<Vec<T>, JournalError> {
    session
        .branch()
        .iter()
        .filter(|r| r.entry_kind() == kind)
        .map(|record| {
            let value = decode_json(session, record)?;
            serde_json::from_value(value).map_err(|err| {
                JournalError::new(format!(
                    "session entry {} is not {what} this build understands: {err}",
                    record.id
                ))
            })
        })
        .collect()
}

fn json_content(value: &impl serde::Serialize, what: &str) -> Result<Vec<u8>, JournalError> {
    let value = serde_json::to_value(value).map_err(|err| {
        JournalError::new(format!("the {what} could not be projected to JSON: {err}"))
    })?;
    canonical_cbor(&value)
}

/// A message's content: its JSON projection plus the non-empty fields of
/// its [`MessageMeta`] (`usage`, `status`, `effect_id`) as extra keys, which
/// message readers ignore.
fn message_content(message: &Message, meta: &MessageMeta) -> Result<Vec<u8>, JournalError> {
    message_cbor(message_value(message, meta)?, message)
}

/// A tool result's content that refers to the output of effect `fx-n` for
/// its text instead of repeating it: the message's content without
/// `content`, with `"content_ref": "fx-n"` (docs/session-format.md §4.1).
fn result_ref_content(
    message: &Message,
    meta: &MessageMeta,
    n: u64,
) -> Result<Vec<u8>, JournalError> {
    let mut value = message_value(message, meta)?;
    if let serde_json::Value::Object(map) = &mut value {
        map.remove("content");
        map.insert(
            smith_store::refs::CONTENT_REF.to_owned(),
            serde_json::Value::String(format!("fx-{n}")),
        );
    }
    message_cbor(value, message)
}

fn message_value(message: &Message, meta: &MessageMeta) -> Result<serde_json::Value, JournalError> {
    let mut value = serde_json::to_value(message).map_err(|err| {
        JournalError::new(format!("the message could not be projected to JSON: {err}"))
    })?;
    if let (serde_json::Value::Object(map), Ok(serde_json::Value::Object(extra))) =
        (&mut value, serde_json::to_value(meta))
    {
        map.extend(extra);
    }
    Ok(value)
}

fn message_cbor(value: serde_json::Value, message: &Message) -> Result<Vec<u8>, JournalError> {
    let cbor = canonical_cbor(&value)?;
    if message.media().is_empty() {
        return Ok(cbor);
    }
    media_as_byte_strings(&cbor)
}

/// Rewrites the `data` of each part in a message's `media` list from its
/// JSON spelling (`{"$bytes": "<base64url>"}`) to the CBOR byte string it
/// stands for, so a session file holds media bytes as they are.
fn media_as_byte_strings(cbor: &[u8]) -> Result<Vec<u8>, JournalError> {
    use smith_codec::{Limits, Mode, Value};
    let fail = |why: String| {
        JournalError::new(format!(
            "the message's media could not be written as CBOR byte strings: {why}"
        ))
    };
    let mut value =
        Value::decode(cbor, Mode::Strict, Limits::default()).map_err(|e| fail(e.to_string()))?;
    let key = |v: &Value, name: &str| matches!(v, Value::Text(t) if t == name);
    if let Value::Map(pairs) = &mut value {
        for (_, parts) in pairs.iter_mut().filter(|(k, _)| key(k, "media")) {
            let Value::Array(parts) = parts else { continue };
            for part in parts {
                let Value::Map(fields) = part else { continue };
                for (_, data) in fields.iter_mut().filter(|(k, _)| key(k, "data")) {
                    let bytes = match data {
                        Value::Map(spelled) => match spelled.as_slice() {
                            [(k, Value::Text(text))]
                                if key(k, smith_contract::media::BYTES_KEY) =>
                            {
                                smith_contract::media::decode_base64(text)
                                    .ok_or_else(|| fail("a part's data is not base64url".into()))?
                            }
                            _ => continue,
                        },
                        _ => continue,
                    };
                    *data = Value::Bytes(bytes);
                }
            }
        }
    }
    value.to_cbor().map_err(|e| fail(e.to_string()))
}

/// Intent content: a canonical map (keys in bytewise order of their
/// encodings: shorter keys first).
fn intent_content(intent: &EffectIntent, by_ref: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(intent.input.len() + 96);
    {
        let mut e = Encoder::new(&mut out);
        e.map(5).str("tool").str(&intent.tool);
        if !by_ref {
            e.str("input").raw(&intent.input);
        }
        e.str("parent")
            .str(&intent.parent)
            .str("effect_id")
            .str(&intent.effect_id);
        if by_ref {
            // Canonical order is shorter keys first: `arguments_ref` (13
            // bytes) after `effect_id` (9), before `plugin_generation` (17).
            e.str(smith_store::refs::ARGUMENTS_REF).bool(true);
        }
        e.str("plugin_generation")
            .u64(u64::from(intent.plugin_generation));
    }
    out
}

fn completion_content(completion: &EffectCompletion) -> Vec<u8> {
    let mut out = Vec::with_capacity(completion.output.len() + 96);
    Encoder::new(&mut out)
        .map(4)
        .str("output")
        .raw(&completion.output)
        .str("outcome")
        .str(completion.outcome.as_str())
        .str("mutation")
        .str(completion.mutation.as_str())
        .str("effect_id")
        .str(&completion.effect_id);
    out
}

fn pairing_of(effect_id: &str) -> Result<u64, JournalError> {
    effect_number(effect_id).ok_or_else(|| {
        JournalError::new(format!(
            "effect id {effect_id:?} is not of the form fx-N, so it cannot be paired in the session store; this is a defect in the caller"
        ))
    })
}

impl StoreJournal {
    /// Remembers each completion's output text and entry id until its
    /// tool result is recorded, which then refers to it instead of
    /// repeating it.
    fn note_outputs(&self, completions: &[EffectCompletion], ids: &[u64]) {
        let mut written = lock(&self.written);
        for (completion, &id) in completions.iter().zip(ids) {
            let (Some(n), Some(text)) = (
                effect_number(&completion.effect_id),
                smith_store::refs::output_text(&completion.output),
            ) else {
                continue;
            };
            written.outputs.insert(n, (id, text.to_owned()));
        }
    }

    /// The effect a tool result about to be recorded can refer to for its
    /// text: the one its meta names, when this journal recorded its
    /// completion with exactly that output text and a reader walking back
    /// from the result finds that very completion first.
    fn output_ref(&self, content: &str, meta: &MessageMeta) -> Option<u64> {
        let n = effect_number(meta.effect_id.as_deref()?)?;
        let (id, text) = lock(&self.written).outputs.remove(&n)?;
        if text != content {
            return None;
        }
        let session = lock(&self.session);
        let leaf = session.leaf()?;
        let index = smith_store::refs::index_of(&session, leaf)?;
        let found = smith_store::refs::completion_from(&session, index, n)?;
        (found.id == id).then_some(n)
    }
}

impl StoreJournal {
    /// For each intent about to be appended (in one batch, under the
    /// current leaf), whether it can refer to its call's arguments
    /// instead of repeating them: its parent is a call of the assistant
    /// message this journal wrote last, the first call of that id there,
    /// with exactly these arguments, and that message is the nearest
    /// assistant message a reader walking back from the intent meets.
    fn arguments_refs(&self, intents: &[EffectIntent]) -> Vec<bool> {
        // Copied out: the session's lock is never taken under this one.
        let Some((message, calls)) = lock(&self.written).calls.clone() else {
            return vec![false; intents.len()];
        };
        let nearest = {
            let session = lock(&self.session);
            session
                .leaf()
                .and_then(|leaf| smith_store::refs::index_of(&session, leaf))
                .and_then(|index| smith_store::refs::message_from(&session, index))
                .map(|r| r.id)
        };
        if nearest != Some(message) {
            return vec![false; intents.len()];
        }
        intents
            .iter()
            .map(|intent| {
                calls
                    .iter()
                    .find(|(id, _)| *id == intent.parent)
                    .is_some_and(|(_, arguments)| *arguments == intent.input)
            })
            .collect()
    }
}

impl EffectJournal for StoreJournal {
    fn record_intent(&self, intent: &EffectIntent) -> Result<(), JournalError> {
        let by_ref = self.arguments_refs(std::slice::from_ref(intent));
        let content = intent_content(intent, by_ref[0]);
        let mut entry = NewEntry::new(EntryKind::EffectIntent, &content);
        entry.pairing = pairing_of(&intent.effect_id)?;
        self.append("effect intent", &[entry])
    }

    fn record_completion(&self, completion: &EffectCompletion) -> Result<(), JournalError> {
        let content = completion_content(completion);
        let mut entry = NewEntry::new(EntryKind::EffectCompletion, &content);
        entry.pairing = pairing_of(&completion.effect_id)?;
        let ids = self.append_ids("effect completion", &[entry])?;
        self.note_outputs(std::slice::from_ref(completion), &ids);
        Ok(())
    }

    fn record_intents(&self, intents: &[EffectIntent]) -> Result<(), JournalError> {
        if intents.is_empty() {
            return Ok(());
        }
        let by_ref = self.arguments_refs(intents);
        let contents: Vec<Vec<u8>> = intents
            .iter()
            .zip(by_ref)
            .map(|(intent, by_ref)| intent_content(intent, by_ref))
            .collect();
        let entries = intents
            .iter()
            .zip(&contents)
            .map(|(intent, content)| {
                let mut entry = NewEntry::new(EntryKind::EffectIntent, content);
                entry.pairing = pairing_of(&intent.effect_id)?;
                Ok(entry)
            })
            .collect::<Result<Vec<_>, JournalError>>()?;
        self.append("effect intents", &entries)
    }

    fn record_completions(&self, completions: &[EffectCompletion]) -> Result<(), JournalError> {
        if completions.is_empty() {
            return Ok(());
        }
        let contents: Vec<Vec<u8>> = completions.iter().map(completion_content).collect();
        let entries = completions
            .iter()
            .zip(&contents)
            .map(|(completion, content)| {
                let mut entry = NewEntry::new(EntryKind::EffectCompletion, content);
                entry.pairing = pairing_of(&completion.effect_id)?;
                Ok(entry)
            })
            .collect::<Result<Vec<_>, JournalError>>()?;
        let ids = self.append_ids("effect completions", &entries)?;
        self.note_outputs(completions, &ids);
        Ok(())
    }

    fn record_vcs(&self, record: &VcsRecord) -> Result<(), JournalError> {
        let content = json_content(record, "VCS operation")?;
        let mut entry = NewEntry::new(EntryKind::VcsOperation, &content);
        entry.pairing = record
            .effect_id
            .as_deref()
            .and_then(effect_number)
            .unwrap_or(0);
        self.append("VCS operation", &[entry])
    }
}

/// The user prompts and VCS operations on the selected branch of
/// `session`, oldest first, each with its entry id: what
/// [`crate::checkpoint::turns`] groups into turns and
/// [`crate::checkpoint::rewind`] rewinds over.
///
/// # Errors
///
/// When an entry's content cannot be decoded; the error names the entry.
pub fn timeline(session: &Session) -> Result<Vec<Step>, JournalError> {
    let mut out = Vec::new();
    for record in session.branch() {
        match record.entry_kind() {
            EntryKind::UserMessage => {
                let value = decode_json(session, record)?;
                out.push(Step::Prompt {
                    entry: record.id,
                    parent: record.parent,
                    text: field(&value, "text").to_owned(),
                });
            }
            EntryKind::VcsOperation => {
                let value = decode_json(session, record)?;
                let vcs = serde_json::from_value(value).map_err(|err| {
                    JournalError::new(format!(
                        "session entry {} is not a VCS operation this build understands: {err}",
                        record.id
                    ))
                })?;
                out.push(Step::Vcs {
                    entry: record.id,
                    record: Box::new(vcs),
                });
            }
            _ => {}
        }
    }
    Ok(out)
}

impl StoreJournal {
    /// Selects entry `entry` as the session's leaf (a leaf-switch entry
    /// under it), so what is recorded next continues a new branch from
    /// there; the old branch stays. Returns the leaf-switch entry's id.
    ///
    /// # Errors
    ///
    /// When the entry is not part of the session or the store cannot write.
    pub fn select_leaf(&self, entry: u64) -> Result<u64, JournalError> {
        let mut session = self.whole();
        self.store
            .select_leaf(&mut session, entry, None)
            .map_err(|err| store_error("leaf switch", err))
    }
}

/// The VCS operations on the selected branch of `session`, oldest first.
///
/// # Errors
///
/// When an entry's content cannot be decoded; the error names the entry.
pub fn vcs_records(session: &Session) -> Result<Vec<VcsRecord>, JournalError> {
    entries_of(session, EntryKind::VcsOperation, "a VCS operation")
}

impl SessionSink for StoreJournal {
    fn record(&self, event: &SessionEvent) -> Result<(), JournalError> {
        match event {
            SessionEvent::Compaction { compaction } => {
                let content = json_content(compaction, "compaction")?;
                let pairing = self.first_kept(compaction.kept_heads)?;
                let mut entry = NewEntry::new(EntryKind::Compaction, &content);
                entry.pairing = pairing;
                self.append("compaction", &[entry])
            }
            SessionEvent::ModelChange { provider, model } => {
                let content = json_content(
                    &serde_json::json!({"provider": provider, "model": model}),
                    "model change",
                )?;
                self.append(
                    "model change",
                    &[NewEntry::new(EntryKind::ModelChange, &content)],
                )
            }
            SessionEvent::Message { message, meta } => {
                // A tool result's content is built below: in full, or
                // referring to its effect's output.
                let content = if matches!(message, Message::ToolResult { .. }) {
                    Vec::new()
                } else {
                    message_content(message, meta)?
                };
                match message {
                    Message::User { text, .. } => {
                        self.append(
                            "user message",
                            &[NewEntry::new(EntryKind::UserMessage, &content)],
                        )?;
                        self.note(false, |s| {
                            s.messages += 1;
                            s.note_prompt(text);
                        });
                        Ok(())
                    }
                    Message::ToolResult {
                        call_id,
                        content: text,
                        ..
                    } => {
                        let content = match self.output_ref(text, meta) {
                            Some(n) => result_ref_content(message, meta, n)?,
                            None => message_content(message, meta)?,
                        };
                        let mut entry = NewEntry::new(EntryKind::ToolResult, &content);
                        entry.pairing = call_pairing(call_id);
                        self.append("tool result", &[entry])
                    }
                    Message::Assistant { .. } => {
                        // Each call entry refers to the arguments in the
                        // message (written right before it, in the same
                        // append) unless an earlier call of the message
                        // has the same id (a reader takes the first).
                        let calls: Vec<(u64, Vec<u8>)> = message
                            .tool_calls()
                            .map(|call| {
                                let first = message.tool_calls().find(|c| c.id == call.id);
                                let content = if first.is_some_and(|c| std::ptr::eq(c, call)) {
                                    json_content(
                                        &serde_json::json!({
                                            "id": call.id,
                                            "name": call.name,
                                            (smith_store::refs::ARGUMENTS_REF): true,
                                        }),
                                        "tool call",
                                    )?
                                } else {
                                    json_content(call, "tool call")?
                                };
                                Ok((call_pairing(&call.id), content))
                            })
                            .collect::<Result<_, JournalError>>()?;
                        let arguments = message
                            .tool_calls()
                            .map(|call| Ok((call.id.clone(), canonical_cbor(&call.arguments)?)))
                            .collect::<Result<Vec<_>, JournalError>>()?;
                        let mut entries = Vec::with_capacity(1 + calls.len());
                        entries.push(NewEntry::new(EntryKind::AssistantMessage, &content));
                        for (pairing, content) in &calls {
                            let mut entry = NewEntry::new(EntryKind::ToolCall, content);
                            entry.pairing = *pairing;
                            entries.push(entry);
                        }
                        // One append: the message and its calls are durable together.
                        let ids = self.append_ids("assistant message", &entries)?;
                        if let Some(&id) = ids.first() {
                            lock(&self.written).calls = Some((id, arguments));
                        }
                        self.note(false, |s| s.messages += 1);
                        Ok(())
                    }
                }
            }
        }
    }

    fn record_run(&self, record: &RunRecord) -> Result<(), JournalError> {
        self.record_run_entry(record)?;
        match record {
            RunRecord::RunStart(info) => self.note(true, |s| {
                s.cwd.get_or_insert_with(|| info.cwd.clone());
            }),
            RunRecord::RunEnd(end) => self.note(true, |s| s.note_run_end(end.cost)),
            RunRecord::Error(_) => {}
        }
        Ok(())
    }
}

impl StoreJournal {
    /// The id of the entry a compaction keeps first: the `kept_heads`-th
    /// user or assistant message entry back from the end of the branch,
    /// within the current boundary; 0 when nothing is kept.
    fn first_kept(&self, kept_heads: usize) -> Result<u64, JournalError> {
        if kept_heads == 0 {
            return Ok(0);
        }
        let session = lock(&self.session);
        let boundary = session.compaction_boundary();
        session.branch()[boundary..]
            .iter()
            .rev()
            .filter(|r| {
                matches!(
                    r.entry_kind(),
                    EntryKind::UserMessage | EntryKind::AssistantMessage
                )
            })
            .nth(kept_heads - 1)
            .map(|r| r.id)
            .ok_or_else(|| {
                JournalError::new(format!(
                    "the compaction keeps {kept_heads} user and assistant messages but the session's context has fewer; this is a defect — the session was left unchanged"
                ))
            })
    }

    fn record_run_entry(&self, record: &RunRecord) -> Result<(), JournalError> {
        let RunRecord::RunStart(info) = record else {
            if matches!(record, RunRecord::RunEnd(_)) {
                // Outputs whose results were never recorded (the run
                // failed first) are not referred to any more.
                lock(&self.written).outputs.clear();
            }
            let content = json_content(record, "run record")?;
            return self.append(
                "run record",
                &[NewEntry::new(EntryKind::Metadata, &content)],
            );
        };
        let system = info
            .system
            .as_ref()
            .map(|s| canonical_cbor(&serde_json::Value::String(s.clone())))
            .transpose()?;
        let tools = canonical_cbor(&serde_json::to_value(&info.tools).map_err(|err| {
            JournalError::new(format!(
                "the run's tool list could not be projected to JSON: {err}"
            ))
        })?)?;
        // Definitions that cannot be read back are written in full.
        let previous = self.previous_defs().ok().flatten().unwrap_or_default();
        let mut value = serde_json::to_value(record).map_err(|err| {
            JournalError::new(format!(
                "the run record could not be projected to JSON: {err}"
            ))
        })?;
        let mut unchanged = serde_json::Map::new();
        // Each definition equal to the previous run start's is kept there:
        // its holder's id and digest stand for it.
        let mut keep =
            |key: &str, now: Option<&Vec<u8>>, before: &Option<(u64, Vec<u8>)>| match (now, before)
            {
                (Some(now), Some((holder, before))) if now == before => {
                    unchanged.insert(
                        key.to_owned(),
                        serde_json::json!({"entry": holder, "digest": digest(now)}),
                    );
                    Some(*holder)
                }
                _ => None,
            };
        let system_kept = keep("system", system.as_ref(), &previous.system);
        let tools_kept = keep("tools", Some(&tools), &previous.tools);
        if let serde_json::Value::Object(map) = &mut value
            && !unchanged.is_empty()
        {
            for key in unchanged.keys() {
                map.remove(key);
            }
            map.insert(UNCHANGED.to_owned(), serde_json::Value::Object(unchanged));
        }
        let content = canonical_cbor(&value)?;
        let ids = self.append_ids(
            "run record",
            &[NewEntry::new(EntryKind::Metadata, &content)],
        )?;
        if let Some(&id) = ids.first() {
            let defs = RunDefs {
                system: system.map(|cbor| (system_kept.unwrap_or(id), cbor)),
                tools: Some((tools_kept.unwrap_or(id), tools)),
            };
            lock(&self.written).defs = Some((id, defs));
        }
        Ok(())
    }

    /// The definitions of the newest run start on the selected branch:
    /// those this journal wrote last when that is still it, else read (and
    /// resolved) from the session; `None` before any run start.
    fn previous_defs(&self) -> Result<Option<RunDefs>, JournalError> {
        let session = lock(&self.session);
        let Some((record, value)) = newest_run_start(&session) else {
            return Ok(None);
        };
        if let Some((id, defs)) = &lock(&self.written).defs
            && *id == record.id
        {
            return Ok(Some(defs.clone()));
        }
        let mut value = value;
        let [system_at, tools_at] = resolve_definitions(&session, &record, &mut value)?;
        let cbor_of = |key: &str, holder: Option<u64>| -> Result<_, JournalError> {
            match (holder, value.get(key)) {
                (Some(holder), Some(definition)) => Ok(Some((holder, canonical_cbor(definition)?))),
                _ => Ok(None),
            }
        };
        Ok(Some(RunDefs {
            system: cbor_of("system", system_at)?,
            tools: cbor_of("tools", tools_at)?,
        }))
    }
}

/// A session read back for resuming or inspection.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resumed {
    /// The conversation on the selected branch, oldest first.
    pub history: Vec<Message>,
    /// The effects on the branch whose intent has no completion (their
    /// outcome is unknown: they may or may not have happened), in intent
    /// order. A completion is matched by its record's pairing alone; its
    /// content (a whole tool output) is never read on resume.
    pub unknown_effects: Vec<String>,
    /// The highest effect number recorded (new effects continue after it).
    pub last_effect_seq: u64,
    /// The last recorded `(provider, model)`.
    pub model: Option<(String, String)>,
    /// Each history message's recorded meta (usage, tool status, effect
    /// id), index for index with `history`.
    pub meta: Vec<MessageMeta>,
    /// The newest compaction on the branch, whose summary is `history[0]`.
    pub compaction: Option<CompactionRecord>,
    /// When a byte budget cut the history (see [`resume_within`]): how many
    /// messages after the newest compaction (or from the start) were left
    /// undecoded, oldest first, and their content bytes. They are still in
    /// the session; the first compaction says it left them out.
    pub omitted: Option<(usize, u64)>,
}

/// The summary a journal starts from: the session's sidecar, or, for a
/// session that has none (recorded before sidecars, or its sidecar lost),
/// one read from its entries — the runtime has loaded them anyway — and
/// written, so the next listing shows it.
fn initial_summary(store: &Store, session: &Session) -> Summary {
    if let Some(summary) = store.summary(session.id()) {
        return summary;
    }
    if session.opened_at_leaf() {
        // The opened part does not hold the session's first prompt and
        // counts: read them from the whole session, once (the sidecar is
        // written, so the next resume finds it).
        return match store.load(&session.id().to_hex()) {
            Ok(whole) => initial_summary(store, &whole),
            Err(_) => Summary::default(),
        };
    }
    let mut summary = Summary {
        state_keys: Some(Vec::new()),
        ..Summary::default()
    };
    for record in session.records() {
        match record.entry_kind() {
            EntryKind::UserMessage => {
                summary.messages += 1;
                if summary.first_prompt.is_none()
                    && let Ok(value) = decode_json(session, record)
                {
                    summary.note_prompt(field(&value, "text"));
                }
            }
            EntryKind::AssistantMessage => summary.messages += 1,
            EntryKind::Metadata => {
                let Ok(value) = decode_json(session, record) else {
                    continue;
                };
                match field(&value, "type") {
                    "run_start" if summary.cwd.is_none() => {
                        summary.cwd = Some(field(&value, "cwd").to_owned());
                    }
                    "run_end" => {
                        summary.note_run_end(value.get("cost").and_then(serde_json::Value::as_f64));
                    }
                    "plugin_state" => {
                        summary.note_state_key(field(&value, "plugin"), field(&value, "key"));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if !session.records().is_empty() {
        let _ = store.write_summary(session.id(), &summary);
    }
    summary
}

/// An entry's content (decompressed when stored compressed).
fn entry_content<'s>(
    session: &'s Session,
    record: &smith_store::Record,
) -> Result<std::borrow::Cow<'s, [u8]>, JournalError> {
    session.content(record).map_err(|err| {
        JournalError::new(format!(
            "session entry {} ({:?}) could not be read: {err}",
            record.id,
            record.entry_kind()
        ))
    })
}

/// One entry's content as JSON, for readers outside the engine: exports
/// and statistics. What the entry refers to is resolved (a tool result's
/// output text, a run start's unchanged definitions; see
/// [`decode_json`]), so the value is the one an entry written in full
/// gives; `smith session dump` shows the entry as stored.
///
/// # Errors
///
/// When the content cannot be read or is not valid canonical CBOR; the
/// error names the entry.
pub fn entry_json(
    session: &Session,
    record: &smith_store::Record,
) -> Result<serde_json::Value, JournalError> {
    decode_json(session, record)
}

/// One entry's content as JSON, with what it refers to resolved
/// (docs/session-format.md §4.1): a tool result's `content_ref` replaced by
/// the text of its effect's output, a run start's `unchanged` definitions
/// by those of the earlier run start that holds them. The value is the
/// one an entry written in full would give.
///
/// # Errors
///
/// As [`entry_json`]; a run start whose definitions cannot be found.
pub(crate) fn decode_json(
    session: &Session,
    record: &smith_store::Record,
) -> Result<serde_json::Value, JournalError> {
    let mut value = decode_raw(session, record)?;
    match record.entry_kind() {
        EntryKind::ToolResult => resolve_result(session, record, &mut value)?,
        EntryKind::Metadata => resolve_run_start(session, record, &mut value)?,
        EntryKind::ToolCall | EntryKind::EffectIntent => {
            resolve_arguments(session, record, &mut value)?;
        }
        _ => {}
    }
    Ok(value)
}

/// The key of a run start's definitions that are not repeated: a map from
/// `system` and `tools` to the [`digest`] of the value they have.
pub const UNCHANGED: &str = "unchanged";

/// The digest a run start's `unchanged` map gives for a definition: 16
/// lowercase hex digits of the 64-bit FNV-1a hash of the definition's
/// canonical CBOR. It identifies which earlier definition is meant and
/// lets a reader check it found that one; it is not a security measure.
pub fn digest(cbor: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in cbor {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The text a tool result shows when the output it refers to is not in
/// the session (its completion entry was lost with a damaged frame).
pub fn missing_output(effect: u64) -> String {
    format!(
        "[the output of effect fx-{effect} is not in this session: its effect completion entry, which holds it, is missing or damaged; `smith session info` counts damaged frames]"
    )
}

/// Replaces a tool result's `content_ref` by the text of the output it
/// names (see [`smith_store::refs`]). A result without one is unchanged.
///
/// # Errors
///
/// When the completion's content cannot be read.
pub fn resolve_result(
    session: &Session,
    record: &smith_store::Record,
    value: &mut serde_json::Value,
) -> Result<(), JournalError> {
    let serde_json::Value::Object(map) = value else {
        return Ok(());
    };
    let Some(effect) = map
        .get(smith_store::refs::CONTENT_REF)
        .and_then(serde_json::Value::as_str)
        .and_then(effect_number)
    else {
        return Ok(());
    };
    let completion = smith_store::refs::index_of(session, record)
        .and_then(|index| smith_store::refs::completion_before(session, index, effect));
    let text = match completion {
        Some(completion) => {
            let content = entry_content(session, completion)?;
            smith_store::refs::output_content(&content)
                .map_or_else(|| missing_output(effect), str::to_owned)
        }
        None => missing_output(effect),
    };
    map.remove(smith_store::refs::CONTENT_REF);
    map.insert("content".to_owned(), serde_json::Value::String(text));
    Ok(())
}

/// Replaces a tool call entry's or an effect intent's `arguments_ref` by
/// the arguments it names (see [`smith_store::refs`]): those of the call
/// the entry is about (a tool call's `id`, an intent's `parent`) in the
/// nearest assistant message among its ancestors, as the tool call's
/// `arguments` or the intent's `input`. An entry without one is
/// unchanged. Arguments that cannot be found (the message was lost with
/// a damaged frame, or does not hold the call) read as `null`.
///
/// # Errors
///
/// When the assistant message's content cannot be read.
pub fn resolve_arguments(
    session: &Session,
    record: &smith_store::Record,
    value: &mut serde_json::Value,
) -> Result<(), JournalError> {
    let into = match record.entry_kind() {
        EntryKind::ToolCall => "arguments",
        EntryKind::EffectIntent => "input",
        _ => return Ok(()),
    };
    let serde_json::Value::Object(map) = value else {
        return Ok(());
    };
    if map.get(smith_store::refs::ARGUMENTS_REF) != Some(&serde_json::Value::Bool(true)) {
        return Ok(());
    }
    let call = map
        .get(if into == "input" { "parent" } else { "id" })
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let message = smith_store::refs::index_of(session, record)
        .and_then(|index| smith_store::refs::message_before(session, index));
    let arguments = match message {
        Some(message) => {
            let mut message = decode_raw(session, message)?;
            message
                .get_mut("content")
                .and_then(serde_json::Value::as_array_mut)
                .and_then(|blocks| {
                    blocks.iter_mut().find(|b| {
                        field(b, "type") == "tool_call" && field(b, "id") == call.as_str()
                    })
                })
                .and_then(|block| block.get_mut("arguments"))
                .map(serde_json::Value::take)
        }
        None => None,
    };
    map.remove(smith_store::refs::ARGUMENTS_REF);
    map.insert(
        into.to_owned(),
        arguments.unwrap_or(serde_json::Value::Null),
    );
    Ok(())
}

/// Fills a run start's `unchanged` definitions (`system`, `tools`) from
/// the earlier run start that holds each in full, and removes the
/// `unchanged` key; other metadata is left as it is. Each definition names
/// its holder's entry id and digest (`{"entry": N, "digest": D}`): the
/// holder is looked up by id; when that entry is not a run start holding
/// a definition with that digest (a copy that renumbered entries), the
/// nearest earlier run start on the branch that does is used.
///
/// # Errors
///
/// When no earlier run start on the branch holds a definition with that
/// digest (the session was cut or rewritten without it); the error names
/// the entry and the definition.
pub fn resolve_run_start(
    session: &Session,
    record: &smith_store::Record,
    value: &mut serde_json::Value,
) -> Result<(), JournalError> {
    resolve_definitions(session, record, value).map(|_| ())
}

/// [`resolve_run_start`], returning the id of the entry holding each
/// definition (`system`, `tools`) in full: the run start itself for those
/// it holds.
fn resolve_definitions(
    session: &Session,
    record: &smith_store::Record,
    value: &mut serde_json::Value,
) -> Result<[Option<u64>; 2], JournalError> {
    let serde_json::Value::Object(map) = value else {
        return Ok([None, None]);
    };
    if map.get("type").and_then(serde_json::Value::as_str) != Some("run_start") {
        return Ok([None, None]);
    }
    let mut holders = [
        map.contains_key("system").then_some(record.id),
        map.contains_key("tools").then_some(record.id),
    ];
    let Some(serde_json::Value::Object(unchanged)) = map.remove(UNCHANGED) else {
        return Ok(holders);
    };
    let holds = |r: &smith_store::Record, key: &str, wanted: &str| -> Option<serde_json::Value> {
        if r.entry_kind() != EntryKind::Metadata {
            return None;
        }
        let mut earlier = decode_raw(session, r).ok()?;
        if field(&earlier, "type") != "run_start" {
            return None;
        }
        let definition = earlier.get_mut(key)?.take();
        (digest(&canonical_cbor(&definition).ok()?) == wanted).then_some(definition)
    };
    for (key, reference) in unchanged {
        let wanted = field(&reference, "digest");
        let direct = reference
            .get("entry")
            .and_then(serde_json::Value::as_u64)
            .and_then(|id| {
                let records = session.records();
                let i = records.binary_search_by_key(&id, |r| r.id).ok()?;
                holds(&records[i], &key, wanted).map(|d| (d, id))
            });
        let found = direct.or_else(|| {
            let index = smith_store::refs::index_of(session, record)?;
            session
                .ancestors(index)
                .skip(1)
                .find_map(|r| holds(r, &key, wanted).map(|d| (d, r.id)))
        });
        let Some((definition, holder)) = found else {
            return Err(JournalError::new(format!(
                "session entry {} (run start) keeps the {key} of an earlier run start (digest {wanted}), but no earlier run start on its branch holds it: the session was cut or rewritten without that entry; inspect it with `smith session dump`",
                record.id
            )));
        };
        holders[usize::from(key == "tools")] = Some(holder);
        map.insert(key, definition);
    }
    Ok(holders)
}

/// The newest run start on the selected branch and its content as
/// recorded (not resolved).
fn newest_run_start(session: &Session) -> Option<(smith_store::Record, serde_json::Value)> {
    session
        .branch()
        .iter()
        .rev()
        .filter(|r| r.entry_kind() == EntryKind::Metadata)
        .find_map(|r| {
            let value = decode_raw(session, r).ok()?;
            (field(&value, "type") == "run_start").then_some((*r, value))
        })
}

/// One entry's content as JSON, as it is stored.
fn decode_raw(
    session: &Session,
    record: &smith_store::Record,
) -> Result<serde_json::Value, JournalError> {
    let mut text = String::new();
    let content = entry_content(session, record)?;
    smith_codec::json::from_cbor(&content, &mut text).map_err(|err| {
        JournalError::new(format!(
            "session entry {} ({:?}) does not hold valid canonical CBOR: {err}; run `smith session repair` or inspect it with a dump",
            record.id,
            record.entry_kind()
        ))
    })?;
    serde_json::from_str(&text).map_err(|err| {
        JournalError::new(format!(
            "session entry {} could not be read as JSON: {err}",
            record.id
        ))
    })
}

/// The `outcome` and `mutation` fields of an effect completion entry, read
/// from its canonical CBOR map without decoding the rest. A field that is
/// missing or not one of the known words reads as an error outcome and an
/// unknown mutation (never "applied" by default).
fn completion_outcome(
    session: &Session,
    record: &smith_store::Record,
) -> Result<(Outcome, Mutation), JournalError> {
    let content = entry_content(session, record)?;
    let invalid = |err: smith_codec::DecodeError| {
        JournalError::new(format!(
            "session entry {} (effect completion) does not hold a valid canonical CBOR map: {err}; run `smith session repair` or inspect it with a dump",
            record.id
        ))
    };
    let mut d = smith_codec::Decoder::strict(&content);
    let (mut outcome, mut mutation) = (Outcome::Error, Mutation::Unknown);
    for _ in 0..d.map().map_err(invalid)? {
        let key = d.str().map_err(invalid)?;
        match key {
            "outcome" | "mutation" => {
                let value = match d.next().map_err(invalid)? {
                    smith_codec::Token::Text(t) => t,
                    _ => "",
                };
                if key == "outcome" {
                    outcome = match value {
                        "ok" => Outcome::Ok,
                        "cancelled" => Outcome::Cancelled,
                        _ => Outcome::Error,
                    };
                } else {
                    mutation = match value {
                        "applied" => Mutation::Applied,
                        "not-applied" => Mutation::NotApplied,
                        _ => Mutation::Unknown,
                    };
                }
            }
            _ => {
                d.skip().map_err(invalid)?;
            }
        }
    }
    Ok((outcome, mutation))
}

fn field<'a>(value: &'a serde_json::Value, key: &str) -> &'a str {
    value
        .get(key)
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
}

/// Checks that every entry a resume reads decodes as this build reads it
/// (messages, compactions, model changes, effect completions), on every
/// branch: what `smith session import` runs before publishing, so a session
/// that could not be resumed is refused with the entry named instead.
///
/// # Errors
///
/// The first entry that does not decode, named with what it should hold.
pub fn check_entries(session: &Session) -> Result<(), JournalError> {
    for record in session.records() {
        match record.entry_kind() {
            EntryKind::UserMessage | EntryKind::AssistantMessage | EntryKind::ToolResult => {
                let value = decode_json(session, record)?;
                serde_json::from_value::<Message>(value).map_err(|err| {
                    JournalError::new(format!(
                        "session entry {} ({:?}) is not a message this build understands: {err}",
                        record.id,
                        record.entry_kind()
                    ))
                })?;
            }
            EntryKind::Compaction => {
                let value = decode_json(session, record)?;
                serde_json::from_value::<CompactionRecord>(value).map_err(|err| {
                    JournalError::new(format!(
                        "session entry {} is not a compaction this build understands: {err}",
                        record.id
                    ))
                })?;
            }
            EntryKind::ModelChange => {
                let value = decode_json(session, record)?;
                if !value.is_object() || field(&value, "model").is_empty() {
                    return Err(JournalError::new(format!(
                        "session entry {} (model change) does not name a model",
                        record.id
                    )));
                }
            }
            EntryKind::EffectCompletion => {
                completion_outcome(session, record)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Reads the selected branch of `session`, every message after the newest
/// compaction decoded (see [`resume_within`] for a bounded read).
///
/// # Errors
///
/// When an entry's content cannot be decoded; the error names the entry.
pub fn resume(session: &Session) -> Result<Resumed, JournalError> {
    resume_within(session, None)
}

/// Whether an entry of `kind` is a conversation message.
fn is_message(kind: EntryKind) -> bool {
    matches!(
        kind,
        EntryKind::UserMessage | EntryKind::AssistantMessage | EntryKind::ToolResult
    )
}

/// How much longer than its pruned size a tool result may be: the note
/// pruning puts between its head and tail.
const PRUNE_NOTE_BYTES: u64 = 256;

/// The index of the first message [`resume_within`] decodes: the newest
/// messages after `boundary` whose content fits in `budget` bytes. A
/// message counts its decoded length (read from the records and the
/// compressed frames' headers, nothing decompressed), except a tool result,
/// which counts what compaction's first stage cuts it to
/// ([`PRUNED_RESULT_BYTES`] and a note), so the tail holds as much of the
/// conversation as a compaction of the whole history would summarize. The
/// decoded bytes are bounded all the same: at most four budgets of them.
/// When the budget cuts, the tail never begins on a tool result (its call
/// is left out) but at the next user or assistant message.
fn tail_start(session: &Session, boundary: usize, budget: u64) -> usize {
    let branch = session.branch();
    let (mut counted, mut decoded) = (0u64, 0u64);
    let most_decoded = budget.saturating_mul(4);
    let mut start = branch.len();
    let mut cut = false;
    for (index, record) in branch.iter().enumerate().skip(boundary).rev() {
        let kind = record.entry_kind();
        if is_message(kind) {
            let len = read_len(session, branch, index);
            let pruned = if kind == EntryKind::ToolResult {
                len.min(PRUNED_RESULT_BYTES as u64 + PRUNE_NOTE_BYTES)
            } else {
                len
            };
            counted = counted.saturating_add(pruned);
            decoded = decoded.saturating_add(len);
            if counted > budget || decoded > most_decoded {
                cut = true;
                break;
            }
        }
        start = index;
    }
    if !cut {
        return boundary;
    }
    while let Some(record) = branch.get(start)
        && !matches!(
            record.entry_kind(),
            EntryKind::UserMessage | EntryKind::AssistantMessage
        )
    {
        start += 1;
    }
    start
}

/// The length of the message at `index` of `branch` as read: its content's
/// length, and for a tool result that refers to its effect's output
/// (docs/session-format.md §4.1) that output's completion entry's too,
/// found from records alone (the result itself is small and read in
/// place; nothing is decompressed).
fn read_len(session: &Session, branch: &[smith_store::Record], index: usize) -> u64 {
    let record = &branch[index];
    let len = session.content_len(record) as u64;
    if record.entry_kind() != EntryKind::ToolResult {
        return len;
    }
    let Some(effect) = session
        .content_plain(record)
        .and_then(smith_store::refs::content_ref)
    else {
        return len;
    };
    let completion = branch[..index]
        .iter()
        .rev()
        .filter(|r| r.pairing == effect)
        .find(|r| {
            matches!(
                r.entry_kind(),
                EntryKind::EffectCompletion | EntryKind::EffectIntent
            )
        })
        .filter(|r| r.entry_kind() == EntryKind::EffectCompletion);
    len + completion.map_or(0, |c| session.content_len(c) as u64)
}

/// The newest model change on the selected branch: `(provider, model)`.
/// Reads one entry, found from the leaf back.
///
/// # Errors
///
/// When that entry's content cannot be decoded.
pub fn recorded_model(session: &Session) -> Result<Option<(String, String)>, JournalError> {
    let Some(record) = session
        .branch()
        .iter()
        .rev()
        .find(|r| r.entry_kind() == EntryKind::ModelChange)
    else {
        return Ok(None);
    };
    let value = decode_json(session, record)?;
    Ok(Some((
        field(&value, "provider").to_owned(),
        field(&value, "model").to_owned(),
    )))
}

/// Reads the selected branch of `session` for resuming, decoding at most
/// `budget` bytes of message content (`None`: every message after the
/// newest compaction). The messages that do not fit are the oldest; they
/// are counted in [`Resumed::omitted`] and never decoded, so the cost of a
/// resume grows with the budget (what the model's window can use) and not
/// with the history: the rest of the branch is walked as fixed-size records
/// only (effect pairing, the newest model change and compaction).
///
/// # Errors
///
/// When an entry's content cannot be decoded; the error names the entry.
pub fn resume_within(session: &Session, budget: Option<u64>) -> Result<Resumed, JournalError> {
    let mut out = Resumed::default();
    // Effect number to whether a completion was seen, in intent order: a
    // completion finds its intent in constant time, whatever the number of
    // effects, and is never decoded.
    let mut effect_index: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut effects: Vec<(u64, bool)> = Vec::new();
    let boundary = session.compaction_boundary();
    let newest_compaction = session
        .branch()
        .iter()
        .rposition(|r| r.entry_kind() == EntryKind::Compaction);
    let start = budget.map_or(boundary, |budget| tail_start(session, boundary, budget));
    let mut omitted = (0usize, 0u64);
    out.model = recorded_model(session)?;
    for (index, record) in session.branch().iter().enumerate() {
        match record.entry_kind() {
            EntryKind::Compaction if Some(index) == newest_compaction => {
                let value = decode_json(session, record)?;
                let compaction: CompactionRecord =
                    serde_json::from_value(value).map_err(|err| {
                        JournalError::new(format!(
                            "session entry {} is not a compaction this build understands: {err}",
                            record.id
                        ))
                    })?;
                out.history.insert(0, summary_message(&compaction.summary));
                out.meta.insert(0, MessageMeta::default());
                out.compaction = Some(compaction);
            }
            EntryKind::UserMessage | EntryKind::AssistantMessage | EntryKind::ToolResult
                if index < boundary => {}
            EntryKind::UserMessage | EntryKind::AssistantMessage | EntryKind::ToolResult
                if index < start =>
            {
                omitted.0 += 1;
                omitted.1 += read_len(session, session.branch(), index);
            }
            EntryKind::UserMessage | EntryKind::AssistantMessage | EntryKind::ToolResult => {
                let value = decode_json(session, record)?;
                out.meta
                    .push(serde_json::from_value(value.clone()).unwrap_or_default());
                let message: Message = serde_json::from_value(value).map_err(|err| {
                    JournalError::new(format!(
                        "session entry {} is not a message this build understands: {err}",
                        record.id
                    ))
                })?;
                out.history.push(message);
            }
            EntryKind::EffectIntent => {
                out.last_effect_seq = out.last_effect_seq.max(record.pairing);
                effect_index.insert(record.pairing, effects.len());
                effects.push((record.pairing, false));
            }
            EntryKind::EffectCompletion => {
                if let Some(&i) = effect_index.get(&record.pairing) {
                    effects[i].1 = true;
                }
            }
            _ => {}
        }
    }
    out.unknown_effects = effects
        .into_iter()
        .filter(|&(_, completed)| !completed)
        .map(|(n, _)| format!("fx-{n}"))
        .collect();
    out.omitted = (omitted.0 > 0).then_some(omitted);
    if out.compaction.is_some() || out.omitted.is_some() {
        // A result recorded after the boundary for a call that was
        // summarized (a repaired dangling call), or whose call the budget
        // left out, has no call in the context.
        let calls: std::collections::HashSet<String> = out
            .history
            .iter()
            .flat_map(|m| m.tool_calls().map(|c| c.id.clone()))
            .collect();
        let keep: Vec<bool> = out
            .history
            .iter()
            .map(|m| !matches!(m, Message::ToolResult { call_id, .. } if !calls.contains(call_id)))
            .collect();
        let mut flags = keep.iter();
        out.history.retain(|_| *flags.next().unwrap_or(&true));
        let mut flags = keep.iter();
        out.meta.retain(|_| *flags.next().unwrap_or(&true));
    }
    Ok(out)
}

/// How many entries a leaf-opened resume ([`resume_from_leaf`]) walks
/// past the point where the model's window is full, looking for what it
/// still needs (the newest compaction and the first entry it keeps, the
/// newest model change, the newest effect intent), before it gives up and
/// the session is loaded whole: some 75 MB of a session recorded the way
/// `smith eval` records one (about 1,150 bytes an entry).
pub const LEAF_LOOKBACK_ENTRIES: usize = 65_536;

/// Opens `file`'s session at its selected leaf and resumes it from there
/// ([`SessionFile::open_at_leaf`], then [`resume_within`] over the part
/// opened): the walk back from the leaf stops once it holds the newest
/// compaction and the first entry that compaction keeps (or the branch's
/// root), the newest model change and the newest effect intent, so the
/// resume reads the entries after the compaction boundary and no others,
/// whatever the session's size. `budget` gives the resume's byte budget
/// for the recorded model (`None` for a session with no model change),
/// as for [`resume_within`].
///
/// The result is the part opened (a session to record into: appends go
/// under its leaf) and the resume, which is the one [`resume_within`] makes
/// over the whole session, with one difference: the effects whose outcome
/// is unknown are those of the part opened, the effects recorded after the
/// newest compaction's boundary; an older one was reported by the resume
/// that came before that compaction.
///
/// `Ok(None)` when a resume from the leaf cannot vouch for its answer and
/// the session must be loaded whole: the file's end or a frame on the way
/// is damaged ([`SessionFile::open_at_leaf`]), the budget is unbounded
/// (`None`: every message after the compaction is decoded anyway), or
/// what the walk needs lies more than [`LEAF_LOOKBACK_ENTRIES`] entries
/// past the point where the window is full (a long session never
/// compacted, or one without effects or model changes).
///
/// # Errors
///
/// When an entry the resume reads cannot be decoded; the error names the
/// entry.
pub fn resume_from_leaf(
    file: &smith_store::SessionFile,
    limits: &smith_store::Limits,
    budget: &dyn Fn(Option<&str>) -> Option<u64>,
) -> Result<Option<(Session, Resumed)>, JournalError> {
    let mut walk = LeafWalk::default();
    let opened = file
        .open_at_leaf(limits, |session, record| walk.step(session, record, budget))
        .map_err(|err| {
            JournalError::new(format!(
                "session file {} could not be opened at its leaf: {err}",
                file.path().display()
            ))
        })?;
    if let Some(err) = walk.error {
        return Err(err);
    }
    let Some(session) = opened else {
        return Ok(None);
    };
    if session.opened_at_leaf() && !walk.complete() {
        return Ok(None);
    }
    let recorded = walk.model.flatten();
    let budget = budget(recorded.as_ref().map(|(_, model)| model.as_str()));
    if budget.is_none() && session.opened_at_leaf() {
        return Ok(None);
    }
    let resumed = resume_within(&session, budget)?;
    Ok(Some((session, resumed)))
}

/// What a leaf-opened resume's walk has found so far (see
/// [`resume_from_leaf`]), newest entry first.
#[derive(Default)]
struct LeafWalk {
    /// The newest model change: `Some(None)` once looked for and absent
    /// (never set here: the root ends the walk), `Some(Some(..))` found.
    model: Option<Option<(String, String)>>,
    /// The resume's budget, once the model is known.
    budget: Option<Option<u64>>,
    /// The id of the first entry the newest compaction keeps (0: none),
    /// once a compaction was walked over.
    kept: Option<u64>,
    /// The compaction boundary was reached: the compaction and the first
    /// entry it keeps are both in the part walked.
    boundary: bool,
    /// An effect intent was walked over (the newest carries the highest
    /// effect number: numbers only grow along a branch).
    intent: bool,
    /// Message content bytes walked over before the boundary: as the
    /// window counts them (a tool result at its pruned size), and whole.
    counted: u64,
    decoded: u64,
    /// Entries walked, and how many when the window was full.
    walked: usize,
    full_at: Option<usize>,
    /// An entry the walk had to read could not be.
    error: Option<JournalError>,
}

impl LeafWalk {
    /// Whether the walk holds what a resume needs.
    fn complete(&self) -> bool {
        self.boundary && self.intent && matches!(self.model, Some(Some(_)))
    }

    /// Takes in the next record back; `false` to stop the walk.
    fn step(
        &mut self,
        session: &Session,
        record: &smith_store::Record,
        budget: &dyn Fn(Option<&str>) -> Option<u64>,
    ) -> bool {
        self.walked += 1;
        let kind = record.entry_kind();
        match kind {
            EntryKind::ModelChange if self.model.is_none() => match decode_json(session, record) {
                Ok(value) => {
                    let model = (
                        field(&value, "provider").to_owned(),
                        field(&value, "model").to_owned(),
                    );
                    self.budget = Some(budget(Some(&model.1)));
                    self.model = Some(Some(model));
                }
                Err(err) => {
                    self.error = Some(err);
                    return false;
                }
            },
            EntryKind::Compaction if self.kept.is_none() => {
                self.kept = Some(record.pairing);
                self.boundary = record.pairing == 0;
            }
            EntryKind::EffectIntent => self.intent = true,
            _ => {}
        }
        if !self.boundary && self.kept.is_some_and(|kept| kept == record.id) {
            self.boundary = true;
        }
        if !self.boundary && self.kept.is_none() && is_message(kind) {
            let len = session.content_len(record) as u64;
            self.decoded = self.decoded.saturating_add(len);
            self.counted = self
                .counted
                .saturating_add(if kind == EntryKind::ToolResult {
                    len.min(PRUNED_RESULT_BYTES as u64 + PRUNE_NOTE_BYTES)
                } else {
                    len
                });
        }
        if self.complete() {
            return false;
        }
        match self.budget {
            // An unbounded resume decodes everything after the compaction:
            // the whole load serves it.
            Some(None) => return false,
            Some(Some(budget))
                if self.full_at.is_none()
                    && (self.counted > budget || self.decoded > budget.saturating_mul(4)) =>
            {
                self.full_at = Some(self.walked);
            }
            _ => {}
        }
        // Without a model change yet the window is not known: the walk
        // still gives up once it has gone as far past the start.
        let from = self.full_at.unwrap_or(0);
        if self.walked - from > LEAF_LOOKBACK_ENTRIES
            && (self.full_at.is_some() || self.model.is_none())
        {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::BUILTIN_GENERATION;
    use crate::provider::{ContentBlock, StopReason, ToolCall};

    #[test]
    fn secret_registrations_are_recorded_once_and_never_hold_the_value() {
        use smith_secrets::{FingerprintKey, Registry, Source};
        const VALUE: &str = "sk-test-registered-0123456789";
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.create(Some("s")).unwrap();
        let journal = StoreJournal::new(store.clone(), session);
        let mut registry = Registry::new(FingerprintKey::from_bytes([9; 32]));
        registry
            .register(
                "openai.api_key",
                VALUE,
                Source::Env("OPENAI_API_KEY".into()),
            )
            .unwrap();
        assert_eq!(
            journal
                .record_secret_registrations(registry.registrations())
                .unwrap(),
            1
        );
        // The same registration again (a resumed session): nothing new.
        assert_eq!(
            journal
                .record_secret_registrations(registry.registrations())
                .unwrap(),
            0
        );
        let loaded = store.load("s").unwrap();
        let records = secret_registrations(&loaded);
        assert_eq!(records.len(), 1);
        assert_eq!(Some(&records[0]), registry.get("openai.api_key"));
        let bytes = std::fs::read(store.path_of(loaded.id())).unwrap();
        assert!(
            !bytes.windows(VALUE.len()).any(|w| w == VALUE.as_bytes()),
            "the session file holds the value"
        );
    }

    #[test]
    fn the_newest_plugin_state_of_a_plugin_and_key_is_in_effect_after_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.create(Some("state")).unwrap();
        let journal = StoreJournal::new(store.clone(), session);
        let state = |plugin: &str, key: &str, value: &str| PluginState {
            plugin: plugin.to_owned(),
            key: key.to_owned(),
            value: value.to_owned(),
        };
        assert_eq!(
            journal.with_session(|s| plugin_state(s, "a/x", "list")),
            None
        );
        journal
            .record_plugin_state(&state("a/x", "list", "one"))
            .unwrap();
        journal
            .record_plugin_state(&state("a/y", "list", "other plugin"))
            .unwrap();
        journal
            .record_plugin_state(&state("a/x", "mode", "other key"))
            .unwrap();
        journal
            .record_plugin_state(&state("a/x", "list", "two"))
            .unwrap();
        // Newer metadata of another type is passed over.
        journal
            .record_plugin_limits(&PluginLimits {
                plugin: "a/x".to_owned(),
                dropped: Vec::new(),
            })
            .unwrap();
        let loaded = store.load("state").unwrap();
        assert_eq!(plugin_state(&loaded, "a/x", "list").as_deref(), Some("two"));
        assert_eq!(
            plugin_state(&loaded, "a/y", "list").as_deref(),
            Some("other plugin")
        );
        assert_eq!(
            plugin_state(&loaded, "a/x", "mode").as_deref(),
            Some("other key")
        );
        assert_eq!(plugin_state(&loaded, "a/z", "list"), None);
        // Resume skips the entries: they are not conversation.
        assert!(resume(&loaded).unwrap().history.is_empty());
    }

    #[test]
    fn media_is_written_as_cbor_byte_strings_and_resumes() {
        let png = include_bytes!("../../../tests/data/media-4x2.png");
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.create(Some("m")).unwrap();
        let journal = StoreJournal::new(store, session);
        let media = smith_contract::Media::new(smith_contract::MediaType::Png, png.to_vec())
            .named("shot.png");
        let message = Message::User {
            text: "look".into(),
            media: vec![media],
        };
        journal
            .record(&SessionEvent::Message {
                message: message.clone(),
                meta: MessageMeta::default(),
            })
            .unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.load("m").unwrap();
        let record = session
            .branch()
            .iter()
            .find(|r| r.kind == EntryKind::UserMessage.code())
            .unwrap();
        let content = session.content(record).unwrap();
        // A CBOR byte string: head 0x58 (one length byte), the length, the
        // bytes as they are in the file; no base64 anywhere.
        let mut head = vec![0x58, u8::try_from(png.len()).unwrap()];
        head.extend_from_slice(png);
        assert!(content.windows(head.len()).any(|w| w == head.as_slice()));
        assert!(!content.windows(6).any(|w| w == b"$bytes"));
        assert_eq!(resume(&session).unwrap().history, vec![message]);
    }

    #[test]
    fn a_message_written_before_media_decodes_without_any() {
        // The JSON projection of a user message and a tool result as
        // sessions held them before media parts existed.
        let user: Message = serde_json::from_str(r#"{"role":"user","text":"hi"}"#).unwrap();
        assert_eq!(user, Message::user("hi"));
        let result: Message = serde_json::from_str(
            r#"{"role":"tool_result","call_id":"c1","name":"ls","content":"a","is_error":false}"#,
        )
        .unwrap();
        assert!(result.media().is_empty());
        // And a message without media is written exactly as before.
        assert_eq!(
            serde_json::to_string(&Message::user("hi")).unwrap(),
            r#"{"role":"user","text":"hi"}"#
        );
    }

    #[test]
    fn records_round_trip_through_a_session_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.create(Some("t")).unwrap();
        let journal = StoreJournal::new(store, session);
        let call = ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: serde_json::json!({"command": "true"}),
        };
        let messages = vec![
            Message::user("go"),
            Message::Assistant {
                content: vec![
                    ContentBlock::Text { text: "ok".into() },
                    ContentBlock::ToolCall(call),
                ],
                stop: StopReason::ToolUse,
            },
        ];
        journal
            .record(&SessionEvent::ModelChange {
                provider: "mock".into(),
                model: "mock-1".into(),
            })
            .unwrap();
        for message in &messages {
            journal
                .record(&SessionEvent::Message {
                    message: message.clone(),
                    meta: MessageMeta::default(),
                })
                .unwrap();
        }
        for n in [1, 2] {
            journal
                .record_intent(&EffectIntent {
                    effect_id: format!("fx-{n}"),
                    parent: "c1".into(),
                    tool: "bash".into(),
                    plugin_generation: BUILTIN_GENERATION,
                    input: canonical_cbor(&serde_json::json!({"command": "true"})).unwrap(),
                })
                .unwrap();
        }
        journal
            .record_completion(&EffectCompletion {
                effect_id: "fx-1".into(),
                outcome: Outcome::Ok,
                mutation: Mutation::Applied,
                output: canonical_cbor(
                    &serde_json::json!({"content": "", "details": {}, "is_error": false}),
                )
                .unwrap(),
            })
            .unwrap();
        let result = Message::ToolResult {
            call_id: "c1".into(),
            name: "bash".into(),
            content: "done".into(),
            is_error: false,
            media: Vec::new(),
        };
        let meta = MessageMeta {
            usage: None,
            status: Some(crate::protocol::ToolStatus::Ok),
            effect_id: Some("fx-1".into()),
            ..MessageMeta::default()
        };
        journal
            .record(&SessionEvent::Message {
                message: result.clone(),
                meta: meta.clone(),
            })
            .unwrap();
        // Reload from disk, as a new process would.
        let store = Store::open(dir.path()).unwrap();
        let session = store.load("t").unwrap();
        let resumed = resume(&session).unwrap();
        let mut expected = messages;
        expected.push(result);
        assert_eq!(resumed.history, expected);
        assert_eq!(resumed.meta.last(), Some(&meta));
        assert_eq!(resumed.model, Some(("mock".into(), "mock-1".into())));
        assert_eq!(resumed.last_effect_seq, 2);
        // fx-1 completed, fx-2 did not: only fx-2 is unknown.
        assert_eq!(resumed.unknown_effects, ["fx-2"]);
        assert_eq!(session.open_intents().len(), 1);
        // The call and its result pair by record alone.
        let kinds: Vec<(EntryKind, u64)> = session
            .branch()
            .iter()
            .map(|r| (r.entry_kind(), r.pairing))
            .collect();
        let pairing = call_pairing("c1");
        assert!(kinds.contains(&(EntryKind::ToolCall, pairing)));
        assert!(kinds.contains(&(EntryKind::ToolResult, pairing)));
    }

    /// Records `turns` turns into `journal`, each: a model change, a
    /// prompt, a call with its effect (completed unless `open` names its
    /// turn), its result and an answer; a compaction keeping the answer
    /// before it at the start of every turn in `compact_at`.
    fn record_turns(journal: &StoreJournal, turns: u64, compact_at: &[u64], open: &[u64]) {
        let record = |message: Message, meta: MessageMeta| {
            journal
                .record(&SessionEvent::Message { message, meta })
                .unwrap();
        };
        for turn in 0..turns {
            if compact_at.contains(&turn) {
                journal
                    .record(&SessionEvent::Compaction {
                        compaction: CompactionRecord {
                            summary: format!("summary before turn {turn}"),
                            reason: "threshold".into(),
                            kept_messages: 1,
                            kept_heads: 1,
                            ..CompactionRecord::default()
                        },
                    })
                    .unwrap();
            }
            journal
                .record(&SessionEvent::ModelChange {
                    provider: "mock".into(),
                    model: format!("mock-{}", turn % 3),
                })
                .unwrap();
            let id = format!("c{turn}");
            record(
                Message::user(format!("prompt {turn}")),
                MessageMeta::default(),
            );
            record(
                Message::Assistant {
                    content: vec![ContentBlock::ToolCall(ToolCall {
                        id: id.clone(),
                        name: "read".into(),
                        arguments: serde_json::json!({"path": format!("f{turn}")}),
                    })],
                    stop: StopReason::ToolUse,
                },
                MessageMeta::default(),
            );
            let effect_id = format!("fx-{}", turn + 1);
            journal
                .record_intent(&EffectIntent {
                    effect_id: effect_id.clone(),
                    parent: id.clone(),
                    tool: "read".into(),
                    plugin_generation: BUILTIN_GENERATION,
                    input: canonical_cbor(&serde_json::json!({"path": "f"})).unwrap(),
                })
                .unwrap();
            if !open.contains(&turn) {
                journal
                    .record_completion(&EffectCompletion {
                        effect_id: effect_id.clone(),
                        outcome: Outcome::Ok,
                        mutation: Mutation::NotApplied,
                        output: canonical_cbor(
                            &serde_json::json!({"content": "r", "details": {}, "is_error": false}),
                        )
                        .unwrap(),
                    })
                    .unwrap();
            }
            record(
                Message::ToolResult {
                    call_id: id,
                    name: "read".into(),
                    content: "r".repeat(2_000),
                    is_error: false,
                    media: Vec::new(),
                },
                MessageMeta {
                    effect_id: Some(effect_id),
                    ..MessageMeta::default()
                },
            );
            record(
                Message::Assistant {
                    content: vec![ContentBlock::Text {
                        text: format!("answer {turn}"),
                    }],
                    stop: StopReason::End,
                },
                MessageMeta::default(),
            );
        }
    }

    #[test]
    fn a_resume_from_the_leaf_reads_back_to_the_compaction_and_matches_a_whole_resume() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.create(Some("leaf")).unwrap();
        let id = session.id();
        let journal = StoreJournal::new(store.clone(), session);
        // The effect of turn 3 (before the newest compaction) and of turn
        // 37 (after it) never completed.
        record_turns(&journal, 40, &[10, 30], &[3, 37]);
        drop(journal);
        let whole = store.load("leaf").unwrap();
        for budget in [10 << 20, 6_000] {
            let full = resume_within(&whole, Some(budget)).unwrap();
            let file = smith_store::SessionFile::open(&store.path_of(id)).unwrap();
            let asked = std::cell::RefCell::new(Vec::new());
            let (opened, resumed) = resume_from_leaf(&file, store.limits(), &|model| {
                asked.borrow_mut().push(model.map(str::to_owned));
                Some(budget)
            })
            .unwrap()
            .expect("resumed from the leaf");
            // The budget was asked for the newest model change's model.
            assert_eq!(asked.borrow()[0].as_deref(), Some("mock-0"));
            assert!(opened.opened_at_leaf());
            // From the answer the compaction keeps (turn 29's) to the leaf:
            // the answer, the compaction and 10 turns of 8 entries (turn
            // 37's without its completion), nothing older.
            assert_eq!(
                opened.records().len(),
                1 + 1 + 10 * 8 - 1,
                "budget {budget}"
            );
            assert_eq!(
                opened.records()[0].entry_kind(),
                EntryKind::AssistantMessage
            );
            assert_eq!(resumed.history, full.history, "budget {budget}");
            assert_eq!(resumed.meta, full.meta);
            assert_eq!(resumed.model, full.model);
            assert_eq!(resumed.compaction, full.compaction);
            assert_eq!(resumed.omitted, full.omitted);
            assert_eq!(resumed.last_effect_seq, full.last_effect_seq);
            assert_eq!(full.unknown_effects, ["fx-4", "fx-38"]);
            // Only the effect after the compaction boundary: fx-4 was
            // reported by the resume before that compaction.
            assert_eq!(resumed.unknown_effects, ["fx-38"]);
        }
        // The budget cut inside the part after the compaction.
        let full = resume_within(&whole, Some(6_000)).unwrap();
        assert!(full.omitted.is_some());
    }

    #[test]
    fn a_leaf_opened_session_is_recorded_into_without_loading_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.create(Some("rec")).unwrap();
        let id = session.id();
        let journal = StoreJournal::new(store.clone(), session);
        journal
            .record_plugin_state(&PluginState {
                plugin: "a/x".into(),
                key: "old".into(),
                value: "kept".into(),
            })
            .unwrap();
        record_turns(&journal, 12, &[8], &[]);
        drop(journal);
        let leaf_before = store.load("rec").unwrap().leaf().unwrap().id;
        let file = smith_store::SessionFile::open(&store.path_of(id)).unwrap();
        let (opened, _) = resume_from_leaf(&file, store.limits(), &|_| Some(1 << 20))
            .unwrap()
            .unwrap();
        drop(file);
        let held = opened.records().len();
        let journal = StoreJournal::claimed(store.clone(), opened).unwrap();
        journal
            .record(&SessionEvent::Message {
                message: Message::user("after the resume"),
                meta: MessageMeta::default(),
            })
            .unwrap();
        // A key the session never held is ruled out by its summary.
        assert_eq!(journal.plugin_state("a/x", "never"), None);
        assert!(journal.opened_at_leaf());
        assert_eq!(journal.with_opened(|s| s.records().len()), held + 1);
        // The new entry continues the old leaf, in the file.
        let whole = store.load("rec").unwrap();
        let new = whole.leaf().unwrap();
        assert_eq!(new.parent, leaf_before);
        assert_eq!(
            resume(&whole).unwrap().history.last(),
            Some(&Message::user("after the resume"))
        );
        // A value stored before the opened part is found in the whole
        // session, which the journal then holds.
        assert_eq!(journal.plugin_state("a/x", "old").as_deref(), Some("kept"));
        assert!(!journal.opened_at_leaf());
        assert_eq!(
            journal.with_opened(|s| s.records().len()),
            whole.records().len()
        );
    }

    #[test]
    fn a_resume_from_the_leaf_gives_way_to_a_whole_load_when_it_cannot_vouch() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.create(Some("w")).unwrap();
        let id = session.id();
        let journal = StoreJournal::new(store.clone(), session);
        record_turns(&journal, 6, &[], &[1]);
        drop(journal);
        let path = store.path_of(id);
        let file = smith_store::SessionFile::open(&path).unwrap();
        // Without a compaction the walk reaches the root: the whole branch,
        // the same resume as a whole load's.
        let (opened, resumed) = resume_from_leaf(&file, store.limits(), &|_| Some(1 << 20))
            .unwrap()
            .unwrap();
        assert!(!opened.opened_at_leaf());
        let whole = store.load("w").unwrap();
        assert_eq!(opened.records().len(), whole.records().len());
        assert_eq!(resumed, resume_within(&whole, Some(1 << 20)).unwrap());
        // An unbounded resume decodes everything anyway: a whole load.
        assert!(
            resume_from_leaf(&file, store.limits(), &|_| None)
                .unwrap()
                .is_none()
        );
        drop(file);
        // A branch off an older entry: the walk from the new leaf reaches
        // the root without going over every frame, so the part it opened
        // is not the whole session, and without a compaction to stop at
        // the session is loaded whole.
        let journal = StoreJournal::new(store.clone(), store.load("w").unwrap());
        let first = journal.with_session(|s| s.records()[2].id);
        journal.select_leaf(first).unwrap();
        journal
            .record(&SessionEvent::Message {
                message: Message::user("on a new branch"),
                meta: MessageMeta::default(),
            })
            .unwrap();
        drop(journal);
        let file = smith_store::SessionFile::open(&path).unwrap();
        assert!(
            resume_from_leaf(&file, store.limits(), &|_| Some(1 << 20))
                .unwrap()
                .is_none()
        );
        let opened = file
            .open_at_leaf(store.limits(), |_, _| true)
            .unwrap()
            .unwrap();
        assert!(opened.opened_at_leaf());
        assert_eq!(opened.records().len(), 3 + 2);
        drop(file);
        // A damaged last frame: the whole load recovers and reports it.
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 20] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let file = smith_store::SessionFile::open(&path).unwrap();
        assert!(
            resume_from_leaf(&file, store.limits(), &|_| Some(1 << 20))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_bounded_resume_decodes_only_the_newest_messages_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.create(Some("big")).unwrap();
        let journal = StoreJournal::new(store, session);
        let record = |message: Message| {
            journal
                .record(&SessionEvent::Message {
                    message,
                    meta: MessageMeta::default(),
                })
                .unwrap();
        };
        // 20 turns: a prompt, a call, a 10,000-byte result (pruning would
        // cut it to about 4 KiB), an answer.
        for turn in 0..20 {
            let id = format!("c{turn}");
            record(Message::User {
                text: format!("prompt {turn} {}", "p".repeat(200)),
                media: Vec::new(),
            });
            record(Message::Assistant {
                content: vec![ContentBlock::ToolCall(ToolCall {
                    id: id.clone(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": format!("f{turn}")}),
                })],
                stop: StopReason::ToolUse,
            });
            record(Message::ToolResult {
                call_id: id,
                name: "read".into(),
                content: "r".repeat(10_000),
                is_error: false,
                media: Vec::new(),
            });
            record(Message::Assistant {
                content: vec![ContentBlock::Text {
                    text: format!("answer {turn}"),
                }],
                stop: StopReason::End,
            });
        }
        journal
            .record(&SessionEvent::ModelChange {
                provider: "mock".into(),
                model: "mock-2".into(),
            })
            .unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.load("big").unwrap();
        let whole = resume(&session).unwrap();
        assert_eq!(whole.history.len(), 80);
        assert_eq!(whole.omitted, None);
        // A budget a whole history fits in changes nothing.
        assert_eq!(resume_within(&session, Some(10 << 20)).unwrap(), whole);
        // About five turns' worth, each result counted at its pruned size.
        let budget = 5 * (4096 + 256 + 300);
        let tail = resume_within(&session, Some(budget)).unwrap();
        let kept = tail.history.len();
        assert!((12..=24).contains(&kept), "{kept} messages kept");
        assert_eq!(tail.history[..], whole.history[80 - kept..]);
        assert_eq!(tail.meta.len(), kept);
        // The tail begins at a prompt or an answer, never at a result whose
        // call it left out.
        assert!(!matches!(tail.history[0], Message::ToolResult { .. }));
        let (messages, bytes) = tail.omitted.unwrap();
        assert_eq!(messages, 80 - kept);
        let all: u64 = session
            .branch()
            .iter()
            .filter(|r| is_message(r.entry_kind()))
            .map(|r| session.content_len(r) as u64)
            .sum();
        let tail_bytes: u64 = session
            .branch()
            .iter()
            .filter(|r| is_message(r.entry_kind()))
            .skip(messages)
            .map(|r| session.content_len(r) as u64)
            .sum();
        assert_eq!(bytes, all - tail_bytes);
        // The rest of the resume does not depend on the budget.
        assert_eq!(tail.model, Some(("mock".into(), "mock-2".into())));
        assert_eq!(tail.last_effect_seq, whole.last_effect_seq);
        // Decoded bytes stay bounded when results are huge: at most four
        // budgets' worth, whatever pruning would make of them.
        let tight = resume_within(&session, Some(5_000)).unwrap();
        let decoded: usize = tight
            .history
            .iter()
            .map(|m| serde_json::to_vec(m).unwrap().len())
            .sum();
        assert!(decoded <= 4 * 5_000 + 1_000, "{decoded} bytes decoded");
        assert!(tight.omitted.is_some());
    }
}
