//! The `vcs` capability: snapshots, diffs and restores of the project
//! folder in smith's own snapshot store (see [`crate::vcs`]).

use std::sync::Arc;

use serde_json::json;
use smith_engine::checkpoint::{VcsOp, VcsRecord};
use smith_engine::tools::Mutation;

use super::{EffectError, Effects};

impl Effects {
    /// The snapshot store of the project folder for a `vcs` effect named
    /// `what`, after the grant check.
    fn repo(&self, what: String) -> Result<crate::vcs::Repo, EffectError> {
        if !self.grants.vcs {
            return Err(self.deny("vcs", "vcs".to_owned(), what));
        }
        if let Some(checkpoints) = &self.checkpoints {
            return Ok(crate::vcs::Repo::shared(Arc::clone(checkpoints)));
        }
        let Some(project) = &self.project else {
            return Err(EffectError::Failed(format!(
                "{what}: this host offers plugins no project folder; nothing ran"
            )));
        };
        let root = match &self.checkpoints_root {
            Some(root) => root.clone(),
            None => smith_config::paths::Paths::from_process()
                .map(|p| p.data_dir.join("checkpoints"))
                .map_err(|e| {
                    EffectError::Failed(format!(
                        "{what}: smith cannot tell where its data directory is, which holds the snapshot store ({e}); nothing ran"
                    ))
                })?,
        };
        crate::vcs::Repo::open(project, &root)
            .map_err(|e| EffectError::Failed(format!("{what}: {e}")))
    }

    /// `vcs-snapshot`: records the project folder as a snapshot (see
    /// [`crate::vcs`]); returns the snapshot id.
    ///
    /// # Errors
    ///
    /// Denied without `vcs`; failed when a file cannot be read or the store
    /// cannot be written.
    pub fn vcs_snapshot(&self, label: &str) -> Result<String, EffectError> {
        let mut repo = self.repo(format!("vcs-snapshot {label:?}"))?;
        let effect_id = self.intent(
            "plugin.vcs-snapshot",
            &json!({"plugin": self.plugin, "project": repo.root().display().to_string(), "label": label}),
        )?;
        let result = match repo.snapshot() {
            Ok(id) => {
                let output = json!({"snapshot": id});
                Ok((id, Mutation::Applied, output))
            }
            Err(message) => Err((format!("vcs-snapshot: {message}"), Mutation::Unknown)),
        };
        self.settle(effect_id, result)
    }

    /// `vcs-diff`: the diff from snapshot `from` to snapshot `to` (the
    /// project now when `to` is empty), cut at 1 MiB.
    ///
    /// # Errors
    ///
    /// Denied without `vcs`; invalid when an id is not a snapshot; failed
    /// when the store fails.
    pub fn vcs_diff(&self, from: &str, to: &str) -> Result<crate::vcs::DiffText, EffectError> {
        let mut repo = self.repo(format!("vcs-diff {from:?} {to:?}"))?;
        repo.check_ids(&[from, to])
            .map_err(|e| EffectError::Invalid(format!("vcs-diff: {e}")))?;
        let effect_id = self.intent(
            "plugin.vcs-diff",
            &json!({"plugin": self.plugin, "project": repo.root().display().to_string(), "from": from, "to": to}),
        )?;
        let result = match repo.diff(from, to) {
            Ok(diff) => {
                let output = json!({"bytes": diff.text.len(), "truncated": diff.truncated});
                Ok((diff, Mutation::NotApplied, output))
            }
            Err(message) => Err((format!("vcs-diff: {message}"), Mutation::NotApplied)),
        };
        self.settle(effect_id, result)
    }

    /// `vcs-restore`: makes the project match snapshot `id`, first
    /// recording it as it is; returns that snapshot's id (restore it to
    /// undo).
    ///
    /// # Errors
    ///
    /// Denied without `vcs`; invalid when `id` is not a snapshot; failed
    /// when a step fails (every step is rolled back, so nothing changed).
    pub fn vcs_restore(&self, id: &str) -> Result<String, EffectError> {
        self.writable(&format!("vcs-restore {id:?}"))?;
        let mut repo = self.repo(format!("vcs-restore {id:?}"))?;
        repo.check_ids(&[id])
            .map_err(|e| EffectError::Invalid(format!("vcs-restore: {e}")))?;
        let effect_id = self.intent(
            "plugin.vcs-restore",
            &json!({"plugin": self.plugin, "project": repo.root().display().to_string(), "snapshot": id}),
        )?;
        let result = match repo.restore_report(id) {
            Ok(report) => {
                let before = report.before.to_string();
                // The restore is history like `smith checkpoint restore`:
                // a VCS entry naming this effect (written before its
                // completion; a failure to write it does not undo the
                // restore, which happened).
                let record = VcsRecord {
                    op: VcsOp::Restore,
                    root: repo.root().display().to_string(),
                    effect_id: Some(effect_id.clone()),
                    tool: Some("plugin.vcs-restore".to_owned()),
                    turn: None,
                    effects: Vec::new(),
                    entry: None,
                    before: before.clone(),
                    after: report.after.to_string(),
                    target: Some(repo_target(&mut repo, id)),
                    changed: report
                        .changes
                        .iter()
                        .map(|c| c.path.display().to_string())
                        .collect(),
                    forced: false,
                    error: None,
                };
                let _ = self.journal.record_vcs(&record);
                let output = json!({"before": before});
                Ok((before, Mutation::Applied, output))
            }
            // The restore is all or nothing: a failure changed nothing.
            Err(message) => Err((format!("vcs-restore: {message}"), Mutation::NotApplied)),
        };
        self.settle(effect_id, result)
    }
}

/// The full id of snapshot `id` (a prefix is resolved), for the record.
fn repo_target(repo: &mut crate::vcs::Repo, id: &str) -> String {
    repo.full_id(id).unwrap_or_else(|_| id.to_owned())
}
