//! A temporary project with its store, and a manifest of a tree to compare
//! trees byte for byte (contents, executable bits, symlinks, folders).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use smith_vcs::{Options, Vcs};

/// What one path holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    File { content: Vec<u8>, exec: bool },
    Link(PathBuf),
    Dir,
}

/// Every path under `root` (the store, `.git` and staging folders left out).
pub fn manifest(root: &Path) -> BTreeMap<String, Item> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Item>) {
        for e in std::fs::read_dir(dir).expect("read dir") {
            let e = e.expect("entry");
            let name = e.file_name().to_string_lossy().into_owned();
            if name == ".git" || name == ".store" || name.starts_with(".smith-restore-") {
                continue;
            }
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            let m = std::fs::symlink_metadata(&path).expect("lstat");
            if m.file_type().is_symlink() {
                out.insert(
                    rel,
                    Item::Link(std::fs::read_link(&path).expect("readlink")),
                );
            } else if m.is_dir() {
                out.insert(rel, Item::Dir);
                walk(root, &path, out);
            } else {
                out.insert(
                    rel,
                    Item::File {
                        content: std::fs::read(&path).expect("read"),
                        exec: m.permissions().mode() & 0o100 != 0,
                    },
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A project folder with its store inside it (`.store`, excluded).
pub struct Project {
    /// Kept for its lifetime: the folder is removed when it drops.
    pub _dir: tempfile::TempDir,
    pub vcs: Vcs,
}

impl Project {
    pub fn new() -> Project {
        Project::with(Options::default())
    }

    pub fn with(options: Options) -> Project {
        let dir = tempfile::tempdir().expect("temp dir");
        let vcs = Vcs::open(dir.path(), &dir.path().join(".store"), options).expect("open");
        Project { _dir: dir, vcs }
    }

    pub fn root(&self) -> PathBuf {
        self.vcs.root().to_path_buf()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, content).expect("write");
    }

    pub fn chmod(&self, rel: &str, mode: u32) {
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(mode))
            .expect("chmod");
    }

    pub fn manifest(&self) -> BTreeMap<String, Item> {
        manifest(&self.root())
    }
}
