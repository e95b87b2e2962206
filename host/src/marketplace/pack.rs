//! Git packfiles (version 2): object headers, zlib streams, `OFS_DELTA`
//! and `REF_DELTA` resolution, object ids; and checking a commit's tree
//! out into a [`Tree`] (which refuses escaping names and applies the caps),
//! refusing symbolic links (mode 120000).
//!
//! The pack is untrusted: every length and offset is checked, the pack's
//! trailing SHA-1 is verified, and the expanded total is bounded.

use std::collections::HashMap;
use std::rc::Rc;

use sha1::{Digest, Sha1};

use super::tree::{MAX_EXPANDED, Tree, oversize, refused};
use smith_diag::Diagnostic;

/// A git object id.
pub type Oid = [u8; 20];

/// An object's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A commit.
    Commit,
    /// A tree.
    Tree,
    /// A blob.
    Blob,
    /// An annotated tag.
    Tag,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Commit => "commit",
            Kind::Tree => "tree",
            Kind::Blob => "blob",
            Kind::Tag => "tag",
        }
    }
}

/// The objects of a pack by id.
pub type Objects = HashMap<Oid, (Kind, Rc<Vec<u8>>)>;

/// `oid` as 40 lowercase hex digits.
pub fn hex(oid: &Oid) -> String {
    oid.iter().map(|b| format!("{b:02x}")).collect()
}

/// 40 hex digits as an id.
pub fn parse_hex(text: &str) -> Option<Oid> {
    if text.len() != 40 {
        return None;
    }
    let mut oid = [0u8; 20];
    for (i, byte) in oid.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(oid)
}

/// The id of an object of `kind` holding `data`.
pub fn object_id(kind: Kind, data: &[u8]) -> Oid {
    let mut hasher = Sha1::new();
    hasher.update(format!("{} {}\0", kind.name(), data.len()).as_bytes());
    hasher.update(data);
    hasher.finalize().into()
}

enum Base {
    Whole(Kind),
    Offset(usize),
    Id(Oid),
}

struct Raw {
    offset: usize,
    base: Base,
    data: Vec<u8>,
}

/// Decodes a whole pack into its objects.
///
/// # Errors
///
/// A damaged pack (with the reason), or one expanding past the cap.
pub fn decode(pack: &[u8], origin: &str) -> Result<Objects, Diagnostic> {
    let bad =
        |why: String| super::git::protocol_error(origin, format!("its packfile is damaged: {why}"));
    if pack.len() < 32 || &pack[..4] != b"PACK" {
        return Err(bad("it does not start with PACK".to_owned()));
    }
    let (body, trailer) = pack.split_at(pack.len() - 20);
    let sum: Oid = Sha1::digest(body).into();
    if sum[..] != trailer[..] {
        return Err(bad("its SHA-1 checksum does not match".to_owned()));
    }
    let version = u32::from_be_bytes([pack[4], pack[5], pack[6], pack[7]]);
    if version != 2 && version != 3 {
        return Err(bad(format!("it is version {version}, not 2 or 3")));
    }
    let count = u32::from_be_bytes([pack[8], pack[9], pack[10], pack[11]]) as usize;
    let mut at = 12usize;
    let mut raws: Vec<Raw> = Vec::with_capacity(count.min(1 << 16));
    let mut expanded = 0u64;
    for _ in 0..count {
        let offset = at;
        let mut byte = *body
            .get(at)
            .ok_or_else(|| bad("an object header is cut short".to_owned()))?;
        at += 1;
        let type_bits = (byte >> 4) & 7;
        let mut size = u64::from(byte & 0x0f);
        let mut shift = 4;
        while byte & 0x80 != 0 {
            byte = *body
                .get(at)
                .ok_or_else(|| bad("an object header is cut short".to_owned()))?;
            at += 1;
            if shift > 57 {
                return Err(bad("an object size is too long".to_owned()));
            }
            size |= u64::from(byte & 0x7f) << shift;
            shift += 7;
        }
        let base = match type_bits {
            1 => Base::Whole(Kind::Commit),
            2 => Base::Whole(Kind::Tree),
            3 => Base::Whole(Kind::Blob),
            4 => Base::Whole(Kind::Tag),
            6 => {
                let mut byte = *body
                    .get(at)
                    .ok_or_else(|| bad("a delta offset is cut short".to_owned()))?;
                at += 1;
                let mut back = u64::from(byte & 0x7f);
                while byte & 0x80 != 0 {
                    byte = *body
                        .get(at)
                        .ok_or_else(|| bad("a delta offset is cut short".to_owned()))?;
                    at += 1;
                    back = ((back + 1) << 7) | u64::from(byte & 0x7f);
                    if back > body.len() as u64 {
                        return Err(bad("a delta offset points before the pack".to_owned()));
                    }
                }
                let base = (offset as u64)
                    .checked_sub(back)
                    .filter(|b| *b >= 12 && back > 0)
                    .ok_or_else(|| bad("a delta offset points outside the pack".to_owned()))?;
                Base::Offset(base as usize)
            }
            7 => {
                let id: Oid = body
                    .get(at..at + 20)
                    .and_then(|s| s.try_into().ok())
                    .ok_or_else(|| bad("a delta base id is cut short".to_owned()))?;
                at += 20;
                Base::Id(id)
            }
            other => return Err(bad(format!("an object has the unknown type {other}"))),
        };
        expanded += size;
        if expanded > MAX_EXPANDED {
            return Err(oversize(
                origin,
                &format!("its objects expand past {} MiB", MAX_EXPANDED >> 20),
            ));
        }
        let (data, used) = inflate(&body[at..], size as usize).map_err(&bad)?;
        at += used;
        raws.push(Raw { offset, base, data });
    }
    resolve(raws, origin)
}

