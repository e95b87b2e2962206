//! Host effects a plugin asks for: capability checks, execution and the
//! effect journal.
//!
//! Every effect is checked against the plugin's [`Grants`] **before**
//! anything runs. A denied effect returns `effect-error.denied` to the guest
//! and leaves a [`Denial`] naming the plugin, the capability and the missing
//! grant. A granted effect is recorded like a built-in tool's: an
//! [`EffectIntent`] before it runs (a failed intent record prevents it) and
//! an [`EffectCompletion`] after, with its three-state mutation evidence.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use smith_engine::journal::{
    EffectCompletion, EffectIntent, EffectJournal, Outcome, canonical_cbor,
};
use smith_engine::tools::Mutation;

use crate::manifest::{self, Manifest};

/// The largest file `read-file` returns and the largest HTTP body
/// `http-request` sends or returns.
pub const MAX_EFFECT_BYTES: usize = 16 << 20;

/// What a plugin may do beyond logging: the capabilities its manifest asks
/// for and the user granted (installing a plugin grants what its manifest
/// lists; built-ins get theirs from [`crate::builtin`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    /// The plugin's data folder; `fs-read` folders are relative to it.
    pub data_dir: PathBuf,
    /// Folders (relative to `data_dir`) the plugin may read.
    pub fs_read: Vec<String>,
    /// Hosts the plugin may send HTTP requests to.
    pub net: Vec<String>,
    /// Whether the plugin may show UI intents.
    pub ui: bool,
}

impl Grants {
    /// No grants at all: every effect is denied.
    pub fn none() -> Self {
        Self::default()
    }

    /// The grants a manifest lists, with the plugin's data folder under the
    /// user plugin root `root`.
    pub fn from_manifest(manifest: &Manifest, root: &Path) -> Self {
        let mut grants = Grants {
            data_dir: manifest::data_dir(root, &manifest.name),
            ..Grants::default()
        };
        for (kind, value) in &manifest.capabilities {
            match kind.as_str() {
                "fs-read" => grants.fs_read.push(value.clone()),
                "net" => grants.net.push(value.to_ascii_lowercase()),
                "ui" => grants.ui = true,
                _ => {}
            }
        }
        grants
    }
}

/// An effect the host refused because a grant was missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The plugin that asked.
    pub plugin: String,
    /// The capability it needed (`fs-read`, `net`, `ui`).
    pub capability: &'static str,
    /// The manifest line that would grant it.
    pub missing_grant: String,
    /// What it asked for.
    pub request: String,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "plugin {} was denied {}: it needs the capability {} and its grants lack `{}`; nothing ran. Add `{}` to the capabilities block of its plugin.kdl and reinstall it if the plugin should be allowed this",
            self.plugin, self.request, self.capability, self.missing_grant, self.missing_grant
        )
    }
}

/// Why an effect did not happen or failed (the guest receives the same as
/// `effect-error`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EffectError {
    /// No grant; nothing ran.
    Denied(Denial),
    /// A malformed request; nothing ran.
    Invalid(String),
    /// The effect ran and failed.
    Failed(String),
}

impl std::fmt::Display for EffectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EffectError::Denied(denial) => denial.fmt(f),
            EffectError::Invalid(message) | EffectError::Failed(message) => f.write_str(message),
        }
    }
}

/// An HTTP response returned to the guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Headers in order.
    pub headers: Vec<(String, String)>,
    /// The complete body.
    pub body: Vec<u8>,
}

/// Where a plugin's granted effects run and are recorded.
#[derive(Clone)]
pub struct Effects {
    plugin: String,
    grants: Grants,
    journal: Arc<dyn EffectJournal>,
    ids: Arc<AtomicU64>,
    net: Option<Arc<smith_net::Client>>,
    generation: u32,
}

impl std::fmt::Debug for Effects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Effects")
            .field("plugin", &self.plugin)
            .field("grants", &self.grants)
            .finish_non_exhaustive()
    }
}

impl Effects {
    /// Effects of `plugin` under `grants`, recorded in `journal` with effect
    /// ids `fx-N` drawn from `ids` (share the session's sequence so ids stay
    /// unique), carrying `generation` as the plugin generation.
    pub fn new(
        plugin: &str,
        grants: Grants,
        journal: Arc<dyn EffectJournal>,
        ids: Arc<AtomicU64>,
        generation: u32,
    ) -> Self {
        Self {
            plugin: plugin.to_owned(),
            grants,
            journal,
            ids,
            net: None,
            generation,
        }
    }

