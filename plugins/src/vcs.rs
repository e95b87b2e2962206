//! The `vcs` host effects: snapshots of the project's working tree kept in
//! its git repository, diffs between them, and restoring one.
//!
//! A snapshot is a git commit whose tree holds every file of the working
//! tree that `.gitignore` does not exclude (tracked or not), chained under
//! the ref `refs/smith/snapshots`. Taking one never touches `HEAD`, the
//! branches, the index or any file: git runs with a private index file
//! seeded from the real one (so unchanged files are not hashed again).
//! Restoring writes the snapshot's files over the working tree and removes
//! the files the snapshot does not have; it first takes a snapshot of the
//! working tree as it is, and returns its id, so restoring that id undoes
//! the restore and restoring the first id again redoes it.
//!
//! git runs with an environment holding only `PATH`, a fixed author and no
//! user or system configuration, so hooks, aliases, external diff drivers
//! and credential helpers of the user's configuration do not run.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

/// The ref the snapshots are chained under.
pub const SNAPSHOT_REF: &str = "refs/smith/snapshots";

/// The most bytes of diff text `vcs-diff` returns.
pub const MAX_DIFF_BYTES: usize = 1 << 20;

/// Private index files in use by this process, numbered.
static INDEX_SEQ: AtomicU64 = AtomicU64::new(0);

/// A diff, cut at [`MAX_DIFF_BYTES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffText {
    /// The unified diff (`git diff` format, no color).
    pub text: String,
    /// Whether it was cut.
    pub truncated: bool,
}

/// The repository that holds the project folder.
#[derive(Debug)]
pub struct Repo {
    root: PathBuf,
}

impl Repo {
    /// The git repository whose working tree holds `project`.
    ///
    /// # Errors
    ///
    /// When `project` is not inside a git working tree, or git cannot run.
    pub fn open(project: &Path) -> Result<Repo, String> {
        let out = git(project, &["rev-parse", "--show-toplevel"], &[]).map_err(|e| {
            format!(
                "the project folder {} is not inside a git working tree ({e}); vcs effects keep their snapshots in the project's git repository: run `git init` there",
                project.display()
            )
        })?;
        let root = String::from_utf8_lossy(&out).trim_end().to_owned();
        Ok(Repo {
            root: PathBuf::from(root),
        })
    }

    /// The working tree's root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Vec<u8>, String> {
        git(&self.root, args, env)
    }

    fn text(&self, args: &[&str], env: &[(&str, &str)]) -> Result<String, String> {
        let out = self.run(args, env)?;
        Ok(String::from_utf8_lossy(&out).trim_end().to_owned())
    }

    /// The tree object of the working tree as it is now (written to the
    /// object store, recorded nowhere).
    fn working_tree(&self) -> Result<String, String> {
        let index = PrivateIndex::new(self)?;
        let env = [("GIT_INDEX_FILE", index.path_str()?)];
        self.run(&["add", "--all", "--", "."], &env)?;
        self.text(&["write-tree"], &env)
    }

    /// Records the working tree as a snapshot labelled `label`; returns
    /// its id.
    ///
    /// # Errors
    ///
    /// When git fails (the message says which step and why).
    pub fn snapshot(&self, label: &str) -> Result<String, String> {
        let tree = self.working_tree()?;
        let previous = self.run(&["rev-parse", "--verify", "--quiet", SNAPSHOT_REF], &[]);
        let message = if label.trim().is_empty() {
            "snapshot"
        } else {
            label
        };
        let id = match previous {
            Ok(parent) => {
                let parent = String::from_utf8_lossy(&parent).trim_end().to_owned();
                self.text(&["commit-tree", &tree, "-p", &parent, "-m", message], &[])?
            }
            Err(_) => self.text(&["commit-tree", &tree, "-m", message], &[])?,
        };
        self.run(&["update-ref", SNAPSHOT_REF, &id], &[])?;
        Ok(id)
    }

    /// Checks that `id` names one of this repository's snapshots; returns
    /// the full id.
    fn snapshot_id(&self, id: &str) -> Result<String, String> {
        if !(4..=64).contains(&id.len()) || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "{id:?} is not a snapshot id; give the hexadecimal id vcs-snapshot or vcs-restore returned"
            ));
        }
        let full = self
            .text(
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    &format!("{id}^{{commit}}"),
                ],
                &[],
            )
            .map_err(|_| format!("no snapshot {id} in {}", self.root.display()))?;
        self.run(
            &["merge-base", "--is-ancestor", &full, SNAPSHOT_REF],
            &[],
        )
        .map_err(|_| {
            format!(
                "{id} is not one of the snapshots under {SNAPSHOT_REF} in {}; only snapshots can be compared or restored",
                self.root.display()
            )
        })?;
        Ok(full)
    }

    /// Checks `from` (and `to`, when not empty) before anything runs.
    ///
    /// # Errors
    ///
    /// When an id is not one of the repository's snapshots.
    pub fn check_ids(&self, ids: &[&str]) -> Result<(), String> {
        for id in ids.iter().filter(|id| !id.is_empty()) {
            self.snapshot_id(id)?;
        }
        Ok(())
    }

    /// The diff from snapshot `from` to snapshot `to`, or to the working
    /// tree now when `to` is empty.
    ///
    /// # Errors
    ///
    /// When an id is not a snapshot or git fails.
    pub fn diff(&self, from: &str, to: &str) -> Result<DiffText, String> {
        let from = self.snapshot_id(from)?;
        let to = if to.is_empty() {
            self.working_tree()?
        } else {
            self.snapshot_id(to)?
        };
        let (bytes, truncated) = git_bounded(
            &self.root,
            &[
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--binary",
                &from,
                &to,
            ],
            MAX_DIFF_BYTES,
        )?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if truncated {
            // Cut at a character boundary at most MAX_DIFF_BYTES long.
            let mut cut = text.len().min(MAX_DIFF_BYTES);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        Ok(DiffText { text, truncated })
    }

    /// Makes the working tree match snapshot `id`: records the working tree
    /// as a snapshot first (returned, for undo), writes the snapshot's
    /// files and removes those it does not have.
    ///
    /// # Errors
    ///
    /// `Err((message, touched))`: `touched` says whether files may already
    /// have been written when it failed.
    pub fn restore(&self, id: &str) -> Result<String, (String, bool)> {
        let target = self.snapshot_id(id).map_err(|e| (e, false))?;
        let before = self
            .snapshot(&format!("before restoring {id}"))
            .map_err(|e| (e, false))?;
        // Files the working tree has and the snapshot lacks.
        let extra = self
            .run(
                &[
                    "diff",
                    "--name-only",
                    "-z",
                    "--no-renames",
                    "--diff-filter=A",
                    &target,
                    &before,
                ],
                &[],
            )
            .map_err(|e| (e, false))?;
        let index = PrivateIndex::empty(self).map_err(|e| (e, false))?;
        let path = index.path_str().map_err(|e| (e, false))?;
        let env = [("GIT_INDEX_FILE", path)];
        self.run(&["read-tree", &target], &env)
            .map_err(|e| (e, false))?;
        self.run(&["checkout-index", "--all", "--force"], &env)
            .map_err(|e| (e, true))?;
        for name in extra.split(|b| *b == 0).filter(|n| !n.is_empty()) {
            let name = String::from_utf8_lossy(name);
            let file = self.root.join(name.as_ref());
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err((
                        format!(
                            "the snapshot's files were written but {} could not be removed: {e}",
                            file.display()
                        ),
                        true,
                    ));
                }
            }
        }
        Ok(before)
    }
}

