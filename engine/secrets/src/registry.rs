//! The registry: which values are secret, under which names, from where.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use zeroize::Zeroizing;

use crate::error::{Error, ErrorKind};
use crate::fingerprint::{Fingerprint, FingerprintKey, fill_random, hex};
use crate::placeholder::{self, name_problem};
use crate::redact::{Redactor, variants};

/// The shortest value the registry accepts: a shorter one would redact
/// ordinary words. The same bound as the plugin host's `register-secret`.
pub const MIN_SECRET_LEN: usize = 8;

/// The longest value the registry accepts.
pub const MAX_SECRET_LEN: usize = 4096;

/// Where a secret came from.
///
/// Its text form (used in records) is `env:VAR`, `auth:PROVIDER.SLOT`,
/// `config:KEY`, `plugin:NAME` or `user`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// The environment variable of this name.
    Env(String),
    /// The auth store slot `provider.slot`.
    AuthSlot(String),
    /// The configuration key of this name.
    Config(String),
    /// Handed off by the plugin of this name, which created it.
    Plugin(String),
    /// Given by the user directly.
    User,
    /// A source this build does not know, kept as written so a record
    /// from a newer build reads back unchanged.
    Unknown(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Env(v) => write!(f, "env:{v}"),
            Source::AuthSlot(v) => write!(f, "auth:{v}"),
            Source::Config(v) => write!(f, "config:{v}"),
            Source::Plugin(v) => write!(f, "plugin:{v}"),
            Source::User => f.write_str("user"),
            Source::Unknown(v) => f.write_str(v),
        }
    }
}

impl Source {
    /// Reads the text form; anything unrecognized becomes
    /// [`Source::Unknown`].
    pub fn parse(text: &str) -> Source {
        match text.split_once(':') {
            Some(("env", v)) => Source::Env(v.to_owned()),
            Some(("auth", v)) => Source::AuthSlot(v.to_owned()),
            Some(("config", v)) => Source::Config(v.to_owned()),
            Some(("plugin", v)) => Source::Plugin(v.to_owned()),
            _ if text == "user" => Source::User,
            _ => Source::Unknown(text.to_owned()),
        }
    }
}

impl serde::Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Source {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Source, D::Error> {
        Ok(Source::parse(&String::deserialize(deserializer)?))
    }
}

/// The persisted record of one registration: name, source, fingerprint and
/// the id of the key the fingerprint was made under. Never the value.
///
/// This is the content of a session's *secret registration* entry (kind
/// 7): the JSON projection `{"name", "source", "fingerprint", "key"}`
/// written as canonical CBOR ([`Registration::to_cbor`]). Readers ignore
/// keys they do not know, so later builds may add keys.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Registration {
    /// The secret's name; its placeholder is `{secret:NAME}`.
    pub name: String,
    /// Where the value came from.
    pub source: Source,
    /// The value's fingerprint under the registry's key.
    pub fingerprint: Fingerprint,
    /// The id of that key ([`FingerprintKey::id`]).
    pub key: String,
}

impl Registration {
    /// The placeholder that stands for this secret.
    pub fn placeholder(&self) -> String {
        placeholder::placeholder(&self.name)
    }

    /// The JSON projection, as compact JSON text.
    pub fn to_json(&self) -> String {
        // Four string fields: serializing cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The canonical CBOR form: the JSON projection through the codec's
    /// JSON bridge, as the session journal writes every JSON-projected
    /// entry.
    pub fn to_cbor(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128 + self.name.len());
        // The codec parses what serde_json just wrote: valid JSON always.
        let _ = smith_codec::json::to_cbor(&self.to_json(), &mut out);
        out
    }

    /// Reads a record written by [`Registration::to_cbor`].
    ///
    /// # Errors
    ///
    /// When the bytes are not CBOR or not a registration record.
    pub fn from_cbor(bytes: &[u8]) -> Result<Registration, Error> {
        let mut json = String::new();
        smith_codec::json::from_cbor(bytes, &mut json).map_err(|e| record_error(&e))?;
        Registration::from_json(&json)
    }

    /// Reads the JSON projection.
    ///
    /// # Errors
    ///
    /// When the text is not a registration record.
    pub fn from_json(json: &str) -> Result<Registration, Error> {
        let record: Registration = serde_json::from_str(json).map_err(|e| record_error(&e))?;
        if let Some(problem) = name_problem(&record.name) {
            return Err(record_error(&problem));
        }
        Ok(record)
    }
}

