//! The `project-read` and `project-write` capabilities: the project's
//! files (the runtime's working folder), confined like the built-in tools:
//! no `..`, no absolute path, no symlink leading out of the project. A
//! project's own plugins load only in a trusted project, so they can have
//! these grants only there.

use std::path::PathBuf;

use serde_json::json;
use sha2::{Digest as _, Sha256};
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use crate::runtime::hex;

use super::fs::{list_bounded, read_bounded, relative_parts, resolves_inside};
use super::process::Where;
use super::{DirListing, EffectError, Effects, MAX_EFFECT_BYTES, ProcessOutput, ProcessRequest};

impl Effects {
    /// Checks the grant, the project and the path of a project effect;
    /// returns the path to use.
    fn project_path(
        &self,
        op: &str,
        path: &str,
        capability: &'static str,
        may_be_root: bool,
        nothing: &str,
    ) -> Result<PathBuf, EffectError> {
        let granted = match capability {
            "project-write" => self.grants.project_write,
            _ => self.grants.project_read,
        };
        if !granted {
            return Err(self.deny(capability, capability.to_owned(), format!("{op} {path:?}")));
        }
        let Some(project) = &self.project else {
            return Err(EffectError::Failed(format!(
                "{op} {path:?}: this host offers plugins no project folder; nothing was {nothing}"
            )));
        };
        let parts = match relative_parts(path) {
            Some(parts) if may_be_root || !parts.is_empty() => parts,
            _ => {
                return Err(EffectError::Invalid(format!(
                    "{op} {path:?}: the path must be relative to the project root and stay inside it (no `..`, no absolute path); nothing was {nothing}"
                )));
            }
        };
        if let Err(why) = resolves_inside(project, &[], &parts) {
            return Err(EffectError::Invalid(format!(
                "{op} {path:?}: the path resolves outside the project ({why}); nothing was {nothing}"
            )));
        }
        Ok(project.join(parts.iter().collect::<PathBuf>()))
    }

    /// `project-list-dir`: a folder of the project, at most 4096 entries
    /// sorted by name; recorded before and after.
    ///
    /// # Errors
    ///
    /// Denied without `project-read`; invalid when the path leaves the
    /// project; failed when listing fails.
    pub fn project_list_dir(&self, path: &str) -> Result<DirListing, EffectError> {
        let op = "project-list-dir";
        let dir = self.project_path(op, path, "project-read", true, "listed")?;
        let effect_id = self.intent(
            "plugin.project-list-dir",
            &json!({"plugin": self.plugin, "path": path}),
        )?;
        let result = list_bounded(&dir);
        let (outcome, output) = match &result {
            Ok(listing) => (
                Outcome::Ok,
                json!({"entries": listing.entries.len(), "truncated": listing.truncated}),
            ),
            Err(message) => (Outcome::Error, json!({"error": message})),
        };
        self.complete(effect_id, outcome, Mutation::NotApplied, &output)?;
        result.map_err(|message| EffectError::Failed(format!("{op} {path:?}: {message}")))
    }

    /// `project-read-file`: a whole project file (at most 16 MiB);
    /// recorded before and after.
    ///
    /// # Errors
    ///
    /// Denied without `project-read`; invalid when the path leaves the
    /// project; failed when reading fails.
    pub fn project_read_file(&self, path: &str) -> Result<Vec<u8>, EffectError> {
        let op = "project-read-file";
        let file = self.project_path(op, path, "project-read", false, "read")?;
        let effect_id = self.intent(
            "plugin.project-read-file",
            &json!({"plugin": self.plugin, "path": path}),
        )?;
        let result = read_bounded(&file);
        let (outcome, output) = match &result {
            Ok(bytes) => (Outcome::Ok, json!({"bytes": bytes.len()})),
            Err(message) => (Outcome::Error, json!({"error": message})),
        };
        self.complete(effect_id, outcome, Mutation::NotApplied, &output)?;
        result.map_err(|message| EffectError::Failed(format!("{op} {path:?}: {message}")))
    }

    /// `project-write-file`: replaces a project file atomically, creating
    /// missing parent folders; recorded before and after.
    ///
    /// # Errors
    ///
    /// Denied without `project-write`; invalid when the path leaves the
    /// project or the bytes are too many; failed when writing fails (the
    /// completion says whether anything changed).
    pub fn project_write_file(&self, path: &str, bytes: &[u8]) -> Result<(), EffectError> {
        let op = "project-write-file";
        self.writable(&format!("{op} {path:?}"))?;
        let file = self.project_path(op, path, "project-write", false, "written")?;
        if bytes.len() > MAX_EFFECT_BYTES {
            return Err(EffectError::Invalid(format!(
                "{op} {path:?}: {} bytes is more than the {MAX_EFFECT_BYTES} allowed; nothing was written",
                bytes.len()
            )));
        }
        let effect_id = self.intent(
            "plugin.project-write-file",
            &json!({
                "plugin": self.plugin,
                "path": path,
                "bytes": bytes.len(),
                "sha256": hex(&Sha256::digest(bytes)),
            }),
        )?;
        self.finish_write(effect_id, op, path, &file, bytes)
    }

    /// `project-run-process`: `run-process` in a folder of the project;
    /// needs `process` and `project-write`.
    ///
    /// # Errors
    ///
    /// As `run-process`, and denied without `project-write`.
    pub fn project_run_process(
        &self,
        request: &ProcessRequest,
        stop: &dyn Fn() -> bool,
    ) -> Result<ProcessOutput, EffectError> {
        let program = &request.program;
        for (granted, capability) in [
            (self.grants.process, "process"),
            (self.grants.project_write, "project-write"),
        ] {
            if !granted {
                return Err(self.deny(
                    capability,
                    capability.to_owned(),
                    format!("project-run-process {program:?}"),
                ));
            }
        }
        let Some(project) = self.project.clone() else {
            return Err(EffectError::Failed(format!(
                "project-run-process {program:?}: this host offers plugins no project folder; nothing ran"
            )));
        };
        self.run_process_in(request, stop, &project, Where::Project)
    }
}