    /// Uses `client` (smith's HTTP engine) for `http-request`; without one,
    /// granted requests fail saying so.
    #[must_use]
    pub fn with_net(mut self, client: Arc<smith_net::Client>) -> Self {
        self.net = Some(client);
        self
    }

    /// The plugin's grants.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    fn deny(&self, capability: &'static str, grant: String, request: String) -> EffectError {
        EffectError::Denied(Denial {
            plugin: self.plugin.clone(),
            capability,
            missing_grant: grant,
            request,
        })
    }

    /// Records the intent of `tool` with `input`; returns its effect id.
    fn intent(&self, tool: &str, input: &serde_json::Value) -> Result<String, EffectError> {
        let effect_id = format!("fx-{}", self.ids.fetch_add(1, Ordering::SeqCst) + 1);
        let input = canonical_cbor(input).map_err(|e| {
            EffectError::Failed(format!("the effect's input could not be encoded: {e}"))
        })?;
        self.journal
            .record_intent(&EffectIntent {
                effect_id: effect_id.clone(),
                parent: format!("plugin:{}", self.plugin),
                tool: tool.to_owned(),
                plugin_generation: self.generation,
                input,
            })
            .map_err(|e| {
                EffectError::Failed(format!(
                    "the effect was not run because its intent could not be recorded: {e}"
                ))
            })?;
        Ok(effect_id)
    }

    fn complete(
        &self,
        effect_id: String,
        outcome: Outcome,
        mutation: Mutation,
        output: &serde_json::Value,
    ) -> Result<(), EffectError> {
        let output = canonical_cbor(output).map_err(|e| {
            EffectError::Failed(format!("the effect's output could not be encoded: {e}"))
        })?;
        self.journal
            .record_completion(&EffectCompletion {
                effect_id,
                outcome,
                mutation,
                output,
            })
            .map_err(|e| {
                EffectError::Failed(format!(
                    "the effect ran but its completion could not be recorded: {e}"
                ))
            })
    }

    /// `read-file`: checks the path against the `fs-read` grants, records
    /// the intent, reads, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant covering the path; invalid when the path
    /// leaves the data folder; failed when reading fails.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, EffectError> {
        if !manifest::stays_inside(path) || path.is_empty() {
            return Err(EffectError::Invalid(format!(
                "read-file {path:?}: the path must be relative to the plugin's data folder and stay inside it (no `..`, no absolute path)"
            )));
        }
        let Some(root) = self
            .grants
            .fs_read
            .iter()
            .find(|root| Path::new(path).starts_with(Path::new(root.as_str())))
        else {
            let folder = Path::new(path)
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| ".".to_owned(), |p| p.display().to_string());
            return Err(self.deny(
                "fs-read",
                format!("fs-read {folder:?}"),
                format!("read-file {path:?}"),
            ));
        };
        let file = self.grants.data_dir.join(path);
        let root_dir = self.grants.data_dir.join(root);
        // Symlinks leading out of the granted folder are refused: compare
        // the resolved paths.
        let inside = match (file.canonicalize(), root_dir.canonicalize()) {
            (Ok(file), Ok(root)) => file.starts_with(root),
            _ => true, // a missing file fails below, recorded
        };
        if !inside {
            return Err(EffectError::Invalid(format!(
                "read-file {path:?}: the path resolves outside the granted folder {root:?} (a symlink leads out); nothing was read"
            )));
        }
        let effect_id = self.intent(
            "plugin.read-file",
            &json!({"plugin": self.plugin, "path": path}),
        )?;
        let result = read_bounded(&file);
        let output = match &result {
            Ok(bytes) => json!({"bytes": bytes.len()}),
            Err(message) => json!({"error": message}),
        };
        let outcome = if result.is_ok() {
            Outcome::Ok
        } else {
            Outcome::Error
        };
        self.complete(effect_id, outcome, Mutation::NotApplied, &output)?;
        result.map_err(|message| EffectError::Failed(format!("read-file {path:?}: {message}")))
    }

    /// `http-request`: checks the URL's host against the `net` grants,
    /// records the intent, sends through smith-net, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant for the host; invalid for a bad method or
    /// URL; failed when the exchange fails.
    pub fn http_request(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<HttpResponse, EffectError> {
        let method = match method.to_ascii_uppercase().as_str() {
            "GET" => smith_net::Method::Get,
            "HEAD" => smith_net::Method::Head,
            "POST" => smith_net::Method::Post,
            "PUT" => smith_net::Method::Put,
            "PATCH" => smith_net::Method::Patch,
            "DELETE" => smith_net::Method::Delete,
            "OPTIONS" => smith_net::Method::Options,
            other => {
                return Err(EffectError::Invalid(format!(
                    "http-request: unknown method {other:?}; use GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS"
                )));
            }
        };
        let parsed = smith_net::Url::parse(url)
            .map_err(|e| EffectError::Invalid(format!("http-request: bad URL: {e}")))?;
        let host = parsed.host().to_ascii_lowercase();
        if !self.grants.net.contains(&host) {
            return Err(self.deny(
                "net",
                format!("net {host:?}"),
                format!("http-request {} to host {host}", method.as_str()),
            ));
        }
        if body.len() > MAX_EFFECT_BYTES {
            return Err(EffectError::Invalid(format!(
                "http-request: the body has {} bytes, more than the {MAX_EFFECT_BYTES} allowed",
                body.len()
            )));
        }
        let mut request = smith_net::Request::new(method, url)
            .map_err(|e| EffectError::Invalid(format!("http-request: {e}")))?
            .with_body(body);
        for (name, value) in headers {
            request.headers_mut().append(name, value.clone());
        }
        // Header values may carry credentials: the journal holds the names.
        let names: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
        let effect_id = self.intent(
            "plugin.http-request",
            &json!({"plugin": self.plugin, "method": method.as_str(), "url": url, "headers": names}),
        )?;
        let idempotent = method.is_idempotent();
        let Some(client) = &self.net else {
            let message = "http-request: this host has no HTTP engine configured for plugins; nothing was sent".to_owned();
            self.complete(
                effect_id,
                Outcome::Error,
                Mutation::NotApplied,
                &json!({"error": message}),
            )?;
            return Err(EffectError::Failed(message));
        };
        let result = send(client, request);
        let (outcome, mutation, output) = match &result {
            Ok(response) => (
                Outcome::Ok,
                if idempotent {
                    Mutation::NotApplied
                } else {
                    Mutation::Applied
                },
                json!({"status": response.status, "bytes": response.body.len()}),
            ),
            Err(message) => (
                Outcome::Error,
                if idempotent {
                    Mutation::NotApplied
                } else {
                    Mutation::Unknown
                },
                json!({"error": message}),
            ),
        };
        self.complete(effect_id, outcome, mutation, &output)?;
        result.map_err(|message| EffectError::Failed(format!("http-request: {message}")))
    }

    /// Checks that the plugin may show UI intents and records one as an
    /// effect (`plugin.ui`); `deliver` shows it and says whether it was.
    ///
    /// # Errors
    ///
    /// Denied without the `ui` grant (nothing is shown).
    pub fn ui(
        &self,
        summary: &serde_json::Value,
        deliver: impl FnOnce() -> bool,
    ) -> Result<bool, EffectError> {
        if !self.grants.ui {
            return Err(self.deny("ui", "ui".to_owned(), format!("a UI intent ({summary})")));
        }
        let effect_id = self.intent(
            "plugin.ui",
            &json!({"plugin": self.plugin, "intent": summary}),
        )?;
        let shown = deliver();
        self.complete(
            effect_id,
            Outcome::Ok,
            if shown {
                Mutation::Applied
            } else {
                Mutation::NotApplied
            },
            &json!({"shown": shown}),
        )?;
        Ok(shown)
    }
}

fn read_bounded(file: &Path) -> Result<Vec<u8>, String> {
    let handle = std::fs::File::open(file).map_err(|e| format!("cannot open it: {e}"))?;
    let mut bytes = Vec::new();
    handle
        .take(MAX_EFFECT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() > MAX_EFFECT_BYTES {
        return Err(format!(
            "the file is larger than the {MAX_EFFECT_BYTES} bytes read-file returns"
        ));
    }
    Ok(bytes)
}

fn send(client: &smith_net::Client, request: smith_net::Request) -> Result<HttpResponse, String> {
    let mut response = client
        .send(request, smith_net::CancelToken::new())
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    let mut body = Vec::new();
    loop {
        match response.body().next_event() {
            smith_net::BodyEvent::Data(bytes) => {
                if body.len() + bytes.len() > MAX_EFFECT_BYTES {
                    return Err(format!(
                        "the response body is larger than the {MAX_EFFECT_BYTES} bytes http-request returns"
                    ));
                }
                body.extend_from_slice(&bytes);
            }
            smith_net::BodyEvent::End(smith_net::Outcome::Complete { .. }) => break,
            smith_net::BodyEvent::End(other) => {
                return Err(format!("the response body did not complete: {other:?}"));
            }
        }
    }
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}