fn record_error(reason: &dyn fmt::Display) -> Error {
    Error::new(
        ErrorKind::Record,
        "secrets.bad-record",
        "a secret registration record could not be read",
        format!("it is not the {{name, source, fingerprint, key}} map this build writes: {reason}"),
        "check that the session file was written by smith; the secret itself is unaffected",
    )
}

/// A secret value held in memory: zeroed when dropped, and `Debug` never
/// shows it. Only [`Plaintext::expose`] reveals it.
pub struct Plaintext(Zeroizing<String>);

impl Plaintext {
    pub(crate) fn new(value: String) -> Plaintext {
        Plaintext(Zeroizing::new(value))
    }

    /// The value. Call only where it goes into an authorized local effect.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Plaintext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(smith_diag::secrets::REDACTED)
    }
}

/// What [`Registry::register`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The registration the value now has. When the value was registered
    /// before (under any name) this is that earlier registration.
    pub registration: Registration,
    /// Whether this call added it: only then is there a new record to
    /// persist.
    pub new: bool,
}

/// A one-time ticket for a value a plugin handed off. Redeem it with
/// [`Registry::redeem`]; its text (`Display`, [`HandoffTicket::as_str`])
/// can cross the plugin ABI, and a second redemption is refused.
#[derive(PartialEq, Eq)]
pub struct HandoffTicket(String);

impl HandoffTicket {
    /// The ticket's text: `handoff-` and 32 hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for HandoffTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for HandoffTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HandoffTicket({})", self.0)
    }
}

/// The result of [`Registry::hand_off`].
#[derive(Debug)]
pub struct Handoff {
    /// The registration (new, or the earlier one of the same value).
    pub registered: Registered,
    /// The ticket that releases the value once.
    pub ticket: HandoffTicket,
}

/// One registered value.
struct Entry {
    registration: Registration,
    value: Zeroizing<String>,
    /// Whether this is its name's current value (the one substitution
    /// puts in); a rotated-out value stays registered for redaction.
    current: bool,
}

/// A handoff not yet redeemed.
struct Pending {
    ticket: String,
    entry: usize,
}

/// The secrets of one process: every value registered so far, under its
/// name, with its source and fingerprint.
///
/// Values are kept only in memory and zeroed when the registry drops. A
/// value is never unregistered: one that was once live must not surface
/// later either. Registering a known value again is a no-op; registering
/// a new value under a known name rotates it (the old value stays
/// redacted, substitution puts in the new one). Every value is also
/// registered with [`smith_diag::secrets`], so diagnostics redact it.
pub struct Registry {
    key: FingerprintKey,
    entries: Vec<Entry>,
    pending: Vec<Pending>,
    /// The live redactor every holder shares.
    redactor: Arc<Redactor>,
    /// Whether `redactor` searches for every entry.
    published: AtomicBool,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("key", &self.key)
            .field(
                "registrations",
                &self
                    .entries
                    .iter()
                    .map(|e| &e.registration)
                    .collect::<Vec<_>>(),
            )
            .field("pending_handoffs", &self.pending.len())
            .finish()
    }
}

impl Registry {
    /// An empty registry whose fingerprints are made under `key`.
    pub fn new(key: FingerprintKey) -> Registry {
        Registry {
            key,
            entries: Vec::new(),
            pending: Vec::new(),
            redactor: Arc::new(Redactor::empty()),
            published: AtomicBool::new(true),
        }
    }

    /// The fingerprint key.
    pub fn key(&self) -> &FingerprintKey {
        &self.key
    }

    /// How many values are registered (rotated-out values included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every registration, oldest first.
    pub fn registrations(&self) -> impl Iterator<Item = &Registration> {
        self.entries.iter().map(|e| &e.registration)
    }

    /// The registration of `name`'s current value.
    pub fn get(&self, name: &str) -> Option<&Registration> {
        self.current(name).map(|e| &e.registration)
    }

    /// The registration whose fingerprint is `fingerprint`, e.g. to match
    /// a record read back from a session.
    pub fn find(&self, fingerprint: &Fingerprint) -> Option<&Registration> {
        self.entries
            .iter()
            .find(|e| e.registration.fingerprint == *fingerprint)
            .map(|e| &e.registration)
    }

