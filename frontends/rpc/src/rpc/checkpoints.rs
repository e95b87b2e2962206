//! The `checkpoint/*` methods: the snapshots smith took around the current
//! session's mutating effects (see `smith_engine::checkpoint`), listed by
//! effect or by agent turn, diffed, undone and redone (a turn or one
//! effect), the project restored to one, and files and conversation
//! rewound together to before a prompt.
//!
//! Every method works on the project the server runs in and the session
//! open now; the ones that change files need the runtime idle (`BUSY`
//! otherwise) and record what they did as a session entry, except for a
//! dry run, which writes nothing.

use serde_json::{Value, json};
use smith_engine::checkpoint::{
    self, Applied, CheckpointError, Checkpoints, RewindOptions, TurnRef, UndoOptions, VcsOp,
    change_code,
};
use smith_engine::journal::store::{StoreJournal, timeline};
use smith_host::SessionChoice;

use super::RpcServer;
use crate::jsonrpc::{INVALID_PARAMS, RUNTIME_ERROR, RpcError, STORE_ERROR, opt_str, opt_u64};

/// A checkpoint refusal or failure as an error object: `checkpoint.nothing`
/// (invalid params), the store's `vcs.<kind>` with the conflicting paths,
/// or a session-store failure.
fn error(method: &str, e: CheckpointError) -> RpcError {
    match e {
        CheckpointError::Nothing(message) => RpcError::new(
            INVALID_PARAMS,
            "checkpoint.nothing",
            format!("{method} changed nothing"),
            message,
            "call checkpoint/turns or checkpoint/list to see what there is",
        ),
        CheckpointError::Vcs(e) => {
            let conflicts: Vec<String> = e
                .conflicts()
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            RpcError::new(
                RUNTIME_ERROR,
                &format!("vcs.{}", e.kind().name()),
                format!("{method} changed nothing"),
                e.to_string(),
                "resolve it (with \"force\": true to override files changed outside smith), then call it again",
            )
            .with("conflicts", conflicts)
        }
        CheckpointError::Journal(e) => RpcError::new(
            STORE_ERROR,
            "store",
            format!("{method} could not record what it did"),
            e.to_string(),
            "check the session store; the files may have changed",
        ),
    }
}

fn flag(params: &Value, key: &str) -> bool {
    matches!(params.get(key), Some(Value::Bool(true)))
}

/// What an undo, redo, restore or rewind did: its record and the changes
/// as `{code, path}`.
pub(crate) fn applied(done: &Applied) -> Value {
    json!({
        "record": done.record,
        "changes": done.report.changes.iter().map(|c| json!({
            "code": change_code(c.kind).to_string(),
            "path": c.path.display().to_string(),
        })).collect::<Vec<_>>(),
        "kept": done.report.kept.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "dry_run": done.report.dry_run,
    })
}

impl RpcServer {
    /// One `checkpoint/*` method.
    pub(super) fn checkpoint(&mut self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let journal = std::sync::Arc::clone(&self.current()?.journal);
        let root = checkpoint::project_root(&self.options.cwd);
        let steps = journal
            .with_session(timeline)
            .map_err(|e| error(method, CheckpointError::Journal(e)))?;
        match method {
            "checkpoint/list" => {
                let records = checkpoint::records_of(&steps);
                let list: Vec<Value> = checkpoint::checkpoints(&records, &root)
                    .iter()
                    .map(|s| {
                        let mut v = json!(s.record);
                        v["undone"] = Value::Bool(s.undone);
                        v
                    })
                    .collect();
                let operations: Vec<&checkpoint::VcsRecord> = records
                    .iter()
                    .filter(|r| r.root == root && r.op != VcsOp::Checkpoint)
                    .collect();
                Ok(json!({"root": root, "checkpoints": list, "operations": operations}))
            }
            "checkpoint/turns" => {
                let turns: Vec<Value> = checkpoint::turns(&steps, &root)
                    .iter()
                    .map(|t| {
                        json!({
                            "turn": t.number,
                            "entry": t.entry,
                            "prompt": t.prompt,
                            "effects": t.effects(),
                            "changed": t.changed,
                            "undone": t.undone,
                            "partly_undone": t.partly_undone,
                        })
                    })
                    .collect();
                Ok(json!({"root": root, "turns": turns}))
            }
            "checkpoint/rewind" => self.rewind(method, params),
            _ => {
                if method != "checkpoint/diff" {
                    self.require_idle(method)?;
                }
                let data = smith_host::runtime::checkpoints_root().ok_or_else(|| {
                    RpcError::new(
                        RUNTIME_ERROR,
                        "checkpoint.no_data_dir",
                        format!("{method} did not run"),
                        "smith cannot tell where its data directory is, so it has no checkpoints",
                        "set SMITH_HOME (or HOME) and restart smith rpc",
                    )
                })?;
                let c = Checkpoints::open(&self.options.cwd, &data)
                    .map_err(|e| error(method, e.into()))?;
                let records = checkpoint::records_of(&steps);
                let options = UndoOptions {
                    force: flag(params, "force"),
                    dry_run: flag(params, "dry_run"),
                };
                let effect = opt_str(method, params, "effect")?;
                let turn = opt_u64(method, params, "turn")?
                    .map(|n| TurnRef::Number(usize::try_from(n).unwrap_or(usize::MAX)));
                let which = turn.unwrap_or(TurnRef::Latest);
                let journal: &StoreJournal = &journal;
                let done = c
                    .with_vcs(|vcs| match method {
                        "checkpoint/diff" => diff(
                            vcs,
                            &records,
                            &root,
                            opt_str(method, params, "from").ok().flatten(),
                            opt_str(method, params, "to").ok().flatten(),
                        )
                        .map(Err),
                        "checkpoint/undo" => match effect {
                            Some(e) => checkpoint::undo(vcs, journal, &records, Some(e), options),
                            None => checkpoint::undo_turn(vcs, journal, &steps, which, options),
                        }
                        .map(Ok),
                        "checkpoint/redo" => match effect {
                            Some(e) => checkpoint::redo(vcs, journal, &records, Some(e), options),
                            None => checkpoint::redo_turn(vcs, journal, &steps, which, options),
                        }
                        .map(Ok),
                        _ => {
                            let target = opt_str(method, params, "target")
                                .ok()
                                .flatten()
                                .ok_or_else(|| {
                                    CheckpointError::Nothing(
                                        "\"target\" is missing: a snapshot id (or a prefix of 8 or more digits) or an effect id fx-N".to_owned(),
                                    )
                                })?;
                            checkpoint::restore(
                                vcs,
                                journal,
                                &records,
                                target,
                                flag(params, "before"),
                                options.force,
                                options.dry_run,
                            )
                            .map(Ok)
                        }
                    })
                    .map_err(|e| error(method, e.into()))?
                    .map_err(|e| error(method, e))?;
                Ok(match done {
                    Ok(done) => applied(&done),
                    Err(text) => json!({"diff": text}),
                })
            }
        }
    }