/// A private index file in the repository's git folder, removed on drop.
struct PrivateIndex {
    path: PathBuf,
}

impl PrivateIndex {
    fn locate(repo: &Repo) -> Result<PathBuf, String> {
        let n = INDEX_SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!("smith-index-{}-{n}", std::process::id());
        let path = repo.text(&["rev-parse", "--git-path", &name], &[])?;
        let path = PathBuf::from(path);
        Ok(if path.is_absolute() {
            path
        } else {
            repo.root.join(path)
        })
    }

    /// An empty private index.
    fn empty(repo: &Repo) -> Result<PrivateIndex, String> {
        Ok(PrivateIndex {
            path: Self::locate(repo)?,
        })
    }

    /// A private index starting as a copy of the real one.
    fn new(repo: &Repo) -> Result<PrivateIndex, String> {
        let index = Self::empty(repo)?;
        let real = repo.text(&["rev-parse", "--git-path", "index"], &[])?;
        let real = repo.root.join(real);
        if real.is_file() {
            std::fs::copy(&real, &index.path).map_err(|e| {
                format!(
                    "copying the index {} to {} failed: {e}",
                    real.display(),
                    index.path.display()
                )
            })?;
        }
        Ok(index)
    }

    fn path_str(&self) -> Result<&str, String> {
        self.path
            .to_str()
            .ok_or_else(|| format!("the git folder path {:?} is not UTF-8", self.path))
    }
}

impl Drop for PrivateIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// git with a confined environment: only `PATH`, no user or system
/// configuration, a fixed identity, no prompts.
fn command(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new("git");
    cmd.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_AUTHOR_NAME", "smith")
        .env("GIT_AUTHOR_EMAIL", "smith@localhost")
        .env("GIT_COMMITTER_NAME", "smith")
        .env("GIT_COMMITTER_EMAIL", "smith@localhost");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.arg("-C").arg(dir).args(args);
    cmd.stdin(Stdio::null());
    cmd
}

fn describe(args: &[&str]) -> String {
    format!("git {}", args.first().copied().unwrap_or(""))
}

/// Runs git; its standard output on success, else what it said.
fn git(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Vec<u8>, String> {
    let out = command(dir, args, env).output().map_err(|e| {
        format!(
            "{} could not start: {e}; is git installed and on PATH?",
            describe(args)
        )
    })?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "{} failed ({}): {}",
            describe(args),
            out.status,
            said.trim()
        ))
    }
}

/// Runs git keeping at most `limit` bytes of its output; stops it when
/// there is more. Returns the output and whether it was cut.
fn git_bounded(dir: &Path, args: &[&str], limit: usize) -> Result<(Vec<u8>, bool), String> {
    let mut child = command(dir, args, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "{} could not start: {e}; is git installed and on PATH?",
                describe(args)
            )
        })?;
    let mut out = Vec::new();
    let mut truncated = false;
    if let Some(stdout) = child.stdout.take() {
        let mut limited = stdout.take(limit as u64 + 1);
        limited
            .read_to_end(&mut out)
            .map_err(|e| format!("reading {} failed: {e}", describe(args)))?;
        if out.len() > limit {
            truncated = true;
            out.truncate(limit);
            let _ = child.kill();
        }
    }
    let mut err = Vec::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_end(&mut err);
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for {} failed: {e}", describe(args)))?;
    if truncated || status.success() {
        Ok((out, truncated))
    } else {
        Err(format!(
            "{} failed ({status}): {}",
            describe(args),
            String::from_utf8_lossy(&err).trim()
        ))
    }
}
