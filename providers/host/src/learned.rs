//! What smith learned about models no catalog describes.
//!
//! An OpenAI-compatible model that no `models.kdl` entry (or family)
//! describes is assumed to call tools (see [`crate::LiveProvider`]). The
//! first answer settles it: a server that answers a request offering tools
//! proves tool use, a server that refuses the tools disproves it. The
//! outcome is kept in one small file in smith's cache directory,
//! `learned-models.json`:
//!
//! ```json
//! {"version": 1, "models": {"ollama/qwen2.5-coder:7b":
//!   {"tools": true, "at": 1796000000, "how": "the server answered a request offering tools"}}}
//! ```
//!
//! so the assumption is announced once, not on every run, and a refusal is
//! not paid for again. A `models.kdl` entry always decides over what was
//! learned. The file is only a cache: a damaged or oversized one is skipped
//! with a warning (and replaced on the next lesson), and a failed write
//! costs only the notice on the next run. It is replaced atomically
//! (temporary file, sync, rename).

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};
use smith_diag::{Diagnostic, Surface};

/// The file's name in smith's cache directory.
pub const FILE_NAME: &str = "learned-models.json";

/// The largest file read: far more than any real number of models needs.
const MAX_BYTES: u64 = 1 << 20;

/// One learned fact about a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    /// Whether the model calls tools.
    pub tools: bool,
    /// When it was learned (seconds since the Unix epoch).
    pub at: u64,
    /// How it was learned, one phrase (e.g. the server's refusal).
    pub how: String,
}

/// The learned facts, by `provider/model`, backed by one file.
#[derive(Debug)]
pub struct Learned {
    path: PathBuf,
    facts: Mutex<BTreeMap<String, Fact>>,
}

impl Learned {
    /// Reads `dir/learned-models.json`. A missing file is no facts; a file
    /// that cannot be used is skipped, with a warning saying why.
    pub fn open(dir: &Path) -> (Learned, Option<Diagnostic>) {
        let path = dir.join(FILE_NAME);
        let (facts, warning) = match read(&path) {
            Ok(facts) => (facts, None),
            Err(why) => (
                BTreeMap::new(),
                Some(
                    Diagnostic::warning(
                        "provider.learned-damaged",
                        format!("what smith learned about models in {} was skipped", path.display()),
                        format!("the file could not be used: {why}"),
                        "nothing to do: smith assumes tool use again for models no models.kdl entry describes, and rewrites the file; delete it to stop this warning now",
                    )
                    .with_surface(Surface::file(&path)),
                ),
            ),
        };
        (
            Learned {
                path,
                facts: Mutex::new(facts),
            },
            warning,
        )
    }

    /// The file the facts live in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What was learned about `reference` (`provider/model`), if anything.
    pub fn get(&self, reference: &str) -> Option<Fact> {
        self.facts.lock().ok()?.get(reference).cloned()
    }

    /// Records whether `reference` calls tools, and how that was learned,
    /// and writes the file. A fact already known the same way is not
    /// written again.
    ///
    /// # Errors
    ///
    /// When the file cannot be written; the fact still holds for this run.
    pub fn record(&self, reference: &str, tools: bool, how: &str) -> Result<(), Diagnostic> {
        let Ok(mut facts) = self.facts.lock() else {
            return Ok(());
        };
        if facts.get(reference).is_some_and(|f| f.tools == tools) {
            return Ok(());
        }
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        facts.insert(
            reference.to_owned(),
            Fact {
                tools,
                at,
                how: how.to_owned(),
            },
        );
        write(&self.path, &facts).map_err(|e| {
            Diagnostic::warning(
                "provider.learned-write",
                format!(
                    "could not record what smith learned about `{reference}` in {}",
                    self.path.display()
                ),
                format!("the system reported: {e}"),
                "check that smith's cache directory is writable; until then the next run announces the assumption again",
            )
            .with_surface(Surface::file(&self.path))
        })
    }
}