/// Inflates one zlib stream at the start of `input` that should give
/// `size` bytes; answers them and the compressed bytes used.
fn inflate(input: &[u8], size: usize) -> Result<(Vec<u8>, usize), String> {
    let mut out = Vec::with_capacity(size);
    let mut state = flate2::Decompress::new(true);
    loop {
        let before_in = state.total_in() as usize;
        let before_out = out.len();
        if out.len() == out.capacity() {
            // One spare byte shows a stream longer than its header says.
            out.reserve(1);
        }
        let status = state
            .decompress_vec(&input[before_in..], &mut out, flate2::FlushDecompress::None)
            .map_err(|e| format!("an object's zlib stream is damaged: {e}"))?;
        if out.len() > size {
            return Err("an object is longer than its header says".to_owned());
        }
        match status {
            flate2::Status::StreamEnd => break,
            _ if state.total_in() as usize == before_in && out.len() == before_out => {
                return Err("an object's zlib stream is cut short".to_owned());
            }
            _ => {}
        }
    }
    if out.len() != size {
        return Err("an object is shorter than its header says".to_owned());
    }
    Ok((out, state.total_in() as usize))
}

/// Applies every delta to its base until all are whole objects.
fn resolve(mut raws: Vec<Raw>, origin: &str) -> Result<Objects, Diagnostic> {
    let bad =
        |why: &str| super::git::protocol_error(origin, format!("its packfile is damaged: {why}"));
    let by_offset: HashMap<usize, usize> = raws
        .iter()
        .enumerate()
        .map(|(i, r)| (r.offset, i))
        .collect();
    let mut done: Vec<Option<(Kind, Rc<Vec<u8>>)>> = vec![None; raws.len()];
    let mut objects = Objects::new();
    let mut expanded = 0u64;
    loop {
        let mut progress = false;
        let mut pending = false;
        for i in 0..raws.len() {
            if done[i].is_some() {
                continue;
            }
            let base = match &raws[i].base {
                Base::Whole(kind) => Some((*kind, None)),
                Base::Offset(offset) => {
                    let index = *by_offset
                        .get(offset)
                        .ok_or_else(|| bad("a delta's base offset is not an object"))?;
                    done[index].clone().map(|(k, d)| (k, Some(d)))
                }
                Base::Id(id) => objects.get(id).cloned().map(|(k, d)| (k, Some(d))),
            };
            let Some((kind, base)) = base else {
                pending = true;
                continue;
            };
            let data = match base {
                None => std::mem::take(&mut raws[i].data),
                Some(base) => {
                    let data = apply_delta(&base, &raws[i].data).map_err(|why| bad(&why))?;
                    expanded += data.len() as u64;
                    if expanded > MAX_EXPANDED {
                        return Err(oversize(
                            origin,
                            &format!("its objects expand past {} MiB", MAX_EXPANDED >> 20),
                        ));
                    }
                    data
                }
            };
            let data = Rc::new(data);
            objects.insert(object_id(kind, &data), (kind, Rc::clone(&data)));
            done[i] = Some((kind, data));
            progress = true;
        }
        if !pending {
            return Ok(objects);
        }
        if !progress {
            return Err(bad(
                "a delta's base is not in the pack (a thin pack, which smith does not ask for)",
            ));
        }
    }
}

