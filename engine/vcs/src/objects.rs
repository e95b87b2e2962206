//! The object store: `objects/XX/YYYY…` files holding one zstd frame each,
//! named by the id of the uncompressed bytes, written through a temporary
//! file and a rename so a reader never sees half an object.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::VcsError;
use crate::id::{ObjectId, ObjectKind};

/// The zstd level objects are compressed at.
pub const ZSTD_LEVEL: i32 = 3;

/// The largest object read with the reused decompressor into a buffer of
/// the size its frame states (larger ones are streamed).
const BULK_LIMIT: u64 = 64 << 20;

/// The object store of one project's snapshot store.
pub(crate) struct Objects {
    root: PathBuf,
    /// Reused for object paths, so checking an object allocates nothing.
    path: PathBuf,
    compressor: Option<zstd::bulk::Compressor<'static>>,
    /// Reused for every object read (making one costs more than a small
    /// object's decompression).
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
    seq: u64,
    /// Bytes written to new objects (compressed) since the store opened.
    pub(crate) written: u64,
}

impl Objects {
    pub(crate) fn open(root: &Path) -> Result<Objects, VcsError> {
        for sub in ["objects", "snapshots", "tmp"] {
            let dir = root.join(sub);
            std::fs::create_dir_all(&dir)
                .map_err(|e| VcsError::io("creating the store folder", &dir, &e))?;
        }
        let mut path = PathBuf::with_capacity(root.as_os_str().len() + 96);
        path.push(root);
        Ok(Objects {
            root: root.to_path_buf(),
            path,
            compressor: None,
            decompressor: None,
            seq: 0,
            written: 0,
        })
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Points `self.path` at the file of `id` in `folder` (`objects` with a
    /// fan-out folder, or `snapshots`).
    fn locate(&mut self, folder: &str, id: &ObjectId) -> &Path {
        let hex = id.hex();
        let hex = std::str::from_utf8(&hex).unwrap_or_default();
        self.path.clear();
        self.path.push(&self.root);
        self.path.push(folder);
        if folder == "objects" {
            self.path.push(&hex[..2]);
            self.path.push(&hex[2..]);
        } else {
            self.path.push(hex);
        }
        &self.path
    }

    fn folder(kind: ObjectKind) -> &'static str {
        match kind {
            ObjectKind::Snapshot => "snapshots",
            _ => "objects",
        }
    }

    /// Whether `id` is stored.
    pub(crate) fn has(&mut self, kind: ObjectKind, id: &ObjectId) -> bool {
        let path = self.locate(Self::folder(kind), id);
        std::fs::symlink_metadata(path).is_ok()
    }

    /// Stores `data` as `kind` unless an object with its id is stored;
    /// returns the id.
    pub(crate) fn put(&mut self, kind: ObjectKind, data: &[u8]) -> Result<ObjectId, VcsError> {
        let id = ObjectId::of(kind, data);
        self.put_with_id(kind, id, data)?;
        Ok(id)
    }

    /// Stores `data`, whose id is `id`, unless it is stored.
    pub(crate) fn put_with_id(
        &mut self,
        kind: ObjectKind,
        id: ObjectId,
        data: &[u8],
    ) -> Result<(), VcsError> {
        if self.has(kind, &id) {
            return Ok(());
        }
        let body: std::borrow::Cow<'_, [u8]> = if kind == ObjectKind::Snapshot {
            data.into()
        } else {
            if self.compressor.is_none() {
                let c = zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(|e| {
                    VcsError::io("starting the zstd compressor for", &self.root, &e)
                })?;
                self.compressor = Some(c);
            }
            match self.compressor.as_mut() {
                Some(c) => c
                    .compress(data)
                    .map_err(|e| VcsError::io("compressing an object for", &self.root, &e))?
                    .into(),
                None => data.into(),
            }
        };
        self.seq += 1;
        let tmp = self
            .root
            .join("tmp")
            .join(format!("{}-{}", std::process::id(), self.seq));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&body)?;
            Ok(())
        };
        write().map_err(|e| VcsError::io("writing the object file", &tmp, &e))?;
        let dest = self.locate(Self::folder(kind), &id).to_path_buf();
        let renamed = match std::fs::rename(&tmp, &dest) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = dest.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| VcsError::io("creating the object folder", parent, &e))?;
                }
                std::fs::rename(&tmp, &dest)
            }
            r => r,
        };
        renamed.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            VcsError::io("publishing the object file", &dest, &e)
        })?;
        self.written += body.len() as u64;
        Ok(())
    }

    /// The bytes of `id`, checked against the id.
    pub(crate) fn get(&mut self, kind: ObjectKind, id: &ObjectId) -> Result<Vec<u8>, VcsError> {
        let path = self.locate(Self::folder(kind), id).to_path_buf();
        let raw = match std::fs::read(&path) {
            Ok(raw) => raw,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(VcsError::corrupt(format!(
                    "the {} object {id} is missing from the store ({})",
                    kind_name(kind),
                    path.display()
                )));
            }
            Err(e) => return Err(VcsError::io("reading the object file", &path, &e)),
        };
        let data = if kind == ObjectKind::Snapshot {
            raw
        } else {
            self.decompress(&raw).map_err(|e| {
                VcsError::corrupt(format!(
                    "the {} object {id} ({}) is not a valid zstd frame: {e}",
                    kind_name(kind),
                    path.display()
                ))
            })?
        };
        if ObjectId::of(kind, &data) != *id {
            return Err(VcsError::corrupt(format!(
                "the {} object {id} ({}) does not hash to its id",
                kind_name(kind),
                path.display()
            )));
        }
        Ok(data)
    }

    /// The bytes of the zstd frame `raw`: with the reused decompressor when
    /// the frame states a size up to [`BULK_LIMIT`], else streamed.
    fn decompress(&mut self, raw: &[u8]) -> std::io::Result<Vec<u8>> {
        let size = zstd::zstd_safe::get_frame_content_size(raw)
            .ok()
            .flatten()
            .filter(|n| *n <= BULK_LIMIT);
        let Some(size) = size else {
            return zstd::stream::decode_all(raw);
        };
        if self.decompressor.is_none() {
            self.decompressor = Some(zstd::bulk::Decompressor::new()?);
        }
        let Some(d) = self.decompressor.as_mut() else {
            return zstd::stream::decode_all(raw);
        };
        let mut out = Vec::with_capacity(size as usize);
        d.decompress_to_buffer(raw, &mut out)?;
        Ok(out)
    }

    /// Every stored object of the `objects` folder, with its file size.
    pub(crate) fn list_objects(&self) -> Result<Vec<(ObjectId, u64)>, VcsError> {
        let mut out = Vec::new();
        let dir = self.root.join("objects");
        let fans = std::fs::read_dir(&dir).map_err(|e| VcsError::io("listing", &dir, &e))?;
        for fan in fans {
            let fan = fan.map_err(|e| VcsError::io("listing", &dir, &e))?;
            let prefix = fan.file_name();
            let Some(prefix) = prefix.to_str().filter(|p| p.len() == 2) else {
                continue;
            };
            let files = std::fs::read_dir(fan.path())
                .map_err(|e| VcsError::io("listing", &fan.path(), &e))?;
            for file in files {
                let file = file.map_err(|e| VcsError::io("listing", &fan.path(), &e))?;
                let name = file.file_name();
                let Some(rest) = name.to_str() else { continue };
                let Some(id) = ObjectId::from_hex(&format!("{prefix}{rest}")) else {
                    continue;
                };
                let size = file.metadata().map(|m| m.len()).unwrap_or(0);
                out.push((id, size));
            }
        }
        Ok(out)
    }

    /// Every stored snapshot record.
    pub(crate) fn list_snapshots(&self) -> Result<Vec<ObjectId>, VcsError> {
        let dir = self.root.join("snapshots");
        let mut out = Vec::new();
        for file in std::fs::read_dir(&dir).map_err(|e| VcsError::io("listing", &dir, &e))? {
            let file = file.map_err(|e| VcsError::io("listing", &dir, &e))?;
            if let Some(id) = file.file_name().to_str().and_then(ObjectId::from_hex) {
                out.push(id);
            }
        }
        Ok(out)
    }

    /// Removes `id` of `kind`; returns the bytes freed.
    pub(crate) fn remove(&mut self, kind: ObjectKind, id: &ObjectId) -> Result<u64, VcsError> {
        let path = self.locate(Self::folder(kind), id).to_path_buf();
        let size = std::fs::symlink_metadata(&path)
            .map(|m| m.len())
            .unwrap_or(0);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(size),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(VcsError::io("removing the object file", &path, &e)),
        }
    }
}

pub(crate) fn kind_name(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::Blob => "blob",
        ObjectKind::Tree => "tree",
        ObjectKind::Snapshot => "snapshot",
    }
}
