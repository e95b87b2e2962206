//! The smith plugin SDK: everything a plugin author needs to write a
//! `smith:plugin@1` component in Rust.
//!
//! A plugin is a `cdylib` crate built for `wasm32-wasip2`. It implements one
//! world's export trait and names its implementation with the world's
//! export macro:
//!
//! ```ignore
//! use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
//!
//! struct Hello;
//!
//! impl ext::Guest for Hello {
//!     fn contributions() -> ext::Contributions { /* ... */ }
//!     fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> { /* ... */ }
//!     fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult { ext::HandlerResult::None }
//! }
//!
//! smith_plugin_sdk::extension::export_extension!(Hello);
//! ```
//!
//! Enable exactly one of the cargo features `provider`, `extension` or
//! `full-extension` (an extension that also provides tools, per-turn
//! context and queue policies): each embeds its world's type information
//! into the component, and a component implements one world.
//!
//! The host services (`log`, `cancelled`, and the capability-checked
//! effects `read_file`, `list_dir`, `write_file`, `edit_file`,
//! `run_process`, `session_entries`, `http_request` and the others host.wit
//! lists, the built-in-only `permissions` and `local-read` ones among them)
//! are in [`host`]. See
//! docs/plugins.md for the walkthrough: write, build, install, test.
#![deny(missing_docs)]

#[cfg(any(
    all(feature = "provider", feature = "extension"),
    all(feature = "provider", feature = "full-extension"),
    all(feature = "extension", feature = "full-extension"),
    all(feature = "search-provider", feature = "provider"),
    all(feature = "search-provider", feature = "extension"),
    all(feature = "search-provider", feature = "full-extension"),
))]
compile_error!(
    "enable exactly one of the features `provider`, `extension`, `full-extension` and `search-provider`: a plugin implements one world"
);

/// Bindings of the `provider-plugin` world (cargo feature `provider`): implement
/// `provider::exports::smith::plugin::provider::Guest` and call
/// `provider::export_provider!`.
#[cfg(feature = "provider")]
#[allow(missing_docs)]
pub mod provider {
    wit_bindgen::generate!({
        world: "provider-plugin",
        path: "../wit",
        default_bindings_module: "smith_plugin_sdk::provider",
        pub_export_macro: true,
        export_macro_name: "export_provider",
    });
}

/// Bindings of the optional `media` export of a provider plugin (cargo
/// feature `media`, with `provider`): implement
/// `media::exports::smith::plugin::media::Guest` (images and documents in
/// requests) on the provider's type and call `media::export_media!` as
/// well as `provider::export_provider!`; the component then has the
/// exports of the `media-provider-plugin` world.
#[cfg(feature = "media")]
#[allow(missing_docs)]
pub mod media {
    wit_bindgen::generate!({
        world: "media-exports",
        path: "../wit",
        default_bindings_module: "smith_plugin_sdk::media",
        pub_export_macro: true,
        export_macro_name: "export_media",
    });
}

/// Bindings of the `extension-plugin` world (cargo feature `extension`): implement
/// `extension::exports::smith::plugin::extension::Guest` and call
/// `extension::export_extension!`.
#[cfg(feature = "extension")]
#[allow(missing_docs)]
pub mod extension {
    wit_bindgen::generate!({
        world: "extension-plugin",
        path: "../wit",
        default_bindings_module: "smith_plugin_sdk::extension",
        pub_export_macro: true,
        export_macro_name: "export_extension",
    });
}

/// Bindings of the `full-extension-plugin` world (cargo feature
/// `full-extension`): implement both
/// `extension::exports::smith::plugin::extension::Guest` and
/// `extension::exports::smith::plugin::provide::Guest` (tools, per-turn
/// context, queue policies) on one type and call
/// `extension::export_extension!`.
#[cfg(feature = "full-extension")]
#[allow(missing_docs)]
pub mod extension {
    wit_bindgen::generate!({
        world: "full-extension-plugin",
        path: "../wit",
        default_bindings_module: "smith_plugin_sdk::extension",
        pub_export_macro: true,
        export_macro_name: "export_extension",
    });
}

/// Bindings of the `search-provider-plugin` world (cargo feature
/// `search-provider`): implement
/// `search::exports::smith::plugin::search::Guest` (`ready` and `search`)
/// and call `search::export_search!`; smith/web's `web_search` reaches the
/// provider through the host (docs/web.md).
#[cfg(feature = "search-provider")]
#[allow(missing_docs)]
pub mod search {
    wit_bindgen::generate!({
        world: "search-provider-plugin",
        path: "../wit",
        default_bindings_module: "smith_plugin_sdk::search",
        pub_export_macro: true,
        export_macro_name: "export_search",
    });
}