fn varint(delta: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = *delta.get(*at).ok_or("a delta header is cut short")?;
        *at += 1;
        if shift > 63 {
            return Err("a delta size is too long".to_owned());
        }
        value |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// The object `delta` makes of `base`.
fn apply_delta(base: &[u8], delta: &[u8]) -> Result<Vec<u8>, String> {
    let mut at = 0;
    let source = varint(delta, &mut at)?;
    let target = varint(delta, &mut at)?;
    if source != base.len() as u64 {
        return Err("a delta's base has another size than the delta says".to_owned());
    }
    if target > MAX_EXPANDED {
        return Err("a delta's result is over the size cap".to_owned());
    }
    let mut out = Vec::with_capacity(target as usize);
    while at < delta.len() {
        let op = delta[at];
        at += 1;
        if op & 0x80 != 0 {
            let mut offset = 0usize;
            let mut size = 0usize;
            for bit in 0..4 {
                if op & (1 << bit) != 0 {
                    offset |= usize::from(*delta.get(at).ok_or("a delta copy is cut short")?)
                        << (8 * bit);
                    at += 1;
                }
            }
            for bit in 0..3 {
                if op & (0x10 << bit) != 0 {
                    size |= usize::from(*delta.get(at).ok_or("a delta copy is cut short")?)
                        << (8 * bit);
                    at += 1;
                }
            }
            if size == 0 {
                size = 0x10000;
            }
            let piece = base
                .get(offset..offset.checked_add(size).ok_or("a delta copy overflows")?)
                .ok_or("a delta copies from outside its base")?;
            out.extend_from_slice(piece);
        } else if op != 0 {
            let piece = delta
                .get(at..at + usize::from(op))
                .ok_or("a delta insert is cut short")?;
            out.extend_from_slice(piece);
            at += usize::from(op);
        } else {
            return Err("a delta has the reserved instruction 0".to_owned());
        }
        if out.len() as u64 > target {
            return Err("a delta gives more than it says".to_owned());
        }
    }
    if out.len() as u64 != target {
        return Err("a delta gives less than it says".to_owned());
    }
    Ok(out)
}

/// The tree a commit (or an annotated tag pointing at one) names.
///
/// # Errors
///
/// The object is missing or is not a commit.
pub fn commit_tree(objects: &Objects, commit: &Oid, origin: &str) -> Result<Oid, Diagnostic> {
    let mut id = *commit;
    for _ in 0..8 {
        let (kind, data) = objects.get(&id).ok_or_else(|| {
            super::git::protocol_error(
                origin,
                format!("the object {} is not in the pack the server sent", hex(&id)),
            )
        })?;
        let text = String::from_utf8_lossy(data);
        let field = match kind {
            Kind::Commit => "tree ",
            Kind::Tag => "object ",
            _ => break,
        };
        let next = text
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(parse_hex)
            .ok_or_else(|| {
                super::git::protocol_error(
                    origin,
                    format!("the {} {} names no {field}", kind.name(), hex(&id)),
                )
            })?;
        if *kind == Kind::Commit {
            return Ok(next);
        }
        id = next;
    }
    Err(super::git::protocol_error(
        origin,
        format!("{} is not a commit", hex(commit)),
    ))
}

/// The entries of a tree object: mode, name, id.
fn entries(data: &[u8]) -> Result<Vec<(u32, String, Oid)>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let space = data[at..]
            .iter()
            .position(|b| *b == b' ')
            .ok_or("a tree entry has no mode")?
            + at;
        let mode = std::str::from_utf8(&data[at..space])
            .ok()
            .and_then(|m| u32::from_str_radix(m, 8).ok())
            .ok_or("a tree entry's mode is not octal")?;
        let nul = data[space..]
            .iter()
            .position(|b| *b == 0)
            .ok_or("a tree entry has no name end")?
            + space;
        let name = String::from_utf8_lossy(&data[space + 1..nul]).into_owned();
        let id: Oid = data
            .get(nul + 1..nul + 21)
            .and_then(|s| s.try_into().ok())
            .ok_or("a tree entry's id is cut short")?;
        out.push((mode, name, id));
        at = nul + 21;
    }
    Ok(out)
}