    /// Registers `value` as the secret `name` from `source`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TooShort`] / [`ErrorKind::TooLong`] outside
    /// [`MIN_SECRET_LEN`]..=[`MAX_SECRET_LEN`] bytes;
    /// [`ErrorKind::InvalidName`] for a name the placeholder syntax cannot
    /// carry; [`ErrorKind::Ambiguous`] when the value overlaps a
    /// placeholder (see the crate docs).
    pub fn register(
        &mut self,
        name: &str,
        value: &str,
        source: Source,
    ) -> Result<Registered, Error> {
        if let Some(problem) = name_problem(name) {
            return Err(Error::new(
                ErrorKind::InvalidName,
                "secrets.invalid-name",
                format!("the secret name {name:?} cannot be used"),
                format!("{problem}; the name appears in placeholders `{{secret:NAME}}`"),
                "name the secret like `provider.slot` or `env.VAR`",
            ));
        }
        if value.len() < MIN_SECRET_LEN {
            return Err(Error::new(
                ErrorKind::TooShort,
                "secrets.too-short",
                format!(
                    "the value for secret {name} has {} bytes and was not registered",
                    value.len()
                ),
                format!(
                    "a secret must have at least {MIN_SECRET_LEN} bytes: redacting a shorter value would replace ordinary text everywhere"
                ),
                "register the whole credential, not a fragment of it",
            )
            .withheld());
        }
        if value.len() > MAX_SECRET_LEN {
            return Err(Error::new(
                ErrorKind::TooLong,
                "secrets.too-long",
                format!(
                    "the value for secret {name} has {} bytes and was not registered",
                    value.len()
                ),
                format!("a secret may have at most {MAX_SECRET_LEN} bytes"),
                "register the credential itself rather than a document that contains it",
            )
            .withheld());
        }
        if let Some(known) = self.entries.iter().find(|e| e.value.as_str() == value) {
            return Ok(Registered {
                registration: known.registration.clone(),
                new: false,
            });
        }
        self.check_unambiguous(name, value)?;
        let registration = Registration {
            name: name.to_owned(),
            source,
            fingerprint: self.key.fingerprint(value.as_bytes()),
            key: self.key.id(),
        };
        for entry in &mut self.entries {
            if entry.registration.name == name {
                entry.current = false;
            }
        }
        smith_diag::secrets::register(value);
        self.entries.push(Entry {
            registration: registration.clone(),
            value: Zeroizing::new(value.to_owned()),
            current: true,
        });
        self.published.store(false, Ordering::Release);
        // Once handed out, the redactor learns each new value at once (a
        // plugin's handoff during a run); before that, registrations are
        // published together on the first `redactor()`.
        if Arc::strong_count(&self.redactor) > 1 {
            self.publish();
        }
        Ok(Registered {
            registration,
            new: true,
        })
    }

    /// A plugin that created a secret (a token from a login flow) hands it
    /// off: it is registered at once as `name` with source
    /// [`Source::Plugin`], and the returned ticket releases the value
    /// exactly once, to whoever must keep it (the auth store). From then
    /// on the plugin uses the placeholder, never the value.
    ///
    /// # Errors
    ///
    /// As [`Registry::register`], and [`ErrorKind::Random`] when no
    /// ticket can be drawn.
    pub fn hand_off(&mut self, plugin: &str, name: &str, value: &str) -> Result<Handoff, Error> {
        let mut raw = [0u8; 16];
        fill_random(&mut raw)?;
        let registered = self.register(name, value, Source::Plugin(plugin.to_owned()))?;
        let entry = self
            .entries
            .iter()
            .position(|e| e.value.as_str() == value)
            .unwrap_or(self.entries.len().saturating_sub(1));
        let ticket = format!("handoff-{}", hex(&raw));
        self.pending.push(Pending {
            ticket: ticket.clone(),
            entry,
        });
        Ok(Handoff {
            registered,
            ticket: HandoffTicket(ticket),
        })
    }

