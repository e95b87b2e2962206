//! The refresh cache: what providers reported on earlier runs.
//!
//! One file per provider, `<dir>/<provider>.json`, holding
//! `{"refreshed_at": SECONDS, "models": [...]}`: when the provider was asked
//! (seconds since the Unix epoch) and the models it reported (a bare JSON
//! array of models is read too, with no time). Files are replaced atomically (temporary file, sync, rename) so a
//! crash never leaves half a cache. A damaged file is only a cache: it is
//! skipped with a warning and the bundled catalog serves instead.

use std::fs;
use std::io::{self, Write as _};
use std::path::Path;

use smith_diag::{Diagnostic, Surface};

use serde::{Deserialize, Serialize};

use crate::catalog::{Catalog, Source};
use crate::model::ModelInfo;

/// A cache file's content.
#[derive(Debug, Serialize, Deserialize)]
struct CacheFile {
    /// When the provider was asked (seconds since the Unix epoch).
    refreshed_at: Option<u64>,
    /// What it reported.
    models: Vec<ModelInfo>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AnyCacheFile {
    Current(CacheFile),
    Bare(Vec<ModelInfo>),
}
/// Loads every `<provider>.json` in `dir` into `catalog` as
/// [`Source::Cache`] data, in name order. A missing directory is no
/// cache. Returns a warning for each file that could not be used.
pub fn load_dir(catalog: &Catalog, dir: &Path) -> Vec<Diagnostic> {
    let mut warnings = Vec::new();
    let Ok(read) = fs::read_dir(dir) else {
        return warnings;
    };
    let mut files: Vec<_> = read.filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    for path in files {
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Some(provider) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let parsed = fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<AnyCacheFile>(&t).map_err(|e| e.to_string()));
        match parsed {
            Ok(AnyCacheFile::Current(file)) => {
                catalog.load_cached_at(provider, file.models, file.refreshed_at);
            }
            Ok(AnyCacheFile::Bare(models)) => {
                catalog.load_cached(provider, models);
            }
            Err(why) => warnings.push(
                Diagnostic::warning(
                    "catalog.cache-damaged",
                    format!("the catalog cache {} was skipped", path.display()),
                    format!("it could not be read: {why}"),
                    "delete the file; the next refresh writes it again",
                )
                .with_surface(Surface::file(&path)),
            ),
        }
    }
    warnings
}

/// Writes `provider`'s refreshed data from `catalog` to
/// `<dir>/<provider>.json`. Does nothing when the catalog holds no data
/// from a refresh of this run for the provider (cache data is not written
/// back).
///
/// # Errors
///
/// When the directory or file cannot be written.
pub fn save(catalog: &Catalog, dir: &Path, provider: &str) -> Result<bool, Diagnostic> {
    let Some((Source::Refresh, models, refreshed_at)) = catalog.runtime_data(provider) else {
        return Ok(false);
    };
    let path = dir.join(format!("{provider}.json"));
    let fail = |e: io::Error| {
        Diagnostic::error(
            "catalog.cache-write",
            format!("could not write the catalog cache {}", path.display()),
            format!("the system reported: {e}"),
            "check that the cache directory is writable; the refreshed catalog stays in use for this run",
        )
        .with_surface(Surface::file(&path))
    };
    let file = CacheFile {
        refreshed_at,
        models,
    };
    let text = serde_json::to_string_pretty(&file).map_err(|e| fail(io::Error::other(e)))?;
    fs::create_dir_all(dir).map_err(fail)?;
    let tmp = dir.join(format!(".{provider}.json.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, &path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(fail(e));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Field;

    #[test]
    fn a_refresh_saved_to_the_cache_serves_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let first = Catalog::new(vec![]);
        assert!(
            !save(&first, dir.path(), "p").unwrap(),
            "nothing refreshed yet"
        );
        let t = first.begin_refresh("p");
        let mut m = ModelInfo::new("p", "m");
        m.context = Some(42);
        m.thinking = Some(vec![]);
        first.publish_refresh(&t, vec![m.clone()]);
        assert!(save(&first, dir.path(), "p").unwrap());

        let next = Catalog::new(vec![]);
        assert!(load_dir(&next, dir.path()).is_empty());
        let snap = next.snapshot();
        let e = snap.get("p", "m").unwrap();
        assert_eq!(e.model, m);
        assert_eq!(e.provenance[&Field::Context], Source::Cache);
        // The time the provider was asked survives the round trip.
        let asked = first.snapshot().runtime["p"].refreshed_at;
        assert!(asked.is_some());
        assert_eq!(snap.runtime["p"].refreshed_at, asked);
        assert_eq!(snap.runtime["p"].source, Source::Cache);
        assert_eq!(snap.runtime["p"].models, 1);
        // Cache data is not written back as if it were fresh.
        assert!(!save(&next, dir.path(), "p").unwrap());
    }

    #[test]
    fn a_bare_array_cache_file_is_read_with_no_time() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("p.json"),
            r#"[{"provider": "p", "id": "m", "context": 7}]"#,
        )
        .unwrap();
        let c = Catalog::new(vec![]);
        assert!(load_dir(&c, dir.path()).is_empty());
        let snap = c.snapshot();
        assert_eq!(snap.get("p", "m").unwrap().model.context, Some(7));
        assert_eq!(snap.runtime["p"].refreshed_at, None);
    }

    #[test]
    fn a_damaged_cache_file_is_skipped_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("p.json"), "[{").unwrap();
        fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        let c = Catalog::new(vec![ModelInfo::new("b", "m")]);
        let warnings = load_dir(&c, dir.path());
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].code(), "catalog.cache-damaged");
        assert!(warnings[0].is_complete());
        assert_eq!(c.snapshot().entries.len(), 1);
        assert!(load_dir(&c, &dir.path().join("absent")).is_empty());
    }
}