fn read(path: &Path) -> Result<BTreeMap<String, Fact>, String> {
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e.to_string()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file".to_owned());
    }
    if meta.len() > MAX_BYTES {
        return Err(format!(
            "it holds {} bytes, more than the {MAX_BYTES} a learned-models file may hold",
            meta.len()
        ));
    }
    let mut text = String::new();
    file.take(MAX_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    let value: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if value["version"] != 1 {
        return Err(format!(
            "its version is {}, and this smith reads version 1",
            value["version"]
        ));
    }
    let Some(models) = value["models"].as_object() else {
        return Err("it has no `models` object".to_owned());
    };
    let mut facts = BTreeMap::new();
    for (reference, fact) in models {
        let (Some(tools), Some(at)) = (fact["tools"].as_bool(), fact["at"].as_u64()) else {
            return Err(format!(
                "the entry for `{reference}` lacks a boolean `tools` or a numeric `at`"
            ));
        };
        let how = fact["how"].as_str().unwrap_or_default().to_owned();
        facts.insert(reference.clone(), Fact { tools, at, how });
    }
    Ok(facts)
}

fn write(path: &Path, facts: &BTreeMap<String, Fact>) -> std::io::Result<()> {
    let models: serde_json::Map<String, Value> = facts
        .iter()
        .map(|(k, f)| {
            (
                k.clone(),
                json!({"tools": f.tools, "at": f.at, "how": f.how}),
            )
        })
        .collect();
    let text = serde_json::to_string_pretty(&json!({"version": 1, "models": models}))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{FILE_NAME}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_fact_serves_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let (first, warning) = Learned::open(dir.path());
        assert!(warning.is_none());
        assert_eq!(first.get("ollama/m"), None);
        first.record("ollama/m", true, "answered").unwrap();
        first.record("ollama/n", false, "refused").unwrap();
        let (next, warning) = Learned::open(dir.path());
        assert!(warning.is_none());
        let m = next.get("ollama/m").unwrap();
        assert!(m.tools);
        assert_eq!(m.how, "answered");
        assert!(m.at > 1_700_000_000);
        assert!(!next.get("ollama/n").unwrap().tools);
        // A changed fact replaces the old one.
        next.record("ollama/m", false, "refused later").unwrap();
        let (last, _) = Learned::open(dir.path());
        assert_eq!(last.get("ollama/m").unwrap().how, "refused later");
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(FILE_NAME)]);
    }

    #[test]
    fn a_damaged_file_is_skipped_with_a_warning_naming_it_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        for (bad, why) in [
            ("{not json", "key must be a string"),
            (r#"{"version": 2, "models": {}}"#, "version is 2"),
            (r#"{"version": 1}"#, "no `models` object"),
            (
                r#"{"version": 1, "models": {"a/b": {"tools": "yes", "at": 1}}}"#,
                "entry for `a/b`",
            ),
        ] {
            fs::write(&path, bad).unwrap();
            let (learned, warning) = Learned::open(dir.path());
            let warning = warning.expect("a warning");
            assert_eq!(warning.code(), "provider.learned-damaged");
            let text = warning.to_string();
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(text.contains(why), "{why}: {text}");
            assert_eq!(learned.get("a/b"), None);
            learned.record("a/b", true, "answered").unwrap();
            let (again, warning) = Learned::open(dir.path());
            assert!(warning.is_none(), "the next lesson rewrote the file");
            assert!(again.get("a/b").unwrap().tools);
        }
    }

    #[test]
    fn an_oversized_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let f = fs::File::create(&path).unwrap();
        f.set_len(MAX_BYTES + 1).unwrap();
        let (_, warning) = Learned::open(dir.path());
        let text = warning.expect("a warning").to_string();
        assert!(text.contains(&format!("{} bytes", MAX_BYTES + 1)), "{text}");
    }
}
