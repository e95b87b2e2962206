//! A project folder as a map, for comparing trees byte for byte: every
//! path under a root with what it is (a file's bytes and permission bits,
//! a link's target, a folder).

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// What one path is: a file (bytes, permission bits), a link, a folder.
#[derive(Debug, PartialEq, Eq)]
pub enum Node {
    File(Vec<u8>, u32),
    Link(PathBuf),
    Dir,
}

/// Every path under `root` (relative to it) and what it is.
pub fn tree(root: &Path) -> BTreeMap<PathBuf, Node> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Node>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(rel, Node::Link(std::fs::read_link(&path).unwrap()));
            } else if meta.is_dir() {
                out.insert(rel, Node::Dir);
                walk(root, &path, out);
            } else {
                let mode = meta.permissions().mode() & 0o777;
                out.insert(rel, Node::File(std::fs::read(&path).unwrap(), mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}