    /// `checkpoint/rewind`: a dry run on the live session first (a refusal
    /// changes nothing), then, with the runtime stopped, the rewind on the
    /// stored session, and the runtime started again on its new leaf.
    fn rewind(&mut self, method: &str, params: &Value) -> Result<Value, RpcError> {
        self.require_idle(method)?;
        let entry = opt_u64(method, params, "entry")?.ok_or_else(|| {
            RpcError::invalid_params(
                method,
                "\"entry\" is missing",
                "\"entry\": the entry id of a user prompt, from checkpoint/turns",
            )
        })?;
        let options = RewindOptions {
            force: flag(params, "force"),
            dry_run: flag(params, "dry_run"),
        };
        let data = smith_host::runtime::checkpoints_root();
        let cwd = self.options.cwd.clone();
        let current = self.current()?;
        let id = current.journal.session_id().to_hex();
        let plan = checkpoint::rewind_project(
            &cwd,
            data.as_deref(),
            &current.journal,
            entry,
            RewindOptions {
                force: options.force,
                dry_run: true,
            },
        )
        .map_err(|e| error(method, e))?;
        let report = |done: &checkpoint::Rewound| {
            json!({
                "session": id,
                "entry": done.entry,
                "prompt": done.prompt,
                "leaf": done.leaf,
                "switch_entry": done.switch_entry,
                "files": done.files.as_ref().map(applied),
                "dry_run": done.dry_run,
            })
        };
        if options.dry_run {
            return Ok(report(&plan));
        }
        let name = current.name.clone();
        self.ask(
            method,
            &smith_engine::agent::SessionOp::Fork(format!("{name}#{}", plan.leaf)),
        )?;
        self.stop_current();
        let done = self
            .store()
            .and_then(|store| {
                let session = store.load(&id).map_err(|e| {
                    super::store_error(&format!("session {id} could not be reloaded"), &e)
                })?;
                Ok(StoreJournal::new(store, session))
            })
            .and_then(|journal| {
                checkpoint::rewind_project(&cwd, data.as_deref(), &journal, entry, options)
                    .map_err(|e| error(method, e))
            });
        let reopened = self.switch(&SessionChoice::Open(id.clone()));
        let done = done?;
        reopened?;
        Ok(report(&done))
    }
}

/// `checkpoint/diff`: of effect `from` (`fx-N`), from a snapshot `from`
/// to the project now, between `from` and `to`, or without either the
/// newest effect that changed something.
pub(crate) fn diff(
    vcs: &mut smith_engine::checkpoint::Vcs,
    records: &[checkpoint::VcsRecord],
    root: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<String, CheckpointError> {
    let (a, b) = match (from, to) {
        (Some(f), Some(t)) => (
            checkpoint::resolve_target(vcs, records, f, false)?,
            checkpoint::resolve_target(vcs, records, t, false)?,
        ),
        (from, _) => {
            let effect = match from {
                Some(f) => f.to_owned(),
                None => checkpoint::checkpoints(records, root)
                    .iter()
                    .rev()
                    .find(|s| !s.record.changed.is_empty())
                    .and_then(|s| s.record.effect_id.clone())
                    .ok_or_else(|| {
                        CheckpointError::Nothing(
                            "no effect of this session changed the project".to_owned(),
                        )
                    })?,
            };
            if effect.starts_with("fx-") {
                (
                    checkpoint::resolve_target(vcs, records, &effect, true)?,
                    checkpoint::resolve_target(vcs, records, &effect, false)?,
                )
            } else {
                let a = vcs.resolve(&effect)?;
                (a, vcs.snapshot()?.id)
            }
        }
    };
    Ok(vcs.diff(a, b)?.unified())
}