/// The subtree at `path` (`/`-separated) of the tree `root`.
///
/// # Errors
///
/// The path names no folder of the commit.
pub fn subtree(objects: &Objects, root: Oid, path: &str, origin: &str) -> Result<Oid, Diagnostic> {
    let mut id = root;
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        let (_, data) = objects.get(&id).ok_or_else(|| {
            super::git::protocol_error(origin, format!("the tree {} is not in the pack", hex(&id)))
        })?;
        let found = entries(data)
            .map_err(|why| super::git::protocol_error(origin, why))?
            .into_iter()
            .find(|(mode, name, _)| *mode == 0o40000 && name == part);
        id = match found {
            Some((_, _, id)) => id,
            None => {
                return Err(Diagnostic::error(
                    "marketplace.missing-path",
                    format!("{origin} has no folder {path:?}"),
                    "the marketplace entry names a path inside the repository that its commit does not hold",
                    "check the plugin's `source.path` in the marketplace (or ask its maintainer); nothing was installed",
                )
                .with_value(format!("{path:?}")));
            }
        };
    }
    Ok(id)
}

/// Writes the tree `id` into `tree` under `prefix`. Submodules (mode
/// 160000) are left out and their paths answered.
///
/// # Errors
///
/// A symbolic link, an unsafe name, a missing object or a cap.
pub fn checkout(
    objects: &Objects,
    id: Oid,
    prefix: &str,
    tree: &mut Tree,
    depth: usize,
) -> Result<Vec<String>, Diagnostic> {
    let origin = tree.origin().to_owned();
    if depth > 64 {
        return Err(refused(
            prefix,
            &origin,
            "its folders nest more than 64 deep",
        ));
    }
    let (kind, data) = objects.get(&id).ok_or_else(|| {
        super::git::protocol_error(&origin, format!("the tree {} is not in the pack", hex(&id)))
    })?;
    if *kind != Kind::Tree {
        return Err(super::git::protocol_error(
            &origin,
            format!("{} is not a tree", hex(&id)),
        ));
    }
    let mut skipped = Vec::new();
    for (mode, name, child) in
        entries(data).map_err(|why| super::git::protocol_error(&origin, why))?
    {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if name.is_empty()
            || name == "."
            || name == ".."
            || name.contains('/')
            || name.eq_ignore_ascii_case(".git")
        {
            return Err(refused(
                &path,
                &origin,
                "its name is empty, `.`, `..`, `.git` or holds a separator",
            ));
        }
        match mode & 0o170_000 {
            0o040_000 => {
                tree.dir(&path)?;
                skipped.extend(checkout(objects, child, &path, tree, depth + 1)?);
            }
            0o100_000 => {
                let (kind, blob) = objects.get(&child).ok_or_else(|| {
                    super::git::protocol_error(
                        &origin,
                        format!("the blob {} of {path:?} is not in the pack", hex(&child)),
                    )
                })?;
                if *kind != Kind::Blob {
                    return Err(super::git::protocol_error(
                        &origin,
                        format!("{path:?} is not a blob"),
                    ));
                }
                tree.file(&path, &mut blob.as_slice(), mode & 0o111 != 0)?;
            }
            0o120_000 => {
                return Err(refused(
                    &path,
                    &origin,
                    "it is a symbolic link (mode 120000)",
                ));
            }
            0o160_000 => skipped.push(path),
            _ => {
                return Err(refused(
                    &path,
                    &origin,
                    &format!("it has the unknown mode {mode:o}"),
                ));
            }
        }
    }
    Ok(skipped)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_delta_copies_and_inserts() {
        // source 5, target 8: copy offset 0 size 5, insert "abc".
        let delta = [5, 8, 0x90, 5, 3, b'a', b'b', b'c'];
        assert_eq!(apply_delta(b"hello", &delta).unwrap(), b"helloabc");
        assert!(apply_delta(b"hell", &delta).is_err());
        assert!(apply_delta(b"hello", &[5, 8, 0]).is_err());
    }

    #[test]
    fn object_ids_are_gits() {
        // `git hash-object -t blob --stdin <<< ''` of an empty file.
        assert_eq!(
            hex(&object_id(Kind::Blob, b"")),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            parse_hex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
                .map(|o| hex(&o))
                .as_deref(),
            Some("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
        );
    }

    fn git(dir: &std::path::Path, args: &[&str], stdin: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        out.stdout
    }

    /// Packs made by the real git, with offset deltas and with id deltas,
    /// decode and check out to the files committed.
    #[test]
    fn packs_made_by_git_decode_and_check_out() {
        let repo = tempfile::tempdir().unwrap();
        let dir = repo.path();
        git(dir, &["init", "-q", "-b", "main"], b"");
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!("line {i} of a file long enough to be deltified\n"));
        }
        std::fs::create_dir_all(dir.join("skills/a")).unwrap();
        std::fs::write(dir.join("skills/a/SKILL.md"), &text).unwrap();
        std::fs::write(dir.join("run.sh"), "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let executable = std::fs::Permissions::from_mode(0o755);
            std::fs::set_permissions(dir.join("run.sh"), executable).unwrap();
        }
        git(dir, &["add", "-A"], b"");
        git(dir, &["commit", "-q", "-m", "one"], b"");
        text.push_str("one more line\n");
        std::fs::write(dir.join("skills/a/SKILL.md"), &text).unwrap();
        std::fs::write(
            dir.join("skills/a/copy.md"),
            text.replace("line 7 ", "LINE 7 "),
        )
        .unwrap();
        git(dir, &["add", "-A"], b"");
        git(dir, &["commit", "-q", "-m", "two"], b"");
        let head = String::from_utf8(git(dir, &["rev-parse", "HEAD"], b"")).unwrap();
        let head = parse_hex(head.trim()).unwrap();
        let objects = git(dir, &["rev-list", "--objects", "--all"], b"");
        for flags in [
            &["pack-objects", "-q", "--stdout", "--delta-base-offset"][..],
            &["pack-objects", "-q", "--stdout"][..],
        ] {
            let bytes = git(dir, flags, &objects);
            let decoded = decode(&bytes, "the test").unwrap();
            let root = commit_tree(&decoded, &head, "the test").unwrap();
            let out = tempfile::tempdir().unwrap();
            let mut tree = Tree::new(out.path(), "the test");
            assert!(
                checkout(&decoded, root, "", &mut tree, 0)
                    .unwrap()
                    .is_empty()
            );
            assert_eq!(
                std::fs::read_to_string(out.path().join("skills/a/SKILL.md")).unwrap(),
                text
            );
            assert!(
                std::fs::read_to_string(out.path().join("skills/a/copy.md"))
                    .unwrap()
                    .contains("LINE 7 ")
            );
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(out.path().join("run.sh"))
                    .unwrap()
                    .permissions()
                    .mode();
                assert_ne!(mode & 0o111, 0);
            }
            let sub = subtree(&decoded, root, "skills/a", "the test").unwrap();
            let out = tempfile::tempdir().unwrap();
            checkout(&decoded, sub, "", &mut Tree::new(out.path(), "the test"), 0).unwrap();
            assert!(out.path().join("SKILL.md").is_file());
        }
        let mut damaged = git(dir, &["pack-objects", "-q", "--stdout"], &objects);
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0xff;
        assert!(decode(&damaged, "the test").is_err());
    }

    #[test]
    fn a_symlink_in_a_commit_is_refused() {
        let repo = tempfile::tempdir().unwrap();
        let dir = repo.path();
        git(dir, &["init", "-q", "-b", "main"], b"");
        std::fs::write(dir.join("a"), "x").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).unwrap();
        git(dir, &["add", "-A"], b"");
        git(dir, &["commit", "-q", "-m", "one"], b"");
        let head = String::from_utf8(git(dir, &["rev-parse", "HEAD"], b"")).unwrap();
        let objects = git(dir, &["rev-list", "--objects", "--all"], b"");
        let decoded = decode(
            &git(dir, &["pack-objects", "-q", "--stdout"], &objects),
            "t",
        )
        .unwrap();
        let root = commit_tree(&decoded, &parse_hex(head.trim()).unwrap(), "t").unwrap();
        let out = tempfile::tempdir().unwrap();
        let e = checkout(
            &decoded,
            root,
            "",
            &mut Tree::new(out.path(), "the repo"),
            0,
        )
        .unwrap_err();
        assert_eq!(e.code(), "marketplace.unsafe-entry");
        assert!(e.what().contains("\"link\""), "{}", e.what());
        assert!(!out.path().join("link").exists());
    }
}