    /// Redeems a handoff ticket: the value, once. The value stays
    /// registered.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Handoff`] when the ticket is unknown or was already
    /// redeemed.
    pub fn redeem(&mut self, ticket: &str) -> Result<(Registration, Plaintext), Error> {
        let Some(at) = self.pending.iter().position(|p| p.ticket == ticket) else {
            return Err(Error::new(
                ErrorKind::Handoff,
                "secrets.handoff-redeemed",
                format!("the handoff ticket {ticket:?} released nothing"),
                "a ticket releases its value once; this one is unknown or was already redeemed",
                "ask the plugin that created the secret to hand it off again",
            ));
        };
        let pending = self.pending.swap_remove(at);
        let entry = &self.entries[pending.entry];
        Ok((
            entry.registration.clone(),
            Plaintext::new(entry.value.as_str().to_owned()),
        ))
    }

    /// The live redactor: it redacts everything registered so far, and
    /// — once handed out — every value registered later too (each
    /// registration publishes a new snapshot to every holder; see
    /// [`Redactor`]). Always the same redactor for one registry.
    pub fn redactor(&self) -> Arc<Redactor> {
        if !self.published.load(Ordering::Acquire) {
            self.publish();
        }
        Arc::clone(&self.redactor)
    }

    /// Sets the substitution policy of the live redactor
    /// ([`Redactor::substitute_json`]).
    pub fn set_policy(&self, policy: Arc<dyn crate::Policy>) {
        self.redactor.set_policy(policy);
    }

    fn publish(&self) {
        self.redactor.publish(
            self.entries
                .iter()
                .map(|e| (&e.registration, e.value.as_str(), e.current)),
        );
        self.published.store(true, Ordering::Release);
    }

    /// The current value of `name`, for substitution.
    pub(crate) fn value(&self, name: &str) -> Option<(&Registration, &str)> {
        self.current(name)
            .map(|e| (&e.registration, e.value.as_str()))
    }

    fn current(&self, name: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.current && e.registration.name == name)
    }

    /// Refuses a value (or a name) that would make redaction unstable: a
    /// form of a value that overlaps any placeholder could be found again
    /// in already-redacted text.
    fn check_unambiguous(&self, name: &str, value: &str) -> Result<(), Error> {
        let new_placeholder = placeholder::placeholder(name);
        // The forms are copies of secrets: zeroed when this returns.
        let new_forms = Zeroizing::new(variants(value));
        let mut clash = new_forms.iter().any(|form| {
            overlaps(&new_placeholder, form)
                || self
                    .entries
                    .iter()
                    .any(|e| overlaps(&e.registration.placeholder(), form))
        });
        if !clash {
            clash = self.entries.iter().any(|e| {
                Zeroizing::new(variants(&e.value))
                    .iter()
                    .any(|form| overlaps(&new_placeholder, form))
            });
        }
        if clash {
            return Err(Error::new(
                ErrorKind::Ambiguous,
                "secrets.ambiguous",
                format!("the value for secret {name} was not registered"),
                "it overlaps a placeholder `{secret:NAME}` (it contains one, sits inside one, or begins or ends with part of one), so redacted text could be redacted again differently",
                "register the credential under another name, or without surrounding braces",
            )
            .withheld());
        }
        Ok(())
    }
}

/// Whether `form` could be found in text that contains `placeholder`
/// where it overlaps the placeholder: one contains the other, or a proper
/// suffix of the placeholder begins `form`, or a proper prefix ends it.
fn overlaps(placeholder: &str, form: &str) -> bool {
    if placeholder.contains(form) || form.contains(placeholder) {
        return true;
    }
    let (p, f) = (placeholder.as_bytes(), form.as_bytes());
    (1..p.len().min(f.len() + 1)).any(|k| f.starts_with(&p[p.len() - k..]) || f.ends_with(&p[..k]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_cases() {
        let p = "{secret:ab}";
        assert!(overlaps(p, "secret:ab"));
        assert!(overlaps(p, "b}tail-1234"));
        assert!(overlaps(p, "head-1234{se"));
        assert!(overlaps(p, "x{secret:ab}y"));
        assert!(!overlaps(p, "sk-plain-12345"));
    }

    #[test]
    fn sources_round_trip() {
        for s in [
            Source::Env("OPENAI_API_KEY".into()),
            Source::AuthSlot("anthropic.api_key".into()),
            Source::Config("providers.x.token".into()),
            Source::Plugin("github-login".into()),
            Source::User,
            Source::Unknown("vault:kv/x".into()),
        ] {
            assert_eq!(Source::parse(&s.to_string()), s);
        }
    }
}