/// Host services every plugin may call.
pub mod host {
    #[cfg(any(feature = "extension", feature = "full-extension"))]
    use crate::extension::smith::plugin::host as raw;
    #[cfg(all(
        feature = "provider",
        not(any(feature = "extension", feature = "full-extension"))
    ))]
    use crate::provider::smith::plugin::host as raw;
    #[cfg(feature = "search-provider")]
    use crate::search::smith::plugin::host as raw;

    pub use raw::{
        Answer, AnswerSource, DiffText, DirEntry, DirListing, EffectError, EntryKind, FileStat,
        HttpResponse, LogLevel, ProcessEnd, ProcessOutput, Question, QuestionKind, ResolvedPath,
        SearchAnswer, SearchHit, ServerProcess, SessionEntry,
    };

    /// The MCP servers configured in smith's KDL configuration, as a JSON
    /// array (see host.wit `mcp-servers`); needs `permissions`.
    pub fn mcp_servers() -> Result<String, EffectError> {
        raw::mcp_servers()
    }

    /// Asks the user and waits for the answer (needs `ui`): a confirmation
    /// (`yes`/`no`), a selection or text. The wait does not count against
    /// the call's deadline; after `timeout_ms` the `default` answers (with
    /// source `timeout`). Where no one can answer, the frontend's policy
    /// answers or the call fails saying how to allow it.
    pub fn ask(
        prompt: &str,
        kind: QuestionKind,
        timeout_ms: u32,
        default: &str,
    ) -> Result<Answer, EffectError> {
        raw::ask(&Question {
            prompt: prompt.to_owned(),
            kind,
            timeout_ms,
            default_answer: default.to_owned(),
        })
    }

    /// The current value of configuration key `key` as JSON text (the
    /// plugin's own declared options included); none when unset.
    pub fn config_get(key: &str) -> Option<String> {
        raw::config_get(key)
    }

    /// Changes one of the plugin's own declared options for this runtime
    /// only (`value` is JSON text valid against the option's schema).
    pub fn config_set(key: &str, value: &str) -> Result<(), EffectError> {
        raw::config_set(key, value)
    }

    /// More about the lifecycle event being handled, as JSON text: how a
    /// run ended (`agent-end`: `{"stop": ...}`), a finished tool call's
    /// output (`tool-execution-end`: `call_id`, `name`, `status`,
    /// `content`, `details`); none otherwise. No grant.
    pub fn event_details() -> Option<String> {
        raw::event_details()
    }

    /// The value the plugin last stored under `key` in the current session
    /// (on its selected branch); none when it stored none. No grant.
    pub fn session_state(key: &str) -> Option<String> {
        raw::session_state(key)
    }

    /// Stores `value` (at most 64 KiB) under `key` (1 to 64 bytes) for the
    /// plugin in the current session, as one durable session entry that
    /// survives resume and compaction. No grant.
    pub fn set_session_state(key: &str, value: &str) -> Result<(), EffectError> {
        raw::set_session_state(key, value)
    }

    /// Lists a folder of the project (`path` relative to the project root,
    /// `""` for the root); needs `project-read`.
    pub fn project_list_dir(path: &str) -> Result<DirListing, EffectError> {
        raw::project_list_dir(path)
    }

    /// Reads a project file (`path` relative to the project root); needs
    /// `project-read`.
    pub fn project_read_file(path: &str) -> Result<Vec<u8>, EffectError> {
        raw::project_read_file(path)
    }

    /// Replaces a project file atomically; needs `project-write`.
    pub fn project_write_file(path: &str, bytes: &[u8]) -> Result<(), EffectError> {
        raw::project_write_file(path, bytes)
    }

    /// Runs a program in a folder of the project (`cwd` relative to the
    /// project root); needs `process` and `project-write`.
    pub fn project_run_process(
        program: &str,
        args: &[String],
        cwd: &str,
        timeout_ms: u32,
        stdin: &[u8],
    ) -> Result<ProcessOutput, EffectError> {
        raw::project_run_process(program, args, cwd, timeout_ms, stdin)
    }

    /// Reads a file inside a folder the manifest grants with `fs-read`
    /// (`path` is relative to the plugin's data folder). Denied without the
    /// grant: the error names the missing manifest line.
    pub fn read_file(path: &str) -> Result<Vec<u8>, EffectError> {
        raw::read_file(path)
    }

    /// Lists a folder (names and kinds, sorted, at most 4096) that is, or
    /// lies inside, a folder the manifest grants with `fs-read`.
    pub fn list_dir(path: &str) -> Result<DirListing, EffectError> {
        raw::list_dir(path)
    }

    /// Replaces a whole file atomically inside a folder the manifest grants
    /// with `fs-write`, creating missing parent folders there.
    pub fn write_file(path: &str, bytes: &[u8]) -> Result<(), EffectError> {
        raw::write_file(path, bytes)
    }

    /// Replaces the single occurrence of `old_text` in a UTF-8 file inside
    /// an `fs-write` folder with `new_text`; fails, changing nothing, when
    /// `old_text` does not occur exactly once.
    pub fn edit_file(path: &str, old_text: &str, new_text: &str) -> Result<(), EffectError> {
        raw::edit_file(path, old_text, new_text)
    }

    /// Runs a program (needs `process`) in `cwd` (relative to the data
    /// folder, `""` for the data folder) with only `PATH` in its
    /// environment, writing `stdin` to it; it is killed after `timeout_ms`
    /// or when the call is cancelled. Output is bounded at 1 MiB per stream.
    pub fn run_process(
        program: &str,
        args: &[String],
        cwd: &str,
        timeout_ms: u32,
        stdin: &[u8],
    ) -> Result<ProcessOutput, EffectError> {
        raw::run_process(program, args, cwd, timeout_ms, stdin)
    }

    /// A page of the current session's messages (needs `session-read`):
    /// at most `limit` (at most 256) from entry `offset`, oldest first.
    pub fn session_entries(offset: u64, limit: u32) -> Result<Vec<SessionEntry>, EffectError> {
        raw::session_entries(offset, limit)
    }

    /// Sends one HTTP request through smith's HTTP engine; needs `net HOST`
    /// for the URL's host. Returns the complete response.
    pub fn http_request(
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<HttpResponse, EffectError> {
        raw::http_request(method, url, headers, body)
    }

    /// Sends GET `url` (any http or https host) for the model's web tools;
    /// needs `web` (built-in plugins only). smith refuses non-public
    /// addresses after resolving the host unless the user's
    /// `web.allow-hosts` names it; redirects are not followed; the body
    /// stops at `max_bytes` and the exchange at `timeout_ms`.
    pub fn web_get(
        url: &str,
        headers: &[(String, String)],
        timeout_ms: u32,
        max_bytes: u64,
    ) -> Result<HttpResponse, EffectError> {
        raw::web_get(url, headers, timeout_ms, max_bytes)
    }

    /// Asks the search provider plugin the configuration chooses
    /// (`web.search-provider`, or the first ready one) for at most `count`
    /// hits of `query`; needs `web-search` (built-in plugins only).
    pub fn web_search(query: &str, count: u32) -> Result<SearchAnswer, EffectError> {
        raw::web_search(query, count)
    }

    /// Whether the secret `handle` (`PROVIDER.SLOT`) has a value; needs
    /// `secrets "HANDLE"`. The value itself never reaches the plugin: put
    /// `{secret:HANDLE}` in an [`http_request`] header value and the host
    /// substitutes it when it sends the request.
    pub fn secret_available(handle: &str) -> Result<bool, EffectError> {
        raw::secret_available(handle)
    }

    /// Records the project folder as a snapshot in smith's own snapshot
    /// store (needs `vcs`); returns the snapshot id. Touches no file.
    pub fn vcs_snapshot(label: &str) -> Result<String, EffectError> {
        raw::vcs_snapshot(label)
    }

    /// The diff from snapshot `base` to snapshot `target` (the project now
    /// when `target` is empty), cut at 1 MiB; needs `vcs`.
    pub fn vcs_diff(base: &str, target: &str) -> Result<DiffText, EffectError> {
        raw::vcs_diff(base, target)
    }

    /// Makes the project match snapshot `id`, all or nothing (needs `vcs`);
    /// returns the id of the snapshot taken just before, which undoes it
    /// when restored.
    pub fn vcs_restore(id: &str) -> Result<String, EffectError> {
        raw::vcs_restore(id)
    }

    /// Registers a credential the plugin obtained itself so smith redacts
    /// it wherever it would print it; needs a `secrets` grant, 8 to 4096
    /// bytes.
    pub fn register_secret(value: &str) -> Result<(), EffectError> {
        raw::register_secret(value)
    }

    /// The runtime's approval mode (`read-only`, `ask`, `workspace`,
    /// `full`); needs `permissions` (built-in plugins only).
    pub fn approval_mode() -> Result<String, EffectError> {
        raw::approval_mode()
    }

    /// Changes the runtime's approval mode for its tools, sandbox and
    /// permission policy at once; needs `permissions`.
    pub fn set_approval_mode(mode: &str) -> Result<(), EffectError> {
        raw::set_approval_mode(mode)
    }

    /// Whether the runtime's tool `name` only observes (none: no such
    /// tool); needs `permissions`.
    pub fn tool_read_only(name: &str) -> Result<Option<bool>, EffectError> {
        raw::tool_read_only(name)
    }

    /// `path` resolved as the tools resolve it: absolute, normalized,
    /// symlinks resolved, and project-relative inside the project; needs
    /// `local-read` (or `permissions`).
    pub fn resolve_path(path: &str) -> Result<ResolvedPath, EffectError> {
        raw::resolve_path(path)
    }

    /// The text of the file `path` (at most 1 MiB; none when it does not
    /// exist), to show what a change would do; needs `local-read` (or
    /// `permissions`).
    pub fn peek_file(path: &str) -> Result<Option<String>, EffectError> {
        raw::peek_file(path)
    }

    /// Attaches the image or PDF `path` (a project file) to the user input
    /// the current `input` decision is about; its one-line summary, or
    /// none when the file is not an image or PDF. Needs `local-read` (or
    /// `permissions`).
    pub fn attach_media(path: &str) -> Result<Option<String>, EffectError> {
        raw::attach_media(path)
    }

    /// The size, modification time and kind of `path` (resolved like
    /// [`resolve_path`]), none when it does not exist; reads no content.
    /// Needs `local-read` (or `permissions`).
    pub fn stat_file(path: &str) -> Result<Option<FileStat>, EffectError> {
        raw::stat_file(path)
    }

    /// smith's configuration folder (absolute), none when it is unknown;
    /// needs `local-read` (or `permissions`).
    pub fn config_dir() -> Result<Option<String>, EffectError> {
        raw::config_dir()
    }

    /// The entries of the folder `path` (resolved like [`resolve_path`],
    /// absolute paths allowed), none when it does not exist; reads no
    /// content. Needs `local-read` (or `permissions`).
    pub fn peek_dir(path: &str) -> Result<Option<DirListing>, EffectError> {
        raw::peek_dir(path)
    }

    /// The user's home folder (absolute), none when it is unknown; needs
    /// `local-read` (or `permissions`).
    pub fn home_dir() -> Result<Option<String>, EffectError> {
        raw::home_dir()
    }

    /// The permission rules in effect, as a JSON array; needs
    /// `permissions`.
    pub fn permission_rules() -> Result<String, EffectError> {
        raw::permission_rules()
    }

    /// Whether the runtime works in a trusted project; needs `local-read`
    /// (or `permissions`).
    pub fn project_trusted() -> Result<bool, EffectError> {
        raw::project_trusted()
    }

    /// Appends a rule (`kind` `allow`/`ask`/`deny`, `tool`, an optional
    /// path or command glob) to the trusted project's configuration
    /// (`project`) or the user's; returns the file. Needs `permissions`.
    pub fn save_permission_rule(
        kind: &str,
        tool: &str,
        path: Option<&str>,
        command: Option<&str>,
        project: bool,
    ) -> Result<String, EffectError> {
        raw::save_permission_rule(kind, tool, path, command, project)
    }

    /// Writes a debug line to smith's log.
    pub fn debug(message: &str) {
        raw::log(LogLevel::Debug, message);
    }

    /// Writes an info line to smith's log.
    pub fn info(message: &str) {
        raw::log(LogLevel::Info, message);
    }

    /// Writes a warning line to smith's log.
    pub fn warn(message: &str) {
        raw::log(LogLevel::Warn, message);
    }

    /// Writes an error line to smith's log.
    pub fn error(message: &str) {
        raw::log(LogLevel::Error, message);
    }

    /// Whether the host asked the current call to stop; long work polls
    /// this and returns early.
    pub fn cancelled() -> bool {
        raw::cancelled()
    }
}
