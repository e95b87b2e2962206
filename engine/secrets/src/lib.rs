//! The secret proxy's mechanics: which values are secret, how they are
//! kept out of everything that leaves the machine or is recorded, and how
//! they come back only for authorized local effects.
//!
//! - A [`Registry`] holds every registered secret: its name, its value
//!   (in memory only, zeroed on drop), its [`Source`] (environment
//!   variable, auth store slot, configuration, plugin handoff, user) and
//!   a [`Fingerprint`] (a keyed hash, safe to persist). Its
//!   [`Registration`] record — name, source, fingerprint, key id, never
//!   the value — is what a session's *secret registration* entry holds.
//!   Registering a known value again is a no-op; a value shorter than
//!   [`MIN_SECRET_LEN`] is refused, because redacting it would replace
//!   ordinary text. A plugin that created a secret hands it off with
//!   [`Registry::hand_off`]: registered at once, released once through a
//!   [`HandoffTicket`].
//! - A [`Redactor`] replaces every registered value — as is, and in each
//!   JSON-escaped form — with its placeholder `{secret:NAME}` (the syntax
//!   plugins already use in `http-request` headers). It runs before
//!   anything is dispatched to a provider, shown or recorded; text
//!   without a secret is borrowed, not copied. [`StreamRedactor`] does the
//!   same for output that arrives in chunks.
//! - At the effect boundary, [`Registry::substitute_json`] turns the
//!   placeholders of an effect's input back into values for execution,
//!   only where a [`Policy`] (contributed by plugins; the default
//!   [`NeverAuthorize`] allows nothing) authorizes that tool to receive
//!   that secret. The journal records the input with placeholders; refused
//!   placeholders stay as text and are reported.
//!
//! Redaction is stable: the registry refuses a value that overlaps a
//! placeholder (one that contains `{secret:NAME}`, sits inside one, or
//! begins or ends with part of one), so redacting redacted text changes
//! nothing.
//!
//! ```
//! use smith_secrets::{AllowList, FingerprintKey, Registry, Source};
//!
//! let mut registry = Registry::new(FingerprintKey::from_bytes([7; 32]));
//! registry
//!     .register("github.token", "ghp_0123456789abcdefABCDEF", Source::Env("GITHUB_TOKEN".into()))
//!     .expect("registered");
//! let redactor = registry.redactor();
//! let output = redactor.redact_str("GITHUB_TOKEN=ghp_0123456789abcdefABCDEF\n");
//! assert_eq!(output, "GITHUB_TOKEN={secret:github.token}\n");
//!
//! let input = serde_json::json!({"command": "gh auth login --with-token {secret:github.token}"});
//! let policy = AllowList::new().allow("bash", "github.token");
//! let run = registry.substitute_json(&input, "bash", &policy);
//! assert_eq!(run.input()["command"], "gh auth login --with-token ghp_0123456789abcdefABCDEF");
//! ```

#![deny(missing_docs)]

pub mod bench_support;
mod error;
mod fingerprint;
pub mod placeholder;
mod redact;
mod registry;
mod substitute;

pub use error::{Error, ErrorKind};
pub use fingerprint::{Fingerprint, FingerprintKey};
pub use redact::{Redactor, StreamRedactor};
pub use registry::{
    Handoff, HandoffTicket, MAX_SECRET_LEN, MIN_SECRET_LEN, Plaintext, Registered, Registration,
    Registry, Source,
};
pub use substitute::{
    AllowList, Decision, NeverAuthorize, Policy, Refusal, Refused, Request, Substitution, Wipe,
};
