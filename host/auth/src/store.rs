//! smith's auth store: one JSON file under the data directory.
//!
//! ```json
//! {"version":1,"credentials":{"anthropic":{"api_key":{"kind":"api-key","key":"…"}}}}
//! ```
//!
//! The file is private (mode 0600 on Unix) and only ever replaced whole:
//! a temporary file in the same directory is written, synced and renamed
//! over it. Every change is a read-modify-write under an exclusive lock on a
//! sibling `.lock` file, and touches only the entry it changes, so two
//! processes changing different providers at once cannot lose each other's
//! state. Entries this version does not understand are kept as they are.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use smith_diag::{Diagnostic, Surface};

use crate::secret::{Credential, OAuthToken, Secret};

/// The auth store file.
#[derive(Debug, Clone)]
pub struct AuthStore {
    path: PathBuf,
}

/// The file's name inside the data directory.
pub const FILE_NAME: &str = "auth.json";

type Entries = BTreeMap<String, Map<String, Value>>;

impl AuthStore {
    /// The store at `path` (created on first write).
    pub fn at(path: impl Into<PathBuf>) -> AuthStore {
        AuthStore { path: path.into() }
    }

    /// The store inside the data directory `data_dir`.
    pub fn in_data_dir(data_dir: &Path) -> AuthStore {
        AuthStore::at(data_dir.join(FILE_NAME))
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The credential stored for `provider`'s `slot`.
    ///
    /// # Errors
    ///
    /// When the file cannot be read or is damaged.
    pub fn get(&self, provider: &str, slot: &str) -> Result<Option<Credential>, Diagnostic> {
        let entries = self.read()?;
        match entries.get(provider).and_then(|p| p.get(slot)) {
            Some(v) => self.decode(provider, slot, v).map(Some),
            None => Ok(None),
        }
    }

    /// Every stored `(provider, slot)`, sorted.
    ///
    /// # Errors
    ///
    /// When the file cannot be read or is damaged.
    pub fn list(&self) -> Result<Vec<(String, String)>, Diagnostic> {
        Ok(self
            .read()?
            .into_iter()
            .flat_map(|(p, slots)| slots.into_iter().map(move |(s, _)| (p.clone(), s)))
            .collect())
    }

    /// Stores `credential` for `provider`'s `slot`, leaving every other
    /// entry as it is on disk at that moment.
    ///
    /// # Errors
    ///
    /// When the file cannot be locked, read or written.
    pub fn set(
        &self,
        provider: &str,
        slot: &str,
        credential: &Credential,
    ) -> Result<(), Diagnostic> {
        self.update(|entries| {
            entries
                .entry(provider.to_owned())
                .or_default()
                .insert(slot.to_owned(), encode(credential));
            Ok(())
        })
    }

    /// Removes `provider`'s `slot`, or all its slots when `slot` is `None`.
    /// Returns how many entries were removed.
    ///
    /// # Errors
    ///
    /// When the file cannot be locked, read or written.
    pub fn remove(&self, provider: &str, slot: Option<&str>) -> Result<usize, Diagnostic> {
        let mut removed = 0;
        self.update(|entries| {
            match slot {
                Some(s) => {
                    if let Some(p) = entries.get_mut(provider) {
                        removed += usize::from(p.remove(s).is_some());
                        if p.is_empty() {
                            entries.remove(provider);
                        }
                    }
                }
                None => removed = entries.remove(provider).map_or(0, |p| p.len()),
            }
            Ok(())
        })?;
        Ok(removed)
    }

    /// Runs `f` on the stored credential of `provider`'s `slot` under the
    /// store's lock, storing what it returns. Used to renew a token exactly
    /// once when several processes notice its expiry together.
    ///
    /// # Errors
    ///
    /// What `f` returns, or a problem with the file.
    pub fn modify(
        &self,
        provider: &str,
        slot: &str,
        f: impl FnOnce(Option<Credential>) -> Result<Credential, Diagnostic>,
    ) -> Result<Credential, Diagnostic> {
        let mut out = None;
        self.update(|entries| {
            let current = match entries.get(provider).and_then(|p| p.get(slot)) {
                Some(v) => Some(self.decode(provider, slot, v)?),
                None => None,
            };
            let next = f(current)?;
            entries
                .entry(provider.to_owned())
                .or_default()
                .insert(slot.to_owned(), encode(&next));
            out = Some(next);
            Ok(())
        })?;
        out.ok_or_else(|| self.io_error("update", &io::Error::other("no credential was produced")))
    }

    fn update(
        &self,
        f: impl FnOnce(&mut Entries) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let _lock = self.lock()?;
        let mut entries = self.read()?;
        f(&mut entries)?;
        self.write(&entries)
    }

    fn lock(&self) -> Result<Lock, Diagnostic> {
        let dir = self.dir();
        fs::create_dir_all(dir).map_err(|e| self.io_error("create the directory of", &e))?;
        let lock_path = self.path.with_extension("json.lock");
        let mut opts = OpenOptions::new();
        opts.create(true).truncate(false).read(true).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            opts.mode(0o600);
        }
        let f = opts
            .open(&lock_path)
            .map_err(|e| self.io_error("open the lock file of", &e))?;
        fs4::FileExt::lock(&f).map_err(|e| self.io_error("lock", &e))?;
        Ok(Lock(f))
    }

    fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    fn read(&self) -> Result<Entries, Diagnostic> {
        let text = match fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Entries::new()),
            Err(e) => return Err(self.io_error("read", &e)),
        };
        let damaged = |why: String| {
            Diagnostic::error(
                "auth.store-damaged",
                format!("the auth store {} cannot be read", self.path.display()),
                why,
                "move the file aside and store the credentials again with `smith auth set PROVIDER`",
            )
            .with_surface(Surface::file(&self.path))
        };
        let doc: Value = serde_json::from_str(&text).map_err(|e| {
            damaged(format!(
                "it is not valid JSON (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        let Some(creds) = doc.get("credentials").and_then(Value::as_object) else {
            return Err(damaged("it has no `credentials` object".to_owned()));
        };
        let mut out = Entries::new();
        for (provider, slots) in creds {
            let Some(slots) = slots.as_object() else {
                return Err(damaged(format!(
                    "the entry for `{provider}` is not an object"
                )));
            };
            out.insert(provider.clone(), slots.clone());
        }
        Ok(out)
    }

    fn write(&self, entries: &Entries) -> Result<(), Diagnostic> {
        let doc = json!({ "version": 1, "credentials": entries });
        let mut text = serde_json::to_string_pretty(&doc)
            .map_err(|e| self.io_error("encode", &io::Error::other(e.to_string())))?;
        text.push('\n');
        let name = self
            .path
            .file_name()
            .map_or_else(|| "auth.json".into(), |n| n.to_string_lossy().into_owned());
        let tmp = self.dir().join(format!(
            ".{name}.tmp-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let result = (|| {
            let mut opts = OpenOptions::new();
            opts.write(true).create(true).truncate(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt as _;
                opts.mode(0o600);
            }
            let mut f = opts.open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            drop(f);
            fs::rename(&tmp, &self.path)?;
            if let Ok(d) = File::open(self.dir()) {
                let _ = d.sync_all();
            }
            Ok::<(), io::Error>(())
        })();
        result.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            self.io_error("write", &e)
        })
    }

    fn decode(&self, provider: &str, slot: &str, v: &Value) -> Result<Credential, Diagnostic> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        match v.get("kind").and_then(Value::as_str) {
            Some("api-key") => s("key").map(|k| Credential::ApiKey(Secret::new(k))),
            Some("oauth") => s("access").map(|a| {
                Credential::OAuth(OAuthToken {
                    access: Secret::new(a),
                    refresh: s("refresh").map(Secret::new),
                    expires_at: v.get("expires_at").and_then(Value::as_u64),
                })
            }),
            _ => None,
        }
        .ok_or_else(|| {
            Diagnostic::error(
                "auth.store-entry",
                format!("the stored credential for `{provider}.{slot}` is incomplete"),
                format!(
                    "the entry in {} lacks a known `kind` or its value",
                    self.path.display()
                ),
                format!("store it again with `smith auth set {provider} --slot {slot}`"),
            )
            .with_surface(Surface::file(&self.path))
        })
    }

    fn io_error(&self, action: &str, e: &io::Error) -> Diagnostic {
        Diagnostic::error(
            "auth.store-io",
            format!("could not {action} the auth store {}", self.path.display()),
            format!("the system reported: {e}"),
            "check that the data directory exists and belongs to you (or set SMITH_HOME)",
        )
        .with_surface(Surface::file(&self.path))
    }
}

fn encode(c: &Credential) -> Value {
    match c {
        Credential::ApiKey(k) => json!({ "kind": "api-key", "key": k.expose() }),
        Credential::OAuth(t) => {
            let mut m = Map::new();
            m.insert("kind".into(), "oauth".into());
            m.insert("access".into(), t.access.expose().into());
            if let Some(r) = &t.refresh {
                m.insert("refresh".into(), r.expose().into());
            }
            if let Some(e) = t.expires_at {
                m.insert("expires_at".into(), e.into());
            }
            Value::Object(m)
        }
    }
}

struct Lock(File);

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs4::FileExt::unlock(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_remove_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = AuthStore::in_data_dir(dir.path());
        assert_eq!(store.get("p", "api_key").unwrap(), None);
        let key = Credential::ApiKey(Secret::new("k-store-1"));
        store.set("p", "api_key", &key).unwrap();
        assert_eq!(store.get("p", "api_key").unwrap(), Some(key));
        assert_eq!(
            store.list().unwrap(),
            [("p".to_owned(), "api_key".to_owned())]
        );
        assert_eq!(store.remove("p", None).unwrap(), 1);
        assert_eq!(store.get("p", "api_key").unwrap(), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let store = AuthStore::in_data_dir(dir.path());
        store
            .set("p", "s", &Credential::ApiKey(Secret::new("k-store-2")))
            .unwrap();
        let mode = fs::metadata(store.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn unknown_entries_survive_changes() {
        let dir = tempfile::tempdir().unwrap();
        let store = AuthStore::in_data_dir(dir.path());
        fs::write(
            store.path(),
            r#"{"version":1,"credentials":{"future":{"x":{"kind":"passkey","blob":1}}}}"#,
        )
        .unwrap();
        store
            .set("p", "s", &Credential::ApiKey(Secret::new("k-store-3")))
            .unwrap();
        let text = fs::read_to_string(store.path()).unwrap();
        assert!(text.contains("passkey"));
        assert_eq!(
            store.get("future", "x").unwrap_err().code(),
            "auth.store-entry"
        );
    }

    #[test]
    fn a_damaged_file_is_reported_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let store = AuthStore::in_data_dir(dir.path());
        fs::write(store.path(), "{not json").unwrap();
        let d = store
            .set("p", "s", &Credential::ApiKey(Secret::new("k-store-4")))
            .unwrap_err();
        assert_eq!(d.code(), "auth.store-damaged");
        assert_eq!(fs::read_to_string(store.path()).unwrap(), "{not json");
    }
}
